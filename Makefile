# The two commands from the README: `make run` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP_RUN := $(VENV)/.installed-run
STAMP_DEV := $(VENV)/.installed-dev

.PHONY: run test lint bench clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP_RUN): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[model]"
	touch $@

$(STAMP_DEV): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[model,dev]"
	touch $@ $(STAMP_RUN)

run: $(STAMP_RUN)
	$(BIN)/cairn start --foreground

test: $(STAMP_DEV)
	$(BIN)/python -m pytest

lint: $(STAMP_DEV)
	$(BIN)/ruff check worker tests hooks install bench
	$(BIN)/ruff format --check worker tests hooks install bench
	$(BIN)/mypy worker

bench: $(STAMP_DEV)
	$(BIN)/python bench/run_all.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache

# The two commands from the README: `make run` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP_RUN := $(VENV)/.installed-run
STAMP_DEV := $(VENV)/.installed-dev

.PHONY: run test test-fast lint bench clean claude-code agent-clis

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP_RUN): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[model,team]"
	touch $@

$(STAMP_DEV): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[model,team,dev]"
	touch $@ $(STAMP_RUN)

run: $(STAMP_RUN)
	$(BIN)/cairn start --foreground

test: $(STAMP_DEV) claude-code agent-clis
	$(BIN)/python -m pytest

# The unit tier alone (no real processes, no real model): see the README and docs/testing.md.
# Each pytest worker (one per core) imports every test module it collects: tests/e2e/
# holds only e2e tests, so it is not even collected, and compiled modules (assertion rewriting
# included) are cached even where PYTHONDONTWRITEBYTECODE is set, rather than redone per process.
test-fast: $(STAMP_DEV)
	PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest -m "not e2e and not model and not postgres" \
	  --ignore=tests/e2e --hypothesis-profile=fast -n auto

# The real Claude Code CLIs the end-to-end tests drive (tests/e2e/claude_code.py): the oldest and
# newest supported, from the npm registry, cached under .cache/claude-code/<version>/. Without npm
# or the registry, <version>.unavailable records why and those tests skip with that reason.
CLAUDE_CODE_VERSIONS := 2.1.197 2.1.332
CLAUDE_DIR := .cache/claude-code

claude-code:
	@for v in $(CLAUDE_CODE_VERSIONS); do \
	  if [ ! -x $(CLAUDE_DIR)/$$v/node_modules/.bin/claude ]; then \
	    mkdir -p $(CLAUDE_DIR)/$$v; \
	    echo "installing Claude Code $$v from the npm registry"; \
	    if npm install --prefix $(CLAUDE_DIR)/$$v --no-audit --no-fund --loglevel=error \
	        @anthropic-ai/claude-code@$$v > $(CLAUDE_DIR)/$$v.log 2>&1; then \
	      rm -f $(CLAUDE_DIR)/$$v.unavailable; \
	    else \
	      cp $(CLAUDE_DIR)/$$v.log $(CLAUDE_DIR)/$$v.unavailable; \
	      echo "Claude Code $$v could not be installed (see $(CLAUDE_DIR)/$$v.unavailable)"; \
	    fi; \
	  fi; \
	done

# The other agents' real CLIs the end-to-end tests drive (tests/e2e/agent_clis.py), pinned, from
# the npm registry, into .cache/<name>/<version>/; <version>.unavailable says why one could not be.
AGENT_CLIS := codex=@openai/codex@0.169.0 gemini=@google/gemini-cli@0.61.0 copilot=@github/copilot@1.0.102

agent-clis:
	@for entry in $(AGENT_CLIS); do \
	  name=$${entry%%=*}; spec=$${entry#*=}; package=$${spec%@*}; version=$${spec##*@}; \
	  dir=.cache/$$name/$$version; \
	  if [ ! -d $$dir/node_modules/$$package ]; then \
	    mkdir -p $$dir; \
	    echo "installing $$spec from the npm registry"; \
	    if npm install --prefix $$dir --no-audit --no-fund --loglevel=error $$spec > $$dir.log 2>&1; then \
	      rm -f $$dir.unavailable; \
	    else \
	      cp $$dir.log $$dir.unavailable; \
	      echo "$$spec could not be installed (see $$dir.unavailable)"; \
	    fi; \
	  fi; \
	done

lint: $(STAMP_DEV)
	$(BIN)/ruff check worker tests hooks install bench
	$(BIN)/ruff format --check worker tests hooks install bench
	$(BIN)/mypy worker

bench: $(STAMP_DEV)
	$(BIN)/python bench/run_all.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache

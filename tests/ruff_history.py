"""A Python project's history in which ruff was set up and run, among the usual other work
(issue 17: "a search for 'ruff' ... ranks 2 relevant of 20"). Observations in session order,
a few minutes apart; `RELEVANT` marks the ones about ruff."""

from __future__ import annotations

from typing import Any

PROJECT = "/home/dev/inventory"

_RUFF = "ruff"
_OTHER = ""

# (about ruff?, observation)
HISTORY: list[tuple[str, dict[str, Any]]] = [
    (
        _OTHER,
        {
            "type": "command",
            "title": "git status",
            "body": "On branch main\nnothing to commit, working tree clean",
        },
    ),
    (
        _OTHER,
        {
            "type": "research",
            "title": "Read README.md",
            "body": "Inventory service: FastAPI app, SQLAlchemy models, pytest suite. Run with uvicorn app.main:app",
        },
    ),
    (_OTHER, {"type": "command", "title": "pytest -q", "body": "58 passed, 2 skipped in 4.31s"}),
    (
        _OTHER,
        {
            "type": "file_write",
            "title": "Edit src/inventory/models.py",
            "body": "old: quantity = Column(Integer)\nnew: quantity = Column(Integer, nullable=False, default=0)",
            "files": ["src/inventory/models.py"],
        },
    ),
    (
        _OTHER,
        {
            "type": "command",
            "title": "alembic revision --autogenerate -m 'quantity not null'",
            "body": "Generating migrations/versions/3f2a_quantity_not_null.py ... done",
        },
    ),
    (
        _OTHER,
        {
            "type": "command",
            "title": "pytest tests/test_models.py -q",
            "body": "14 passed in 0.92s",
        },
    ),
    (
        _RUFF,
        {
            "type": "command",
            "title": "pip install ruff",
            "body": "Successfully installed ruff-0.6.9",
        },
    ),
    (
        _RUFF,
        {
            "type": "command",
            "title": "ruff check .",
            "body": "src/inventory/api.py:3:1: F401 [*] `typing.Optional` imported but unused\nsrc/inventory/models.py:41:89: E501 Line too long (104 > 88)\nsrc/inventory/services/stock.py:12:5: F841 Local variable `total` is assigned to but never used\nFound 3 errors.\n[*] 1 fixable with the `--fix` option.",
        },
    ),
    (
        _RUFF,
        {
            "type": "file_write",
            "title": "Edit pyproject.toml",
            "body": 'old: [tool.black]\nline-length = 100\nnew: [tool.ruff]\nline-length = 100\ntarget-version = "py312"\n\n[tool.ruff.lint]\nselect = ["E", "F", "I", "UP", "B"]',
            "files": ["pyproject.toml"],
        },
    ),
    (
        _RUFF,
        {
            "type": "command",
            "title": "ruff check --fix .",
            "body": "Found 5 errors (3 fixed, 2 remaining).\nsrc/inventory/services/stock.py:12:5: F841 Local variable `total` is assigned to but never used\nsrc/inventory/api.py:88:9: B008 Do not perform function call `Depends` in argument defaults",
        },
    ),
    (
        _OTHER,
        {
            "type": "file_write",
            "title": "Edit src/inventory/services/stock.py",
            "body": "old: total = sum(i.quantity for i in items)\n    return items\nnew: return items",
            "files": ["src/inventory/services/stock.py"],
        },
    ),
    (
        _RUFF,
        {
            "type": "file_write",
            "title": "Edit pyproject.toml",
            "body": 'old: select = ["E", "F", "I", "UP", "B"]\nnew: select = ["E", "F", "I", "UP", "B"]\nignore = ["B008"]  # FastAPI\'s Depends() in defaults\n\n[tool.ruff.lint.per-file-ignores]\n"tests/*" = ["S101"]',
            "files": ["pyproject.toml"],
        },
    ),
    (_RUFF, {"type": "command", "title": "ruff check .", "body": "All checks passed!"}),
    (
        _RUFF,
        {
            "type": "command",
            "title": "ruff format .",
            "body": "7 files reformatted, 31 files left unchanged",
        },
    ),
    (
        _OTHER,
        {
            "type": "command",
            "title": "git diff --stat",
            "body": " pyproject.toml                  | 12 +++--\n src/inventory/api.py            | 40 +++++-----\n src/inventory/models.py         | 18 ++--\n 9 files changed, 61 insertions(+), 49 deletions(-)",
        },
    ),
    (
        _RUFF,
        {
            "type": "file_write",
            "title": "Edit .pre-commit-config.yaml",
            "body": "new: repos:\n  - repo: https://github.com/astral-sh/ruff-pre-commit\n    rev: v0.6.9\n    hooks:\n      - id: ruff\n        args: [--fix]\n      - id: ruff-format",
            "files": [".pre-commit-config.yaml"],
        },
    ),
    (
        _OTHER,
        {
            "type": "command",
            "title": "pre-commit install",
            "body": "pre-commit installed at .git/hooks/pre-commit",
        },
    ),
    (
        _OTHER,
        {
            "type": "command",
            "title": "git commit -m 'Lint and format the code base'",
            "body": "[main 4c1d2e7] Lint and format the code base\n 10 files changed, 73 insertions(+), 52 deletions(-)",
        },
    ),
    (
        _OTHER,
        {
            "type": "research",
            "title": "Read src/inventory/api.py",
            "body": "Routes: GET /items, POST /items, PATCH /items/{id}/stock; stock changes go through services.stock.adjust()",
        },
    ),
    (
        _OTHER,
        {
            "type": "file_write",
            "title": "Edit src/inventory/api.py",
            "body": "old: def adjust_stock(item_id: int, delta: int, db=Depends(get_db)):\nnew: def adjust_stock(item_id: int, delta: int, db: Session = Depends(get_db)) -> ItemOut:",
            "files": ["src/inventory/api.py"],
        },
    ),
    (
        _OTHER,
        {
            "type": "command",
            "title": "mypy src",
            "body": 'src/inventory/api.py:52: error: Incompatible return value type (got "Item", expected "ItemOut")\nFound 1 error in 1 file (checked 14 source files)',
        },
    ),
    (
        _OTHER,
        {
            "type": "file_write",
            "title": "Edit src/inventory/api.py",
            "body": "old: return item\nnew: return ItemOut.model_validate(item)",
            "files": ["src/inventory/api.py"],
        },
    ),
    (
        _OTHER,
        {
            "type": "command",
            "title": "mypy src",
            "body": "Success: no issues found in 14 source files",
        },
    ),
    (
        _RUFF,
        {
            "type": "file_write",
            "title": "Edit .github/workflows/ci.yml",
            "body": "new:       - run: pip install ruff mypy\n      - run: ruff check --output-format=github .\n      - run: ruff format --check .\n      - run: mypy src",
            "files": [".github/workflows/ci.yml"],
        },
    ),
    (_OTHER, {"type": "command", "title": "pytest -q", "body": "58 passed, 2 skipped in 4.18s"}),
    (
        _OTHER,
        {
            "type": "research",
            "title": "Read docs/deploy.md",
            "body": "Deploys are tagged releases; the Docker image is built by CI and pushed to the registry",
        },
    ),
    (
        _OTHER,
        {
            "type": "file_write",
            "title": "Edit Dockerfile",
            "body": "old: FROM python:3.11-slim\nnew: FROM python:3.12-slim",
            "files": ["Dockerfile"],
        },
    ),
    (
        _OTHER,
        {
            "type": "command",
            "title": "docker build -t inventory:dev .",
            "body": "Successfully built 9c0e1f3a7b21\nSuccessfully tagged inventory:dev",
        },
    ),
    (
        _OTHER,
        {
            "type": "command",
            "title": "ls src/inventory",
            "body": "__init__.py\napi.py\nmain.py\nmodels.py\nschemas.py\nservices",
        },
    ),
    (
        _OTHER,
        {
            "type": "research",
            "title": "Read src/inventory/schemas.py",
            "body": "ItemIn and ItemOut pydantic models; ItemOut has from_attributes=True",
        },
    ),
    (
        _OTHER,
        {
            "type": "file_write",
            "title": "Edit tests/test_api.py",
            "body": "new: def test_adjust_stock_rejects_negative_totals(client):\n    resp = client.patch('/items/1/stock', json={'delta': -999})\n    assert resp.status_code == 422",
            "files": ["tests/test_api.py"],
        },
    ),
    (
        _OTHER,
        {
            "type": "command",
            "title": "pytest tests/test_api.py -q",
            "body": "1 failed, 21 passed\nFAILED tests/test_api.py::test_adjust_stock_rejects_negative_totals - assert 200 == 422",
        },
    ),
    (
        _OTHER,
        {
            "type": "file_write",
            "title": "Edit src/inventory/services/stock.py",
            "body": "old: item.quantity += delta\nnew: if item.quantity + delta < 0:\n        raise StockError('stock cannot go negative')\n    item.quantity += delta",
            "files": ["src/inventory/services/stock.py"],
        },
    ),
    (_OTHER, {"type": "command", "title": "pytest -q", "body": "59 passed, 2 skipped in 4.40s"}),
    (
        _OTHER,
        {
            "type": "command",
            "title": "git log --oneline -3",
            "body": "9b1f0aa Reject negative stock\n4c1d2e7 Lint and format the code base\n1a2b3c4 quantity not null",
        },
    ),
    (
        _OTHER,
        {
            "type": "research",
            "title": "WebFetch https://fastapi.tiangolo.com/tutorial/handling-errors/",
            "body": "Raise HTTPException or register an exception handler to turn domain errors into responses",
        },
    ),
    (
        _OTHER,
        {
            "type": "file_write",
            "title": "Edit src/inventory/main.py",
            "body": "new: @app.exception_handler(StockError)\nasync def stock_error(request, exc):\n    return JSONResponse({'detail': str(exc)}, status_code=422)",
            "files": ["src/inventory/main.py"],
        },
    ),
    (_OTHER, {"type": "command", "title": "pytest -q", "body": "60 passed, 2 skipped in 4.52s"}),
    (
        _OTHER,
        {
            "type": "command",
            "title": "uvicorn app.main:app --reload",
            "body": "INFO: Uvicorn running on http://127.0.0.1:8000 (Press CTRL+C to quit)",
        },
    ),
    (
        _OTHER,
        {
            "type": "command",
            "title": "curl -s localhost:8000/items | head",
            "body": '[{"id":1,"name":"bolt M6","quantity":120},{"id":2,"name":"nut M6","quantity":340}]',
        },
    ),
    (
        _OTHER,
        {
            "type": "note",
            "title": "Stock adjustments",
            "body": "Negative stock is rejected in services.stock.adjust with StockError, mapped to HTTP 422 in main.py",
        },
    ),
    (
        _OTHER,
        {
            "type": "command",
            "title": "git push origin main",
            "body": "To github.com:dev/inventory.git\n   4c1d2e7..9b1f0aa  main -> main",
        },
    ),
]

RELEVANT_TITLES = [obs["title"] for about, obs in HISTORY if about == _RUFF]
OBSERVATIONS = [obs for _, obs in HISTORY]
RELEVANT = [i for i, (about, _) in enumerate(HISTORY) if about == _RUFF]

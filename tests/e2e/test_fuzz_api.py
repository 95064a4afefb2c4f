"""Schemathesis against the real worker's /openapi.json, with the token, every operation:
no 5xx, and every response matches the documented status codes, content type and schema.

CI runs CAIRN_FUZZ_EXAMPLES (default 15) examples per operation, derandomized; raise it to dig
deeper (e.g. CAIRN_FUZZ_EXAMPLES=300 .venv/bin/python -m pytest tests/e2e/test_fuzz_api.py).
"""

from __future__ import annotations

import os
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from tests.e2e.conftest import ModuleWorkers
from tests.e2e.worker_process import WorkerProcess
from worker.api.openapi import build_openapi
from worker.app import create_app
from worker.settings import load_settings

pytestmark = [pytest.mark.both_backends, pytest.mark.e2e]

EXAMPLES = int(os.environ.get("CAIRN_FUZZ_EXAMPLES", "15"))
# Not fuzzed: the endless SSE stream, and the two routes that end the fuzzer's own credentials.
SKIP = {("GET", "/api/events"), ("POST", "/settings/rotate-token"), ("POST", "/logout")}
CHECKS = (
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    response_headers_conformance,
)


RATES = {
    "CAIRN_RATE_LIMIT_READ": "1000000/minute",
    "CAIRN_RATE_LIMIT_WRITE": "1000000/minute",
    "CAIRN_RATE_LIMIT_LOGIN": "1000000/minute",
}


def seed(worker: WorkerProcess) -> None:
    """Some data so that ids and filters meet real rows."""
    worker.request("POST", "/api/sessions", {"session_id": "s1", "project": "/repo"})
    for i in range(5):
        worker.request(
            "POST",
            "/api/observations",
            {"project": "/repo", "session_id": "s1", "type": "note", "title": f"n{i}"},
        )
    worker.request(
        "POST",
        "/api/memories",
        {"kind": "fact", "content": "the build uses make", "project": "/repo"},
    )


@pytest.fixture
def fuzz_worker(
    request: pytest.FixtureRequest, backend: str, module_workers: ModuleWorkers
) -> WorkerProcess:
    """One worker per module and backend (on postgres over one database of the run's server
    for the module), stopped after the module."""
    return module_workers.worker(request, backend, RATES, seed)


@pytest.fixture
def api_schema(fuzz_worker: WorkerProcess) -> Any:
    return schemathesis.openapi.from_url(
        fuzz_worker.url + "/openapi.json", headers={"Authorization": f"Bearer {fuzz_worker.token}"}
    )


def _operations() -> list[tuple[str, str]]:
    """Every documented operation, read from the app itself at collection time (no worker)."""
    settings_ = load_settings({"CAIRN_HOME": "/nonexistent/cairn-collect"})
    doc = build_openapi(create_app(settings_).routes, settings_)
    return sorted(
        (method.upper(), path)
        for path, ops in doc["paths"].items()
        for method in ops
        if (method.upper(), path) not in SKIP
    )


@pytest.mark.parametrize(("method", "path"), _operations())
def test_every_operation_survives_fuzzing(
    method: str, path: str, api_schema: Any, fuzz_worker: WorkerProcess
) -> None:
    operation = api_schema[path][method]

    @given(case=operation.as_strategy())
    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    def fuzz(case: Any) -> None:
        case.call_and_validate(
            headers={"Authorization": f"Bearer {fuzz_worker.token}"},
            checks=CHECKS,
            timeout=30,
        )

    fuzz()

"""One small error family and one JSON error shape: {"error": {"code", "message", "field"}}
(plus "line" for an error about one line of an import)."""

from __future__ import annotations

from typing import Any, ClassVar


class ConfigError(Exception):
    """Invalid configuration found at start (not an HTTP error)."""


class CairnError(Exception):
    status: ClassVar[int] = 500
    code: ClassVar[str] = "internal_error"

    def __init__(
        self,
        message: str,
        *,
        field: str | None = None,
        headers: dict[str, str] | None = None,
        line: int | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.field = field
        self.headers = headers or {}
        self.line = line  # the line of a JSON-lines body (an import) the error is about

    def body(self) -> dict[str, Any]:
        return error_body(self.code, self.message, field=self.field, line=self.line)


class BadRequest(CairnError):
    status = 400
    code = "bad_request"


class NotFound(CairnError):
    status = 404
    code = "not_found"


class Conflict(CairnError):
    status = 409
    code = "conflict"


class PayloadTooLarge(CairnError):
    status = 413
    code = "payload_too_large"


class ServiceUnavailable(CairnError):
    status = 503
    code = "unavailable"


class InsufficientStorage(CairnError):
    status = 507
    code = "insufficient_storage"


def error_body(
    code: str, message: str, *, field: str | None = None, line: int | None = None
) -> dict[str, Any]:
    """The one JSON error shape (for errors raised as a CairnError and those answered directly:
    the security middleware's refusals, routing's 404/405, the rate limiter's 429)."""
    error: dict[str, Any] = {"code": code, "message": message}
    if field is not None:
        error["field"] = field
    if line is not None:
        error["line"] = line
    return {"error": error}

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
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.field is not None:
            error["field"] = self.field
        if self.line is not None:
            error["line"] = self.line
        return {"error": error}


class BadRequest(CairnError):
    status = 400
    code = "bad_request"


class Unauthorized(CairnError):
    status = 401
    code = "unauthorized"


class Forbidden(CairnError):
    status = 403
    code = "forbidden"


class NotFound(CairnError):
    status = 404
    code = "not_found"


class MethodNotAllowed(CairnError):
    status = 405
    code = "method_not_allowed"


class Conflict(CairnError):
    status = 409
    code = "conflict"


class PayloadTooLarge(CairnError):
    status = 413
    code = "payload_too_large"


class MisdirectedRequest(CairnError):
    status = 421
    code = "misdirected_request"


class TooManyRequests(CairnError):
    status = 429
    code = "rate_limited"


class ServiceUnavailable(CairnError):
    status = 503
    code = "unavailable"


class InsufficientStorage(CairnError):
    status = 507
    code = "insufficient_storage"


def error_body(status: int, code: str, message: str, field: str | None = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message}
    if field is not None:
        error["field"] = field
    return {"error": error}

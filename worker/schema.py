"""A small JSON Schema subset used both to validate requests and to document them in OpenAPI.

One schema serves two purposes, so the docs cannot drift from what the API enforces. Supported:
type (incl. lists), properties, required, items, enum, minLength/maxLength, minimum/maximum,
minItems/maxItems, pattern, format date-time, and the extension x-maxBytes (JSON size).
Unknown object fields are ignored (forward compatibility).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

from worker.clock import parse_iso
from worker.errors import BadRequest

Schema = dict[str, Any]

_PY_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "object": (dict,),
    "array": (list,),
    "null": (type(None),),
}

_JSON_NAMES = {
    str: "string",
    int: "integer",
    float: "number",
    bool: "boolean",
    dict: "object",
    list: "array",
    type(None): "null",
}


# SQLite integers are signed 64-bit: a larger value could never be stored or matched.
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def _type_ok(value: Any, name: str) -> bool:
    if isinstance(value, bool) and name in ("integer", "number"):
        return False
    if name == "number" and isinstance(value, float) and not math.isfinite(value):
        return False
    return isinstance(value, _PY_TYPES[name])


def _describe(value: Any) -> str:
    return _JSON_NAMES.get(type(value), type(value).__name__)


def validate(schema: Schema, value: Any, field: str = "") -> Any:
    """Return `value` if it satisfies `schema`; raise BadRequest naming the field otherwise."""
    where = field or "body"
    types = schema.get("type")
    if types is not None:
        names = types if isinstance(types, list) else [types]
        if not any(_type_ok(value, n) for n in names):
            raise BadRequest(
                f"'{where}' must be {' or '.join(names)}, got {_describe(value)}", field=where
            )
    if "enum" in schema and value not in schema["enum"]:
        allowed = ", ".join(str(v) for v in schema["enum"])
        raise BadRequest(f"'{where}' must be one of: {allowed}", field=where)
    if isinstance(value, str):
        _check_string(schema, value, where)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        if isinstance(value, int) and not INT64_MIN <= value <= INT64_MAX:
            raise BadRequest(f"'{where}' is out of range (64-bit integers only)", field=where)
        if "minimum" in schema and value < schema["minimum"]:
            raise BadRequest(f"'{where}' must be >= {schema['minimum']}", field=where)
        if "maximum" in schema and value > schema["maximum"]:
            raise BadRequest(f"'{where}' must be <= {schema['maximum']}", field=where)
    elif isinstance(value, list):
        if "minItems" in schema and len(value) < schema["minItems"]:
            raise BadRequest(f"'{where}' needs at least {schema['minItems']} items", field=where)
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            raise BadRequest(f"'{where}' allows at most {schema['maxItems']} items", field=where)
        item_schema = schema.get("items")
        if item_schema is not None:
            for i, item in enumerate(value):
                validate(item_schema, item, f"{where}[{i}]")
    elif isinstance(value, dict):
        _check_object(schema, value, field)
    return value


def _check_string(schema: Schema, value: str, where: str) -> None:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise BadRequest(
            f"'{where}' contains invalid Unicode (lone surrogate)", field=where
        ) from None
    if "\x00" in value and schema.get("x-allowNul") is not True:
        raise BadRequest(f"'{where}' must not contain NUL characters", field=where)
    if "minLength" in schema and len(value) < schema["minLength"]:
        if schema["minLength"] == 1:
            raise BadRequest(f"'{where}' must not be empty", field=where)
        raise BadRequest(f"'{where}' needs at least {schema['minLength']} characters", field=where)
    if "maxLength" in schema and len(value) > schema["maxLength"]:
        raise BadRequest(
            f"'{where}' is {len(value)} characters; the limit is {schema['maxLength']}", field=where
        )
    if "pattern" in schema and not re.fullmatch(schema["pattern"], value):
        explained = schema.get("x-patternMessage") or f"does not match {schema['pattern']}"
        raise BadRequest(f"'{where}' {explained}", field=where)
    if schema.get("format") == "date-time":
        try:
            parse_iso(value)
        except (ValueError, OverflowError, OSError):
            raise BadRequest(f"'{where}' must be an ISO 8601 date-time", field=where) from None


def _check_object(schema: Schema, value: dict[str, Any], field: str) -> None:
    where = field or "body"
    if "x-maxBytes" in schema:
        size = len(json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass"))
        if size > schema["x-maxBytes"]:
            raise BadRequest(
                f"'{where}' is {size} bytes as JSON; the limit is {schema['x-maxBytes']}",
                field=where,
            )
        _check_deep_strings(value, where)
    check_required(schema, value, field)
    for name, sub in schema.get("properties", {}).items():
        if name in value:
            path = f"{field}.{name}" if field else name
            validate(sub, value[name], path)


def check_required(schema: Schema, value: dict[str, Any], field: str = "") -> None:
    """The object part of validate() that a schema's `required` list adds (for a value already
    validated against a schema with the same properties and no `required`)."""
    for name in schema.get("required", []):
        if name not in value or value[name] is None:
            path = f"{field}.{name}" if field else name
            raise BadRequest(f"'{path}' is required", field=path)


def _check_deep_strings(value: Any, where: str) -> None:
    """Free-form JSON (meta) must still be storable and renderable as strict JSON: no lone
    surrogates and no NaN/Infinity anywhere (callers other than HTTP may parse leniently)."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise BadRequest(f"'{where}' contains invalid Unicode", field=where) from None
    elif isinstance(value, float) and not math.isfinite(value):
        raise BadRequest(f"'{where}' contains a non-finite number", field=where)
    elif isinstance(value, dict):
        for k, v in value.items():
            _check_deep_strings(k, where)
            _check_deep_strings(v, where)
    elif isinstance(value, list):
        for v in value:
            _check_deep_strings(v, where)


def coerce_query(schema: Schema, raw: str, name: str) -> Any:
    """Convert a query-string value to the schema's type, then validate it."""
    kind = schema.get("type")
    value: Any = raw
    try:
        if kind == "integer":
            # int() alone would also take "1_000", " 7 " and non-ASCII digits.
            if not re.fullmatch(r"-?[0-9]{1,19}", raw):
                raise ValueError(raw)
            value = int(raw)
        elif kind == "number":
            value = float(raw)
        elif kind == "boolean":
            lowered = raw.lower()
            if lowered not in ("true", "false", "1", "0", "yes", "no"):
                raise ValueError(raw)
            value = lowered in ("true", "1", "yes")
    except ValueError:
        raise BadRequest(f"'{name}' must be {kind}, got {raw!r}", field=name) from None
    return validate(schema, value, name)


def coerce_params(
    schemas: dict[str, Schema], params: Mapping[str, str], required: tuple[str, ...] = ()
) -> dict[str, Any]:
    """The query parameters `schemas` names, each converted and validated; absent ones left out."""
    out: dict[str, Any] = {}
    for name, schema in schemas.items():
        if name in params:
            out[name] = coerce_query(schema, params[name], name)
        elif name in required:
            raise BadRequest(f"query parameter '{name}' is required", field=name)
    return out

"""The JSON-Schema subset that validates requests: precise messages naming the field."""

from __future__ import annotations

import contextlib
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.examples import examples
from worker.errors import BadRequest
from worker.schema import coerce_query, validate

ITEM = {
    "type": "object",
    "required": ["title"],
    "properties": {
        "title": {"type": "string", "minLength": 1, "maxLength": 10},
        "n": {"type": "integer", "minimum": 1, "maximum": 5},
        "x": {"type": "number"},
        "when": {"type": "string", "format": "date-time"},
        "tags": {"type": "array", "maxItems": 2, "items": {"type": "string"}},
        "kind": {"type": "string", "enum": ["a", "b"]},
        "meta": {"type": ["object", "null"], "x-maxBytes": 40},
        "inner": {"type": "object", "required": ["k"], "properties": {"k": {"type": "boolean"}}},
    },
}


def field_error(value: Any) -> tuple[str | None, str]:
    with pytest.raises(BadRequest) as info:
        validate(ITEM, value)
    return info.value.field, info.value.message


@pytest.mark.parametrize(
    ("value", "field", "fragment"),
    [
        ({}, "title", "is required"),
        ({"title": None}, "title", "is required"),
        ({"title": ""}, "title", "must not be empty"),
        ({"title": "x" * 11}, "title", "the limit is 10"),
        ({"title": 5}, "title", "must be string, got integer"),
        ({"title": "t", "n": True}, "n", "must be integer, got boolean"),
        ({"title": "t", "n": 1.5}, "n", "must be integer"),
        ({"title": "t", "n": 9}, "n", "<= 5"),
        ({"title": "t", "n": 2**64}, "n", "out of range"),
        ({"title": "t", "x": float("nan")}, "x", "must be number"),
        ({"title": "t", "x": float("inf")}, "x", "must be number"),
        ({"title": "t", "when": "yesterday"}, "when", "ISO 8601"),
        ({"title": "t", "tags": ["a", "b", "c"]}, "tags", "at most 2"),
        ({"title": "t", "tags": ["a", 1]}, "tags[1]", "must be string"),
        ({"title": "t", "kind": "c"}, "kind", "one of: a, b"),
        ({"title": "t", "meta": {"k": "v" * 50}}, "meta", "the limit is 40"),
        ({"title": "t", "meta": {"k": "\ud800"}}, "meta", "invalid Unicode"),
        ({"title": "t", "meta": []}, "meta", "object or null"),
        ({"title": "t", "meta": {"k": [float("nan")]}}, "meta", "non-finite"),
        ({"title": "t", "inner": {}}, "inner.k", "'inner.k' is required"),
        ({"title": "t", "inner": {"k": "yes"}}, "inner.k", "must be boolean"),
        ({"title": "t\ud800"}, "title", "lone surrogate"),
        ({"title": "a\x00b"}, "title", "NUL"),
        ([], "body", "must be object, got array"),
    ],
)
def test_errors_name_the_field(value: Any, field: str, fragment: str) -> None:
    got_field, message = field_error(value)
    assert got_field == field and fragment in message


def test_unknown_fields_are_ignored_and_the_value_returned_verbatim() -> None:
    value = {"title": "t", "future_field": {"anything": [1, 2]}, "meta": None}
    assert validate(ITEM, value) is value


@pytest.mark.parametrize(
    ("schema", "raw", "expected"),
    [
        ({"type": "integer"}, "42", 42),
        ({"type": "integer"}, "-3", -3),
        ({"type": "boolean"}, "true", True),
        ({"type": "boolean"}, "0", False),
        ({"type": "number"}, "1.5", 1.5),
        ({"type": "string"}, "x", "x"),
    ],
)
def test_coerce_query(schema: dict[str, Any], raw: str, expected: Any) -> None:
    assert coerce_query(schema, raw, "q") == expected


@pytest.mark.parametrize(
    ("schema", "raw"),
    [
        ({"type": "integer"}, "1_000"),
        ({"type": "integer"}, " 7"),
        ({"type": "integer"}, "١٢"),
        ({"type": "integer"}, "9" * 30),
        ({"type": "integer", "minimum": 1}, "0"),
        ({"type": "boolean"}, "maybe"),
        ({"type": "number"}, "nan"),
        ({"type": "number"}, "abc"),
    ],
)
def test_coerce_query_refuses(schema: dict[str, Any], raw: str) -> None:
    with pytest.raises(BadRequest) as info:
        coerce_query(schema, raw, "q")
    assert info.value.field == "q"


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=examples(300), deadline=None)
@given(json_values)
def test_validate_either_accepts_or_raises_bad_request(value: Any) -> None:
    """Any JSON-ish value: validation never raises anything but BadRequest, and what it
    accepts can be stored and rendered back as strict JSON."""
    try:
        out = validate(ITEM, value)
    except BadRequest as exc:
        assert exc.field and exc.message
        return
    json.dumps(out, allow_nan=False, ensure_ascii=False).encode("utf-8")


@settings(max_examples=examples(200), deadline=None)
@given(st.text(max_size=40))
def test_coerce_query_never_crashes(raw: str) -> None:
    for schema in (
        {"type": "integer"},
        {"type": "number"},
        {"type": "boolean"},
        {"type": "string", "maxLength": 5},
    ):
        with contextlib.suppress(BadRequest):
            coerce_query(schema, raw, "q")

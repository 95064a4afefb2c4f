"""What an imported row must be: the live API's rules, column by column.

A stored value the readers cannot use (meta that is not JSON, an unknown observation type, a
time that is not a number) would break every request that reads the row, so an import checks
each row against the same schemas the API validates requests with: the field's own schema
where the API has one (type and kind enums, files, tags, plan, meta), else the column's
declared SQLite type (INTEGER: a whole number, TEXT: a string), NULL only where the column
allows it. Length and count limits are left out: an export holds rows the worker wrote itself
(summaries, checkpoints) and rows saved before a limit setting was lowered.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from worker.errors import BadRequest
from worker.memory.relations import RELATION_KINDS
from worker.ops import memories as memory_ops
from worker.ops.fields import SESSION_STATUSES, meta_field, observation_schema, plan_schema
from worker.schema import Schema, validate
from worker.settings import Settings
from worker.store.errors import InvalidValue
from worker.store.portability import RowCheck, TableInfo

# Request limits, not what a stored value must be (see the module docstring).
_LIMITS = ("maxLength", "maxItems")


@dataclass(frozen=True)
class ColumnRule:
    schema: Schema
    json: bool = False  # the column holds JSON text, checked once parsed


def _unbounded(schema: Schema) -> Schema:
    out: Schema = {k: v for k, v in schema.items() if k not in _LIMITS and k != "description"}
    if "x-maxBytes" in out:
        out["x-maxBytes"] = sys.maxsize  # keeps the deep checks (no NaN, no lone surrogate)
    if "items" in out:
        out["items"] = _unbounded(out["items"])
    if "properties" in out:
        out["properties"] = {k: _unbounded(v) for k, v in out["properties"].items()}
    return out


@lru_cache(maxsize=8)
def column_rules(s: Settings) -> dict[str, dict[str, ColumnRule]]:
    """Per table, the columns whose rule comes from an API schema."""
    obs = observation_schema(s)["properties"]
    mem = memory_ops.create_schema(s)["properties"]
    plan = plan_schema(s)["properties"]["plan"]
    meta = ColumnRule(_unbounded(meta_field(s)), json=True)
    files = ColumnRule(_unbounded(obs["files"]), json=True)
    rules: dict[str, dict[str, ColumnRule]] = {
        "observations": {
            name: ColumnRule(_unbounded(obs[name]))
            for name in ("type", "title", "body", "tool_name", "importance")
        },
        "memories": {
            "kind": ColumnRule(_unbounded(mem["kind"])),
            "content": ColumnRule(_unbounded(mem["content"])),
            "tags": ColumnRule(_unbounded(mem["tags"]), json=True),
            "importance": ColumnRule({**_unbounded(mem["importance"]), "type": "integer"}),
        },
        "sessions": {
            "status": ColumnRule({"type": "string", "enum": list(SESSION_STATUSES)}),
            "plan": ColumnRule(_unbounded(plan), json=True),
        },
        "memory_relations": {"kind": ColumnRule({"type": "string", "enum": list(RELATION_KINDS)})},
        "kv": {"value": ColumnRule({}, json=True)},
    }
    rules["observations"]["files"] = files
    for table in ("summaries", "checkpoints"):
        rules[table] = {"files": files}
    for table in ("observations", "memories", "sessions", "prompts", "summaries", "checkpoints"):
        rules.setdefault(table, {})["meta"] = meta
    return rules


def _declared(info: TableInfo, column: str) -> Schema:
    declared = info.types.get(column, "")
    if "INT" in declared:
        return {"type": "integer"}
    if "TEXT" in declared or "CHAR" in declared:
        return {"type": "string"}
    return {}  # BLOB or untyped: anything SQLite can hold


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _check_column(info: TableInfo, column: str, value: Any, rule: ColumnRule | None) -> None:
    if value is None:
        if column in info.not_null:
            raise BadRequest(f"'{column}' must not be null", field=column)
        return  # SQL NULL where the column allows it (an absent field at the API)
    if rule is None:
        validate(_declared(info, column), value, column)
        return
    if not rule.json:
        validate(rule.schema, value, column)
        return
    if not isinstance(value, str):
        raise BadRequest(f"'{column}' must be JSON text, got {type(value).__name__}", field=column)
    try:
        parsed = json.loads(value, parse_constant=_reject_constant)
    except (ValueError, RecursionError) as exc:
        raise BadRequest(f"'{column}' is not valid JSON ({exc})", field=column) from None
    validate(rule.schema, parsed, column)


def row_check(s: Settings) -> RowCheck:
    """The check `portability.import_lines` runs on every row before writing it."""
    rules = column_rules(s)

    def check(info: TableInfo, row: dict[str, Any]) -> None:
        own = rules.get(info.name, {})
        try:
            for column, value in row.items():
                _check_column(info, column, value, own.get(column))
        except BadRequest as exc:  # the API's refusal, in the store's terms
            raise InvalidValue(exc.message, field=exc.field) from None

    return check

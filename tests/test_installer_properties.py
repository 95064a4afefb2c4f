"""Property tests: other settings survive install + uninstall round trips, whatever they hold."""

from __future__ import annotations

import json
import random
from functools import partial
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.examples import examples
from worker.installer import plan
from worker.installer.claude_settings import (
    EVENTS,
    hook_command,
    portable_command,
    registered_commands,
)
from worker.installer.editors import McpTarget
from worker.installer.mcp_config import server_entry

json_scalars = st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=20)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=12,
)
handler = st.fixed_dictionaries(
    {
        "type": st.just("command"),
        "command": st.text(min_size=1, max_size=30).filter(
            lambda c: "cairn_hook.py" not in c and "cairn hook" not in c
        ),
    },
    optional={"timeout": st.integers(1, 600)},
)
group = st.fixed_dictionaries(
    {"hooks": st.lists(handler, min_size=1, max_size=3)},
    optional={"matcher": st.sampled_from(["*", "Bash", "Write|Edit", "", "startup"])},
)
event_names = st.sampled_from(
    [e.name for e in EVENTS] + ["Notification", "PreToolUse", "SubagentStop"]
)
hooks_object = st.dictionaries(event_names, st.lists(group, max_size=3), max_size=5)
settings_objects = st.dictionaries(
    st.text(max_size=12).filter(lambda k: k != "hooks"), json_values, max_size=6
).flatmap(lambda rest: st.one_of(st.just(rest), hooks_object.map(lambda h: {**rest, "hooks": h})))
indents = st.sampled_from([2, 4, "\t"])


def _styled(value: Any, rnd: random.Random, indent: str, level: int = 0) -> str:
    """JSON as people leave it: each container inline or one entry a line, assorted spacing."""
    if isinstance(value, dict | list) and value and rnd.random() < 0.5:
        inner, outer = indent * (level + 1), indent * level
        if isinstance(value, dict):
            colon = rnd.choice([": ", ":", " : "])
            parts = [
                json.dumps(k) + colon + _styled(v, rnd, indent, level + 1) for k, v in value.items()
            ]
        else:
            parts = [_styled(v, rnd, indent, level + 1) for v in value]
        ends = "{}" if isinstance(value, dict) else "[]"
        return ends[0] + "\n" + inner + (",\n" + inner).join(parts) + "\n" + outer + ends[1]
    if isinstance(value, dict | list) and not value:
        return rnd.choice(["[]", "[ ]"] if isinstance(value, list) else ["{}", "{ }"])
    comma, colon = rnd.choice([",", ", "]), rnd.choice([":", ": "])
    return json.dumps(value, ensure_ascii=False, separators=(comma, colon))


def _roundtrip(path: Path, text: str, state: dict[str, Any], portable: bool = False) -> str:
    path.write_text(text, encoding="utf-8")
    script = Path("/opt/cairn/hooks/cairn_hook.py")
    command = portable_command if portable else partial(hook_command, "/opt/py/bin/python", script)
    change = plan.install_hooks(path, command)
    plan.apply_install([change], state)
    installed = json.loads(path.read_text(encoding="utf-8"))
    assert set(registered_commands(installed)) == {e.name for e in EVENTS}
    again = plan.install_hooks(path, command)
    assert not again.changed  # idempotent
    undo = plan.uninstall_file(path, "claude-hooks", state["files"][str(path)])
    assert undo is not None
    plan.apply_uninstall([undo], state)
    return path.read_text(encoding="utf-8")


@settings(
    max_examples=examples(150),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(data=settings_objects, indent=indents, newline=st.booleans())
def test_settings_round_trip_byte_for_byte(
    tmp_path: Path, data: dict[str, Any], indent: int | str, newline: bool
) -> None:
    path = tmp_path / "settings.json"
    text = json.dumps(data, indent=indent, ensure_ascii=False) + ("\n" if newline else "")
    assert _roundtrip(path, text, {}) == text


@settings(
    max_examples=examples(100),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(data=settings_objects)
def test_compact_files_round_trip_byte_for_byte(tmp_path: Path, data: dict[str, Any]) -> None:
    path = tmp_path / "settings.json"
    text = json.dumps(data, separators=(",", ":"))
    assert _roundtrip(path, text, {}) == text


@settings(
    max_examples=examples(150),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    data=settings_objects,
    rnd=st.randoms(use_true_random=False),
    indent=st.sampled_from(["  ", "    ", "\t"]),
    portable=st.booleans(),
)
def test_hand_formatted_files_round_trip_byte_for_byte(
    tmp_path: Path, data: dict[str, Any], rnd: random.Random, indent: str, portable: bool
) -> None:
    path = tmp_path / "settings.json"
    text = _styled(data, rnd, indent) + "\n"
    assert json.loads(text) == data
    assert _roundtrip(path, text, {}, portable) == text


@settings(
    max_examples=examples(100),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(data=st.dictionaries(st.text(max_size=12), json_values, max_size=6), indent=indents)
def test_mcp_configs_round_trip_byte_for_byte(
    tmp_path: Path, data: dict[str, Any], indent: int | str
) -> None:
    data.pop("mcpServers", None)
    data["mcpServers"] = {"other": {"command": "npx", "args": ["x"]}}
    path = tmp_path / "mcp.json"
    text = json.dumps(data, indent=indent, ensure_ascii=False) + "\n"
    path.write_text(text, encoding="utf-8")
    state: dict[str, Any] = {}
    target = McpTarget(path, "Test", {"disabled": False})
    plan.apply_install([plan.install_mcp(target, server_entry("/opt/py/bin/python"))], state)
    assert json.loads(path.read_text())["mcpServers"]["cairn"]["disabled"] is False
    undo = plan.uninstall_file(path, "mcp", state["files"][str(path)])
    assert undo is not None
    plan.apply_uninstall([undo], state)
    assert path.read_text(encoding="utf-8") == text

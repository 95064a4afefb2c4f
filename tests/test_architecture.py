"""The imports of worker/ point down only: no cycle between modules or rooms, and no arrow from a
room to one in its own layer or above, per the table in docs/architecture.md (read from there,
so the rules are written once)."""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORKER = ROOT / "worker"


def layers() -> dict[str, int]:
    """Room -> layer number, from the table in docs/architecture.md."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    out: dict[str, int] = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 2 and cells[0].isdigit():
            for room in re.findall(r"`([\w.]+)`", cells[1]):
                out[room] = int(cells[0])
    return out


def modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for path in WORKER.rglob("*.py"):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def imports(mods: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the worker modules it imports (anywhere in the file, TYPE_CHECKING included)."""

    def resolve(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    edges: dict[str, set[str]] = {m: set() for m in mods}
    for mod, path in mods.items():
        package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*anchor, base] if base else anchor)
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base
                           for a in node.names]  # fmt: skip
            for target in targets:
                if target == "worker" or target.startswith("worker."):
                    found = resolve(target)
                    if found is not None and found != mod:
                        edges[mod].add(found)
    return edges


@functools.cache
def worker_imports() -> dict[str, set[str]]:
    """imports(modules()), parsed once for the tests below (they only read it)."""
    return imports(modules())


def room(mod: str) -> str:
    parts = mod.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one node (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_module_imports_itself_back() -> None:
    assert cycles(worker_imports()) == []


def test_no_room_imports_itself_back() -> None:
    rooms: dict[str, set[str]] = {}
    for mod, targets in worker_imports().items():
        rooms.setdefault(room(mod), set()).update(room(t) for t in targets if room(t) != room(mod))
    assert cycles(rooms) == []


def test_every_room_is_in_the_architecture_table() -> None:
    table = layers()
    assert table, "docs/architecture.md has no Architecture table"
    assert sorted({room(m) for m in modules()} - set(table)) == []


def test_arrows_point_down() -> None:
    table = layers()
    upward = sorted(
        f"{mod} -> {target}"
        for mod, targets in worker_imports().items()
        for target in targets
        if room(mod) != room(target) and table.get(room(target), 0) <= table.get(room(mod), 0)
    )
    assert upward == []

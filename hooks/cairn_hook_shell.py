"""Shell commands that only read a file or searched the tree, as the research tools they stand for.

Codex CLI has no read or search tool: its model reads with `cat`, `nl`, `head`, `tail` or
`sed -n a,bp` and searches with `rg` and `grep`. Recorded as commands, their output outranks what
they were read for, so a successful one is recorded as Claude Code's Read, Grep or Glob of the
same file or pattern (research, not a command run: the same observation, the same judgment).
Stdlib only.
"""

from __future__ import annotations

import re
import shlex

# Characters that make a command more than one program's run (pipes, lists, redirects, $()).
_SHELL_OPS = set("|;&<>$`")
_VALUED = {"-g", "--glob", "-t", "--type", "-e", "--regexp", "-m", "--max-count", "-A", "-B", "-C"}


def as_research(out: dict[str, object]) -> None:
    """A successful command that only read a file or searched the tree, recorded as Claude
    Code's Read, Grep or Glob: how Codex CLI reads and searches, having no tool for either
    (research, not a command run: the same observation, the same judgment)."""
    tin, response = out.get("tool_input"), out.get("tool_response")
    command = tin.get("command") if isinstance(tin, dict) else None
    if not isinstance(command, str) or not isinstance(response, dict):
        return
    try:
        words = shlex.split(command)
    except ValueError:
        return
    if not words or any(c in _SHELL_OPS for w in words for c in w):
        return
    code = response.get("exit_code")
    found = _research(words, str(response.get("stdout") or ""))
    # A search that matched nothing exits 1; anything else that did not exit 0 failed.
    if found is None or not (code == 0 or (code == 1 and found[0] != "Read")):
        return
    out["tool_name"], out["tool_input"], out["tool_response"] = found


def _research(words: list[str], stdout: str) -> tuple[str, dict[str, object], object] | None:
    program, args = words[0], words[1:]
    flags = [a for a in args if a.startswith("-")]
    valued = _VALUED | {"-n"} if program in ("head", "tail") else _VALUED
    plain: list[str] = []
    skip = False
    for a in args:
        if skip:
            skip = False
        elif a in valued:
            skip = True
        elif not a.startswith("-"):
            plain.append(a)
    if program in ("cat", "nl", "head", "tail", "sed") and len(plain) == 1 + (program == "sed"):
        path = plain[-1]
        read: dict[str, object] = {"file_path": path}
        if program == "sed":
            lines = re.fullmatch(r"(\d+),(\d+)p", plain[0])
            if flags != ["-n"] or lines is None:
                return None
            start, end = int(lines[1]), int(lines[2])
            read.update(offset=start, limit=max(1, end - start + 1))
        elif program == "head" and "-n" in args:
            count = args[args.index("-n") + 1] if args.index("-n") + 1 < len(args) else ""
            if count.isdigit():
                read.update(offset=1, limit=int(count))
        return "Read", read, {"type": "text", "file": {"filePath": path}}
    if program not in ("rg", "grep"):
        return None
    if program == "rg" and "--files" in flags:
        pattern = args[args.index("-g") + 1] if "-g" in args[:-1] else "*"
        files = [line for line in stdout.splitlines() if line.strip()]
        glob: dict[str, object] = {"pattern": pattern}
        if plain:
            glob["path"] = plain[0]
        return "Glob", glob, {"filenames": files, "numFiles": len(files)}
    if not plain or len(plain) > 2:
        return None
    grep: dict[str, object] = {"pattern": plain[0]}
    if len(plain) == 2:
        grep["path"] = plain[1]
    names = sorted({line.split(":", 1)[0] for line in stdout.splitlines() if ":" in line})
    return "Grep", grep, {"filenames": names, "numFiles": len(names)}

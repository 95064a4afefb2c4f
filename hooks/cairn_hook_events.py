"""From a Claude Code hook payload to Cairn API requests, without an LLM.

Pure functions over the parsed payload (no I/O except the project-root walk and the transcript
size used in event ids), so they can be fuzzed alone.
"""

from __future__ import annotations

import os

from cairn_hook_excerpt import edit, head, output
from cairn_hook_privacy import clean, strip_private

FIELD_CHARS = 500  # default cap for each recorded field (CAIRN_HOOK_FIELD_CHARS)
TITLE_CHARS = 160
PROMPT_CHARS = 10_000
# The prompt's words a search for its context reads (its two ends past that: ends()).
QUERY_CHARS = 2_000
MAX_FILES = 50

FILE_WRITE = ("Write", "Edit", "MultiEdit", "NotebookEdit")
# A patch in the `*** Begin Patch` form (Codex CLI's and Copilot CLI's apply_patch): a file write.
PATCH = ("apply_patch",)
_PATCH_HEADS = ("*** Add File: ", "*** Update File: ", "*** Delete File: ", "*** Move to: ")
RESEARCH = ("Read", "Grep", "Glob", "LS", "Skill")
WEB = ("WebFetch", "WebSearch")
# Agent (and Task before it) delegates; Workflow runs a scripted multi-agent job; SendMessage
# continues an agent.
DELEGATION = ("Task", "Agent", "Workflow", "SendMessage")
# Cairn's own MCP tools: registered directly, or through the Claude Code plugin.
OWN_MCP_PREFIXES = ("mcp__cairn__", "mcp__plugin_cairn_")
# Tools whose calls say nothing worth remembering on their own.
PLAN_STATUSES = ("pending", "in_progress", "completed")
# The task tools (TaskCreate ...) become the session plan, not observations (cairn_hook_tasks).
NOISE = (
    "TodoRead",
    "BashOutput",
    "KillShell",
    "KillBash",
    "ListMcpResourcesTool",
    "ToolSearch",
    "ListAgents",
    "CronList",
    "TaskCreate",
    "TaskUpdate",
    "TaskGet",
    "TaskList",
    "TaskOutput",
    "TaskStop",
)


# --------------------------------------------------------------------------- text helpers
def as_text(value: object) -> str:
    """Any JSON value as text: strings as-is, content blocks joined, the rest as compact JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, (bool, int, float)):
        return str(value)
    if isinstance(value, list):
        parts = []
        for item in value:
            if isinstance(item, dict) and isinstance(item.get("text"), str):
                parts.append(item["text"])
            else:
                parts.append(as_text(item))
        return "\n".join(p for p in parts if p)
    if isinstance(value, dict):
        for key in ("text", "content", "result", "output"):
            inner = value.get(key)
            if isinstance(inner, (str, list)) and inner:
                return as_text(inner)
        from cairn_hook_io import dumps

        return dumps(value)
    return str(value)


def one_line(text: str, limit: int = TITLE_CHARS) -> str:
    """The first non-empty line, whitespace folded, cleaned and capped."""
    text = clean(strip_private(text)[: limit * 4])
    for line in text.splitlines():
        line = " ".join(line.split())
        if line:
            return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"
    return ""


def ends(text: str, limit: int) -> str:
    """A long prompt kept at both ends within `limit` characters: its start says what it is
    about, its end usually holds the question (a pasted log, then "why does this fail?")."""
    if len(text) <= limit:
        return text
    head_chars = (limit - 3) // 2
    tail_chars = limit - 3 - head_chars
    return text[:head_chars].rstrip() + " … " + text[-tail_chars:].lstrip()


# --------------------------------------------------------------------------- project identity
def project_root(cwd: str) -> str:
    """The top of the git repository containing cwd (a worktree maps to its main repository)."""
    if not cwd:
        return cwd
    path = os.path.abspath(cwd)
    probe = path
    while True:
        dot_git = os.path.join(probe, ".git")
        if os.path.isdir(dot_git):
            return probe
        if os.path.isfile(dot_git):
            main = _main_repository(probe, dot_git)
            return main or probe
        parent = os.path.dirname(probe)
        if parent == probe:
            return path
        probe = parent


def linked_git_dirs(work_tree: str, dot_git: str) -> tuple[str, str | None] | None:
    """A `.git` file (`gitdir: <path>`: a linked worktree or a submodule): its git dir and the
    common dir it shares with the main repository (None for a submodule, which has none)."""
    try:
        with open(dot_git, encoding="utf-8", errors="replace") as handle:
            line = handle.read(4096).strip()
    except OSError:
        return None
    if not line.startswith("gitdir:"):
        return None
    gitdir = os.path.normpath(os.path.join(work_tree, line[len("gitdir:") :].strip()))
    try:
        with open(os.path.join(gitdir, "commondir"), encoding="utf-8", errors="replace") as handle:
            common = handle.read(4096).strip()
    except OSError:
        return gitdir, None
    return gitdir, os.path.normpath(os.path.join(gitdir, common))


def _main_repository(work_tree: str, dot_git: str) -> str | None:
    """Resolve a `.git` file (`gitdir: ...`): linked worktrees point back to the main repo."""
    dirs = linked_git_dirs(work_tree, dot_git)
    if dirs is None or dirs[1] is None:
        return None  # a submodule (no commondir): it is its own project
    common = dirs[1]
    if os.path.basename(common) == ".git":
        return os.path.dirname(common)
    return None  # a bare main repository: keep the worktree itself


def relative_file(path: str, root: str, cwd: str) -> str:
    if not path:
        return path
    full = path if os.path.isabs(path) else os.path.normpath(os.path.join(cwd or root, path))
    if root and full == root.rstrip("/"):
        return ""  # the project itself (a Grep over "."), not a file
    if root and full.startswith(root.rstrip("/") + "/"):
        return os.path.relpath(full, root)
    return full


# --------------------------------------------------------------------------- event ids
def _digest(*parts: object) -> str:
    try:
        from _sha1 import sha1  # type: ignore[import-not-found]
    except ImportError:  # pragma: no cover
        from hashlib import sha1
    h = sha1()
    for part in parts:
        h.update(str(part).encode("utf-8", "surrogatepass"))
        h.update(b"\x1f")
    return str(h.hexdigest())[:20]


def transcript_size(payload: dict[str, object]) -> int:
    path = payload.get("transcript_path")
    if isinstance(path, str) and path:
        try:
            return os.stat(path).st_size
        except OSError:
            return -1
    return -1


def event_id(kind: str, payload: dict[str, object], *parts: object) -> str:
    """Deterministic per hook invocation: a spooled retry carries the same id (exactly once)."""
    session = str(payload.get("session_id") or "")[:80]
    tool_use = payload.get("tool_use_id")
    if kind == "tool" and isinstance(tool_use, str) and tool_use:
        return f"cc:{session}:{tool_use[:80]}"
    # Claude Code names each prompt (`prompt_id`, `promptId` in the transcript): the id the
    # transcript import gives the same prompt, so a session recorded live is not stored twice.
    prompt_id = payload.get("prompt_id")
    if kind in ("prompt", "answer") and isinstance(prompt_id, str) and prompt_id:
        # A turn's answer too: one per prompt, live or imported.
        return f"cc:{session}:{kind}:{prompt_id[:80]}"
    if kind == "answer":
        # Without a prompt id (Codex CLI, Gemini CLI): named by what it says, which the live hook
        # and the import of the agent's session file read alike.
        return f"cc:{session}:{kind}:{_digest(session, kind, *parts)}"
    return f"cc:{session}:{kind}:{_digest(session, kind, transcript_size(payload), *parts)}"


# --------------------------------------------------------------------------- observations
def _get(d: object, key: str) -> object:
    return d.get(key) if isinstance(d, dict) else None


def _str(d: object, key: str) -> str:
    value = _get(d, key)
    return value if isinstance(value, str) else ("" if value is None else as_text(value))


def _lines(text: str) -> int:
    return text.count("\n") + (1 if text and not text.endswith("\n") else 0)


def search_hits(results: object, limit: int = 10) -> list[str]:
    """`title - url` lines from WebSearch results (flat or nested in content blocks)."""
    hits: list[str] = []
    stack = list(results) if isinstance(results, list) else []
    while stack and len(hits) < limit:
        item = stack.pop(0)
        if isinstance(item, dict):
            url, name = item.get("url"), item.get("title")
            if isinstance(url, str) and url:
                hits.append(f"{name} - {url}" if isinstance(name, str) and name else url)
            inner = item.get("content")
            if isinstance(inner, list):
                stack[:0] = inner
    return hits


def agent_text(response: object) -> str:
    """What an agent answered: its text blocks (Agent's `content`), else the response as text."""
    blocks = _get(response, "content") if isinstance(response, dict) else response
    if isinstance(blocks, list):
        texts = [
            b["text"] for b in blocks if isinstance(b, dict) and isinstance(b.get("text"), str)
        ]
        if texts:
            return "\n".join(texts)
    return as_text(response) if response is not None else ""


NOTIFICATION_OPEN = "<task-notification>"


def task_notification(prompt: str) -> dict[str, str] | None:
    """The fields of a background task's `<task-notification>` prompt, or None for a real prompt."""
    text = prompt.strip()
    if not text.startswith(NOTIFICATION_OPEN):
        return None
    fields: dict[str, str] = {}
    for tag in ("task-id", "tool-use-id", "status", "summary", "result"):
        start = text.find(f"<{tag}>")
        end = text.find(f"</{tag}>", start + 1)
        if start >= 0 and end > start:
            fields[tag] = text[start + len(tag) + 2 : end].strip()
    return fields


# A closing message shorter than this many words ("Done.", "Fixed it.") says nothing to keep.
ANSWER_MIN_WORDS = 5


def answer(message: str, limit: int) -> dict[str, object] | None:
    """The agent's closing message of a turn as an `answer` observation, or None when it says
    too little. What it concluded (the cause found, the command that works, where a setting
    lives) is what a later prompt asks about, in the words the agent used to the user.

    Title: its first sentence (or line) within TITLE_CHARS; body: the rest, within `limit`
    characters (all of it when no sentence ends in time, the title then cut)."""
    text = strip_private(message or "").strip()
    if len(text.split()) < ANSWER_MIN_WORDS:
        return None
    first = text.split("\n", 1)[0]
    ends = [first.find(mark) + 1 for mark in (". ", "? ", "! ") if first.find(mark) > 0]
    end = min((e for e in ends if e <= TITLE_CHARS), default=0)
    if not end and len(first) <= TITLE_CHARS:
        end = len(first)
    if end:
        title, rest = " ".join(clean(text[:end]).split()), text[end:].strip()
    else:
        title, rest = one_line(text), text
    return {"type": "answer", "title": title, "body": head(rest, limit), "files": []}


def agent_result(
    notice: dict[str, str], payload: dict[str, object], field_chars: int = FIELD_CHARS
) -> dict[str, object]:
    """A background agent's result as an observation that points at its delegation."""
    session = payload.get("session_id")
    tool_use = notice.get("tool-use-id", "")
    summary = notice.get("summary") or f"Background task {notice.get('task-id', '')}".strip()
    status = notice.get("status", "")
    title = one_line(summary, TITLE_CHARS - 20) + (
        f" ({status})" if status and status != "completed" else ""
    )
    meta: dict[str, object] = {"source": "claude-code", "background_result": True}
    if tool_use:
        meta["tool_use_id"] = tool_use[:200]
        meta["result_of"] = f"cc:{session}:{tool_use[:80]}"
    if notice.get("task-id"):
        meta["agent_id"] = notice["task-id"][:200]
    result = head(notice.get("result", ""), field_chars)
    return {
        "type": "delegation",
        "title": title,
        "body": f"result: {result}" if result else "",
        "files": [],
        "tool_name": "Agent",
        "meta": meta,
        "event_id": f"cc:{session}:{tool_use[:80] or _digest(notice)}:result:"
        + _digest(notice.get("status"), result),
    }


def classify(tool_name: str) -> str | None:
    """The observation type for a tool, or None when the tool is never observed."""
    if tool_name.startswith(OWN_MCP_PREFIXES) or tool_name in NOISE or tool_name == "TodoWrite":
        return None
    if tool_name in FILE_WRITE:
        return "file_write"
    if tool_name in PATCH:
        return "patch"
    if tool_name == "Bash":
        return "command"
    if tool_name in RESEARCH:
        return "research"
    if tool_name in WEB:
        return "web"
    if tool_name in DELEGATION:
        return "delegation"
    if tool_name.startswith("mcp__"):
        return "mcp"
    return "other"


def exit_code(response: object, error: str) -> int | None:
    for key in ("exit_code", "exitCode", "returncode", "code"):
        value = _get(response, key)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    text = error or (response if isinstance(response, str) else "")
    marker = "Exit code "
    at = text.find(marker)
    if at >= 0:
        digits = ""
        for ch in text[at + len(marker) : at + len(marker) + 6]:
            if not ch.isdigit():
                break
            digits += ch
        if digits:
            return int(digits)
    if error:
        return 1
    return None


def observation(
    payload: dict[str, object],
    project: str,
    cwd: str,
    field_chars: int = FIELD_CHARS,
    source: str = "claude-code",
) -> dict[str, object] | None:
    """A PostToolUse / PostToolUseFailure payload as an observation body, or None to skip;
    `source` is the agent whose hook saw it (its payload already in Claude Code's shape)."""
    tool = payload.get("tool_name")
    if not isinstance(tool, str) or not tool:
        return None
    kind = classify(tool)
    if kind is None:
        return None
    tin = payload.get("tool_input")
    tin = tin if isinstance(tin, dict) else {}
    resp = payload.get("tool_response")
    error = _str(payload, "error")
    files: list[str] = []
    body: list[str] = []
    n = field_chars

    def add(label: str, text: str) -> None:
        if text:
            body.append(f"{label}: {text}")

    if kind == "patch":
        patch = _str(tin, "command") or _str(tin, "input") or _str(tin, "patch")
        files.extend(relative_file(p, project, cwd) for p in patch_files(patch))
        kind = "file_write"
        named = ", ".join(files[:3]) + (f" (+{len(files) - 3} more)" if len(files) > 3 else "")
        title = f"Patch {named}" if named else "Patch"
        # As an Edit reads: what each file lost and gained, not the patch's own syntax.
        changes = patch_changes(patch)
        share = n // max(1, min(len(changes), 3))
        for name, old, new in changes[:5]:
            label = f"{relative_file(name, project, cwd)} " if len(changes) > 1 else ""
            add(f"{label}old", head(old, share))
            add(f"{label}new", head(new, share))
    elif kind == "file_write":
        path = _str(tin, "file_path") or _str(tin, "notebook_path") or _str(tin, "path")
        rel = relative_file(path, project, cwd)
        if rel:
            files.append(rel)
        if tool == "Write":
            content = _str(tin, "content")
            title = f"Write {rel} ({_lines(content)} lines)"
            add("content", head(content, n))
        elif tool == "Edit":
            title = f"Edit {rel}" + (" (all occurrences)" if _get(tin, "replace_all") else "")
            old, new = edit(_str(tin, "old_string"), _str(tin, "new_string"), n)
            add("old", old)
            add("new", new)
        elif tool == "MultiEdit":
            edits = _get(tin, "edits")
            edits = edits if isinstance(edits, list) else []
            title = f"MultiEdit {rel} ({len(edits)} edit{'s' if len(edits) != 1 else ''})"
            for i, change in enumerate(edits[:5], 1):
                old, new = edit(_str(change, "old_string"), _str(change, "new_string"), n // 2)
                add(f"edit {i} old", old)
                add(f"edit {i} new", new)
        else:
            mode = _str(tin, "edit_mode") or "replace"
            cell = _str(tin, "cell_id")
            title = f"NotebookEdit {rel} ({mode}{' cell ' + cell if cell else ''})"
            add("source", head(_str(tin, "new_source"), n))
    elif kind == "command":
        command = _str(tin, "command")
        description = _str(tin, "description")
        # PostToolUseFailure says it at top level (no tool_response); PostToolUse in the response.
        interrupted = _get(resp, "interrupted") is True or payload.get("is_interrupt") is True
        # An interrupted command did not fail: its error is the interruption, not an exit code.
        code = exit_code(resp, "" if interrupted else error)
        said = one_line(description or command, TITLE_CHARS - 20)
        # "Run the tests" is a title already: "Run: Run the tests" said it twice.
        title = said if description and said.lower().startswith("run ") else "Run: " + said
        if code not in (None, 0):
            title += f" (exit {code})"
        elif interrupted:
            title += " (interrupted)"
        add("command", head(command, n))
        files.extend(command_files(command, project, cwd))
        if code is not None:
            body.append(f"exit code: {code}")
        stdout = _str(resp, "stdout") if isinstance(resp, dict) else as_text(resp)
        add("stdout", output(stdout, n))
        add("stderr", output(_str(resp, "stderr"), n))
        add("error", output(error, n))
    elif kind == "research":
        path = _str(tin, "file_path") or _str(tin, "path")
        rel = relative_file(path, project, cwd) if path else ""
        pattern = _str(tin, "pattern")
        if tool == "Skill":
            title = f"Use skill {one_line(_str(tin, 'skill') or _str(tin, 'command'), 80)}"
            add("args", head(_str(tin, "args"), n))
        elif tool == "Read":
            title = f"Read {rel}"
            offset, limit = _get(tin, "offset"), _get(tin, "limit")
            if isinstance(offset, int) or isinstance(limit, int):
                start = offset if isinstance(offset, int) and offset > 0 else 1
                if isinstance(limit, int) and limit > 0:
                    title += f" (lines {start}-{start + limit - 1})"
                else:
                    title += f" (from line {start})"
        elif tool == "Grep":
            title = f"Grep {one_line(pattern, 80)!r}" + (f" in {rel}" if rel else "")
            add("glob", _str(tin, "glob"))
            add("type", _str(tin, "type"))
        elif tool == "Glob":
            title = f"Glob {one_line(pattern, 80)}" + (f" in {rel}" if rel else "")
        else:
            title = f"LS {rel or '.'}"
        if rel:
            files.append(rel)
        # Paths and patterns only, never file contents.
        found = _get(resp, "filenames")
        if isinstance(found, list):
            count = _get(resp, "numFiles")
            add("matches", f"{count if isinstance(count, int) else len(found)} file(s)")
            names = [relative_file(str(f), project, cwd) for f in found[:20] if isinstance(f, str)]
            add("files", head(", ".join(names), n))
        elif tool == "Grep":
            count = _get(resp, "numFiles") or _get(resp, "numLines")
            if isinstance(count, int):
                add("matches", str(count))
    elif kind == "web":
        if tool == "WebSearch":
            query = _str(tin, "query")
            title = f"Search the web: {one_line(query, 120)}"
            add("query", head(query, n))
            hits = search_hits(_get(resp, "results"))
            if hits:
                add("results", head("\n".join(hits), n))
                resp = None  # the hits say it better than the raw JSON
        else:
            url = _str(tin, "url")
            title = f"Fetch {one_line(url, 140)}"
            add("url", head(url, n))
            add("prompt", head(_str(tin, "prompt"), n))
        add("excerpt", head(as_text(resp), n))
    elif kind == "delegation":
        agent = _str(tin, "subagent_type") or _str(tin, "to") or "agent"
        description = _str(tin, "description") or _str(tin, "summary") or _str(tin, "prompt")
        title = f"Delegate to {one_line(agent, 40)}: {one_line(description, 100)}"
        if _get(resp, "isAsync") is True:
            # Runs in the background; its result arrives later as a <task-notification>.
            title += " (in the background)"
            resp = None
        add("prompt", head(_str(tin, "prompt") or _str(tin, "message"), n))
        add("result", head(agent_text(resp), n))
    elif kind == "mcp":
        _, server, name = [*tool.split("__", 2), "", ""][:3]
        title = f"MCP {server}.{name}" if name else f"MCP {tool}"
        add("input", head(as_text(tin), n))
        add("result", head(as_text(resp), n))
    else:
        summary = ""
        for key in ("description", "command", "query", "url", "file_path", "prompt", "plan"):
            summary = _str(tin, key)
            if summary:
                break
        title = f"{tool}: {one_line(summary, 120)}" if summary else tool
        add("input", head(as_text(tin), n))
        add("result", head(as_text(resp), n))
    if error and kind != "command":
        add("error", head(error, n))
        title += " (failed)"

    meta: dict[str, object] = {"source": source}
    for key in ("tool_use_id", "prompt_id", "agent_id", "agent_type", "duration_ms"):
        value = payload.get(key)
        if isinstance(value, (str, int)) and not isinstance(value, bool):
            meta[key] = value if not isinstance(value, str) else value[:200]
    title = one_line(title) or tool
    return {
        "type": kind,
        "title": title,
        "body": "\n".join(body),
        "files": [f for f in files if 0 < len(f) <= 4096][:MAX_FILES],
        "tool_name": tool[:200],
        "meta": meta,
    }


# A command's words checked as files: past these, a long command's tail is not looked at.
COMMAND_WORDS = 24
_SHELL_MARKS = frozenset("|&;<>()$`*?[]{}")


def command_files(command: str, project: str, cwd: str) -> list[str]:
    """The project's files a shell command names (`cat a.py`, `pytest tests/test_a.py`,
    `sed -n 1,20p src/b.rs`): words that are paths of existing files (one stat each), so a
    command that reads or runs a file is found by its file as a Read is. Agents that read
    through the shell (Codex CLI) record their reads so."""
    found: list[str] = []
    for word in command.split()[:COMMAND_WORDS]:
        word = word.strip("'\"")
        if (
            not word
            or word.startswith("-")
            or "=" in word
            or not ("/" in word or "." in word)
            or any(c in _SHELL_MARKS for c in word)
        ):
            continue
        full = word if os.path.isabs(word) else os.path.join(cwd or project, word)
        if os.path.isfile(full):
            rel = relative_file(full, project, cwd)
            if rel and rel not in found:
                found.append(rel)
    return found


def patch_changes(patch: str) -> list[tuple[str, str, str]]:
    """Per file of a `*** Begin Patch` patch: its name, the lines it removes and the lines it
    adds (an added file's whole text is what it adds)."""
    out: list[tuple[str, list[str], list[str]]] = []
    for line in patch.splitlines():
        head_ = next((h for h in _PATCH_HEADS if line.startswith(h)), None)
        if head_ is not None:
            if head_ != "*** Move to: ":
                out.append((line[len(head_) :].strip(), [], []))
        elif out and line.startswith("-"):
            out[-1][1].append(line[1:])
        elif out and line.startswith("+"):
            out[-1][2].append(line[1:])
    return [(f, "\n".join(o).strip(), "\n".join(n).strip()) for f, o, n in out][:MAX_FILES]


def patch_files(patch: str) -> list[str]:
    """The files a `*** Begin Patch` patch adds, updates, deletes or moves to, in order."""
    found: list[str] = []
    for line in patch.splitlines():
        for head_ in _PATCH_HEADS:
            if line.startswith(head_):
                name = line[len(head_) :].strip()
                if name and name not in found:
                    found.append(name)
    return found[:MAX_FILES]


def plan(payload: dict[str, object], field_chars: int = FIELD_CHARS) -> list[dict[str, str]] | None:
    """TodoWrite's todo list as the session's current plan."""
    tin = payload.get("tool_input")
    todos = _get(tin, "todos")
    if not isinstance(todos, list):
        return None
    out: list[dict[str, str]] = []
    for todo in todos[:100]:
        if not isinstance(todo, dict):
            continue
        content = head(_str(todo, "content"), field_chars)
        if not content:
            continue
        status = _str(todo, "status")
        item = {"content": content, "status": status if status in PLAN_STATUSES else "pending"}
        active = head(_str(todo, "activeForm"), field_chars)
        if active:
            item["activeForm"] = active
        out.append(item)
    return out

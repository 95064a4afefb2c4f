"""The session plan from Claude Code's task tools (TaskCreate / TaskUpdate / TaskGet / TaskList).

TodoWrite sent the whole list on every call; the task tools send one change at a time, so the
hook keeps the session's tasks in $CAIRN_HOME/plans/<session>.json (under an exclusive lock:
parallel tool calls run their hooks at once) and sends the whole plan after each change. A
TaskList answer is a full snapshot and replaces what was kept. Stdlib only.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import time

TASK_TOOLS = ("TaskCreate", "TaskUpdate", "TaskGet", "TaskList")
STATUSES = ("pending", "in_progress", "completed")
MAX_TASKS = 100
STALE_SECONDS = 7 * 86400  # a plan file untouched this long belongs to a finished session


def _get(d: object, key: str) -> object:
    return d.get(key) if isinstance(d, dict) else None


def _text(value: object, chars: int) -> str:
    return value.strip()[:chars] if isinstance(value, str) else ""


def _task_id(value: object) -> str:
    if isinstance(value, bool):
        return ""
    if isinstance(value, (str, int)):
        return str(value).strip()[:64]
    return ""


Tasks = "dict[str, dict[str, str]]"  # a string: the hooks run on Python 3.8 too


def apply_change(tasks: Tasks, payload: dict[str, object], chars: int) -> bool:
    """Apply one task tool call to `tasks` (id -> task); True when the plan changed."""
    tool = payload.get("tool_name")
    tin, resp = payload.get("tool_input"), payload.get("tool_response")
    before = {tid: dict(task) for tid, task in tasks.items()}
    if tool == "TaskList":
        listed = _get(resp, "tasks")
        if not isinstance(listed, list):
            return False
        fresh: Tasks = {}
        for item in listed[:MAX_TASKS]:
            tid = _task_id(_get(item, "id"))
            subject = _text(_get(item, "subject"), chars)
            if tid and subject:
                fresh[tid] = {**tasks.get(tid, {}), "subject": subject}
                _set_status(fresh[tid], _get(item, "status"))
        tasks.clear()
        tasks.update(fresh)
    elif tool in ("TaskCreate", "TaskGet"):
        task = _get(resp, "task")
        tid = _task_id(_get(task, "id"))
        subject = _text(_get(task, "subject"), chars) or _text(_get(tin, "subject"), chars)
        if not tid or not subject:
            return False
        item = tasks.setdefault(tid, {"status": "pending"})
        item["subject"] = subject
        active = _text(_get(tin, "activeForm"), chars) if tool == "TaskCreate" else ""
        if active:
            item["activeForm"] = active
        _set_status(item, _get(task, "status"))
    elif tool == "TaskUpdate":
        tid = _task_id(_get(tin, "taskId")) or _task_id(_get(resp, "taskId"))
        if not tid or _get(resp, "success") is False:
            return False
        status = _get(tin, "status") or _get(_get(resp, "statusChange"), "to")
        if status == "deleted":
            tasks.pop(tid, None)
        else:
            item = tasks.setdefault(tid, {"status": "pending", "subject": f"Task #{tid}"})
            subject = _text(_get(tin, "subject"), chars)
            if subject:
                item["subject"] = subject
            active = _text(_get(tin, "activeForm"), chars)
            if active:
                item["activeForm"] = active
            _set_status(item, status)
    else:
        return False
    while len(tasks) > MAX_TASKS:
        tasks.pop(next(iter(tasks)))
    return tasks != before


def _set_status(item: dict[str, str], status: object) -> None:
    if isinstance(status, str) and status in STATUSES:
        item["status"] = status


def _order(tid: str) -> tuple[int, int, str]:
    return (0, int(tid), "") if tid.isdigit() else (1, 0, tid)


def as_plan(tasks: Tasks) -> list[dict[str, str]]:
    """The plan body PUT /api/sessions/{id}/plan takes, in task-number order."""
    plan = []
    for tid in sorted(tasks, key=_order):
        task = tasks[tid]
        item = {"content": task.get("subject", ""), "status": task.get("status", "pending")}
        if task.get("activeForm"):
            item["activeForm"] = task["activeForm"]
        plan.append(item)
    return plan


def plan_folder(home: str) -> str:
    return os.path.join(home, "plans")


def _state_path(home: str, session_id: str) -> str:
    name = hashlib.sha1(session_id.encode("utf-8", "surrogatepass")).hexdigest()[:24]
    return os.path.join(plan_folder(home), name + ".json")


def session_plan(home: str, payload: dict[str, object], chars: int) -> list[dict[str, str]] | None:
    """Apply this task tool call to the session's kept tasks; the whole plan when it changed."""
    import fcntl

    from cairn_hook_io import dumps, loads

    session_id = payload.get("session_id")
    if not isinstance(session_id, str) or not session_id:
        return None
    folder = plan_folder(home)
    os.makedirs(folder, mode=0o700, exist_ok=True)
    path = _state_path(home, session_id)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        raw = b""
        while True:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                break
            raw += chunk
        try:
            kept = loads(raw.decode("utf-8", "replace")) if raw else {}
        except ValueError:
            kept = {}  # a damaged state file: start the plan over
        tasks: Tasks = {}
        if isinstance(kept, dict):
            for tid, task in kept.items():
                if isinstance(task, dict):
                    tasks[str(tid)] = {str(k): str(v) for k, v in task.items()}
        if not apply_change(tasks, payload, chars):
            return None
        data = dumps(tasks).encode("utf-8")
        os.lseek(fd, 0, os.SEEK_SET)
        os.ftruncate(fd, 0)
        os.write(fd, data)
        return as_plan(tasks)
    finally:
        os.close(fd)


def forget_session(home: str, session_id: object) -> None:
    """At SessionEnd: drop the session's kept tasks, and any left by sessions long gone."""
    if isinstance(session_id, str) and session_id:
        with contextlib.suppress(OSError):
            os.unlink(_state_path(home, session_id))
    try:
        entries = list(os.scandir(plan_folder(home)))
    except OSError:
        return
    cutoff = time.time() - STALE_SECONDS
    for entry in entries:
        with contextlib.suppress(OSError):
            if entry.stat().st_mtime < cutoff:
                os.unlink(entry.path)

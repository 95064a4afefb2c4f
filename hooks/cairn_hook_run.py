"""What the hook does for each Claude Code event, within its time budget, exiting 0 always."""

from __future__ import annotations

import os
import sys
import time

import cairn_hook_io as io

EVENTS = {
    "session-start": "SessionStart",
    "user-prompt-submit": "UserPromptSubmit",
    "post-tool-use": "PostToolUse",
    "post-tool-use-failure": "PostToolUseFailure",
    "stop": "Stop",
    "subagent-stop": "SubagentStop",
    "pre-compact": "PreCompact",
    "post-compact": "PostCompact",
    "session-end": "SessionEnd",
}
# Whole-process budget per event in seconds (Claude Code's own timeout is set well above).
BUDGETS = {
    "SessionStart": 5.0,
    "UserPromptSubmit": 2.5,
    "PostToolUse": 1.0,
    "PostToolUseFailure": 1.0,
    "Stop": 3.0,
    "SubagentStop": 1.0,
    "PreCompact": 3.0,
    "PostCompact": 3.0,
    "SessionEnd": 2.0,
}
# How long an event waits for a worker it had to start (others spawn it and spool).
START_WAIT = {"SessionStart": 3.0, "UserPromptSubmit": 1.5}
# One write request is spooled past this (summaries and checkpoints are built in the request).
REQUEST_TIMEOUT = {"PostToolUse": 0.8, "PostToolUseFailure": 0.8, "SessionStart": 1.0}
SLOW_REQUEST_TIMEOUT = 2.5
CONTEXT_TIMEOUT = 1.5  # one context request (nothing is injected past this)
DEFAULT_MAX_STDIN = 8 * 1024 * 1024
MAX_CONTEXT_CHARS = 16_000
MAX_MESSAGE_CHARS = 4_000
MAX_SUMMARY_CHARS = 10_000
SAFETY = 0.15  # seconds kept back from the budget to spool and exit


# Seconds a spool write caught by the budget alarm still gets to finish.
WRITE_GRACE = 2.0


class BudgetExceeded(BaseException):
    """Raised by the interval timer when the event's budget runs out."""


class Request:
    __slots__ = ("answer", "body", "context", "method", "path")

    def __init__(self, method: str, path: str, body: dict[str, object] | None) -> None:
        self.method = method
        self.path = path
        self.body = body
        # A context request sent along with a prompt (never spooled: a replay injects nothing).
        self.context: dict[str, object] | None = None
        self.answer: object = None

    def sent_body(self) -> dict[str, object] | None:
        if self.context is None or self.body is None:
            return self.body
        return {**self.body, "context": self.context}

    def record(self, hook: str) -> dict[str, object]:
        return {
            "v": 1,
            "method": self.method,
            "path": self.path,
            "body": self.body,
            "hook": hook,
            "spooled_at": io.iso_now(),
        }


class Hook:
    def __init__(self, event: str, home: str) -> None:
        self.event = event
        self.home = home
        self.started = time.monotonic()
        self.deadline = self.started + BUDGETS.get(event, 1.0)
        self.pending: list[Request] = []
        self.agent = "claude-code"  # whose hook this is (cairn_hook_agents)
        self.worker: io.Worker | None = None
        self.spawned = False
        # While the event is held nowhere yet (being read and built into requests) or is being
        # written to the spool, the budget alarm waits: see on_alarm.
        self.holding = False
        self.extended = False  # this hold has had its one extension
        self.overdue = False  # the alarm came during a hold
        # CAIRN_AUTOSTART=0 (or "autostart": false in config.json): never start the worker.
        self.autostart = os.environ.get("CAIRN_AUTOSTART", "1").strip().lower() not in (
            "0",
            "false",
            "no",
            "off",
        )

    def on_alarm(self, signum: int, frame: object) -> None:
        """The budget timer's handler: ends the hook. A hold (the event being read and built,
        or written to the spool) gets one extension of WRITE_GRACE seconds to finish: ending it
        midway lost the event (a process that started late on a loaded machine) or spooled it
        twice. A hold still unfinished after that (stdin never closed, a lock never released)
        is given up: the agent never hangs."""
        if self.holding and not self.extended:
            self.extended = self.overdue = True
            try:
                import _signal

                _signal.setitimer(_signal.ITIMER_REAL, WRITE_GRACE)
            except (ImportError, AttributeError, ValueError, OSError):
                pass
            return
        raise BudgetExceeded

    def hold(self) -> None:
        self.holding, self.extended = True, False

    def release(self) -> None:
        """End a hold; a budget alarm that came during it takes effect now."""
        self.holding = False
        if self.overdue:
            self.overdue = False
            raise BudgetExceeded

    def remaining(self) -> float:
        return self.deadline - SAFETY - time.monotonic()

    # ------------------------------------------------------------------ worker
    def connect(self) -> io.Worker | None:
        """The worker, started if needed (waiting for it only where the event allows)."""
        worker = io.find_worker(self.home)
        if worker is not None:
            return worker
        return self.start_worker()

    def start_worker(self) -> io.Worker | None:
        child = None
        if not self.spawned and self.autostart:
            self.spawned = True
            try:
                child = io.spawn_worker(self.home)
            except Exception as exc:
                io.log(self.home, f"{self.event}: cannot start the worker: {exc!r}")
        wait = min(START_WAIT.get(self.event, 0.0), self.remaining())
        if wait <= 0:
            return None
        return io.wait_healthy(self.home, time.monotonic() + wait, child)

    def send_all(self) -> None:
        """Send pending writes in order; whatever cannot be delivered now goes to the spool."""
        while self.pending:
            request = self.pending[0]
            timeout = min(REQUEST_TIMEOUT.get(self.event, SLOW_REQUEST_TIMEOUT), self.remaining())
            if self.worker is None or timeout <= 0.02:
                break
            try:
                status, body = self.worker.request(
                    request.method, request.path, request.sent_body(), timeout
                )
            except io.Unavailable as exc:
                refused = "Refused" in str(exc) or "Errno 111" in str(exc)
                io.log(self.home, f"{self.event}: worker unavailable ({exc}); spooling")
                if refused and not self.spawned:
                    self.worker = self.start_worker()
                    if self.worker is not None:
                        continue
                self.worker = None
                break
            if status == 401 or (status >= 400 and not isinstance(body, dict)):
                # Not our worker (a stale worker.json and the port now someone else's) or a
                # token mismatch: keep the event and let a real worker start.
                bad_port = self.worker.port
                io.log(
                    self.home,
                    f"{self.event}: port {bad_port} is not a Cairn worker taking our token "
                    f"(HTTP {status}); spooling",
                )
                self.worker = None
                if not self.spawned:
                    worker = self.start_worker()
                    if worker is not None and worker.port != bad_port:
                        self.worker = worker
                        continue
                break
            if status >= 500 or status == 429:
                io.log(self.home, f"{self.event}: {request.path} answered {status}; spooling")
                break
            self.pending.pop(0)
            request.answer = body if status < 300 else None
            if status >= 400 and status != 404:
                io.log(self.home, f"{self.event}: {request.path} rejected: {status} {_msg(body)}")
        if not self.pending and self.worker is not None:
            self.nudge_replay()
        self.spool_pending()

    def nudge_replay(self) -> None:
        """The worker is back and a backlog waits: ask for a replay now (never waiting for it)."""
        try:
            if os.stat(os.path.join(io.spool_dir(self.home), io.SPOOL_FILE)).st_size == 0:
                return
        except OSError:
            return
        timeout = min(0.3, self.remaining())
        if self.worker is not None and timeout > 0.02:
            try:
                self.worker.request("POST", "/api/spool/replay", {"wait": False}, timeout)
            except io.Unavailable as exc:
                io.log(self.home, f"{self.event}: replay nudge not answered ({exc})")

    def spool_pending(self) -> None:
        if not self.pending:
            return
        # The budget alarm waits while the records go to disk and leave `pending` (on_alarm): an
        # alarm in between (a slow fsync under load) spooled them again from the handler, or lost
        # them when it struck in the grace write.
        self.hold()
        try:
            records = [r.record(self.event) for r in self.pending]
            io.spool_append(self.home, records)
            self.pending = []
        finally:
            self.holding = False
        self.release()
        if not self.spawned and self.autostart and io.find_worker(self.home) is None:
            self.spawned = True
            try:
                io.spawn_worker(self.home)  # it replays the spool when it starts
            except Exception as exc:
                io.log(self.home, f"{self.event}: cannot start the worker: {exc!r}")

    def context(self, params: dict[str, object], sent: Request | None = None) -> str:
        """The context `sent` was answered with, else GET /api/context; '' when refused,
        missing (404), slow or failing."""
        answer = sent.answer if sent is not None else None
        if isinstance(answer, dict) and isinstance(answer.get("context"), dict):
            status, body = 200, answer["context"]
        else:  # no prompt stored now, or a worker older than the one-call prompt
            timeout = min(CONTEXT_TIMEOUT, self.remaining())
            if self.worker is None or timeout <= 0.05:
                return ""
            try:
                status, body = self.worker.request(
                    "GET", "/api/context" + io.query_string(params), timeout=timeout
                )
            except io.Unavailable as exc:
                io.log(self.home, f"{self.event}: context unavailable ({exc})")
                return ""
        if status != 200 or not isinstance(body, dict) or body.get("refused") is True:
            if status not in (200, 404):
                io.log(self.home, f"{self.event}: context answered {status} {_msg(body)}")
            return ""
        text = body.get("text")
        return text.strip() if isinstance(text, str) else ""


def _msg(body: object) -> str:
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        return str(body["error"].get("message", ""))[:300]
    return ""


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in ("1", "true", "yes", "on")


# --------------------------------------------------------------------------- input
def read_stdin(cap: int) -> tuple[bytes, bool]:
    stream = getattr(sys.stdin, "buffer", None)
    if stream is None:
        return b"", False
    data = stream.read(cap + 1)
    return data[:cap], len(data) > cap


SALVAGE_KEYS = (
    "session_id",
    "transcript_path",
    "cwd",
    "hook_event_name",
    "tool_name",
    "tool_input",
    "tool_use_id",
    "agent_id",
    "source",
    "prompt",
)


def without_lone_surrogates(value: object) -> object:
    """Every string with each lone UTF-16 surrogate (JSON's `\\ud800`, as a tool output cut
    mid-character carries) replaced by U+FFFD: such a string cannot be encoded as UTF-8, so the
    worker refuses the whole event. A valid pair is one character once parsed: never touched."""
    import re

    lone = re.compile("[\ud800-\udfff]")

    def fix(item: object) -> object:
        if isinstance(item, str):
            return lone.sub("\ufffd", item)
        if isinstance(item, list):
            return [fix(v) for v in item]
        if isinstance(item, dict):
            return {fix(k): fix(v) for k, v in item.items()}
        return item

    return fix(value)


def _escaped_surrogate(text: str) -> bool:
    """Whether the JSON text may hold an escaped surrogate (`\\udXXX`): only then is the parsed
    value walked (most inputs never are)."""
    return "\\ud" in text or "\\uD" in text


def parse_payload(raw: bytes, truncated: bool) -> dict[str, object] | None:
    """The hook's JSON object; from a truncated one, the top-level fields that survived. Lone
    surrogates in its strings become U+FFFD (without_lone_surrogates)."""
    text = raw.decode("utf-8", "replace")
    payload = _parse(text, truncated)
    if payload is not None and _escaped_surrogate(text):
        fixed = without_lone_surrogates(payload)
        return fixed if isinstance(fixed, dict) else None
    return payload


def _parse(text: str, truncated: bool) -> dict[str, object] | None:
    if not truncated:
        try:
            value = io.loads(text)
        except ValueError:
            return None
        return value if isinstance(value, dict) else None
    out: dict[str, object] = {"_truncated": True}
    for key in SALVAGE_KEYS:
        at = text.find(f'"{key}"')
        if at < 0:
            continue
        colon = text.find(":", at + len(key) + 2)
        if colon < 0 or text[at + len(key) + 2 : colon].strip():
            continue
        start = colon + 1
        while start < len(text) and text[start] in io.WS:
            start += 1
        try:
            value, _ = io._scan(text, start) if io._scan else (None, 0)
        except Exception:
            continue
        out[key] = value
    return out if out.get("session_id") else None


# --------------------------------------------------------------------------- config
def team_database(cfg: dict[str, object]) -> bool:
    """A team database is set: CAIRN_DATABASE_URL, else "database_url" in config.json."""
    if os.environ.get("CAIRN_DATABASE_URL", "").strip():
        return True
    value = cfg.get("database_url")
    return isinstance(value, str) and bool(value.strip())


def config(home: str) -> dict[str, object]:
    value = io.read_json_file(os.path.join(home, "config.json"))
    return value if isinstance(value, dict) else {}


def excluded(paths: list[str], cfg: dict[str, object]) -> bool:
    """True when a project path matches an exclusion glob (config "exclude", CAIRN_EXCLUDE)."""
    patterns: list[str] = []
    raw = cfg.get("exclude")
    if isinstance(raw, list):
        patterns.extend(p for p in raw if isinstance(p, str) and p)
    env = os.environ.get("CAIRN_EXCLUDE", "")
    for chunk in env.replace(",", os.pathsep).split(os.pathsep):
        if chunk.strip():
            patterns.append(chunk.strip())
    if not patterns:
        return False
    from fnmatch import fnmatchcase

    for pattern in patterns:
        pattern = os.path.expanduser(pattern).rstrip("/") or "/"
        for path in paths:
            if path and (
                fnmatchcase(path, pattern) or fnmatchcase(path, pattern + "/*") or path == pattern
            ):
                return True
    return False


def field_chars(cfg: dict[str, object]) -> int:
    from cairn_hook_events import FIELD_CHARS

    value = cfg.get("hook_field_chars")
    default = value if isinstance(value, int) and value > 0 else FIELD_CHARS
    return io.env_int("CAIRN_HOOK_FIELD_CHARS", default)


# --------------------------------------------------------------------------- events
def session_path(payload: dict[str, object], suffix: str) -> str:
    return f"/api/sessions/{io.quote(str(payload.get('session_id')))}{suffix}"


def plan_requests(
    hook: Hook,
    payload: dict[str, object],
    project: str,
    cwd: str,
    chars: int,
    root: str | None = None,
) -> None:
    """Build hook.pending for the event (nothing here touches the network). `project` is the
    key it is stored under; `root` the repository folder file paths are relative to (the key
    itself unless a team database keys projects by their remote: cairn_hook_identity)."""
    import cairn_hook_events as ev
    import cairn_hook_tasks as tasks
    from cairn_hook_privacy import clean

    event = hook.event
    sid = payload.get("session_id")
    meta: dict[str, object] = {"source": hook.agent}
    agent_id = payload.get("agent_id")
    if isinstance(agent_id, str) and agent_id:
        meta["agent_id"] = agent_id[:200]
    if event == "SessionStart":
        model = payload.get("model")
        if isinstance(model, dict):
            model = model.get("id") or model.get("display_name")
        if isinstance(model, str) and model:
            meta["model"] = model[:200]
        source = payload.get("source")
        import cairn_hook_identity as identity

        body: dict[str, object] = {
            "session_id": sid,
            "project": project,
            "cwd": cwd[:4096],
            # Who the session's rows are by (the worker gives its prompts, observations,
            # summary and checkpoints this author): the checkout's git user.email, else the
            # OS user. Only here: PostToolUse's 1 s budget has no room for reading git config.
            "author": identity.author(root or project),
            "started_at": io.iso_now(),
            "event_id": ev.event_id("start", payload, source),
            "meta": meta,
        }
        if isinstance(source, str) and source:
            body["source"] = source[:64]
        hook.pending.append(Request("POST", "/api/sessions", body))
    elif event == "UserPromptSubmit":
        prompt = payload.get("prompt")
        text = ev.ends(clean(prompt).strip(), ev.PROMPT_CHARS) if isinstance(prompt, str) else ""
        notice = ev.task_notification(text)
        if notice is not None:
            # A background agent's result, delivered as a prompt the user never typed.
            obs = ev.agent_result(notice, payload, chars)
            obs.update({"project": project, "session_id": sid, "created_at": io.iso_now()})
            hook.pending.append(Request("POST", "/api/observations", obs))
        elif text:
            hook.pending.append(
                Request(
                    "POST",
                    "/api/prompts",
                    {
                        "session_id": sid,
                        "project": project,
                        "text": text,
                        "created_at": io.iso_now(),
                        "event_id": ev.event_id("prompt", payload, text),
                        "meta": meta,
                    },
                )
            )
    elif event in ("PostToolUse", "PostToolUseFailure"):
        tool = payload.get("tool_name")
        if tool == "TodoWrite" or tool in tasks.TASK_TOOLS:
            if event == "PostToolUse":
                todos = (
                    ev.plan(payload, chars)
                    if tool == "TodoWrite"
                    else tasks.session_plan(hook.home, payload, chars)
                )
                if todos is not None:
                    body = {
                        "plan": todos,
                        "project": project,
                        # A late spool replay of an older plan must not overwrite a newer one.
                        "updated_at": io.iso_now(),
                        "event_id": ev.event_id("tool", payload, "plan"),
                    }
                    hook.pending.append(Request("PUT", session_path(payload, "/plan"), body))
            return
        obs = ev.observation(payload, root or project, cwd, chars, hook.agent)
        if obs is None:
            if not isinstance(tool, str) or not tool:
                kind = type(tool).__name__ if tool is not None else "none"
                io.log(
                    hook.home, f"{event}: hook input without a tool_name string ({kind}); ignored"
                )
            return
        if payload.get("_truncated"):
            obs["body"] = (
                str(obs["body"]) + "\n(hook input over its size cap: output not recorded)"
            ).strip()
        obs.update(
            {
                "project": project,
                "session_id": sid,
                "created_at": io.iso_now(),
                "event_id": ev.event_id("tool", payload, obs["title"], obs["body"]),
            }
        )
        hook.pending.append(Request("POST", "/api/observations", obs))
    elif event == "Stop":
        body = {"event_id": ev.event_id("stop", payload)}
        message = payload.get("last_assistant_message")
        if not (isinstance(message, str) and message.strip()):
            # Older builds send no closing message: the transcript's last answer is it.
            from cairn_hook_transcript import last_assistant_text

            message = last_assistant_text(payload.get("transcript_path"), MAX_MESSAGE_CHARS * 2)
        if isinstance(message, str) and message.strip():
            body["last_assistant_message"] = ev.head(message, MAX_MESSAGE_CHARS)
        hook.pending.append(Request("POST", session_path(payload, "/summarize"), body))
        answer = ev.answer(message if isinstance(message, str) else "", MAX_MESSAGE_CHARS)
        if answer is not None:
            answer.update(
                {
                    "project": project,
                    "session_id": sid,
                    "created_at": io.iso_now(),
                    "event_id": ev.event_id("answer", payload, answer["title"], answer["body"]),
                    "meta": meta,
                }
            )
            hook.pending.append(Request("POST", "/api/observations", answer))
    elif event == "PreCompact":
        body = {"event_id": ev.event_id("compact", payload, payload.get("trigger"))}
        trigger = payload.get("trigger")
        if isinstance(trigger, str) and trigger:
            body["trigger"] = trigger[:64]
        instructions = payload.get("custom_instructions")
        if isinstance(instructions, str) and instructions.strip():
            body["custom_instructions"] = ev.head(instructions, MAX_MESSAGE_CHARS)
        hook.pending.append(Request("POST", session_path(payload, "/checkpoint"), body))
    elif event == "PostCompact":
        # The model's own summary of the compacted conversation enriches the checkpoint.
        summary = payload.get("compact_summary")
        if isinstance(summary, str) and summary.strip():
            body = {
                "event_id": ev.event_id("compact-summary", payload, payload.get("trigger")),
                "trigger": "compact",
                "compact_summary": ev.head(summary, MAX_SUMMARY_CHARS),
            }
            hook.pending.append(Request("POST", session_path(payload, "/checkpoint"), body))
    elif event == "SessionEnd":
        tasks.forget_session(hook.home, sid)
        body = {"event_id": ev.event_id("end", payload, payload.get("reason"))}
        reason = payload.get("reason")
        if isinstance(reason, str) and reason:
            body["reason"] = reason[:200]
        hook.pending.append(Request("POST", session_path(payload, "/end"), body))


def wrap_context(event: str, text: str, agent: str = "claude-code") -> str:
    """The context as the JSON the agent reads from the hook (its adapter: cairn_hook_agents)."""
    from cairn_hook_fence import CONTEXT_CLOSE, CONTEXT_OPEN, neutralise

    if len(text) > MAX_CONTEXT_CHARS:
        cut = text.rfind("\n", 0, MAX_CONTEXT_CHARS)
        text = text[: cut if cut > 0 else MAX_CONTEXT_CHARS]
    # No fence marker from stored text, in any spelling, may open or close the block (the
    # worker applies the same rule; this hook does not trust what it was sent).
    text = neutralise(text)
    context = f"{CONTEXT_OPEN}\n{text}\n{CONTEXT_CLOSE}"
    if agent != "claude-code":
        from cairn_hook_agents import render

        return render(agent, event, context)
    return io.dumps({"hookSpecificOutput": {"hookEventName": event, "additionalContext": context}})


def run(argv: list[str]) -> str:
    """Handle one event; returns what to print on stdout ('' for nothing)."""
    if _truthy(os.environ.get("CAIRN_DISABLED")):
        return ""
    home = io.cairn_home()
    agent = "claude-code"
    if any(arg.startswith("--agent") for arg in argv):  # another agent's hook (cairn_hook_agents)
        from cairn_hook_agents import agent_of, native_event

        agent, argv = agent_of(argv)
    name = argv[0] if argv else ""
    event = EVENTS.get(name.lower(), name if name in BUDGETS else "")
    if not event and agent != "claude-code":
        event = native_event(agent, name)
    hook = Hook(event or "PostToolUse", home)
    hook.agent = agent
    try:
        import _signal

        _signal.signal(_signal.SIGALRM, hook.on_alarm)
        _signal.setitimer(_signal.ITIMER_REAL, max(0.05, hook.deadline - time.monotonic()))
    except (ImportError, AttributeError, ValueError, OSError):
        pass
    try:
        return handle(hook, event)
    except BudgetExceeded:
        io.log(home, f"{hook.event}: budget exceeded; spooling what is left")
        try:
            _signal.setitimer(_signal.ITIMER_REAL, 0.5)  # the spool write gets a short grace
            hook.spool_pending()
        except BaseException:
            pass
        return ""
    finally:
        try:  # noqa: SIM105 - contextlib costs an import on the hot path
            _signal.setitimer(_signal.ITIMER_REAL, 0)
        except Exception:
            pass


def handle(hook: Hook, event: str) -> str:
    home = hook.home
    hook.hold()  # until the event is built into requests (released below, or the process ends)
    cap = io.env_int("CAIRN_HOOK_MAX_STDIN_BYTES", DEFAULT_MAX_STDIN)
    raw, truncated = read_stdin(cap)
    payload = parse_payload(raw, truncated)
    if payload is None:
        io.log(home, f"{event or '?'}: unreadable hook input ({len(raw)} bytes); ignored")
        return ""
    agent = hook.agent
    if not event:
        named = payload.get("hook_event_name")
        event = named if isinstance(named, str) and named in BUDGETS else ""
        if not event and agent != "claude-code":
            from cairn_hook_agents import native_event

            event = native_event(agent, named)
        if not event:
            shown = named if isinstance(named, str) else type(named).__name__
            io.log_once(
                home, f"event-{agent}-{shown}", f"{agent}: unknown hook event {shown!r}; ignored"
            )
            return ""
        hook.event = event
        hook.deadline = hook.started + BUDGETS[event]
    if truncated:
        io.log(home, f"{event}: input over {cap} bytes; only its small fields were kept")
    if agent != "claude-code":
        from cairn_hook_agents import translate

        payload = translate(agent, event, payload)
    sid = payload.get("session_id")
    if event == "SubagentStop":
        return ""
    if not isinstance(sid, str) or not sid.strip():
        kind = type(sid).__name__ if sid is not None else "none"
        io.log(home, f"{event}: hook input without a session_id string ({kind}); ignored")
        return ""
    payload["session_id"] = sid = io.route_safe_id(sid.strip()[:200])
    cfg = config(home)
    if cfg.get("disabled") is True:
        return ""
    if cfg.get("autostart") is False:
        hook.autostart = False
    cwd = payload.get("cwd")
    if not isinstance(cwd, str) or not cwd:
        cwd = os.environ.get("CLAUDE_PROJECT_DIR") or os.getcwd()
    import cairn_hook_events as ev

    root = ev.project_root(cwd)
    if excluded([cwd, root], cfg):
        return ""
    project = root
    if team_database(cfg):  # a project is keyed by its git remote (imported only then)
        import cairn_hook_identity as identity

        project = identity.project_key(root, True)
    plan_requests(hook, payload, project, cwd, field_chars(cfg), root)
    hook.release()
    injects = event in ("SessionStart", "UserPromptSubmit") and not payload.get("agent_id")
    if injects and agent != "claude-code":
        from cairn_hook_agents import injects as can_inject

        injects = can_inject(agent, event)
    if not hook.pending and not injects:
        return ""
    query = ""
    sent: Request | None = None
    if injects and event == "UserPromptSubmit":
        prompt = payload.get("prompt")
        from cairn_hook_privacy import clean

        query = ev.ends(clean(prompt).strip(), ev.QUERY_CHARS) if isinstance(prompt, str) else ""
        for request in hook.pending:
            if request.path == "/api/prompts" and request.body is not None:
                # One round trip: the prompt is stored and its context answered together.
                sent = request
                request.context = {} if request.body.get("text") == query else {"query": query}
    hook.worker = hook.connect()
    hook.send_all()
    if not injects or hook.worker is None:
        return ""
    params: dict[str, object] = {"project": project, "session_id": sid}
    if event == "SessionStart":
        params["source"] = payload.get("source") if isinstance(payload.get("source"), str) else ""
    else:
        if not query or ev.task_notification(query) is not None:
            return ""
        params["query"] = query
    text = hook.context(params, sent)
    return wrap_context(event, text, agent) if text else ""

"""`cairn mcp`: a stdio MCP server whose tools call the local worker's REST API.

Every tool answers plain text meant for the model: index lines `#id time TYPE title` that
`get_observations` expands, and errors that say what went wrong and what to do (the worker is
down, a route this worker lacks, a 4xx with the API's own message).
"""

from __future__ import annotations

import functools
import logging
import os
import threading
import time
import urllib.parse
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

import anyio.to_thread
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from worker import __version__
from worker.client import ApiError, WorkerDown, request
from worker.fence import neutralise
from worker.mcp_text import (
    format_hits,
    format_memory,
    format_observation,
    format_session,
    index_line,
)
from worker.paths import data_dir
from worker.project_identity import checkout_key, project_argument
from worker.settings import Settings, load_settings
from worker.team import database_url

log = logging.getLogger(__name__)

MemoryKind = Literal["lesson", "decision", "fact", "preference", "note"]
ObservationType = Literal[
    "file_write", "command", "research", "web", "delegation", "mcp", "note", "answer", "other"
]
SearchKind = Literal["observation", "memory", "prompt", "summary"]


# ------------------------------------------------------------------------------ project identity
def default_project(env: Mapping[str, str] | None = None, home: Path | None = None) -> str:
    """CAIRN_PROJECT, else the repository of the client's folder, keyed as the hooks key it
    (by its git remote when a team database is configured, worker/project_identity.py)."""
    env = os.environ if env is None else env
    if env.get("CAIRN_PROJECT"):
        return env["CAIRN_PROJECT"]
    home = home if home is not None else Path(env.get("CAIRN_HOME") or Path.home() / ".cairn")
    return checkout_key(env.get("CLAUDE_PROJECT_DIR") or os.getcwd(), bool(database_url(home, env)))


# ------------------------------------------------------------------------------------ the worker
class WorkerGateway:
    """Calls the worker; starts it once when it is down; turns failures into ToolErrors."""

    def __init__(self, settings: Settings, *, autostart: bool = True) -> None:
        self.settings = settings
        self.autostart = autostart
        self._start_lock = threading.Lock()
        self._last_start = 0.0

    def _ensure_started(self) -> bool:
        from worker.runtime import read_runtime
        from worker.spawn import StartFailed, start_worker

        with self._start_lock:
            if read_runtime(self.settings) is not None:
                return True
            if time.monotonic() - self._last_start < 30:
                return False  # tried moments ago: do not pile up spawns
            self._last_start = time.monotonic()
            try:
                start_worker(self.settings, timeout=15)
            except StartFailed as exc:
                raise WorkerDown(str(exc)) from None
            return True

    def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        query: Mapping[str, Any] | None = None,
    ) -> Any:
        if query:
            pairs = {k: _query_value(v) for k, v in query.items() if v is not None}
            if pairs:
                path += "?" + urllib.parse.urlencode(pairs)
        try:
            try:
                return request(self.settings, method, path, body, timeout=30)
            except WorkerDown:
                if not self.autostart or not self._ensure_started():
                    raise
                return request(self.settings, method, path, body, timeout=30)
        except WorkerDown as exc:
            raise ToolError(
                f"The Cairn worker is not running and could not be started ({exc}). "
                "Ask the user to run `cairn start` or `cairn doctor`; continue without memory."
            ) from None
        except ApiError as exc:
            raise ToolError(_api_error_text(method, path, exc)) from None

    async def acall(
        self,
        method: str,
        path: str,
        body: Any = None,
        query: Mapping[str, Any] | None = None,
    ) -> Any:
        return await anyio.to_thread.run_sync(lambda: self.call(method, path, body, query))


def _query_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        return ",".join(str(v) for v in value)
    return str(value)


def _api_error_text(method: str, path: str, exc: ApiError) -> str:
    route = path.split("?", 1)[0]
    error = exc.body.get("error") if isinstance(exc.body, dict) else None
    message = error.get("message") if isinstance(error, dict) else str(exc.body)[:300]
    field = error.get("field") if isinstance(error, dict) else None
    if exc.status == 404 and isinstance(message, str) and message.startswith("no route"):
        return (
            f"This Cairn worker has no {method} {route} endpoint (version mismatch or a feature "
            "not installed). Update Cairn and restart the worker with `cairn stop && cairn start`."
        )
    if exc.status in (401, 403):
        return (
            f"The Cairn worker refused the request ({exc.status}: {message}). The token file may "
            "have been rotated; restart the MCP server (reload it in the client)."
        )
    where = f" (field '{field}')" if field else ""
    return f"Cairn {method} {route} failed with HTTP {exc.status}{where}: {message}"


# ------------------------------------------------------------------------------------- the server
ToolAnswer = Callable[..., Awaitable[str]]


def fenced(fn: ToolAnswer) -> ToolAnswer:
    """A tool whose answer goes through the context fence rule: a search hit, an observation
    or a checkpoint holding `</cairn-context>` must not close the block the hooks inject."""

    @functools.wraps(fn)
    async def answer(*args: Any, **kwargs: Any) -> str:
        return neutralise(await fn(*args, **kwargs))

    return answer


def rules_text() -> str:
    try:
        return (data_dir("install") / "rules" / "cairn-rules.md").read_text(encoding="utf-8")
    except OSError:
        return "Cairn: long-term memory. Use search, then get_observations for details."


class CairnTools:
    """The MCP tools: each answers plain text for the model from one or a few worker calls.
    `here` is the project a call without `project` is about."""

    def __init__(self, gateway: WorkerGateway, here: str) -> None:
        self.gateway = gateway
        self.here = here

    def key_of(self, project_arg: str | None) -> str | None:
        """A project argument as the hooks store it: a checkout's path (or `.`) becomes its key."""
        if not project_arg:
            return None
        return project_argument(project_arg, bool(database_url(self.gateway.settings.home)))

    def project_scope(self, project_arg: str | None, all_projects: bool = False) -> str | None:
        return None if all_projects else (self.key_of(project_arg) or self.here)

    async def search(
        self,
        query: Annotated[str, Field(min_length=1, max_length=2000, description="What to look for")],
        limit: Annotated[int, Field(ge=1, le=50, description="Most results")] = 10,
        kind: Annotated[SearchKind | None, Field(description="Only this item kind")] = None,
        type: Annotated[
            ObservationType | None, Field(description="Only this observation type")
        ] = None,
        mode: Literal["hybrid", "keyword", "semantic"] = "hybrid",
        project: Annotated[
            str | None, Field(description="Project key or checkout path (default: this one)")
        ] = None,
        all_projects: Annotated[bool, Field(description="Search every project")] = False,
    ) -> str:
        data = await self.gateway.acall(
            "GET",
            "/api/search",
            query={
                "q": query,
                "limit": limit,
                "kind": kind,
                "type": type,
                "mode": mode,
                "project": self.project_scope(project, all_projects),
            },
        )
        return format_hits(data)

    async def get_observations(
        self,
        ids: Annotated[
            list[int], Field(min_length=1, max_length=50, description="Observation ids")
        ],
    ) -> str:
        data = await self.gateway.acall("GET", "/api/observations", query={"ids": ids})
        items = data.get("items") or []
        found = {int(o["id"]) for o in items}
        parts = [format_observation(o) for o in items]
        missing = [i for i in ids if i not in found]
        if missing:
            parts.append("Not found: " + ", ".join(f"#{i}" for i in missing))
        return "\n\n".join(parts)

    async def timeline(
        self,
        anchor_id: Annotated[int | None, Field(ge=1, description="Item id to centre on")] = None,
        anchor_kind: Annotated[
            SearchKind, Field(description="Kind of the anchor item")
        ] = "observation",
        before: Annotated[int, Field(ge=0, le=50)] = 5,
        after: Annotated[int, Field(ge=0, le=50)] = 5,
        project: Annotated[
            str | None, Field(description="Project key or checkout path (default: this one)")
        ] = None,
    ) -> str:
        query: dict[str, Any] = {"before": before, "after": after}
        if anchor_id is None:
            query.update(
                project=self.project_scope(project), before=max(before + after, 1), after=0
            )
        else:
            query.update(anchor_id=anchor_id, anchor_kind=anchor_kind, project=self.key_of(project))
        data = await self.gateway.acall("GET", "/api/timeline", query=query)
        lines = [index_line(item) for item in data.get("before") or []]
        if data.get("anchor"):
            lines.append("> " + index_line(data["anchor"]))
        lines.extend(index_line(item) for item in data.get("after") or [])
        return "\n".join(lines) if lines else "No activity recorded yet for this project."

    async def save_memory(
        self,
        content: Annotated[str, Field(min_length=1, max_length=10000, description="The memory")],
        kind: MemoryKind = "note",
        importance: Annotated[
            int | None, Field(ge=1, le=5, description="1 low .. 5 critical")
        ] = None,
        tags: Annotated[list[str] | None, Field(max_length=20)] = None,
        pinned: Annotated[bool, Field(description="Always include at session start")] = False,
        scope: Annotated[
            Literal["project", "global"], Field(description="This project only, or every project")
        ] = "project",
        project: Annotated[
            str | None, Field(description="Project key or checkout path (default: this one)")
        ] = None,
    ) -> str:
        body: dict[str, Any] = {"kind": kind, "content": content, "pinned": pinned}
        if scope == "global":
            body["scope"] = "global"
        else:
            body.update(scope="project", project=self.project_scope(project))
        if importance is not None:
            body["importance"] = importance
        if tags:
            body["tags"] = tags
        memory = await self.gateway.acall("POST", "/api/memories", body)
        return "Saved " + format_memory(memory)

    async def update_memory(
        self,
        id: Annotated[int, Field(ge=1, description="Memory id (memory:ID)")],
        content: Annotated[str | None, Field(min_length=1, max_length=10000)] = None,
        kind: MemoryKind | None = None,
        importance: Annotated[int | None, Field(ge=1, le=5)] = None,
        tags: Annotated[list[str] | None, Field(max_length=20)] = None,
        pinned: bool | None = None,
    ) -> str:
        changes = {
            k: v
            for k, v in {
                "content": content,
                "kind": kind,
                "importance": importance,
                "tags": tags,
                "pinned": pinned,
            }.items()
            if v is not None
        }
        if not changes:
            raise ToolError(
                "Nothing to update: give at least one of content, kind, importance, tags, pinned."
            )
        memory = await self.gateway.acall("PATCH", f"/api/memories/{int(id)}", changes)
        return "Updated " + format_memory(memory)

    async def forget(
        self,
        id: Annotated[int, Field(ge=1)],
        what: Literal["memory", "observation"] = "memory",
        permanent: bool = False,
    ) -> str:
        base = f"/api/{'memories' if what == 'memory' else 'observations'}/{int(id)}"
        if permanent:
            await self.gateway.acall("DELETE", base)
            return f"Deleted {what} {id} permanently."
        await self.gateway.acall("POST", f"{base}/archive", {})
        return (
            f"Archived {what} {id}: hidden from search and context (restorable in the dashboard)."
        )

    async def report_use(
        self,
        id: Annotated[int, Field(ge=1, description="The item's id (memory:ID, #ID)")],
        outcome: Literal["used", "ignored", "contradicted"],
        what: Literal["memory", "observation", "summary", "prompt"] = "memory",
        evidence: Annotated[str | None, Field(max_length=200)] = None,
    ) -> str:
        body: dict[str, Any] = {"outcome": outcome}
        if evidence:
            body["evidence"] = evidence
        found = await self.gateway.acall("POST", f"/api/use/{what}/{int(id)}", body)
        return f"Recorded: {what} {id} {found['outcome']} ({found['evidence']})."

    async def get_context(
        self,
        query: Annotated[str | None, Field(max_length=2000)] = None,
        budget: Annotated[int | None, Field(ge=50, le=20000, description="Token budget")] = None,
        project: Annotated[
            str | None, Field(description="Project key or checkout path (default: this one)")
        ] = None,
    ) -> str:
        data = await self.gateway.acall(
            "GET",
            "/api/context",
            query={
                "project": self.project_scope(project),
                "query": query,
                "budget": budget,
            },
        )
        text = str(data.get("text") or "").strip()
        if not text:
            return "Nothing relevant in memory for this" + (" query." if query else " project yet.")
        return text

    async def resume_session(
        self,
        session_id: Annotated[str | None, Field(description="A specific session")] = None,
        project: Annotated[
            str | None, Field(description="Project key or checkout path (default: this one)")
        ] = None,
    ) -> str:
        if session_id:
            return format_session(
                await self.gateway.acall(
                    "GET", f"/api/sessions/{urllib.parse.quote(session_id, safe='')}"
                )
            )
        listing = await self.gateway.acall(
            "GET", "/api/sessions", query={"project": self.project_scope(project), "limit": 10}
        )
        sessions = listing.get("items") or []
        if not sessions:
            return "No earlier session recorded for this project."
        fallback: dict[str, Any] | None = None
        for item in sessions:
            sid = urllib.parse.quote(str(item["id"]), safe="")
            detail = await self.gateway.acall("GET", f"/api/sessions/{sid}")
            if detail.get("checkpoint") or detail.get("summary"):
                return format_session(detail)
            if fallback is None and (detail.get("prompts") or detail.get("observations")):
                fallback = detail
        return format_session(fallback or sessions[0])

    async def report(
        self,
        days: Annotated[int, Field(ge=1, le=365)] = 7,
        project: Annotated[
            str | None, Field(description="Project key or checkout path (default: this one)")
        ] = None,
    ) -> str:
        key = self.project_scope(project)
        try:
            data = await self.gateway.acall(
                "GET", "/api/report", query={"project": key, "since": f"{days}d", "format": "json"}
            )
        except ToolError as exc:
            if "HTTP 404 (field 'project')" in str(exc):
                return f"Nothing recorded yet for project {key}."
            raise
        text = data.get("markdown") if isinstance(data, Mapping) else None
        return str(text or "Nothing happened in this period.")


# Every tool the server offers: the CairnTools method and the description the model reads.
TOOLS: tuple[tuple[str, str], ...] = (
    (
        "search",
        "Search Cairn's memory of earlier sessions (observations, memories, prompts, "
        "summaries) with hybrid keyword + semantic ranking. Returns index lines; expand #ids "
        "with get_observations.",
    ),
    (
        "get_observations",
        "Full details (body, files, tool, session) of observations by id: the #ids in "
        "search results, timelines and the context Cairn injected.",
    ),
    (
        "timeline",
        "What happened around one item (observations, prompts, summaries and memories "
        "just before and after it in the same project), or the latest activity of a project.",
    ),
    (
        "save_memory",
        "Save a durable memory: a decision and its reason, a lesson from a bug, a user "
        "preference or a project fact. One self-contained statement; never secrets.",
    ),
    ("update_memory", "Correct or refine an existing memory (only the fields given change)."),
    (
        "forget",
        "Forget a memory or an observation: archived (hidden from search and context, "
        "restorable) by default, deleted for good with permanent=true.",
    ),
    (
        "report_use",
        "Tell Cairn what became of something it injected: used (it helped), ignored, or "
        "contradicted (it is wrong or outdated). Cairn ranks what helps higher next time.",
    ),
    (
        "get_context",
        "The context Cairn would inject now: with a query, the memories relevant to it "
        "within a token budget (empty when nothing is relevant); without, the session-start brief.",
    ),
    (
        "resume_session",
        "Where the last session stopped: its checkpoint, summary, plan, last prompts and "
        "actions. Call at the start of a task or when the user says continue.",
    ),
    (
        "report",
        "A progress report over recent sessions of this project (what was done, "
        "decisions, open threads).",
    ),
)


def build_server(gateway: WorkerGateway, project: str | None = None) -> MCPServer[Any]:
    server: MCPServer[Any] = MCPServer(
        "cairn", instructions=rules_text(), version=__version__, log_level="WARNING"
    )
    tools = CairnTools(gateway, project or default_project(home=gateway.settings.home))
    for name, description in TOOLS:
        server.tool(description=description)(fenced(getattr(tools, name)))
    return server


def run(settings: Settings | None = None) -> int:
    """Serve MCP over stdin/stdout until the client closes the pipe."""
    settings = settings or load_settings()
    logging.basicConfig(level=logging.WARNING, format="cairn-mcp %(levelname)s %(message)s")
    server = build_server(WorkerGateway(settings))
    server.run("stdio")
    return 0

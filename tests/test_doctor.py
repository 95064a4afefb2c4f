"""`cairn doctor`: each check fails with its fix on a broken install, and passes on a good one."""

from __future__ import annotations

import importlib.util
import json
import socket
from pathlib import Path

import pytest

from worker.cli import main
from worker.cli.doctor import Check, run_checks
from worker.settings import Settings, load_settings
from worker.store import Store


@pytest.fixture
def free_port(monkeypatch: pytest.MonkeyPatch) -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    monkeypatch.setenv("CAIRN_PORT", str(port))
    return port


def checks(settings: Settings | None = None) -> dict[str, Check]:
    return {c.name: c for c in run_checks(settings or load_settings())}


def make_db(settings: Settings) -> None:
    store = Store(settings.db_path)
    store.open()
    store.close()


def test_a_fresh_machine_says_what_to_run(
    user_home: Path, project_cwd: Path, free_port: int, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["doctor"]) == 1
    out = capsys.readouterr().out
    assert "[FAIL] worker" in out and "fix: cairn start" in out
    assert "[FAIL] hooks" in out and "fix: cairn install" in out
    assert f"127.0.0.1:{free_port} is free" in out
    assert out.strip().splitlines()[-1] == "some checks failed: run the fixes above"


def test_json_output_lists_every_check(
    user_home: Path, project_cwd: Path, free_port: int, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["doctor", "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] is False
    names = [c["name"] for c in report["checks"]]
    assert names == [
        "worker",
        "port",
        "token",
        "permissions",
        "hooks",
        "agents",
        "interpreter",
        "mcp",
        "model",
        "database",
        "spool",
        "recovery",
        "team",
    ]
    assert all(set(c) == {"name", "status", "detail", "fix"} for c in report["checks"])
    assert all(c["fix"] for c in report["checks"] if c["status"] == "fail")


def test_hooks_pass_after_install_and_fail_when_the_script_moves(
    user_home: Path,
    project_cwd: Path,
    free_port: int,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert main(["install", "--no-start"]) == 0
    result = checks()
    assert result["hooks"].status == "ok", result["hooks"]
    assert result["interpreter"].status == "ok"
    settings_file = user_home / ".claude" / "settings.json"
    text = settings_file.read_text().replace("/hooks/cairn_hook.py", "/gone/cairn_hook.py")
    settings_file.write_text(text)
    hooks = checks()["hooks"]
    assert hooks.status == "fail" and "does not exist" in hooks.detail
    assert hooks.fix.startswith("cairn install")


def test_missing_events_are_named(user_home: Path, project_cwd: Path, free_port: int) -> None:
    assert main(["install", "--no-start"]) == 0
    settings_file = user_home / ".claude" / "settings.json"
    data = json.loads(settings_file.read_text())
    del data["hooks"]["PreCompact"]
    settings_file.write_text(json.dumps(data))
    hooks = checks()["hooks"]
    assert hooks.status == "fail" and "PreCompact" in hooks.detail


def test_invalid_settings_json_is_reported(
    user_home: Path, project_cwd: Path, free_port: int
) -> None:
    path = user_home / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_text("{oops")
    hooks = checks()["hooks"]
    assert hooks.status == "fail" and "not valid JSON" in hooks.detail


def test_plugin_install_counts_as_registered(
    user_home: Path, project_cwd: Path, free_port: int
) -> None:
    path = user_home / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_text(json.dumps({"enabledPlugins": {"cairn@local": True}}))
    assert checks()["hooks"].status == "ok"


def test_token_mode_is_checked(user_home: Path, project_cwd: Path, free_port: int) -> None:
    settings = load_settings()
    settings.home.mkdir(parents=True)
    settings.token_path.write_text("secret\n")
    settings.token_path.chmod(0o644)
    token = checks()["token"]
    assert token.status == "fail" and "0644" in token.detail and "chmod 600" in token.fix
    settings.token_path.chmod(0o600)
    assert checks()["token"].status == "ok"


def test_database_integrity_and_moved_aside_files(
    user_home: Path, project_cwd: Path, free_port: int
) -> None:
    settings = load_settings()
    make_db(settings)
    assert checks()["database"].status == "ok"
    settings.db_path.write_bytes(b"SQLite format 3\x00" + b"\xff" * 4096)
    database = checks()["database"]
    assert database.status == "fail" and "cairn stop && cairn start" in database.fix
    aside = settings.home / "cairn.db.corrupt-20261202T120000Z"
    aside.write_bytes(b"junk")
    recovery = checks()["recovery"]
    assert recovery.status == "warn" and str(aside) in recovery.detail


def test_with_a_team_database_the_local_file_is_not_promised(
    user_home: Path, project_cwd: Path, free_port: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = load_settings()
    monkeypatch.setenv("CAIRN_DATABASE_URL", "postgresql://ann:s3cret@127.0.0.1:1/cairn")
    database = checks(settings)["database"]
    assert database.status == "ok" and "not created yet" not in database.detail
    assert "team database postgresql://ann:***@127.0.0.1:1/cairn" in database.detail
    assert "s3cret" not in database.detail and "not used" not in database.detail
    make_db(settings)  # a file left from before joining the team
    database = checks(settings)["database"]
    assert f"{settings.db_path} (from before) is not used" in database.detail


def test_spool_backlog_is_counted(user_home: Path, project_cwd: Path, free_port: int) -> None:
    settings = load_settings()
    settings.spool_dir.mkdir(parents=True)
    (settings.spool_dir / "events-1.jsonl").write_text('{"a":1}\n{"a":2}\n\n')
    (settings.spool_dir / "events-2.jsonl").write_text('{"a":3}\n')
    spool = checks()["spool"]
    assert spool.status == "fail" and "3 events waiting" in spool.detail
    assert spool.fix.startswith("cairn start")


def test_a_taken_port_is_reported(
    user_home: Path, project_cwd: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        monkeypatch.setenv("CAIRN_PORT", str(listener.getsockname()[1]))
        result = checks()["port"]
    assert result.status == "warn" and "taken by another program" in result.detail
    assert "will use a free port" in result.detail


def test_model_check_follows_the_settings(
    user_home: Path,
    project_cwd: Path,
    free_port: int,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert "CAIRN_EMBED_ENABLED=0" in checks()["model"].detail  # tests run with it off
    monkeypatch.setenv("CAIRN_EMBED_ENABLED", "1")
    assert checks()["model"].status == "ok"  # the [model] extra is installed here
    real_find_spec = importlib.util.find_spec
    with monkeypatch.context() as patch:
        patch.setattr(
            importlib.util,
            "find_spec",
            lambda name, *a: None if name == "onnx" else real_find_spec(name, *a),
        )
        model = checks()["model"]  # the int8 copy is the default
        assert model.status == "warn" and "int8 copy cannot be built" in model.detail
        patch.setenv("CAIRN_EMBED_QUANTIZE", "0")
        model = checks()["model"]
        assert model.status == "warn" and "leaner copy" in model.detail
    monkeypatch.setenv("CAIRN_EMBED_MODEL_PATH", str(tmp_path / "nowhere"))
    model = checks()["model"]
    assert model.status == "fail" and "model.onnx is missing" in model.detail


def test_mcp_registrations_are_listed_and_checked(
    user_home: Path, project_cwd: Path, free_port: int
) -> None:
    assert "not registered" in checks()["mcp"].detail
    assert main(["install", "--no-start", "--no-hooks", "--mcp", "--editor", "cursor"]) == 0
    mcp = checks()["mcp"]
    assert mcp.status == "ok" and "Claude Code, Cursor" in mcp.detail
    path = user_home / ".cursor" / "mcp.json"
    data = json.loads(path.read_text())
    data["mcpServers"]["cairn"]["command"] = "/gone/python"
    path.write_text(json.dumps(data))
    mcp = checks()["mcp"]
    assert mcp.status == "fail" and "Cursor: /gone/python is missing" in mcp.detail
    claude = user_home / ".claude.json"
    data = json.loads(claude.read_text())
    data["mcpServers"]["cairn"]["args"] = ["-m", "worker", "mcp"]  # as installs before -P wrote
    claude.write_text(json.dumps(data))
    mcp = checks()["mcp"]
    assert mcp.status == "fail" and "Claude Code: an older entry without -P" in mcp.detail
    assert "cairn install" in mcp.fix


def test_a_team_database_is_named_with_its_password_masked(
    user_home: Path,
    project_cwd: Path,
    free_port: int,
    isolated_home: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv(
        "CAIRN_DATABASE_URL",
        f"postgresql://ann:s3cret@127.0.0.1:{free_port}/cairn?connect_timeout=3",
    )
    main(["doctor", "--json"])
    report = json.loads(capsys.readouterr().out)
    [team] = [c for c in report["checks"] if c["name"] == "team"]
    assert team["status"] == "fail" and "postgresql://ann:***@127.0.0.1" in team["detail"]
    assert "unreachable" in team["detail"] and "s3cret" not in json.dumps(team)
    main(["doctor"])
    assert "s3cret" not in capsys.readouterr().out


@pytest.mark.postgres
def test_doctor_says_what_the_worker_will_do_with_vectors_not_what_the_server_has(
    user_home: Path,
    project_cwd: Path,
    free_port: int,
    isolated_home: Path,
    pg_url: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """pgvector is installed on the server, but this role may not create the extension (no
    superuser, no CREATE on the database): the worker compares vectors itself, and doctor says
    so, in the words of `cairn team status`."""
    import psycopg

    role = "cairn_no_create"
    with psycopg.connect(pg_url, autocommit=True) as conn:
        if not conn.execute(
            "SELECT 1 FROM pg_available_extensions WHERE name = 'vector'"
        ).fetchone():
            pytest.skip("this server has no pgvector: there is nothing for a role to be refused")
        conn.execute(
            f"DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{role}') "
            f"THEN CREATE ROLE {role} LOGIN; END IF; END $$"
        )
        conn.execute(f"GRANT USAGE, CREATE ON SCHEMA public TO {role}")  # its tables only
        may = conn.execute(
            "SELECT has_database_privilege(%s, current_database(), 'CREATE')", (role,)
        ).fetchone()
        assert may is not None and may[0] is False
    monkeypatch.setenv("CAIRN_DATABASE_URL", pg_url.replace("://postgres@", f"://{role}@", 1))
    assert main(["team", "status"]) == 0
    said = capsys.readouterr().out
    assert "vectors: worker (numpy): pgvector is installed but this database role may not" in said
    main(["doctor", "--json"])
    [team] = [c for c in json.loads(capsys.readouterr().out)["checks"] if c["name"] == "team"]
    assert team["status"] == "warn" and "pgvector available" not in team["detail"]
    assert "vectors: worker (numpy): pgvector is installed but this database role" in team["detail"]
    assert "CREATE EXTENSION vector" in team["fix"]


def test_folders_0700_is_true_of_every_folder_and_the_worker_makes_it_so(
    user_home: Path, project_cwd: Path, free_port: int
) -> None:
    """models/ (assembled with mkdir) and cache/ (the hooks' bytecode, made by Python) were 0755
    while doctor said 'its folders 0700'. Doctor now checks every folder in the home, and a
    starting worker tightens them."""
    from starlette.testclient import TestClient

    from worker.app import create_app

    settings = load_settings()
    for name in ("models", "cache"):
        (settings.home / name).mkdir(parents=True, mode=0o755)
        (settings.home / name).chmod(0o755)
    seen = checks(settings)["permissions"]
    assert seen.status == "fail" and "models 0755" in seen.detail and "cache 0755" in seen.detail
    assert "chmod 700" in seen.fix
    with TestClient(create_app(settings)):
        pass
    for name in ("models", "cache"):
        assert (settings.home / name).stat().st_mode & 0o777 == 0o700
    assert checks(settings)["permissions"].status == "ok"


def test_other_agents_hooks_are_checked(
    user_home: Path, project_cwd: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def agents() -> dict[str, str]:
        main(["doctor", "--json"])
        report = json.loads(capsys.readouterr().out)
        return next(c for c in report["checks"] if c["name"] == "agents")  # type: ignore[no-any-return]

    assert agents()["status"] == "ok"
    assert main(["install", "--no-start", "--agent", "codex", "--agent", "gemini"]) == 0
    capsys.readouterr()
    check = agents()
    assert check["status"] == "ok", check
    assert "Codex CLI (7 events" in check["detail"] and "Gemini CLI (5 events" in check["detail"]
    # Codex skips hooks it was not told to trust: the trust block gone is a failure.
    config = user_home / ".codex" / "config.toml"
    config.write_text("")
    check = agents()
    assert check["status"] == "fail" and "not trusted" in check["detail"]
    assert check["fix"] == "cairn install --agent NAME"
    settings = user_home / ".gemini" / "settings.json"
    settings.write_text("{not json")
    assert "Gemini CLI" in agents()["detail"]

"""Project identity across machines: a git remote normalised to host/path (worker and hooks twins)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from tests.examples import examples
from tests.hook_modules import identity as hooks
from tests.hook_modules import run as hook_run
from worker import project_identity as ours
from worker.mcp_server import default_project

SAME_REPOSITORY = [
    "git@github.com:acme/app.git",
    "git@github.com:acme/app",
    "github.com:acme/app.git",
    "ssh://git@github.com/acme/app.git",
    "ssh://git@github.com:22/acme/app.git",
    "ssh://git@ssh.github.com:443/acme/app.git",
    "git+ssh://git@github.com/acme/app",
    "https://github.com/acme/app.git",
    "https://github.com/acme/app/",
    "https://alice@github.com/acme/app.git",
    "https://alice:ghp_SECRETtoken@github.com/acme/app.git",
    "http://github.com/acme/app",
    "git://github.com/acme/app.git",
    "HTTPS://GitHub.com/Acme/App.git",
    "  https://www.github.com//acme/./app.git  ",
]

OTHER_FORMS = {
    # GitLab subgroups keep every level of the path.
    "git@gitlab.com:group/sub/app.git": "gitlab.com/group/sub/app",
    "https://gitlab.com/group/sub/app": "gitlab.com/group/sub/app",
    "ssh://git@altssh.gitlab.com:443/group/sub/app.git": "gitlab.com/group/sub/app",
    # A self-hosted server on a custom ssh port: the port is not part of the identity.
    "ssh://git@git.example.org:2222/team/app.git": "git.example.org/team/app",
    "https://git.example.org/team/app": "git.example.org/team/app",
    # Azure DevOps, four spellings of one repository.
    "git@ssh.dev.azure.com:v3/org/proj/app": "dev.azure.com/org/proj/app",
    "https://org@dev.azure.com/org/proj/_git/app": "dev.azure.com/org/proj/app",
    "https://org.visualstudio.com/proj/_git/app": "dev.azure.com/org/proj/app",
    "https://org.visualstudio.com/DefaultCollection/proj/_git/app": "dev.azure.com/org/proj/app",
    "org@vs-ssh.visualstudio.com:v3/org/proj/app": "dev.azure.com/org/proj/app",
    # Percent-encoding in a URL reads as the character.
    "https://example.org/team/my%20app.git": "example.org/team/my app",
}

NOT_REMOTES = [
    "",
    "   ",
    "/srv/git/app.git",
    "../app.git",
    "./app",
    "~/repos/app.git",
    "file:///srv/git/app.git",
    "C:/repos/app",
    "C:\\repos\\app",
    "https://github.com",
    "https://github.com/",
    "git@github.com:",
    "codecommit::us-east-1://app",
    "https://github.com:notaport/acme/app",
    "ftp://example.org/app.git",
    "https://example.org/a/../../etc",
    "git@github.com:acme/app.git\nurl = evil",
]


@pytest.mark.parametrize("url", SAME_REPOSITORY)
def test_every_spelling_of_one_repository_is_one_key(url: str) -> None:
    assert ours.remote_key(url) == "github.com/acme/app"
    assert hooks.remote_key(url) == "github.com/acme/app"


@pytest.mark.parametrize(("url", "key"), OTHER_FORMS.items())
def test_other_hosts_and_forms(url: str, key: str) -> None:
    assert ours.remote_key(url) == key == hooks.remote_key(url)


@pytest.mark.parametrize("url", NOT_REMOTES)
def test_local_paths_and_malformed_urls_name_no_shared_repository(url: str) -> None:
    assert ours.remote_key(url) is None
    assert hooks.remote_key(url) is None


_LOWER = "abcdefghijklmnopqrstuvwxyz0123456789"
_LABEL = st.text(_LOWER, min_size=1, max_size=10)
_SEGMENT = st.text(_LOWER + "ABCXYZ_-.", min_size=1, max_size=15).filter(
    lambda s: not s.lower().endswith(".git") and s.strip(".") and not s.startswith("-")
)
# A token the key could never hold by chance: `~` is in no host or path segment drawn here.
_SECRET = st.text(_LOWER, min_size=6, max_size=20).map(lambda s: f"~{s}~")


@hsettings(max_examples=examples(200))
@given(
    host=st.lists(_LABEL, min_size=2, max_size=3).map(".".join),
    path=st.lists(_SEGMENT, min_size=1, max_size=4),
    user=st.text("abcdefgh", min_size=1, max_size=8),
    secret=_SECRET,
    port=st.integers(1, 65535),
)
def test_ssh_scp_and_https_forms_are_equal_and_carry_no_credentials(
    host: str, path: list[str], user: str, secret: str, port: int
) -> None:
    joined = "/".join(path)
    forms = [
        f"{user}@{host}:{joined}.git",
        f"{host}:{joined}",
        f"ssh://{user}@{host}:{port}/{joined}.git",
        f"https://{user}:{secret}@{host}/{joined}.git",
        f"https://{host.upper()}/{joined}/",
        f"git://{host}/{joined}",
    ]
    keys = {ours.remote_key(form) for form in forms} | {hooks.remote_key(f) for f in forms}
    expected = ours._canonical(host, joined)
    assert keys == {expected}
    assert expected is not None
    assert expected == expected.lower() and "//" not in expected and not expected.endswith(".git")
    assert "~" not in expected  # the password never reaches the key
    assert ":" not in expected.split("/", 1)[0] and "@" not in expected
    # A key read back as a URL is itself.
    assert ours.remote_key("https://" + expected) == expected


@hsettings(max_examples=examples(300))
@given(st.text(max_size=120))
def test_the_twins_agree_on_any_text_and_never_raise(text: str) -> None:
    assert ours.remote_key(text) == hooks.remote_key(text)
    assert ours.config_value(text, "remote", "origin", "url") == hooks.config_value(
        text, "remote", "origin", "url"
    )


def test_git_config_values_are_read_as_git_reads_them() -> None:
    config = """
[core]
\trepositoryformatversion = 0
[remote "upstream"]
\turl = git@github.com:other/app.git
[remote "Origin"]
\turl = git@github.com:wrong/case.git
[Remote "origin"] ; section names are case-insensitive, subsections are not
\tfetch = +refs/heads/*:refs/remotes/origin/*
\tURL = "git@github.com:acme/app.git" # a comment
\turl = git@github.com:second/url.git
"""
    assert ours.config_value(config, "remote", "origin", "url") == "git@github.com:acme/app.git"
    old_style = "[remote.origin]\n  url = https://github.com/acme/app ; old syntax\n"
    assert ours.config_value(old_style, "remote", "origin", "url") == "https://github.com/acme/app"
    escaped = '[remote "origin"]\n url = "https://h/a\\"b" ; c\n'
    assert ours.config_value(escaped, "remote", "origin", "url") == 'https://h/a"b'
    assert ours.config_value('[remote "origin"]\n', "remote", "origin", "url") is None
    assert ours.config_value("garbage [[[ = =", "remote", "origin", "url") is None


def _git(*args: str, cwd: Path) -> None:
    subprocess.run(
        ["git", "-c", "user.email=t@example.org", "-c", "user.name=t", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
    )


@pytest.fixture
def repos(tmp_path: Path) -> dict[str, Path]:
    """Real repositories made by git: with an origin, its linked worktree, one without a remote."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    main = tmp_path / "app"
    main.mkdir()
    _git("init", "-q", cwd=main)
    _git("remote", "add", "origin", "git@github.com:Acme/App.git", cwd=main)
    _git("commit", "-q", "--allow-empty", "-m", "first", cwd=main)
    _git("worktree", "add", "-q", str(tmp_path / "app-feature"), cwd=main)
    lone = tmp_path / "lone"
    lone.mkdir()
    _git("init", "-q", cwd=lone)
    return {"main": main, "worktree": tmp_path / "app-feature", "lone": lone}


@pytest.mark.parametrize("module", [ours, hooks], ids=["worker", "hooks"])
def test_a_team_keys_a_repository_by_origin_and_local_users_keep_paths(
    repos: dict[str, Path], module: object
) -> None:
    key = module.project_key  # type: ignore[attr-defined]
    # A linked worktree reads its main repository's config (the hooks map it to the main root).
    assert module.origin_url(str(repos["worktree"])) == "git@github.com:Acme/App.git"  # type: ignore[attr-defined]
    assert key(str(repos["main"]), True) == "github.com/acme/app"
    assert key(str(repos["main"]), False) == str(repos["main"])
    assert key(str(repos["lone"]), True) == str(repos["lone"])  # no remote: the path
    assert key(str(repos["lone"].parent), True) == str(repos["lone"].parent)  # not a repository


def test_the_hooks_know_a_team_database_from_the_environment_or_config(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert hook_run.team_database({}) is False
    assert hook_run.team_database({"database_url": "  "}) is False
    assert hook_run.team_database({"database_url": 5}) is False
    assert hook_run.team_database({"database_url": "postgresql://db/cairn"}) is True
    monkeypatch.setenv("CAIRN_DATABASE_URL", "postgresql://db/cairn")
    assert hook_run.team_database({}) is True


def test_mcp_default_project_is_keyed_like_the_hooks(
    repos: dict[str, Path], isolated_home: Path
) -> None:
    env = {"CLAUDE_PROJECT_DIR": str(repos["main"]), "CAIRN_HOME": str(isolated_home)}
    assert default_project(env) == str(repos["main"])
    assert default_project({**env, "CAIRN_DATABASE_URL": "postgresql://db/x"}) == (
        "github.com/acme/app"
    )
    isolated_home.mkdir(parents=True, exist_ok=True)
    (isolated_home / "config.json").write_text(json.dumps({"database_url": "postgresql://db/x"}))
    assert default_project(env, home=isolated_home) == "github.com/acme/app"

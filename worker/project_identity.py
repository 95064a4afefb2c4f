"""Project identity across machines: a repository named by its normalised git remote.

On a team database a project is keyed by its `origin` remote as `host/path` (ssh, scp-like and
https forms equal, no user, port or `.git`), falling back to its path; local users keep path keys.
Twin: hooks/cairn_hook_identity.py (stdlib-only hooks import nothing from here; same rules, held
equal by tests/test_project_identity.py).
"""

from __future__ import annotations

import getpass
import os
import re
from urllib.parse import unquote, urlsplit

MAX_CONFIG_BYTES = 1_000_000
MAX_AUTHOR_CHARS = 320
# Transports whose address names a host; `file://`, local paths and transport helpers
# (`codecommit::...`) name nothing a teammate shares.
NETWORK_SCHEMES = ("ssh", "git+ssh", "ssh+git", "git", "http", "https")
# Hosts that serve the same repositories as another host under a second name.
HOST_ALIASES = {
    "ssh.github.com": "github.com",  # GitHub's ssh over port 443
    "www.github.com": "github.com",
    "altssh.gitlab.com": "gitlab.com",  # GitLab's ssh over port 443
    "www.gitlab.com": "gitlab.com",
    "altssh.bitbucket.org": "bitbucket.org",
    "www.bitbucket.org": "bitbucket.org",
}
# scp-like syntax, as git reads it: [user@]host:path, with no slash before the colon.
_SCP = re.compile(r"^(?:[^@/]*@)?(?P<host>[^/:]+):(?P<path>.*)$")


def project_key(root: str, team: bool) -> str:
    """The key a project is stored under: its root path, or on a team database its remote."""
    if not team or not root:
        return root
    url = origin_url(root)
    return (remote_key(url) if url else None) or root


def project_root(cwd: str) -> str:
    """The repository that contains `cwd` (a worktree maps to its main repository), else cwd.

    The same rule, on the same un-resolved absolute path, as the hook's project identity
    (hooks/cairn_hook_events.py), so the CLI, MCP calls and hooks name a project alike."""
    path = os.path.abspath(cwd)
    probe = path
    while True:
        dot_git = os.path.join(probe, ".git")
        if os.path.isdir(dot_git):
            return probe
        if os.path.isfile(dot_git):
            return _worktree_main(probe, dot_git) or probe
        parent = os.path.dirname(probe)
        if parent == probe:
            return path
        probe = parent


def _worktree_main(work_tree: str, dot_git: str) -> str | None:
    dirs = linked_git_dirs(work_tree, dot_git)
    if dirs is None or dirs[1] is None:
        return None  # not a linked worktree (a submodule is its own project)
    common = dirs[1]
    return os.path.dirname(common) if os.path.basename(common) == ".git" else None


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


def checkout_key(path: str, team: bool) -> str:
    """The key the hooks store the checkout holding `path` under: the repository's root path,
    or on a team database its remote (falling back to that path)."""
    return project_key(project_root(path), team)


def project_argument(text: str, team: bool) -> str:
    """A project named on the command line or by a model: an existing folder (a checkout, `.`,
    `~/app`) is keyed as the hooks key it (checkout_key); anything else is a key as given
    (`github.com/acme/app`, the path of a checkout since removed)."""
    path = os.path.expanduser(text)
    return checkout_key(path, team) if os.path.isdir(path) else text


def remote_key(url: str) -> str | None:
    """`host/path` for a network git remote (lower-case, no user, port or `.git`), else None."""
    url = url.strip()
    if not url or any(ch in url for ch in "\n\r\t\0"):
        return None
    if "://" in url:
        try:
            parts = urlsplit(url)
            parts.port  # noqa: B018 - raises ValueError on a malformed port
        except ValueError:
            return None
        if parts.scheme.lower() not in NETWORK_SCHEMES:
            return None
        host = parts.hostname or ""
        path = unquote(parts.path)
    else:
        match = _SCP.match(url)
        if match is None or "::" in url:
            return None
        host = match.group("host")
        path = match.group("path")
        if len(host) == 1 and path.startswith(("\\", "/")):
            return None  # a Windows drive (C:/repos/app), not a host
        host = host.strip("[]")
    return _canonical(host, path)


def _canonical(host: str, path: str) -> str | None:
    host = host.lower().rstrip(".")
    if not host or any(ch in host for ch in " /\\@"):
        return None
    host = HOST_ALIASES.get(host, host)
    segments = [s for s in path.replace("\\", "/").lower().split("/") if s not in ("", ".")]
    if segments and segments[-1].endswith(".git"):
        segments[-1] = segments[-1][: -len(".git")]
    segments = [s for s in segments if s]
    host, segments = _azure(host, segments)
    if not segments or ".." in segments:
        return None
    return host + "/" + "/".join(segments)


def _azure(host: str, segments: list[str]) -> tuple[str, list[str]]:
    """Azure DevOps names one repository four ways: all become dev.azure.com/org/project/repo."""
    if host in ("ssh.dev.azure.com", "vs-ssh.visualstudio.com") and segments[:1] == ["v3"]:
        return "dev.azure.com", segments[1:]
    if host.endswith(".visualstudio.com") and host != "vs-ssh.visualstudio.com":
        org = host[: -len(".visualstudio.com")]
        rest = segments[1:] if segments[:1] == ["defaultcollection"] else segments
        return _azure("dev.azure.com", [org, *rest])
    if host == "dev.azure.com" and len(segments) == 4 and segments[2] == "_git":
        return host, [segments[0], segments[1], segments[3]]
    return host, segments


# --------------------------------------------------------------------------- author
def author(root: str | None) -> str:
    """Who a row is by: git `user.email` (the repository's, else the user's global setting, as
    git itself ranks them), else the OS user name."""
    for path in _author_configs(root):
        try:
            with open(path, encoding="utf-8", errors="replace") as handle:
                email = config_value(handle.read(MAX_CONFIG_BYTES), "user", None, "email")
        except OSError:
            continue
        email = "".join(ch for ch in (email or "") if ch.isprintable()).strip()
        if email:
            return email[:MAX_AUTHOR_CHARS]
    try:
        return getpass.getuser()[:MAX_AUTHOR_CHARS] or "unknown"
    except (OSError, KeyError, ImportError):
        return "unknown"


def _author_configs(root: str | None) -> list[str]:
    """git config files holding user.email, the one that wins first."""
    paths = []
    local = _config_path(root) if root else None
    if local:
        paths.append(local)
    home = os.path.expanduser("~")
    paths.append(os.environ.get("GIT_CONFIG_GLOBAL") or os.path.join(home, ".gitconfig"))
    xdg = os.environ.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
    paths.append(os.path.join(xdg, "git", "config"))
    return paths


# --------------------------------------------------------------------------- git config
def origin_url(root: str) -> str | None:
    """The `origin` remote's URL in the repository at `root` (read from its config file)."""
    path = _config_path(root)
    if path is None:
        return None
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            text = handle.read(MAX_CONFIG_BYTES)
    except OSError:
        return None
    return config_value(text, "remote", "origin", "url")


def _config_path(root: str) -> str | None:
    dot_git = os.path.join(root, ".git")
    if os.path.isdir(dot_git):
        return os.path.join(dot_git, "config")
    if not os.path.isfile(dot_git):
        return None
    # A worktree or submodule: `gitdir: <path>`; a worktree shares its main's config.
    dirs = linked_git_dirs(root, dot_git)
    if dirs is None:
        return None
    gitdir, common = dirs
    return os.path.join(common or gitdir, "config")


_SECTION = re.compile(r'^\[\s*([A-Za-z0-9.-]+)(?:\s+"((?:[^"\\]|\\.)*)")?\s*\]')
_ESCAPES = {"n": "\n", "t": "\t", "b": "\b", '"': '"', "\\": "\\"}


def config_value(text: str, section: str, subsection: str | None, key: str) -> str | None:
    """The first value of section[.subsection].key in git config text (None when absent)."""
    current: tuple[str, str | None] | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("["):
            match = _SECTION.match(line)
            if match is None:
                current = None
                continue
            name, sub = match.group(1), match.group(2)
            if sub is not None:
                current = (name.lower(), re.sub(r"\\(.)", r"\1", sub))
            elif "." in name:  # the old [remote.origin] form: subsection lower-cased
                head, _, tail = name.partition(".")
                current = (head.lower(), tail.lower())
            else:
                current = (name.lower(), None)
            line = line[match.end() :].strip()
            if not line:
                continue
        if current != (section, subsection):
            continue
        name, sep, value = line.partition("=")
        if name.strip().lower() == key and sep:
            return _unquote(value)
    return None


def _unquote(value: str) -> str:
    """A git config value: quotes joined, escapes read, a # or ; outside quotes ends it."""
    out: list[str] = []
    quoted = False
    i = 0
    while i < len(value):
        ch = value[i]
        if ch == "\\" and i + 1 < len(value):
            out.append(_ESCAPES.get(value[i + 1], value[i + 1]))
            i += 2
            continue
        if ch == '"':
            quoted = not quoted
        elif ch in "#;" and not quoted:
            break
        else:
            out.append(ch)
        i += 1
    return "".join(out).strip()

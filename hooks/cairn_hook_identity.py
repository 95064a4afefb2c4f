"""Project identity across machines: a repository named by its normalised git remote.

A local worker keys a project by its repository's absolute path, which differs on every
machine. On a team database (CAIRN_DATABASE_URL, or "database_url" in config.json) the key is
the `origin` remote normalised to `host/path` (`git@github.com:Acme/App.git`,
`ssh://git@github.com/acme/app`, `https://user@github.com/acme/app.git` are all
`github.com/acme/app`), falling back to the path for a repository without one (the hook
imports this module for keys only then: local users keep their path keys). Also who a session
is by: `author()`, read at SessionStart.

Twin: worker/project_identity.py (same rules; tests/test_project_identity.py holds them equal).
"""

from __future__ import annotations

import os
import re

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


def remote_key(url: str) -> str | None:
    """`host/path` for a network git remote (lower-case, no user, port or `.git`), else None."""
    from urllib.parse import unquote, urlsplit  # only on a team database: hooks start fast

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
    """Who a row is by: CAIRN_AUTHOR if set (the worker's rule too), else git `user.email` (the
    repository's, else the user's global setting, as git itself ranks them), else the OS user."""
    chosen = "".join(ch for ch in os.environ.get("CAIRN_AUTHOR", "") if ch.isprintable()).strip()
    if chosen:
        return chosen[:MAX_AUTHOR_CHARS]
    for path in _author_configs(root):
        try:
            with open(path, encoding="utf-8", errors="replace") as handle:
                email = config_value(handle.read(MAX_CONFIG_BYTES), "user", None, "email")
        except OSError:
            continue
        email = "".join(ch for ch in (email or "") if ch.isprintable()).strip()
        if email:
            return email[:MAX_AUTHOR_CHARS]
    import getpass

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
    import cairn_hook_events as ev

    dirs = ev.linked_git_dirs(root, dot_git)  # a worktree shares its main's config
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

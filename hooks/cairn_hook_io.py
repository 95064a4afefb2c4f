"""Plumbing for the hook: fast JSON, loopback HTTP, worker discovery and start, the spool, the log.

Stdlib only, and only the cheap parts of it: `_json`, `_socket` and `os` load in about a
millisecond, where `json` + `http.client` cost twenty. This module runs on every tool call.
"""

from __future__ import annotations

import os
import sys
import time

try:
    import _json

    class _ScanContext:
        strict = False
        object_hook = None
        object_pairs_hook = None
        parse_float = float
        parse_int = int
        parse_constant = float
        memo: dict[str, object] = {}  # noqa: RUF012 - read by the C scanner

    _scan = _json.make_scanner(_ScanContext())
    _encode = _json.make_encoder(
        None, str, _json.encode_basestring_ascii, None, ":", ",", False, True, True
    )
except (ImportError, AttributeError):  # pragma: no cover - non-CPython
    _scan = None
    _encode = None

WS = " \t\n\r"

# Limits, overridable through the environment (documented in docs/hooks.md).
DEFAULT_SPOOL_MAX_BYTES = 50 * 1024 * 1024
LOG_MAX_BYTES = 1024 * 1024
MAX_RESPONSE_BYTES = 4 * 1024 * 1024


class Unavailable(Exception):
    """The worker cannot be reached, timed out, or is not there at all."""


def env_int(name: str, default: int) -> int:
    raw = os.environ.get(name, "")
    try:
        value = int(raw)
    except ValueError:
        return default
    return value if value > 0 else default


# --------------------------------------------------------------------------- JSON
def loads(text: str) -> object:
    """json.loads without importing json (raises ValueError on anything malformed)."""
    if _scan is None:  # pragma: no cover
        import json

        return json.loads(text)
    start = 0
    n = len(text)
    while start < n and text[start] in WS:
        start += 1
    try:
        value, end = _scan(text, start)
    except StopIteration:
        raise ValueError("not JSON") from None
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None
    except Exception as exc:  # JSONDecodeError comes from json.decoder, imported lazily
        raise ValueError(str(exc)) from None
    while end < n and text[end] in WS:
        end += 1
    if end != n:
        raise ValueError(f"extra data at {end}")
    return value


def dumps(value: object) -> str:
    """Compact ASCII JSON (lone surrogates and all non-ASCII escaped: always encodable)."""
    if _encode is None:  # pragma: no cover
        import json

        return json.dumps(value, ensure_ascii=True, separators=(",", ":"), default=str)
    return "".join(_encode(value, 0))


def read_json_file(path: str) -> object:
    try:
        with open(path, "rb") as handle:
            raw = handle.read(1024 * 1024)
        return loads(raw.decode("utf-8", "replace"))
    except (OSError, ValueError):
        return None


# --------------------------------------------------------------------------- time, log
def iso_now() -> str:
    now = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + f".{int(now * 1000) % 1000:03d}Z"


def cairn_home() -> str:
    home = os.environ.get("CAIRN_HOME")
    if home:
        return os.path.expanduser(home)
    return os.path.join(os.path.expanduser("~"), ".cairn")


def ensure_home(home: str, *names: str) -> str:
    """$CAIRN_HOME 0700 (created so, or tightened with a log line if other users could read it),
    then each named folder in it; returns the last. The hooks' copy of worker/home.py."""
    path = home
    for path in (home, *(os.path.join(home, name) for name in names)):
        os.makedirs(path, mode=0o700, exist_ok=True)
        mode = os.stat(path).st_mode & 0o777
        if mode & 0o077:
            os.chmod(path, 0o700)
            log(home, f"{path} had mode {mode:04o} (other users could read it); tightened to 0700")
    return path


def replace_file(path: str, text: str) -> None:
    """Write `path` atomically through a 0600 temp file that no planted link can redirect
    (O_EXCL on an unguessable name)."""
    tmp = f"{path}.{os.getpid()}.{os.urandom(6).hex()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with open(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        try:  # noqa: SIM105 - no contextlib import on the hook's path
            os.unlink(tmp)
        except OSError:
            pass
        raise


def log(home: str, message: str) -> None:
    """Append one line to $CAIRN_HOME/logs/hooks.log (rotated at 1 MiB); never raises."""
    try:
        folder = ensure_home(home, "logs")
        path = os.path.join(folder, "hooks.log")
        try:
            if os.stat(path).st_size > LOG_MAX_BYTES:
                os.replace(path, path + ".1")
        except OSError:
            pass
        line = f"{iso_now()} pid={os.getpid()} {message}\n"
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, line.encode("utf-8", "replace"))
        finally:
            os.close(fd)
    except Exception:
        pass


def log_once(home: str, key: str, message: str) -> None:
    """log() the first time `key` is seen (an unknown event a newer agent sends on every call
    would fill the log): the keys seen are marker files in $CAIRN_HOME/logs/seen/."""
    try:
        folder = ensure_home(home, "logs", os.path.join("logs", "seen"))
        name = "".join(c if c.isalnum() or c in "-_." else "_" for c in key)[:120]
        fd = os.open(os.path.join(folder, name), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.close(fd)
    except FileExistsError:
        return
    except Exception:
        pass
    log(home, message)


# --------------------------------------------------------------------------- HTTP
_SAFE = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~/")


# The worker's rule for a new session id (worker/ops/fields.py, SESSION_ID_PATTERN): it must
# round-trip through /api/sessions/{id}/<one of these>.
SESSION_SUBROUTES = ("checkpoint", "checkpoints", "end", "plan", "summarize", "summary")


def _id_char_ok(ch: str) -> bool:
    return ch != "\\" and " " <= ch != "\x7f" and not "\ud800" <= ch <= "\udfff"


def _id_round_trips(text: str) -> bool:
    segments = text.split("/")
    return (
        all(_id_char_ok(ch) for ch in text)
        and not any(seg in ("", ".", "..") for seg in segments)
        and (len(segments) == 1 or segments[-1] not in SESSION_SUBROUTES)
    )


def route_safe_id(text: str, limit: int = 200) -> str:
    """A session id the worker accepts: the id itself when it round-trips through the session
    routes (Claude Code's UUIDs always do), else the id with each "/" and unsafe character
    replaced and a digest of the original appended, so distinct ids stay distinct."""
    if _id_round_trips(text):
        return text
    import hashlib

    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    safe = "".join(ch if ch != "/" and _id_char_ok(ch) else "_" for ch in text)
    return safe[: limit - len(digest) - 1] + "-" + digest


def quote(text: str) -> str:
    return "".join(
        chr(b) if b in _SAFE else f"%{b:02X}" for b in text.encode("utf-8", "surrogatepass")
    )


def query_string(params: dict[str, object]) -> str:
    parts = [f"{quote(k)}={quote(str(v))}" for k, v in params.items() if v not in (None, "")]
    return "?" + "&".join(parts) if parts else ""


class Worker:
    """Where the running worker listens and the token to talk to it."""

    def __init__(self, port: int, token: str) -> None:
        self.port = port
        self.token = token

    def request(
        self, method: str, path: str, body: object = None, timeout: float = 1.0
    ) -> tuple[int, object]:
        """One HTTP/1.1 exchange over a fresh loopback connection; raises Unavailable."""
        import _socket

        payload = b"" if body is None else dumps(body).encode("ascii")
        head = (
            f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\n"
            f"Authorization: Bearer {self.token}\r\nUser-Agent: cairn-hook\r\n"
            "Accept: application/json\r\nConnection: close\r\n"
        )
        if body is not None:
            head += f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\n"
        data = head.encode("latin-1") + b"\r\n" + payload
        sock = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
        try:
            sock.settimeout(max(0.01, timeout))
            sock.connect(("127.0.0.1", self.port))
            sock.sendall(data)
            chunks: list[bytes] = []
            size = 0
            expected = -1
            header_end = -1
            while True:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
                if size > MAX_RESPONSE_BYTES:
                    raise Unavailable("response too large")
                if header_end < 0:
                    joined = b"".join(chunks)
                    chunks = [joined]
                    header_end = joined.find(b"\r\n\r\n")
                    if header_end >= 0:
                        expected = _content_length(joined[:header_end])
                if expected >= 0 and size >= header_end + 4 + expected:
                    break
        except (OSError, ValueError) as exc:  # _socket.timeout is an OSError
            raise Unavailable(f"{type(exc).__name__}: {exc}") from None
        finally:
            sock.close()
        raw = b"".join(chunks)
        if header_end < 0:
            raise Unavailable("incomplete HTTP response")
        status_line = raw[: raw.find(b"\r\n")].split()
        try:
            status = int(status_line[1])
        except (IndexError, ValueError):
            raise Unavailable("malformed HTTP status line") from None
        content = raw[header_end + 4 :]
        if expected >= 0:
            content = content[:expected]
        try:
            parsed = loads(content.decode("utf-8", "replace")) if content.strip() else None
        except ValueError:
            parsed = None
        return status, parsed


def _content_length(head: bytes) -> int:
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            try:
                return int(value.strip())
            except ValueError:
                return -1
    return -1


def find_worker(home: str) -> Worker | None:
    """The worker named in worker.json, with the token; None when either file is missing."""
    info = read_json_file(os.path.join(home, "worker.json"))
    if not isinstance(info, dict):
        return None
    try:
        port = int(info.get("port", 0))
        with open(os.path.join(home, "token"), encoding="utf-8") as handle:
            token = handle.read(4096).strip()
    except (OSError, ValueError, TypeError):
        return None
    if not (0 < port < 65536) or not token:
        return None
    return Worker(port, token)


def healthy(worker: Worker, timeout: float) -> bool:
    try:
        status, body = worker.request("GET", "/health", timeout=timeout)
    except Unavailable:
        return False
    return status == 200 and isinstance(body, dict) and body.get("ok") is True


# --------------------------------------------------------------------------- auto-start
def _lock_held(path: str) -> bool:
    """True when another process holds an exclusive flock on `path` (the worker's own lock)."""
    import fcntl

    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)
    return False


def _pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie (exited, not yet reaped) is not a live worker
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().rsplit(b")", 1)[-1].split()[0] != b"Z"
    except (OSError, IndexError):
        return True


START_ARGS = ["start", "--foreground", "--log-file", "--quiet"]
# `-P` (Python 3.11+, Cairn's floor): the hook runs in the user's project, and a plain `-m worker`
# would put it first on sys.path and run the project's own `worker/` package instead of Cairn.
RUN_WORKER = ["-P", "-m", "worker", *START_ARGS]


def worker_command(home: str, checkout: str) -> list[str]:
    """How to run the worker: the Python `cairn install` recorded ($CAIRN_HOME/install.json),
    else a `cairn` on PATH, else this checkout's .venv, else this interpreter."""
    info = read_json_file(os.path.join(home, "install.json"))
    if isinstance(info, dict):
        python = info.get("python")
        if isinstance(python, str) and os.path.isfile(python) and os.access(python, os.X_OK):
            return [python, *RUN_WORKER]
    from shutil import which

    cairn = which("cairn")
    if cairn and os.path.isabs(cairn):  # not one a relative PATH entry finds in the project
        return [cairn, *START_ARGS]
    venv = os.path.join(checkout, ".venv", "bin", "python")
    if os.path.isfile(venv) and os.access(venv, os.X_OK):
        return [venv, *RUN_WORKER]
    return [sys.executable, *RUN_WORKER]


def worker_pythonpath(checkout: str, current: str) -> str:
    """The worker's PYTHONPATH: this checkout first when it is one (the hooks run from a source
    tree), then the absolute entries of `current`; an empty or relative entry would name the
    project the hook runs in."""
    source = [checkout] if os.path.isfile(os.path.join(checkout, "worker", "__init__.py")) else []
    return os.pathsep.join(source + [p for p in current.split(os.pathsep) if os.path.isabs(p)])


SPAWN_GRACE_SECONDS = 20.0


def spawn_worker(home: str) -> int | None:
    """Start the worker detached unless one runs or is starting; returns the new pid or None.

    An exclusive, non-blocking lock on spawn.lock lets exactly one of many simultaneous hooks
    spawn; spawn.json remembers the child for SPAWN_GRACE_SECONDS so hooks arriving while it
    boots (before it holds worker.lock) do not start a second one.
    """
    import fcntl

    ensure_home(home)
    fd = os.open(os.path.join(home, "spawn.lock"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return None  # another hook is spawning right now
        if _lock_held(os.path.join(home, "worker.lock")):
            return None  # a worker runs (or is binding its port)
        marker = os.path.join(home, "spawn.json")
        info = read_json_file(marker)
        if isinstance(info, dict):
            try:
                pid, at = int(info.get("pid", 0)), float(info.get("at", 0))
            except (TypeError, ValueError):
                pid, at = 0, 0.0
            if _pid_alive(pid) and time.time() - at < SPAWN_GRACE_SECONDS:
                return None
        checkout = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        argv = worker_command(home, checkout)
        python = argv[0]
        env = dict(os.environ)
        env["CAIRN_HOME"] = home
        env["PYTHONPATH"] = worker_pythonpath(checkout, env.get("PYTHONPATH", ""))
        if not env["PYTHONPATH"]:
            del env["PYTHONPATH"]
        logs = ensure_home(home, "logs")
        stderr_path = os.path.join(logs, "worker.stderr.log")
        try:
            pid = os.posix_spawn(
                python,
                argv,
                env,
                file_actions=[
                    (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                    (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
                    (
                        os.POSIX_SPAWN_OPEN,
                        2,
                        stderr_path,
                        os.O_WRONLY | os.O_APPEND | os.O_CREAT,
                        0o600,
                    ),
                ],
                setsid=True,
            )
        except (AttributeError, NotImplementedError, TypeError):  # no posix_spawn setsid here
            import subprocess

            fd_err = os.open(stderr_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            with open(fd_err, "ab") as err:
                pid = subprocess.Popen(
                    argv,
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=err,
                    start_new_session=True,
                    close_fds=True,
                ).pid
        replace_file(marker, dumps({"pid": pid, "at": time.time(), "python": python}))
        log(home, f"spawned worker pid={pid} python={python}")
        return pid
    finally:
        os.close(fd)


def child_exit_code(pid: int) -> int | None:
    """The exit code of this process's child `pid` once it has exited (reaped here), else None."""
    try:
        done, status = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:  # not a child of this process (or reaped already)
        return None
    return os.waitstatus_to_exitcode(status) if done else None


def wait_healthy(home: str, deadline: float, child: int | None = None) -> Worker | None:
    """Poll worker.json and /health until `deadline` (time.monotonic()), or until `child` (the
    worker this hook spawned) exits with an error: a worker that cannot start (its team database
    unreachable) is not waited for."""
    while True:
        worker = find_worker(home)
        remaining = deadline - time.monotonic()
        if worker is not None and healthy(worker, min(0.5, max(0.05, remaining))):
            return worker
        code = child_exit_code(child) if child is not None else None
        if code is not None:
            child = None  # exit 0: it found a worker already starting, which is waited for
            if code != 0:
                stderr_log = os.path.join(home, "logs", "worker.stderr.log")
                log(home, f"the worker exited with code {code} before answering; see {stderr_log}")
                return None
        if time.monotonic() + 0.05 >= deadline:
            return None
        time.sleep(0.05)


# --------------------------------------------------------------------------- spool
SPOOL_FILE = "events.jsonl"


def spool_dir(home: str) -> str:
    return os.path.join(home, "spool")


def spool_append(home: str, records: list[dict[str, object]]) -> int:
    """Append records as fsynced JSON lines; returns how many were written.

    Writers hold an exclusive flock on events.jsonl; after taking it they check that the path
    still names the file they opened (the worker renames files away to replay them, and a full
    file is rotated). The active file is rotated to events-<ns>.jsonl at 1/8 of
    CAIRN_SPOOL_MAX_BYTES; over the bound the oldest rotated segments are deleted and their
    lines counted in dropped.json. Every step is O(1) in the spool's size but the line count.
    """
    if not records:
        return 0
    import fcntl

    max_bytes = env_int("CAIRN_SPOOL_MAX_BYTES", DEFAULT_SPOOL_MAX_BYTES)
    segment = max(1, max_bytes // 8)
    folder = ensure_home(home, "spool")
    path = os.path.join(folder, SPOOL_FILE)
    data = "".join(dumps(r) + "\n" for r in records).encode("ascii")
    if len(data) > max_bytes:
        _count_dropped(folder, len(records))
        log(home, f"spool: {len(records)} event(s) larger than the spool bound dropped")
        return 0
    for _ in range(50):
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            st = os.fstat(fd)
            try:
                current = os.stat(path)
            except FileNotFoundError:
                continue
            if (st.st_ino, st.st_dev) != (current.st_ino, current.st_dev):
                continue  # renamed away while we waited: open the new one
            if st.st_size > 0 and st.st_size + len(data) > segment:
                os.rename(path, os.path.join(folder, f"events-{time.time_ns():020d}.jsonl"))
                continue
            _make_room(home, folder, max_bytes - len(data))
            prefix = b""
            if st.st_size > 0 and os.pread(fd, 1, st.st_size - 1) != b"\n":
                prefix = b"\n"  # a torn last line stays alone on its line (skipped at replay)
            os.write(fd, prefix + data)
            os.fsync(fd)
            return len(records)
        finally:
            os.close(fd)
    log(home, "spool: could not get a stable spool file; events dropped")
    return 0


def _make_room(home: str, folder: str, room: int) -> None:
    """Delete the oldest rotated segments until every spool file fits in `room` bytes."""
    import fcntl

    sizes: list[tuple[str, int]] = []
    for name in sorted(os.listdir(folder)):
        if name.endswith(".jsonl"):
            try:
                sizes.append((name, os.stat(os.path.join(folder, name)).st_size))
            except OSError:
                continue
    total = sum(size for _, size in sizes)
    dropped = 0
    for name, size in sizes:
        if total <= room or name == SPOOL_FILE:
            break
        target = os.path.join(folder, name)
        try:
            fd = os.open(target, os.O_RDONLY)
        except OSError:
            continue  # claimed by the worker meanwhile
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                if os.stat(target).st_ino != os.fstat(fd).st_ino:
                    continue
            except FileNotFoundError:
                continue
            lines = 0
            while True:
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    break
                lines += chunk.count(b"\n")
            os.unlink(target)
        finally:
            os.close(fd)
        total -= size
        dropped += lines
    if dropped:
        _count_dropped(folder, dropped)
        log(home, f"spool: over its bound, dropped the {dropped} oldest event(s)")


def _count_dropped(folder: str, n: int) -> None:
    path = os.path.join(folder, "dropped.json")
    info = read_json_file(path)
    count = 0
    if isinstance(info, dict) and isinstance(info.get("dropped"), int):
        count = info["dropped"]
    replace_file(path, dumps({"dropped": count + n, "last_at": iso_now()}))

"""Read-only integrity check of a database file (for `cairn doctor`; safe beside a live worker)."""

from __future__ import annotations

import sqlite3
from pathlib import Path


def quick_check(path: Path, *, timeout_s: float = 5.0) -> str:
    """'ok', or what PRAGMA quick_check (or opening the file) reported."""
    uri = f"{path.resolve().as_uri()}?mode=ro"
    try:
        conn = sqlite3.connect(uri, uri=True, timeout=timeout_s)
    except sqlite3.Error as exc:
        return f"cannot open: {exc}"
    try:
        rows = conn.execute("PRAGMA quick_check").fetchall()
    except sqlite3.DatabaseError as exc:
        return str(exc)
    finally:
        conn.close()
    messages = [str(r[0]) for r in rows]
    return "ok" if messages == ["ok"] else "; ".join(messages[:5])

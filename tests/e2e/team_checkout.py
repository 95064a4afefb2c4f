"""One teammate's clone of the team's repository (its own path, the same git remote), for the
e2e tests of two real workers on one PostgreSQL database."""

from __future__ import annotations

import subprocess
from pathlib import Path

REMOTE = "git@github.com:Acme/App.git"
PROJECT = "github.com/acme/app"  # the project key every teammate's checkout maps to


def checkout(root: Path, email: str) -> Path:
    """A clone of the team's repository on one teammate's laptop (its own path, same remote)."""
    (root / "src").mkdir(parents=True)
    for args in (
        ["init", "-q"],
        ["remote", "add", "origin", REMOTE],
        ["config", "user.email", email],
    ):
        subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)
    return root

"""Find, configure and run the real Codex, Gemini and Copilot CLIs for end-to-end tests.

`make test` installs the pinned versions (the Makefile's AGENT_CLIS line) into
.cache/<name>/<version>/; when one could not be installed, `<version>.unavailable` holds npm's
error and its tests skip with it. Each CLI runs offline against a scripted local model API
(tests/e2e/model_apis.py) in a tmp HOME, configured the way docs/agents.md records: Codex CLI
through a custom model provider in ~/.codex/config.toml, Gemini CLI through
GOOGLE_GEMINI_BASE_URL and an API-key auth setting, Copilot CLI through its bring-your-own-model
variables with COPILOT_OFFLINE (no GitHub sign-in).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.e2e.model_apis import ModelAPI, Protocol

REPO = Path(__file__).resolve().parents[2]
CACHE = REPO / ".cache"
PROTOCOLS: dict[str, Protocol] = {"codex": "responses", "gemini": "gemini", "copilot": "chat"}
BINARIES = {"codex": "codex", "gemini": "gemini", "copilot": "copilot"}
CONTEXT_OPEN = "cairn-context"  # Gemini CLI escapes '<' in hook context: match the name only


def pinned() -> dict[str, tuple[str, str]]:
    """name -> (npm package, version), from the Makefile that installs them."""
    for line in (REPO / "Makefile").read_text().splitlines():
        if line.startswith("AGENT_CLIS :="):
            found = {}
            for entry in line.split(":=", 1)[1].split():
                name, spec = entry.split("=", 1)
                package, _, version = spec.rpartition("@")
                found[name] = (package, version)
            return found
    raise RuntimeError("the Makefile has no AGENT_CLIS line")


def binary(name: str) -> Path | None:
    version = pinned()[name][1]
    path = CACHE / name / version / "node_modules" / ".bin" / BINARIES[name]
    return path if path.exists() and os.access(path, os.X_OK) else None


def missing_reason(name: str) -> str:
    package, version = pinned()[name]
    note = CACHE / name / f"{version}.unavailable"
    detail = note.read_text(errors="replace").strip()[-400:] if note.exists() else ""
    return (
        f"{package} {version} is not installed under {CACHE / name} (`make agent-clis` installs "
        f"it from the npm registry){': ' + detail if detail else ''}"
    )


def configure(name: str, home: Path, api_url: str, workspace: Path) -> None:
    """The agent's own settings in `home` for an offline run (before `cairn install` adds ours)."""
    if name == "codex":
        folder = home / ".codex"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "config.toml").write_text(
            'model = "gpt-5.5"\nmodel_provider = "standin"\napproval_policy = "never"\n'
            'sandbox_mode = "danger-full-access"\ncheck_for_update_on_startup = false\n\n'
            "[analytics]\nenabled = false\n\n[feedback]\nenabled = false\n\n"
            '[model_providers.standin]\nname = "Stand-in"\n'
            f'base_url = "{api_url}/v1"\nwire_api = "responses"\nenv_key = "STANDIN_API_KEY"\n'
            "request_max_retries = 0\nstream_max_retries = 0\n\n"
            f'[projects."{workspace}"]\ntrust_level = "trusted"\n'
        )
    elif name == "gemini":
        folder = home / ".gemini"
        folder.mkdir(parents=True, exist_ok=True)
        settings = {
            "security": {
                "auth": {"selectedType": "gemini-api-key"},
                "folderTrust": {"enabled": False},
            },
            "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
            "privacy": {"usageStatisticsEnabled": False},
            "telemetry": {"enabled": False},
        }
        (folder / "settings.json").write_text(json.dumps(settings, indent=2) + "\n")
    elif name == "copilot":
        (home / ".copilot").mkdir(parents=True, exist_ok=True)


def offline_env(name: str, base: Mapping[str, str], home: Path, api_url: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in base.items()
        if not k.startswith(("CODEX", "GEMINI", "GOOGLE", "COPILOT", "GITHUB", "OPENAI"))
        and k not in ("CI", "GH_TOKEN")
    }
    env["HOME"] = str(home)
    env["NO_COLOR"] = "1"
    if name == "codex":
        env.update({"CODEX_HOME": str(home / ".codex"), "STANDIN_API_KEY": "sk-test-local"})
    elif name == "gemini":
        env.update({"GOOGLE_GEMINI_BASE_URL": api_url, "GEMINI_API_KEY": "test-local"})
    else:
        env.update(
            {
                "XDG_CONFIG_HOME": str(home / ".config"),
                "XDG_CACHE_HOME": str(home / ".cache"),
                "XDG_STATE_HOME": str(home / ".local" / "state"),
                "COPILOT_HOME": str(home / ".copilot"),
                "COPILOT_OFFLINE": "true",
                "COPILOT_PROVIDER_BASE_URL": api_url + "/v1",
                "COPILOT_PROVIDER_API_KEY": "test-local",
                "COPILOT_MODEL": "gpt-4o",
                "COPILOT_AUTO_UPDATE": "false",
            }
        )
    return env


def command(name: str, path: Path, prompt: str) -> list[str]:
    if name == "codex":
        # No --dangerously-bypass-hook-trust: the trust `cairn install` wrote must do.
        return [
            str(path),
            "exec",
            "--json",
            "--color",
            "never",
            "--dangerously-bypass-approvals-and-sandbox",
            prompt,
        ]
    if name == "gemini":
        return [
            str(path),
            "-p",
            prompt,
            "-m",
            "gemini-2.5-flash",
            "--approval-mode",
            "yolo",
            "--output-format",
            "json",
        ]
    return [str(path), "-p", prompt, "--allow-all-tools", "--no-auto-update", "--no-ask-user", "-s"]


@dataclass
class Agent:
    """One agent CLI installed for a test, its model stand-in and the worker its hooks start."""

    name: str
    path: Path
    env: dict[str, str]
    cairn_home: Path
    api: ModelAPI

    def run(self, prompt: str, cwd: Path, timeout: float = 180) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            command(self.name, self.path, prompt),
            cwd=cwd,
            env=self.env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        assert result.returncode == 0, (result.stdout[-2000:], result.stderr[-2000:])
        return result


@dataclass
class Worker:
    """The worker the hooks started (its port and token in CAIRN_HOME), over its REST API."""

    home: Path

    def _request(self, path: str, body: dict[str, Any] | None = None) -> Any:
        info = json.loads((self.home / "worker.json").read_text())
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(
            f"http://127.0.0.1:{info['port']}{path}", data=data, method="POST" if data else "GET"
        )
        request.add_header("Authorization", "Bearer " + (self.home / "token").read_text().strip())
        request.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.loads(response.read())

    def get(self, path: str, **query: str) -> Any:
        return self._request(path + ("?" + urllib.parse.urlencode(query) if query else ""))

    def post(self, path: str, body: dict[str, Any]) -> Any:
        return self._request(path, body)

    def settle(self) -> None:
        """Hooks may spool while the worker is busy: wait until the spool is replayed."""
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError, ValueError):
                if self.get("/api/spool")["backlog"]["events"] == 0:
                    return
            time.sleep(0.3)

    def sessions(self, agent: str | None = None) -> list[dict[str, Any]]:
        self.settle()
        query = {"limit": "100", **({"agent": agent} if agent else {})}
        items: list[dict[str, Any]] = self.get("/api/sessions", **query)["items"]
        return items

    def observations(self, session_id: str) -> list[dict[str, Any]]:
        self.settle()
        items: list[dict[str, Any]] = self.get(
            "/api/observations", session_id=session_id, limit="200"
        )["items"]
        return items

    def pid(self) -> int:
        return int(json.loads((self.home / "worker.json").read_text())["pid"])

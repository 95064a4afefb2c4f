"""Model folders derived from the packaged model: built once in a child process, then cached.

A derived folder holds a rewritten model.onnx beside links to the source's tokenizer files, and a
stamp naming the recipe and the source model's digest: a new recipe or another source model
rebuilds it. The build runs in a child process (`python -P -m MODULE SOURCE TARGET`): protobuf
copies of the graph would otherwise stay in the worker's resident memory for good, and a crash
in a native library must not take the worker down. Any failure returns None (the caller keeps
the packaged model) with the reason in the log.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import subprocess
from pathlib import Path

from worker.launch import child_env, module_argv

log = logging.getLogger("cairn.embeddings")

STAMP = "cairn-derived.json"
BUILD_TIMEOUT_S = 600.0


def _digest(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _source_identity(source: Path) -> object:
    """What the source model is: a derived folder's own stamp (its recipe and where it came
    from, which change whenever its model.onnx is rebuilt), else the digest of its model.onnx.
    A chain of derived models hashes the packaged file once per start, not once per link."""
    try:
        return json.loads((source / STAMP).read_text())
    except (OSError, ValueError):
        return _digest(source / "model.onnx")


def derived_model(
    source: Path, models_dir: Path, folder_name: str, recipe: int, module: str, what: str
) -> Path | None:
    """`models_dir/folder_name`, whose model.onnx `python -m module` built from `source`'s
    (rebuilt if missing, or made by another recipe or from another source); None if it cannot
    be built. `what` names the model in log lines."""
    folder = models_dir / folder_name
    stamp = {"recipe": recipe, "source": _source_identity(source)}
    try:
        current = json.loads((folder / STAMP).read_text())
    except (OSError, ValueError):
        current = None
    if current != stamp or not (folder / "model.onnx").is_file():
        folder.mkdir(parents=True, exist_ok=True)
        (folder / STAMP).unlink(missing_ok=True)  # (a link left by an older build included)
        log.info("building the %s in %s (once)", what, folder)
        try:
            done = subprocess.run(
                module_argv(module, str(source), str(folder)),
                env=child_env(),
                capture_output=True,
                text=True,
                timeout=BUILD_TIMEOUT_S,
                check=False,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            log.warning("%s not built, using the packaged one: %s", what, exc)
            return None
        if done.returncode != 0:
            reason = (done.stderr.strip().splitlines() or ["no output"])[-1]
            log.warning("%s not built, using the packaged one: %s", what, reason)
            return None
        (folder / STAMP).write_text(json.dumps(stamp))
    for name in os.listdir(source):
        # Not the source's own stamp: a derived folder may be the source of another.
        if name not in ("model.onnx", STAMP):
            link_file((source / name).resolve(), folder / name)
    return folder


def link_file(source: Path, target: Path) -> None:
    """Make `target` point at `source`: a symlink (replacing a stale one), or a copy where
    symlinks are not allowed."""
    if target.is_symlink() and target.resolve() == source.resolve():
        return
    if target.exists() or target.is_symlink():
        target.unlink()
    try:
        target.symlink_to(source)
    except OSError:
        shutil.copyfile(source, target)

"""``wisp.save()``: copy files into the run directory and record them.

A saved file lands under ``<run dir>/files/<name>`` and a FILE record (type 9)
describes it (format version 1)::

    {"path": "files/<name>", "name": <name>, "size": bytes, "sha256": hex,
     "kind": "file" | "checkpoint" | ..., "policy": "now" | "live" | "end", ...extra}

Copies happen on the writer thread, so ``save()`` returns at once; a copy that
fails is counted under ``save`` and reported once, never raised.
"""

from __future__ import annotations

import glob
import hashlib
import os
import shutil
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from wisp._rundir import FILES_DIR
from wisp._runfile import RecordType
from wisp.errors import RunStateError, UsageError

if TYPE_CHECKING:
    from wisp._run import Run

__all__ = ["save", "save_file"]

_POLICIES = ("now", "live", "end")


def _current_run() -> Run:
    import wisp

    run = wisp.run
    if run is None:
        raise RunStateError("wisp.save() needs a run: call wisp.init() first")
    return run


def _safe_name(name: str) -> str:
    parts = [p for p in name.replace(os.sep, "/").split("/") if p not in ("", ".")]
    if not parts or ".." in parts:
        raise UsageError(f"saved file name {name!r} must be a relative path inside the run")
    return "/".join(parts)


def save_file(
    run: Run,
    source: str | os.PathLike[str],
    name: str | None = None,
    *,
    kind: str = "file",
    policy: str = "now",
    extra: Mapping[str, Any] | None = None,
) -> str | None:
    """Copy one file into ``run`` (on the writer thread); return its path in the run dir."""
    src = os.path.abspath(os.fspath(source))
    if not os.path.isfile(src):
        raise UsageError(f"cannot save {src}: no such file")
    rel = _safe_name(name or os.path.basename(src))
    writer = run.writer
    if writer is None or run.dir is None:
        if run.mode == "disabled":
            return None
        raise RunStateError(f"run {run.id} is finished; call wisp.init() to start a new one")
    run_dir = run.dir
    stored = f"{FILES_DIR}/{rel}"
    info = {"path": stored, "name": rel, "kind": kind, "policy": policy, **(extra or {})}

    def copy() -> None:
        dest = os.path.join(run_dir, FILES_DIR, *rel.split("/"))
        try:
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            if os.path.abspath(dest) != src:
                tmp = f"{dest}.tmp"
                shutil.copyfile(src, tmp)
                os.replace(tmp, dest)
            digest = hashlib.sha256()
            with open(dest, "rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    digest.update(block)
            size = os.path.getsize(dest)
        except OSError as exc:
            writer.record_failure("save", exc)
            return
        writer.append(RecordType.FILE, {**info, "size": size, "sha256": digest.hexdigest()})

    run.on_writer(copy)
    return stored


def save(
    glob_str: str | os.PathLike[str],
    base_path: str | os.PathLike[str] | None = None,
    policy: str = "now",
) -> list[str]:
    """Copy files matching ``glob_str`` into the current run (``wandb.save``).

    Names inside the run are relative to ``base_path`` (default: the glob's
    directory).  Returns the stored paths, relative to the run directory.
    ``policy`` is recorded; every policy copies the file as it is now.
    """
    if policy not in _POLICIES:
        raise UsageError(f"save() policy must be one of {', '.join(_POLICIES)}, got {policy!r}")
    run = _current_run()
    pattern = os.path.abspath(os.fspath(glob_str))
    if base_path is None:
        first_magic = min((i for i, c in enumerate(pattern) if c in "*?["), default=len(pattern))
        base = os.path.dirname(pattern[:first_magic] if first_magic < len(pattern) else pattern)
    else:
        base = os.path.abspath(os.fspath(base_path))
    matches = sorted(p for p in glob.glob(pattern, recursive=True) if os.path.isfile(p))
    if not matches and not glob.has_magic(pattern):
        raise UsageError(f"save() found no file at {pattern}")
    stored = []
    for path in matches:
        rel = os.path.relpath(path, base)
        if rel.startswith(".."):
            raise UsageError(f"save(): {path} is not under base_path {base}")
        out = save_file(run, path, rel, policy=policy)
        if out is not None:
            stored.append(out)
    return stored

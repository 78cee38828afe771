"""``wisp.save()``: copy files into the run directory and record them.

A saved file lands under ``<run dir>/files/<name>`` and a FILE record (type 9)
describes it (format version 1)::

    {"path": "files/<name>", "name": <name>, "size": bytes, "sha256": hex,
     "kind": "file" | "checkpoint" | ..., "policy": "now" | "live" | "end", ...extra}

Copies happen on the writer thread, so ``save()`` returns at once; a copy that
fails is counted under ``save`` and reported once, never raised.  ``policy="end"``
copies the file as it is when the run finishes; files the user wrote into
``run.dir`` itself are saved the same way at finish (wandb uploads its run
directory's files).  ``log_code()`` saves source files under ``code/``; ``restore()``
copies a saved file back out of a local run.
"""

from __future__ import annotations

import glob
import hashlib
import os
import shutil
from collections.abc import Callable, Mapping

from wisp._rundir import FILES_DIR
from wisp._runfile import RecordType
from wisp.errors import RunStateError, UsageError

TYPE_CHECKING = False  # typing costs ~15 ms to import; only type checkers need it
if TYPE_CHECKING:
    from typing import Any

    from wisp._run import Run

__all__ = ["log_code", "restore", "save", "save_at_end", "save_file"]

_POLICIES = ("now", "live", "end")


def _current_run(run: Run | None = None) -> Run:
    from wisp import _current

    run = run or _current.run
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
    *,
    run: Run | None = None,
) -> list[str]:
    """Copy files matching ``glob_str`` into the current run (``wandb.save``).

    Names inside the run are relative to ``base_path`` (default: the glob's
    directory).  Returns the stored paths, relative to the run directory.
    ``policy`` is recorded; ``"now"`` and ``"live"`` copy the file as it is now,
    ``"end"`` as it is when the run finishes.  ``run``: default the current run.
    """
    if policy not in _POLICIES:
        raise UsageError(f"save() policy must be one of {', '.join(_POLICIES)}, got {policy!r}")
    run = _current_run(run)
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
        if policy == "end":
            _at_end(run).append((path, rel))
            stored.append(f"{FILES_DIR}/{_safe_name(rel)}")
            continue
        out = save_file(run, path, rel, policy=policy)
        if out is not None:
            stored.append(out)
    return stored


def _at_end(run: Run) -> list[tuple[str, str]]:
    """The run's ``files`` part: (source, name) pairs copied at finish."""
    part: list[tuple[str, str]] | None = run.part("files")
    if part is None:  # a run init() did not start (an importer's): attach now
        part = []
        run.attach("files", part, lambda: save_at_end(run))
    return part


def save_at_end(run: Run) -> None:
    """At finish: copy the ``policy="end"`` files, then the files the user wrote into
    ``run.dir`` (skipped by ranks other than 0 sharing a directory)."""
    if not run.live or run.dir is None:
        return
    for path, rel in run.part("files") or ():
        if os.path.isfile(path):
            save_file(run, path, rel, policy="end")
        else:
            run.count_failure("save")
    if run.rank is not None and run.rank.get("rank", 0) != 0:
        return
    from wisp._rundir import user_files

    for rel in user_files(run.dir):
        save_file(run, os.path.join(run.dir, rel), rel, policy="end")


_CODE_SKIP = frozenset(
    {"wisp", "wandb", "venv", ".venv", "__pycache__", "node_modules", "site-packages"}
)


def log_code(
    root: str | os.PathLike[str] = ".",
    name: str | None = None,
    include_fn: Callable[..., bool] | None = None,
    exclude_fn: Callable[..., bool] | None = None,
    *,
    run: Run | None = None,
) -> list[str]:
    """Save source files under ``root`` into the run's ``files/code/`` (``wandb.log_code``).

    ``include_fn(path, root)`` (default: ``*.py``) and ``exclude_fn(path, root)``
    choose files; hidden directories and environments are skipped.  ``name`` is
    accepted for wandb compatibility (wandb names the code artifact with it).
    Returns the stored paths.
    """
    run = _current_run(run)
    base = os.path.abspath(os.fspath(root))

    def call(fn: Callable[..., bool], path: str) -> bool:
        try:
            return bool(fn(path, base))
        except TypeError:
            return bool(fn(path))

    stored = []
    for dirpath, dirs, names in os.walk(base):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in _CODE_SKIP)
        if run.dir is not None and os.path.abspath(dirpath).startswith(run.dir):
            continue
        for fname in sorted(names):
            path = os.path.join(dirpath, fname)
            keep = call(include_fn, path) if include_fn else fname.endswith(".py")
            if not keep or (exclude_fn is not None and call(exclude_fn, path)):
                continue
            rel = os.path.relpath(path, base).replace(os.sep, "/")
            out = save_file(run, path, f"code/{rel}", kind="code")
            if out is not None:
                stored.append(out)
    return stored


def restore(
    name: str,
    run_path: str | None = None,
    replace: bool = False,
    root: str | os.PathLike[str] | None = None,
) -> Any:
    """Copy a file saved in a local run into ``root`` and open it for reading (``wandb.restore``).

    ``run_path`` is ``"entity/project/run_id"`` or a run id (default: the current run);
    runs are looked up under the ``dir`` setting (``WISP_DIR``, ``WANDB_DIR``) or the
    working directory.  ``root`` defaults to the current run's directory, else the
    working directory.  An existing file is kept unless ``replace``.  Raises
    UsageError when the run has no such saved file and none is at the destination.
    """
    from wisp import _current
    from wisp._localpath import local_path
    from wisp._rundir import find_by_id
    from wisp._settings import Settings

    rel = _safe_name(name)
    current = _current.run
    if run_path is None:
        if current is None:
            raise UsageError("restore() needs run_path= when no run is active")
        run_id = current.id
    else:
        run_id = str(run_path).rstrip("/").rsplit("/", 1)[-1]
    base = os.path.abspath(Settings.resolve().dir or os.getcwd())
    dirs = find_by_id(base, run_id)
    sources = [os.path.join(d, FILES_DIR, *rel.split("/")) for d in reversed(dirs)]
    source = next((p for p in sources if os.path.isfile(p)), None)
    if root is not None:
        dest_root = os.fspath(root)
    elif current is not None and current.dir is not None:
        dest_root = current.dir
    else:
        dest_root = os.getcwd()
    dest = local_path(dest_root, rel, what="restore() file")
    if source is None:
        if os.path.isfile(dest):
            return open(dest)
        raise UsageError(f"restore(): run {run_id!r} has no saved file {rel!r} under {base}")
    if replace or not os.path.exists(dest):
        os.makedirs(os.path.dirname(dest) or ".", exist_ok=True)
        if os.path.abspath(dest) != os.path.abspath(source):
            shutil.copyfile(source, dest)
    return open(dest)


def save_code(run: Run) -> str | None:
    """``init(save_code=True)``: save the main script into the run's ``files/code/`` (its
    path relative to the working directory, else its name), or in a notebook the session's
    executed cells as ``code/_session_history.ipynb``, as wandb does.  Returns the stored
    path, None when there is no source to save."""
    import sys

    main = sys.modules.get("__main__")
    script = getattr(main, "__file__", None)
    if isinstance(script, str) and os.path.isfile(script):
        src = os.path.abspath(script)
        rel = os.path.relpath(src, os.getcwd())
        if rel.startswith(".."):
            rel = os.path.basename(src)
        return save_file(run, src, "code/" + rel.replace(os.sep, "/"), kind="code")
    cells = _notebook_cells()
    if not cells or run.dir is None:
        return None
    import json

    dest = os.path.join(run.dir, FILES_DIR, "code", "_session_history.ipynb")
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    doc = {
        "cells": [
            {
                "cell_type": "code",
                "execution_count": i + 1,
                "metadata": {},
                "outputs": [],
                "source": cell,
            }
            for i, cell in enumerate(cells)
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    with open(dest, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1)
    return save_file(run, dest, "code/_session_history.ipynb", kind="code")


def _notebook_cells() -> list[str]:
    """The cells run so far in an IPython kernel (none outside one)."""
    import sys

    if "IPython" not in sys.modules:
        return []
    from IPython import get_ipython

    shell = get_ipython()
    history = getattr(shell, "history_manager", None)
    if history is None:
        return []
    return [str(c) for c in history.input_hist_raw[1:] if str(c).strip()]

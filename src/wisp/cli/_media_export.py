"""``wisp export RUN --media DIR``: a run's media files, copied into a folder.

Layout: ``DIR/<key>/<step>.<ext>`` (``<step>_<i>.<ext>`` for the items of a
gallery; ``/`` in keys makes sub-folders).  Tables and ``wisp.plot`` charts
are written as their ``wisp.table`` JSON files.  Files are copied, never moved.
"""

from __future__ import annotations

import os
import shutil
from typing import Any

from wisp.cli._term import CliError

__all__ = ["export_media"]


def _safe(part: str) -> str:
    part = part.replace("\\", "_").replace("\0", "_")
    return "_" if part in ("", ".", "..") else part


def _ext(path: str) -> str:
    name = os.path.basename(path)
    dot = name.find(".")
    return name[dot:] if dot >= 0 else ""


def _inside(root: str, rel: str, what: str) -> str:
    """``root``/``rel``, refused (CliError) when the name would lead outside ``root``."""
    from wisp._localpath import local_path
    from wisp.errors import UsageError

    try:
        return local_path(root, rel, what=what)
    except UsageError as exc:
        raise CliError(str(exc)) from None


def export_media(data: Any, out_dir: str, keys: list[str] | None = None) -> int:
    """Copy the media files of run ``data`` (a RunData) into ``out_dir``; how many were copied."""
    from wisp.media._read import FILE_TYPES

    wanted = set(keys) if keys else None
    found: dict[str, list[tuple[int, list[str]]]] = {}
    for row in data.history():
        step = row.get("_step", 0)
        for key, value in row.items():
            if wanted is not None and key not in wanted:
                continue
            if not isinstance(value, dict):
                continue
            kind = value.get("_type")
            if kind == "images":
                items = value.get("items") or []
            elif kind in FILE_TYPES:
                items = [value]
            else:
                continue
            paths = [_inside(data.dir, it["path"], "media") for it in items if "path" in it]
            found.setdefault(key, []).append((step, paths))
    count = 0
    for key, entries in found.items():
        folder = "/".join(_safe(p) for p in key.split("/"))
        for step, paths in entries:
            for i, src in enumerate(paths):
                name = f"{step}_{i}" if len(paths) > 1 else str(step)
                dst = _inside(out_dir, f"{folder}/{name}{_ext(src)}", "media export")
                os.makedirs(os.path.dirname(dst), exist_ok=True)
                try:
                    shutil.copyfile(src, dst)
                except OSError as exc:
                    raise CliError(f"cannot copy {src} to {dst}: {exc.strerror}") from None
                count += 1
    return count

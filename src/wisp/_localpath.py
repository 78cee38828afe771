"""Turning a name from elsewhere (a server, a manifest, a foreign store) into a local path.

Every place that writes (or reads) a file under a folder by a name it did not choose itself goes
through :func:`local_path`: a server, a teammate's run or a public project's owner decides those
names, and a name such as ``../../.bashrc``, ``/etc/cron.d/x`` or ``C:\\x`` must never place a
file outside the folder the caller picked.
"""

from __future__ import annotations

import os
import re

from wisp.errors import UsageError

__all__ = ["local_path"]

_DRIVE = re.compile(r"^[A-Za-z]:")


def local_path(
    root: str | os.PathLike[str], name: object, *, what: str = "file", links: bool = False
) -> str:
    """``root`` joined with the ``/``-separated relative ``name``, refusing anything else.

    Refused (``UsageError`` naming the file): names that are not non-empty strings, contain NUL,
    are absolute (``/x``, ``\\x``, ``//host/x``), start with a drive letter (``C:x``), have a
    ``..`` part, or resolve (through symbolic links already on disk) outside ``root``.
    Backslashes count as separators on every system, so a name is read the same everywhere.
    ``links=True`` checks the name only and lets a link already in ``root`` lead elsewhere:
    for reading a folder whose tool links files in by design (wandb's ``files/`` holds
    symbolic links to what ``wandb.save`` named).
    """
    if not isinstance(name, str) or not name:
        raise UsageError(f"{what} name {name!r} is not a relative path: refused")
    if "\0" in name or name.startswith(("/", "\\")) or _DRIVE.match(name):
        raise UsageError(f"{what} name {name!r} is not a relative path inside the folder: refused")
    parts = [p for p in name.replace("\\", "/").split("/") if p not in ("", ".")]
    if not parts or ".." in parts or any(_DRIVE.match(p) for p in parts):
        raise UsageError(f"{what} name {name!r} is not a relative path inside the folder: refused")
    base = os.fspath(root)
    path = os.path.join(base, *parts)
    if links:
        return path
    real_base = os.path.realpath(base)
    real = os.path.realpath(path)
    if real != real_base and not real.startswith(real_base.rstrip(os.sep) + os.sep):
        raise UsageError(f"{what} name {name!r} resolves outside {base}: refused")
    return path

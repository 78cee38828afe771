"""The user config file written by ``wisp login`` (format version 1).

Location: ``$WISP_CONFIG`` if set, else ``$XDG_CONFIG_HOME/wisp/config.json``,
else ``~/.config/wisp/config.json``.  Content, a JSON object::

    {"version": 1, "server_url": "http://host:port", "api_key": "..."}

The file holds a secret, so it is written with mode 0600.  ``Settings.resolve``
reads ``server_url`` and ``api_key`` from it as the lowest-precedence source
(below environment variables and explicit settings).  A missing file is
normal; an unreadable or malformed one is ignored by ``init()`` and reported by
``wisp doctor``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping

TYPE_CHECKING = False  # typing costs ~15 ms to import; only type checkers need it
if TYPE_CHECKING:
    from typing import Any

__all__ = ["config_path", "read_config", "write_config"]

VERSION = 1
KEYS = ("server_url", "api_key")


def config_path(environ: Mapping[str, str] | None = None) -> str:
    env = os.environ if environ is None else environ
    explicit = env.get("WISP_CONFIG")
    if explicit:
        return explicit
    base = env.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(base, "wisp", "config.json")


def read_config(path: str | None = None) -> dict[str, Any]:
    """The config file's known keys; raises OSError/ValueError when it is unreadable."""
    p = path or config_path()
    with open(p, encoding="utf-8") as f:
        data = json.load(f)
    if not isinstance(data, dict):
        raise ValueError(f"{p} must hold a JSON object")
    return {k: data[k] for k in KEYS if isinstance(data.get(k), str) and data[k]}


def write_config(values: Mapping[str, Any], path: str | None = None) -> str:
    """Write ``values`` (merged over the existing file) with mode 0600; returns the path."""
    p = path or config_path()
    try:
        current = read_config(p)
    except (OSError, ValueError):
        current = {}
    current.update({k: v for k, v in values.items() if k in KEYS})
    os.makedirs(os.path.dirname(os.path.abspath(p)), exist_ok=True)
    tmp = f"{p}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump({"version": VERSION, **current}, f, indent=1)
    os.chmod(tmp, 0o600)
    os.replace(tmp, p)
    return p

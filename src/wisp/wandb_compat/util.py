"""``wandb.util``: the helpers of wandb's ``util`` module that libraries call.

``generate_id``, ``get_module``, ``make_artifact_name_safe``, ``to_forward_slash_path``,
``mkdir_exists_ok`` and ``json_friendly``, with wandb's behaviour.
"""

from __future__ import annotations

import importlib
import os
import re
import secrets
import string
from typing import Any

from wisp.errors import UsageError

__all__ = [
    "generate_id",
    "get_module",
    "json_friendly",
    "make_artifact_name_safe",
    "mkdir_exists_ok",
    "to_forward_slash_path",
]

_ALPHABET = string.ascii_lowercase + string.digits


def generate_id(length: int = 8) -> str:
    """A random run id of lowercase letters and digits (wandb's default length 8)."""
    return "".join(secrets.choice(_ALPHABET) for _ in range(length))


def get_module(name: str, required: str | bool | None = None, lazy: bool = True) -> Any:
    """The module ``name``, or None when it is not installed; with ``required``, an
    ImportError whose message is ``required`` (a string) or names the module."""
    try:
        return importlib.import_module(name)
    except ImportError:
        if required:
            msg = (
                required if isinstance(required, str) else f"{name} is required: pip install {name}"
            )
            raise UsageError(msg) from None
        return None


def make_artifact_name_safe(name: str) -> str:
    """``name`` with characters an artifact name may not hold replaced by ``_`` (at most
    128 characters, the middle cut as wandb does)."""
    cleaned = re.sub(r"[^a-zA-Z0-9_\-.]", "_", name)
    if len(cleaned) <= 128:
        return cleaned
    return cleaned[:63] + "..." + cleaned[-62:]


def to_forward_slash_path(path: str) -> str:
    return path.replace("\\", "/")


def mkdir_exists_ok(path: str | os.PathLike[str]) -> bool:
    """Create ``path`` (and parents); True when it was created."""
    try:
        os.makedirs(path)
    except FileExistsError:
        return False
    return True


def json_friendly(obj: Any) -> tuple[Any, bool]:
    """``(value, converted)``: numpy scalars and arrays, tensors, bytes and sets as plain
    JSON values, as wandb's ``json_friendly``."""
    from wisp._values import convert_value

    if isinstance(obj, bytes):
        return obj.decode("utf-8", "replace"), True
    if isinstance(obj, (set, frozenset)):
        return list(obj), True
    try:
        out = convert_value("json_friendly", obj)
    except UsageError:
        return obj, False
    return out, out is not obj

"""Helpers shared by the media types (argument checks on the calling thread)."""

from __future__ import annotations

import os
from typing import Any

from wisp.errors import UsageError

__all__ = ["ARRAY_ROOTS", "array_root", "check_caption", "check_file", "dtype_name"]

ARRAY_ROOTS = ("numpy", "torch", "jax", "jaxlib")


def array_root(data: Any) -> str:
    """The top-level module of ``data``'s type ("numpy", "torch", ...)."""
    return (type(data).__module__ or "").partition(".")[0]


def dtype_name(data: Any) -> str:
    """numpy-style name of an array's dtype ("float32", "uint8", ...)."""
    return str(getattr(data, "dtype", "?")).removeprefix("torch.")


def check_caption(what: str, caption: Any) -> str | None:
    if caption is not None and not isinstance(caption, str):
        raise UsageError(f"{what}(caption=...) must be a string, got {caption!r}")
    return caption


def check_file(what: str, path: str, suffixes: tuple[str, ...]) -> tuple[str, int, str]:
    """(absolute path, size, suffix) of a media file, or UsageError naming it."""
    lower = path.lower()
    suffix = next((s for s in suffixes if lower.endswith(s)), None)
    if suffix is None:
        raise UsageError(
            f"{what}({path!r}): unsupported file type; expected one of {', '.join(suffixes)}"
        )
    try:
        st = os.stat(path)
    except OSError as exc:
        raise UsageError(f"{what}({path!r}): no such file ({exc.strerror})") from None
    if not os.path.isfile(path):
        raise UsageError(f"{what}({path!r}) is not a file")
    return os.path.abspath(path), st.st_size, suffix


def read_file(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()

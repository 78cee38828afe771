"""``wisp.Object3D``: point clouds from arrays and 3-D files.

Stored value (docs/run-file.md, "Typed values", ``object3d`` version 1)::

    {"_type": "object3d", "path": "media/<hash>.points.bin", "format": "points",
     "points": n, "caption": str or null}

``format`` is ``points`` for point clouds, else the file's own encoding
(``obj``, ``glb``, ``gltf``, ``stl``; stored byte for byte, ``points`` null).

Point clouds (arrays (N, 3) of x y z, (N, 4) of x y z category, (N, 6) of
x y z r g b with r g b in 0-255; ``.pts`` text files of such rows; ``.pts.json``
files holding a JSON list of such rows) are stored in the ``wisp.points``
binary format, version 1, all little-endian::

    offset 0   4 bytes  b"WPTS"
           4   u8       version (1)
           5   u8       flags: bit 0 = RGB colours follow, bit 1 = categories follow
           6   u16      0
           8   u32      N, the number of points
          12   u32      0
          16   f32[3N]  x y z of each point
               u16[N]   category of each point (when flag bit 1)
               u8[3N]   r g b of each point (when flag bit 0)

Positions are stored as float32 (exact for float32 input); categories must be
integers 0-65535; colours are rounded and clipped to 0-255.
"""

from __future__ import annotations

import os
import struct
from typing import TYPE_CHECKING, Any

from wisp._deferred import Deferred
from wisp._tensors import snapshot
from wisp.errors import UsageError
from wisp.media._common import (
    ARRAY_ROOTS,
    array_root,
    check_caption,
    check_file,
    dtype_name,
    read_file,
)

if TYPE_CHECKING:
    from wisp._deferred import ResolveContext

__all__ = [
    "FILE_SUFFIXES",
    "MAX_POINTS",
    "Object3D",
    "PointCloud",
    "decode_points",
    "encode_points",
]

VERSION = 1
MAGIC = b"WPTS"
HAS_RGB, HAS_CATEGORY = 1, 2
MAX_POINTS = 20_000_000
FILE_SUFFIXES = (".obj", ".glb", ".gltf", ".stl", ".pts.json", ".pts")
_WHAT = "wisp.Object3D"
_NUMERIC = frozenset(
    {
        "float16",
        "bfloat16",
        "float32",
        "float64",
        "int8",
        "int16",
        "int32",
        "int64",
        "uint8",
        "uint16",
        "uint32",
    }
)


class Object3D(Deferred):
    """A point cloud ((N, 3), (N, 4) or (N, 6) array) or a 3-D file (.obj .glb .gltf .stl .pts)."""

    __slots__ = ("_data", "_kind", "_nbytes", "_resolved", "caption", "points")

    def __init__(self, data_or_path: Any, caption: str | None = None) -> None:
        self.caption = check_caption(_WHAT, caption)
        self._resolved: dict[str, Any] | None = None
        data = data_or_path
        if isinstance(data, str) or hasattr(data, "__fspath__"):
            path, size, suffix = check_file(_WHAT, os.fspath(data), FILE_SUFFIXES)
            self._kind = suffix
            self._data: Any = path
            self._nbytes = size
            self.points = 0
            return
        if isinstance(data, Object3D):
            raise UsageError(f"{_WHAT}(data) is already a wisp.Object3D")
        if array_root(data) not in ARRAY_ROOTS:
            raise UsageError(
                f"{_WHAT}(data) has type {type(data).__name__}; expected a numpy/torch array of "
                "points (N, 3), (N, 4) or (N, 6), or the path of a "
                f"{'/'.join(s[1:] for s in FILE_SUFFIXES)} file"
            )
        shape = tuple(int(n) for n in getattr(data, "shape", ()))
        if len(shape) != 2 or shape[1] not in (3, 4, 6) or shape[0] < 1:
            raise UsageError(
                f"{_WHAT}(data) has shape {shape}; expected (N, 3) x y z, (N, 4) x y z category "
                "or (N, 6) x y z r g b with N >= 1"
            )
        if shape[0] > MAX_POINTS:
            raise UsageError(f"{_WHAT}(data) has {shape[0]:,} points; at most {MAX_POINTS:,}")
        dtype = dtype_name(data)
        if dtype not in _NUMERIC:
            raise UsageError(f"{_WHAT}(data) has dtype {dtype}; expected float or integer numbers")
        self._kind = "array"
        self.points = shape[0]
        self._nbytes = 16 + shape[0] * (12 + (3 if shape[1] == 6 else 2 if shape[1] == 4 else 0))
        self._data = snapshot(data, f"{_WHAT}(data)")

    def estimate_bytes(self) -> int:
        return self._nbytes

    # -- writer thread --------------------------------------------------------------------------

    def resolve(self, ctx: ResolveContext) -> dict[str, Any]:
        if self._resolved is None:
            kind = self._kind
            if kind == "array":
                content = encode_points(self._data.array(), _WHAT)
                fmt, suffix = "points", ".points.bin"
            elif kind in (".pts", ".pts.json"):
                content = encode_points(_read_pts(self._data, kind), f"{_WHAT}({self._data!r})")
                self.points = struct.unpack_from("<I", content, 8)[0]
                fmt, suffix = "points", ".points.bin"
            else:
                content = read_file(self._data)
                fmt, suffix = kind[1:], kind
            self._data = None
            self._resolved = {
                "_type": "object3d",
                "path": ctx.save_media(content, suffix),
                "format": fmt,
                "points": self.points or None,
                "caption": self.caption,
            }
        return self._resolved

    def __repr__(self) -> str:
        return f"<wisp.Object3D {self._kind} points={self.points}>"


def _read_pts(path: str, kind: str) -> Any:
    import numpy as np

    if kind == ".pts.json":
        import json

        doc = json.loads(read_file(path))
        if isinstance(doc, dict):
            doc = doc.get("points", [])
        return np.asarray(doc, dtype=np.float64)
    rows = [line.split() for line in read_file(path).decode("utf-8", "replace").splitlines()]
    rows = [r for r in rows if r and not r[0].startswith("#")]
    if rows and len(rows[0]) == 1:  # a count line first (the common .pts layout)
        rows = rows[1:]
    try:
        return np.asarray(rows, dtype=np.float64)
    except ValueError as exc:
        raise UsageError(f"{_WHAT}({path!r}): not rows of numbers ({exc})") from None


def encode_points(a: Any, what: str) -> bytes:
    """The ``wisp.points`` bytes of an (N, 3), (N, 4) or (N, 6) array."""
    import numpy as np

    if a.ndim != 2 or a.shape[1] not in (3, 4, 6) or len(a) < 1:
        raise UsageError(
            f"{what} has shape {a.shape}; expected (N, 3), (N, 4) or (N, 6) with N >= 1"
        )
    n, cols = a.shape
    pos = np.ascontiguousarray(a[:, :3], dtype="<f4")
    if not np.isfinite(pos).all():
        raise UsageError(f"{what} holds NaN or infinite coordinates")
    flags = 0
    parts = [b"", pos.tobytes()]
    if cols == 4:
        cat = a[:, 3]
        if (cat != np.rint(cat)).any() or cat.min() < 0 or cat.max() > 65535:
            raise UsageError(f"{what}: column 4 (category) must hold integers 0-65535")
        flags |= HAS_CATEGORY
        parts.append(np.ascontiguousarray(cat, dtype="<u2").tobytes())
    elif cols == 6:
        rgb = np.nan_to_num(np.asarray(a[:, 3:], dtype=np.float64))
        flags |= HAS_RGB
        parts.append(np.clip(np.rint(rgb), 0, 255).astype(np.uint8).tobytes())
    parts[0] = MAGIC + struct.pack("<BBHII", VERSION, flags, 0, n, 0)
    return b"".join(parts)


class PointCloud:
    """A decoded ``wisp.points`` file: ``positions`` (N, 3) float32, optional
    ``categories`` (N,) uint16 and ``colors`` (N, 3) uint8."""

    def __init__(self, positions: Any, categories: Any, colors: Any) -> None:
        self.positions = positions
        self.categories = categories
        self.colors = colors


def decode_points(content: bytes) -> PointCloud:
    import numpy as np

    from wisp.errors import RunFileError

    if content[:4] != MAGIC or len(content) < 16:
        raise RunFileError("not a wisp.points file")
    version, flags, _, n, _ = struct.unpack_from("<BBHII", content, 4)
    if version != VERSION:
        raise RunFileError(f"wisp.points version {version} is not supported")
    off = 16
    pos = np.frombuffer(content, "<f4", 3 * n, off).reshape(n, 3)
    off += 12 * n
    cat = rgb = None
    if flags & HAS_CATEGORY:
        cat = np.frombuffer(content, "<u2", n, off)
        off += 2 * n
    if flags & HAS_RGB:
        rgb = np.frombuffer(content, np.uint8, 3 * n, off).reshape(n, 3)
    return PointCloud(pos, cat, rgb)

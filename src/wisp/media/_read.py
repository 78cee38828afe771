"""Reading media values back (used by :class:`wisp.RunData`).

Histograms come back as numpy arrays, images as absolute file paths, and
tables as lists of row dicts (image cells as paths) or pandas DataFrames.
Audio, video, HTML and 3-D values come back as file paths; :func:`read_wav`
and :func:`read_points` decode the encodings wisp writes.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from typing import Any, NamedTuple

from wisp.errors import RunFileError, UsageError

__all__ = [
    "FILE_TYPES",
    "HistogramData",
    "histogram_data",
    "image_paths",
    "media_files",
    "read_points",
    "read_table",
    "read_wav",
]

#: Typed values stored as one file under ``path``.
FILE_TYPES = ("image", "audio", "video", "html", "object3d", "table", "chart")


class HistogramData(NamedTuple):
    """One logged histogram: ``counts`` (N ints) and ``edges`` (N + 1 floats) as numpy arrays."""

    counts: Any
    edges: Any
    nan: int
    inf: int


def _typed(key: str, value: Any, *types: str) -> dict[str, Any]:
    if not isinstance(value, dict) or value.get("_type") not in types:
        got = value.get("_type") if isinstance(value, dict) else type(value).__name__
        raise UsageError(f"{key!r} holds {got} values, not {' or '.join(types)}")
    return value


def histogram_data(key: str, value: Any) -> HistogramData:
    try:
        import numpy as np
    except ImportError as exc:
        raise ImportError(
            "reading histograms needs numpy; install it with `pip install numpy`"
        ) from exc
    v = _typed(key, value, "histogram")
    return HistogramData(
        np.asarray(v["counts"]), np.asarray(v["bins"], dtype=np.float64), v["nan"], v["inf"]
    )


def image_paths(run_dir: str, key: str, value: Any) -> list[str]:
    """Absolute paths of an image value (one) or a gallery (several)."""
    v = _typed(key, value, "image", "images")
    items: Iterable[dict[str, Any]] = v["items"] if v["_type"] == "images" else (v,)
    return [os.path.join(run_dir, item["path"]) for item in items]


def read_table(run_dir: str, key: str, value: Any) -> tuple[list[str], list[list[Any]]]:
    """(columns, rows) of a table value; image cells become absolute paths."""
    v = _typed(key, value, "table", "chart")
    path = os.path.join(run_dir, v["path"])
    try:
        with open(path, "rb") as f:
            doc = json.load(f)
    except OSError as exc:
        raise RunFileError(f"table {key!r}: cannot read {path}: {exc.strerror}") from exc
    if doc.get("format") != "wisp.table":
        raise RunFileError(f"table {key!r}: {path} is not a wisp.table file")
    rows = [
        [
            os.path.join(run_dir, c["path"])
            if isinstance(c, dict) and c.get("_type") == "image"
            else c
            for c in row
        ]
        for row in doc["data"]
    ]
    return list(doc["columns"]), rows


def media_files(run_dir: str, key: str, value: Any) -> list[str]:
    """Absolute paths of the files a media value stores (a gallery's images: several)."""
    v = _typed(key, value, "images", *FILE_TYPES)
    items: Iterable[dict[str, Any]] = v["items"] if v["_type"] == "images" else (v,)
    return [os.path.join(run_dir, item["path"]) for item in items]


def read_wav(path: str) -> tuple[Any, int]:
    """(samples, sample rate) of a PCM WAV file: samples are (N, channels) numpy integers
    (uint8, int16 or int32, as stored)."""
    import wave

    import numpy as np

    with wave.open(path, "rb") as w:
        width, channels, rate = w.getsampwidth(), w.getnchannels(), w.getframerate()
        raw = w.readframes(w.getnframes())
    dtype: Any = {1: np.uint8, 2: "<i2", 4: "<i4"}.get(width)
    if dtype is None:
        raise RunFileError(f"{path}: {8 * width}-bit WAV is not supported")
    return np.frombuffer(raw, dtype).reshape(-1, channels), rate


def read_points(path: str) -> Any:
    """A :class:`~wisp.media._object3d.PointCloud` of a ``wisp.points`` file."""
    from wisp.media._object3d import decode_points

    with open(path, "rb") as f:
        return decode_points(f.read())

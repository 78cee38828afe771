"""Numeric history stored as compressed per-key chunks: the codec and the merge rules.

A metric key's points live in rows of ``chunks``, each holding up to :data:`CHUNK` points
of one key over a step range ``[s0, s1]``; the ranges of one key never overlap.  Beside
the packed points a row keeps its aggregates (``n``, ``vmin``/``vmax`` over finite values,
``first_v``/``last_v`` at ``s0``/``s1`` -- NULL when that value is not finite -- and the
count of non-finite values), which series downsampling reads instead of the points.

``data`` (format 1) is a 14-byte header ``<BBIq`` (format, flags, n, s0) then, in order:
the step deltas (absent when the steps are ``s0 .. s0 + n - 1``), the times' IEEE bits as
deltas, and the values' IEEE bits each XORed with the previous value's.  A section is its
first element (8 bytes), a mask byte, then the other elements by byte plane (byte 0 of
every element, then byte 1, ...); a plane holding one repeated byte (the zero high bytes of
small deltas, a shared sign and exponent) is stored once and flagged in the mask.  No
general-purpose compressor: numpy decodes thousands of chunks at once.  Every bit
round-trips; NaN and +-inf are stored as those floats (the ``nf`` code of a value, 1 NaN,
2 +inf, 3 -inf, follows from it).

Writes (:func:`merge`) take the new points of a key, the stored chunks they overlap (and
the chunk just before them when it is not full), and give back the rows to write and the
rows to delete: an append fills the last chunk and starts new ones; a rewritten step
replaces the stored point (the later write wins); nothing else is touched.
"""

from __future__ import annotations

import itertools
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "CHUNK",
    "ChunkRow",
    "Stored",
    "decode",
    "decode_many",
    "encode",
    "merge",
    "nf_codes",
    "pieces",
]

CHUNK = 256  # points per chunk row (the last chunk of a key may hold fewer)
FORMAT = 1
_CONTIGUOUS = 1  # flag: steps are s0, s0 + 1, ... (no step section)
_HEAD = struct.Struct("<BBIq")


@dataclass
class ChunkRow:
    """One ``chunks`` row to write."""

    key_id: int
    s0: int
    s1: int
    n: int
    vmin: float | None
    vmax: float | None
    first_v: float | None
    last_v: float | None
    nonfinite: int
    data: bytes

    def values(self) -> tuple[Any, ...]:
        return (
            self.key_id,
            self.s0,
            self.s1,
            self.n,
            self.vmin,
            self.vmax,
            self.first_v,
            self.last_v,
            self.nonfinite,
            self.data,
        )


@dataclass
class Stored:
    """A stored chunk read back for a merge: its first/last step, size and data."""

    s0: int
    s1: int
    n: int
    data: bytes


def _section(a: Any) -> bytes:
    """int64 array -> its first element, a mask byte, the constant byte planes of the rest
    (one byte each), then the rest's other planes.

    Byte plane ``p`` holds byte ``p`` (little-endian) of every element; bit ``p`` of the
    mask says the plane is one repeated byte, stored once.
    """
    import numpy as np

    a = a.astype("<i8", copy=False)
    planes = a[1:].view(np.uint8).reshape(-1, 8).T
    if planes.shape[1]:
        const = (planes == planes[:, :1]).all(axis=1)
    else:
        const = np.ones(8, bool)
        planes = np.zeros((8, 1), np.uint8)
    mask = int(np.packbits(const, bitorder="little")[0])
    head: bytes = a[:1].tobytes() + bytes((mask,))
    return head + bytes(planes[const, 0].tobytes()) + bytes(planes[~const].tobytes())


def _section_size(mask: int, n: int) -> int:
    k = mask.bit_count()
    return 9 + k + (8 - k) * (n - 1)


def encode(steps: Any, times: Any, values: Any) -> bytes:
    """``data`` of one chunk: int64 steps (strictly increasing), float64 times and values."""
    import numpy as np

    n = len(steps)
    s0 = int(steps[0])
    flags = 0
    parts = []
    if int(steps[-1]) - s0 == n - 1:
        flags |= _CONTIGUOUS
    else:
        parts.append(_section(np.diff(steps)))
    t = np.ascontiguousarray(times, dtype=np.float64).view(np.int64)
    dt = np.empty_like(t)
    dt[0] = t[0]
    np.subtract(t[1:], t[:-1], out=dt[1:])  # wraps modulo 2**64: undone by cumsum
    parts.append(_section(dt))
    v = np.ascontiguousarray(values, dtype=np.float64).view(np.int64)
    xv = np.empty_like(v)
    xv[0] = v[0]
    np.bitwise_xor(v[1:], v[:-1], out=xv[1:])
    parts.append(_section(xv))
    return _HEAD.pack(FORMAT, flags, n, s0) + b"".join(parts)


def _layout(blob: bytes) -> tuple[int, int, int, tuple[int, ...]]:
    """(n, s0, contiguous, masks) of a chunk's data."""
    fmt, flags, n, s0 = _HEAD.unpack_from(blob)
    if fmt != FORMAT:
        raise ValueError(f"unknown chunk format {fmt}")
    off = _HEAD.size
    masks = []
    for m in (n, n) if flags & _CONTIGUOUS else (n - 1, n, n):
        mask = blob[off + 8]
        masks.append(mask)
        off += _section_size(mask, m)
    return n, s0, flags & _CONTIGUOUS, tuple(masks)


def _planes(raw: Any, off: int, mask: int, m: int, n: int) -> tuple[Any, int]:
    """(m, n) int64 of the section at column ``off`` of ``raw`` (m rows alike), next offset."""
    import numpy as np

    out = np.empty((m, 8, n), np.uint8)
    out[:, :, 0] = raw[:, off : off + 8]
    off += 9
    k = 0
    for p in range(8):
        if mask >> p & 1:
            out[:, p, 1:] = raw[:, off + k, None]
            k += 1
    off += k
    for p in range(8):
        if not mask >> p & 1:
            out[:, p, 1:] = raw[:, off : off + n - 1]
            off += n - 1
    return np.ascontiguousarray(out.transpose(0, 2, 1)).view("<i8").reshape(m, n), off


def decode_many(blobs: Sequence[bytes], with_times: bool = True) -> tuple[Any, Any, Any]:
    """Concatenated (steps, times, values) of ``blobs`` in order (times None unless asked).

    Chunks of one layout (size, kind, constant planes) are decoded together as 2-D arrays.
    """
    import numpy as np

    if not blobs:
        e = np.empty(0, np.float64)
        return np.empty(0, np.int64), (e if with_times else None), e
    lays = [_layout(b) for b in blobs]
    groups: dict[tuple[int, int, tuple[int, ...]], list[int]] = {}
    for i, (n, _s0, contiguous, masks) in enumerate(lays):
        groups.setdefault((n, contiguous, masks), []).append(i)
    sizes = np.fromiter((x[0] for x in lays), np.int64, len(lays))
    starts = np.zeros(len(lays) + 1, np.int64)
    np.cumsum(sizes, out=starts[1:])
    total = int(starts[-1])
    steps = np.empty(total, np.int64)
    times = np.empty(total, np.float64) if with_times else None
    values = np.empty(total, np.float64)
    hs = _HEAD.size
    for (n, contiguous, masks), idx in groups.items():
        m = len(idx)
        raw = np.frombuffer(b"".join([blobs[i] for i in idx]), np.uint8).reshape(m, -1)
        s0 = np.fromiter((lays[i][1] for i in idx), np.int64, m)
        off = hs
        if contiguous:
            st = s0[:, None] + np.arange(n, dtype=np.int64)
        else:
            st, off = _planes(raw, off, masks[0], m, n - 1)
            st = np.concatenate([s0[:, None], st], axis=1)
            np.cumsum(st, axis=1, out=st)
        tm, off = _planes(raw, off, masks[-2], m, n)
        vals, off = _planes(raw, off, masks[-1], m, n)
        np.bitwise_xor.accumulate(vals, axis=1, out=vals)
        if m == 1:
            sl = slice(int(starts[idx[0]]), int(starts[idx[0]]) + n)
            steps[sl] = st[0]
            values[sl] = vals[0].view(np.float64)
            if times is not None:
                times[sl] = np.cumsum(tm[0]).view(np.float64)
            continue
        pos = (starts[idx][:, None] + np.arange(n)).ravel()
        steps[pos] = st.ravel()
        values[pos] = vals.view(np.float64).ravel()
        if times is not None:
            times[pos] = np.cumsum(tm, axis=1).view(np.float64).ravel()
    return steps, times, values


def decode(blob: bytes) -> tuple[Any, Any, Any]:
    """(steps, times, values) of one chunk."""
    return decode_many([blob])


def nf_codes(values: Any) -> Any:
    """int16 ``nf`` codes of float64 values: 0 finite, 1 NaN, 2 +inf, 3 -inf."""
    import numpy as np

    nf = np.zeros(len(values), np.int16)
    nf[np.isnan(values)] = 1
    nf[values == np.inf] = 2
    nf[values == -np.inf] = 3
    return nf


def _fin(v: float) -> float | None:
    return v if v - v == 0.0 else None


def chunk_row(key_id: int, steps: Any, times: Any, values: Any) -> ChunkRow:
    """The row (aggregates + data) of one chunk's points."""
    import numpy as np

    fin = np.isfinite(values)
    nfin = int(fin.sum())
    n = len(steps)
    lo: float | None
    hi: float | None
    if nfin == n:
        lo, hi = float(values.min()), float(values.max())
    elif nfin:
        f = values[fin]
        lo, hi = float(f.min()), float(f.max())
    else:
        lo = hi = None
    return ChunkRow(
        key_id,
        int(steps[0]),
        int(steps[-1]),
        n,
        lo,
        hi,
        _fin(float(values[0])),
        _fin(float(values[-1])),
        n - nfin,
        encode(steps, times, values),
    )


def columns(steps: Sequence[int], times: Sequence[float], values: Sequence[Any], nfs: Any) -> Any:
    """numpy (steps, times, values) of one ingested column; NaN/inf restored from ``nfs``."""
    import numpy as np

    st = np.fromiter(steps, np.int64, len(steps))
    tm = np.fromiter(times, np.float64, len(times))
    if nfs is None:
        vs = np.fromiter(values, np.float64, len(values))
    else:
        vs = np.array([_NFV[c] if c else v for v, c in zip(values, nfs, strict=True)], np.float64)
    return st, tm, vs


_NFV = {1: float("nan"), 2: float("inf"), 3: float("-inf")}


def _last_wins(steps: Any, times: Any, values: Any) -> tuple[Any, Any, Any]:
    """Sorted by step, of equal steps the last one kept."""
    import numpy as np

    if len(steps) < 2 or bool((steps[1:] > steps[:-1]).all()):
        return steps, times, values
    order = np.argsort(steps, kind="stable")
    s = steps[order]
    keep = np.ones(len(s), bool)
    keep[:-1] = s[1:] != s[:-1]
    sel = order[keep]
    return steps[sel], times[sel], values[sel]


def pieces(key_id: int, steps: Any, times: Any, values: Any) -> list[ChunkRow]:
    """Sorted points of one key cut into chunk rows of :data:`CHUNK` points."""
    return [
        chunk_row(key_id, steps[i : i + CHUNK], times[i : i + CHUNK], values[i : i + CHUNK])
        for i in range(0, len(steps), CHUNK)
    ]


def merge(
    key_id: int, new: tuple[Any, Any, Any], stored: list[Stored]
) -> tuple[list[ChunkRow], list[int]]:
    """Rows to upsert and ``s0`` of rows to delete after writing ``new`` points of a key.

    ``new`` is (steps, times, values) in write order (later duplicates win); ``stored`` the
    key's chunks whose range meets ``[min, max]`` of the new steps and the chunk just before.
    A stored chunk is rewritten when a new step falls in its range, or when it is not full
    and new steps follow it with no chunk between (an append fills it); every other stored
    chunk is left alone and splits the work into segments, each merged and cut into chunks
    of :data:`CHUNK` points on its own, so no written range overlaps a kept one.
    """
    import numpy as np

    steps, times, values = _last_wins(*new)
    if not stored:
        return pieces(key_id, steps, times, values), []
    stored = sorted(stored, key=lambda c: c.s0)
    s0s = np.array([c.s0 for c in stored], np.int64)
    s1s = np.array([c.s1 for c in stored], np.int64)
    idx = np.searchsorted(s0s, steps, side="right") - 1
    inside = (idx >= 0) & (steps <= s1s[np.maximum(idx, 0)])
    involved = set(idx[inside].tolist())
    involved.update(i for i in set(idx[~inside & (idx >= 0)].tolist()) if stored[i].n < CHUNK)
    if not involved:
        bar = s0s
        old = None
    else:
        mine = sorted(involved)
        bar = s0s[[i for i in range(len(stored)) if i not in involved]]
        old = decode_many([stored[i].data for i in mine])
    if old is not None:
        keep = ~np.isin(old[0], steps)
        steps = np.concatenate([old[0][keep], steps])
        times = np.concatenate([old[1][keep], times])
        values = np.concatenate([old[2][keep], values])
        order = np.argsort(steps, kind="stable")
        steps, times, values = steps[order], times[order], values[order]
    seg = np.searchsorted(bar, steps, side="left")  # barrier chunks before each point
    cuts = [0, *(np.flatnonzero(seg[1:] != seg[:-1]) + 1).tolist(), len(steps)]
    rows: list[ChunkRow] = []
    for i0, i1 in itertools.pairwise(cuts):
        rows.extend(pieces(key_id, steps[i0:i1], times[i0:i1], values[i0:i1]))
    written = {r.s0 for r in rows}
    return rows, [stored[i].s0 for i in sorted(involved) if stored[i].s0 not in written]

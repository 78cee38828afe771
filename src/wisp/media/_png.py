"""A small, fast, deterministic PNG encoder for 8-bit arrays (no Pillow needed).

Writes one IDAT chunk with the "Sub" filter on every row.  zlib's RLE
strategy is 2-3x faster than its default on noisy images and photographs and
compresses them as well; the default strategy is much smaller on smooth,
synthetic images.  A trial on a sample of rows picks between them.  The same
pixels always give the same bytes, so identical images share one
content-addressed file.
"""

from __future__ import annotations

import struct
import zlib
from typing import Any

__all__ = ["COLOR_TYPES", "encode_png"]

_SIGNATURE = b"\x89PNG\r\n\x1a\n"
#: channels -> PNG colour type (grey, grey+alpha, RGB, RGBA)
COLOR_TYPES = {1: 0, 2: 4, 3: 2, 4: 6}


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def _deflate(data: Any, strategy: int) -> bytes:
    packer = zlib.compressobj(1, zlib.DEFLATED, 15, 9, strategy)
    return packer.compress(data) + packer.flush()


def _strategy(raw: Any) -> int:
    """RLE unless zlib's default strategy is clearly smaller on a sample of rows."""
    sample = raw[:: max(1, raw.shape[0] // 16)][:16].tobytes()
    if len(sample) < 256:
        return zlib.Z_DEFAULT_STRATEGY
    rle = len(_deflate(sample, zlib.Z_RLE))
    return (
        zlib.Z_DEFAULT_STRATEGY
        if len(_deflate(sample, zlib.Z_DEFAULT_STRATEGY)) < 0.8 * rle
        else zlib.Z_RLE
    )


def encode_png(pixels: Any) -> bytes:
    """PNG bytes of a C-contiguous uint8 numpy array of shape (H, W, C), C in 1..4."""
    import numpy as np

    h, w, c = pixels.shape
    rows = pixels.reshape(h, w * c)
    raw = np.empty((h, w * c + 1), dtype=np.uint8)
    raw[:, 0] = 1  # filter type Sub: each byte minus the same channel of the pixel to its left
    raw[:, 1 : 1 + c] = rows[:, :c]
    np.subtract(rows[:, c:], rows[:, :-c], out=raw[:, 1 + c :])  # uint8 wraps, as PNG wants
    idat = _deflate(raw.data, _strategy(raw))
    header = struct.pack(">IIBBBBB", w, h, 8, COLOR_TYPES[c], 0, 0, 0)
    return b"".join(
        (_SIGNATURE, _chunk(b"IHDR", header), _chunk(b"IDAT", idat), _chunk(b"IEND", b""))
    )

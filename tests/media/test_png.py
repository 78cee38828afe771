"""wisp's own PNG encoder: valid, lossless and deterministic."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image as PILImage

from wisp.media._png import encode_png


@pytest.mark.parametrize("channels", [1, 2, 3, 4])
@pytest.mark.parametrize("shape", [(1, 1), (3, 257), (64, 48)])
def test_roundtrip_through_pillow(channels: int, shape: tuple[int, int]) -> None:
    """Every channel count and size decodes (with Pillow) to exactly the encoded pixels."""
    a = np.random.default_rng(channels).integers(0, 256, (*shape, channels), dtype=np.uint8)
    with PILImage.open(io.BytesIO(encode_png(a))) as img:
        img.load()
        got = np.asarray(img)
        assert img.mode == {1: "L", 2: "LA", 3: "RGB", 4: "RGBA"}[channels]
    np.testing.assert_array_equal(got if got.ndim == 3 else got[:, :, None], a)


def test_same_pixels_same_bytes() -> None:
    """Encoding the same pixels twice gives identical bytes (so content hashes match)."""
    a = np.random.default_rng(1).integers(0, 256, (20, 30, 3), dtype=np.uint8)
    assert encode_png(a) == encode_png(a.copy())
    assert encode_png(a) != encode_png(a[::-1].copy())


def test_smooth_images_compress() -> None:
    """A smooth gradient compresses to a small fraction of its raw size."""
    ramp = np.add.outer(np.arange(256), np.arange(256)).astype(np.uint8)
    a = np.dstack([ramp, ramp // 2, 255 - ramp])
    assert len(encode_png(np.ascontiguousarray(a))) < a.nbytes // 10

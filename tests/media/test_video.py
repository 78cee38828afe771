"""wisp.Video: frames from arrays (mp4/webm through PyAV, GIF through Pillow) and files."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import av
import numpy as np
import pytest
import torch
from PIL import Image as PILImage

import wisp
from wisp.errors import UsageError
from wisp.media._video import tile

from .conftest import Gate, logged

RNG = np.random.default_rng(5)


def _smooth(t: int, c: int, h: int, w: int) -> np.ndarray:
    """Frames a lossy codec keeps close: smooth gradients that move with time."""
    y, x = np.mgrid[0:h, 0:w]
    frames = np.stack(
        [
            np.stack([(x * 4 + i * 8) % 256, (y * 4) % 256, np.full_like(x, 128)][:c])
            for i in range(t)
        ]
    )
    return frames.astype(np.uint8)


def _decode(path: str) -> np.ndarray:
    with av.open(path) as c:
        return np.stack([f.to_ndarray(format="rgb24") for f in c.decode(video=0)])


def _gif(path: str) -> np.ndarray:
    out = []
    with PILImage.open(path) as img:
        for i in range(img.n_frames):
            img.seek(i)
            out.append(np.asarray(img.convert("RGB")))
    return np.stack(out)


def _stored(r: wisp.Run, video: wisp.Video) -> tuple[dict[str, Any], str]:
    r.log({"vid": video})
    value = logged(r, "vid")
    assert r.dir is not None
    return value, os.path.join(r.dir, value["path"])


@pytest.mark.parametrize("fmt", ["mp4", "webm"])
def test_frames_round_trip_within_codec_tolerance(run: wisp.Run, fmt: str):
    """TxCxHxW uint8 frames decode back to the same size, frame count and pixels (± codec)."""
    frames = _smooth(8, 3, 32, 48)
    value, path = _stored(run, wisp.Video(frames, fps=10, format=fmt, caption="roll"))
    assert value["format"] == fmt and path.endswith("." + fmt)
    assert (value["frames"], value["width"], value["height"], value["fps"]) == (8, 48, 32, 10.0)
    got = _decode(path)
    assert got.shape == (8, 32, 48, 3)
    err = np.abs(got.astype(int) - frames.transpose(0, 2, 3, 1).astype(int)).mean()
    assert err < 6, err


def test_gif_is_lossless_for_few_colours(run: wisp.Run):
    """A GIF of frames with at most 256 colours comes back pixel for pixel."""
    frames = RNG.integers(0, 4, (5, 3, 9, 11), dtype=np.uint8) * 60
    value, path = _stored(run, wisp.Video(frames, format="gif", fps=5))
    assert value["format"] == "gif"
    np.testing.assert_array_equal(_gif(path), frames.transpose(0, 2, 3, 1))


def test_float_grey_torch_and_odd_sizes(run: wisp.Run):
    """Float torch frames in [0, 1] with one channel and odd sizes are encoded (padded to even)."""
    t = torch.full((4, 1, 15, 17), 0.5)
    value, path = _stored(run, wisp.Video(t, format="mp4"))
    assert (value["width"], value["height"]) == (17, 15)
    got = _decode(path)
    assert got.shape[1:3] == (16, 18)
    assert abs(float(got[:, :15, :17].mean()) - 128) < 4


def test_float_frames_in_0_255_are_read_as_wandb_does(run: wisp.Run):
    """Float frames above 1.5 are taken as 0-255 (wandb's convention), not clipped to white."""
    frames = np.full((2, 3, 4, 4), 60.0)
    frames[1] = 200.0
    _, path = _stored(run, wisp.Video(frames, format="gif"))
    got = _gif(path)
    assert got[0, 0, 0, 0] == 60 and got[1, 0, 0, 0] == 200


def test_batch_is_tiled_into_a_grid(run: wisp.Run):
    """A BxTxCxHxW batch becomes one video: B clips tiled row by row (exact for GIF)."""
    batch = np.stack([np.full((2, 3, 4, 5), 40 * (b + 1), dtype=np.uint8) for b in range(3)])
    batch[:, 1] += 10  # frames differ (GIF merges identical consecutive frames)
    value, path = _stored(run, wisp.Video(batch, format="gif"))
    assert (value["width"], value["height"]) == (10, 8)  # 2 columns, 2 rows
    got = _gif(path)
    assert got[0, 0, 0, 0] == 40 and got[0, 0, 5, 0] == 80 and got[0, 4, 0, 0] == 120
    assert got[0, 4, 5, 0] == 0  # the empty fourth cell
    np.testing.assert_array_equal(tile(batch)[..., 0], got[..., 0])


def test_file_is_kept_as_given(run: wisp.Run, tmp_path: Path):
    """A video file is stored byte for byte under its own suffix."""
    content = os.urandom(500)
    path = tmp_path / "clip.webm"
    path.write_bytes(content)
    value, stored = _stored(run, wisp.Video(str(path)))
    assert value["format"] == "webm" and Path(stored).read_bytes() == content
    assert value["fps"] is None and value["frames"] is None


def test_encoding_happens_on_the_writer_thread(run: wisp.Run):
    """log() returns before the video is encoded: a held writer has nothing stored yet."""
    gate = Gate()
    run.log({"gate": gate})
    run.log({"vid": wisp.Video(_smooth(4, 3, 16, 16), format="mp4")})
    assert run.dir is not None
    media = Path(run.dir, "media")
    assert not media.exists() or not list(media.glob("*.mp4"))
    gate.open()
    value = logged(run, "vid")
    assert Path(run.dir, value["path"]).is_file()


@pytest.mark.parametrize(
    ("args", "kwargs", "match"),
    [
        ((np.zeros((4, 3, 8)),), {}, r"shape \(4, 3, 8\); expected \(frames, channels"),
        ((np.zeros((4, 2, 8, 8)),), {}, "1, 3 or 4 channels"),
        ((np.zeros((4, 3, 8, 8), dtype=np.int32),), {}, "dtype int32; expected uint8"),
        ((np.zeros((0, 3, 8, 8)),), {}, "holds no pixels"),
        ((np.zeros((4, 3, 8, 8)),), {"fps": 0}, "fps"),
        ((np.zeros((4, 3, 8, 8)),), {"format": "avi"}, "format"),
        (("clip.xyz",), {}, "unsupported file type"),
        (([1, 2, 3],), {}, "has type list"),
    ],
)
def test_bad_input_is_refused_clearly(args: tuple[Any, ...], kwargs: dict[str, Any], match: str):
    """Wrong shapes, dtypes, rates and formats raise UsageError saying what was expected."""
    with pytest.raises(UsageError, match=match):
        wisp.Video(*args, **kwargs)


def test_gif_fallback_and_install_hint(run: wisp.Run, monkeypatch: pytest.MonkeyPatch):
    """Without PyAV the default format is GIF (Pillow); without either, or asking for mp4
    without PyAV, the error says what to install."""
    from wisp.media import _video

    have = {"av": False, "PIL": True}
    monkeypatch.setattr(_video, "have_module", lambda name: have[name])
    frames = np.zeros((2, 3, 4, 4), dtype=np.uint8)
    frames[1] = 255
    assert wisp.Video(frames).format == "gif"
    with pytest.raises(ImportError, match=r"pip install 'wisp-tracker\[video\]'"):
        wisp.Video(frames, format="mp4")
    have["PIL"] = False
    with pytest.raises(ImportError, match=r"needs an encoder.*wisp-tracker\[video\].*Pillow"):
        wisp.Video(frames)

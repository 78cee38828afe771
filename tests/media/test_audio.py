"""wisp.Audio: samples from numpy/torch arrays and files round-trip; bad input is refused."""

from __future__ import annotations

import os
import wave
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

import wisp
from wisp.errors import UsageError
from wisp.media._audio import encode_wav
from wisp.media._read import read_wav

from .conftest import logged

RNG = np.random.default_rng(3)


def _stored(r: wisp.Run, audio: wisp.Audio) -> tuple[dict[str, Any], np.ndarray, int]:
    r.log({"clip": audio})
    value = logged(r, "clip")
    assert r.dir is not None
    samples, rate = read_wav(os.path.join(r.dir, value["path"]))
    return value, samples, rate


@pytest.mark.parametrize(
    ("dtype", "lo", "hi"),
    [(np.int16, -32768, 32767), (np.int32, -(2**31), 2**31 - 1), (np.uint8, 0, 255)],
)
def test_integer_samples_are_stored_exactly(run: wisp.Run, dtype: Any, lo: int, hi: int):
    """int16/int32/uint8 samples come back bit for bit, with their rate and duration."""
    a = RNG.integers(lo, hi, (8000, 2), dtype=dtype, endpoint=True)
    value, samples, rate = _stored(run, wisp.Audio(a, sample_rate=8000, caption="c"))
    assert rate == 8000 and value["sample_rate"] == 8000 and value["channels"] == 2
    assert value["duration"] == 1.0 and value["caption"] == "c"
    np.testing.assert_array_equal(samples, a)


def test_int8_is_shifted_to_unsigned_losslessly(run: wisp.Run):
    """int8 samples become 8-bit unsigned PCM (+128) without loss."""
    a = np.arange(-128, 128, dtype=np.int8)
    _, samples, _ = _stored(run, wisp.Audio(a, sample_rate=1000))
    np.testing.assert_array_equal(samples[:, 0].astype(np.int16) - 128, a)


def test_float_mono_within_quantisation(run: wisp.Run):
    """Float samples in [-1, 1] come back as 16-bit PCM within one quantisation step."""
    a = np.sin(np.linspace(0, 100, 16000)).astype(np.float32)
    value, samples, rate = _stored(run, wisp.Audio(a, sample_rate=16000))
    assert value["channels"] == 1 and rate == 16000
    np.testing.assert_allclose(samples[:, 0] / 32767.0, a, atol=1 / 32767)


def test_torch_channels_first_is_transposed(run: wisp.Run):
    """A torchaudio-style (channels, samples) tensor is stored as interleaved channels."""
    t = torch.rand(2, 4000) * 2 - 1
    _, samples, _ = _stored(run, wisp.Audio(t, sample_rate=4000))
    assert samples.shape == (4000, 2)
    np.testing.assert_allclose(samples / 32767.0, t.numpy().T, atol=1 / 32767)


def test_snapshot_ignores_later_changes(run: wisp.Run):
    """The samples are copied when the Audio is made: changing the array later does not leak."""
    a = np.zeros(100, dtype=np.int16)
    audio = wisp.Audio(a, sample_rate=100)
    a[:] = 7
    _, samples, _ = _stored(run, audio)
    assert not samples.any()


def test_wav_file_is_kept_and_described(run: wisp.Run, tmp_path: Path):
    """A WAV file is stored byte for byte and its rate, channels and duration are read."""
    content = encode_wav(RNG.integers(-100, 100, (2205, 1), dtype=np.int16), 22050)
    path = tmp_path / "x.wav"
    path.write_bytes(content)
    run.log({"clip": wisp.Audio(path)})
    value = logged(run, "clip")
    assert run.dir is not None
    assert Path(run.dir, value["path"]).read_bytes() == content
    assert (value["sample_rate"], value["channels"], value["duration"]) == (22050, 1, 0.1)


@pytest.mark.parametrize("suffix", [".mp3", ".ogg", ".flac"])
def test_compressed_files_are_kept_as_given(run: wisp.Run, tmp_path: Path, suffix: str):
    """mp3/ogg/flac bytes are stored unchanged, under their own suffix (never re-encoded)."""
    content = b"fLaC" + bytes(range(200)) if suffix == ".flac" else os.urandom(300)
    path = tmp_path / f"song{suffix}"
    path.write_bytes(content)
    run.log({"clip": wisp.Audio(str(path), caption="song")})
    value = logged(run, "clip")
    assert value["path"].endswith(suffix)
    assert run.dir is not None
    assert Path(run.dir, value["path"]).read_bytes() == content


def test_flac_header_is_read(run: wisp.Run, tmp_path: Path):
    """A FLAC file's STREAMINFO gives its sample rate, channels and duration."""
    info = (44100 << 44) | (1 << 41) | (15 << 36) | 88200  # 44.1 kHz, 2 ch, 16 bit, 2 s
    head = b"fLaC" + b"\x00\x00\x00\x22" + b"\x10\x00\x10\x00" + b"\x00" * 6 + info.to_bytes(8)
    path = tmp_path / "a.flac"
    path.write_bytes(head + b"\x00" * 24)
    run.log({"clip": wisp.Audio(path)})
    value = logged(run, "clip")
    assert (value["sample_rate"], value["channels"], value["duration"]) == (44100, 2, 2.0)


@pytest.mark.parametrize(
    ("args", "match"),
    [
        ((np.zeros(10),), "needs sample_rate"),
        ((np.zeros(10), 0), "1 to 768000 Hz"),
        ((np.zeros(10), 44100.5), "must be an integer"),
        ((np.zeros((3, 40, 2)), 100), r"shape \(3, 40, 2\); expected \(samples,\)"),
        ((np.zeros((40, 40)), 100), "1 to 32 channels"),
        ((np.zeros(10, dtype=np.int64), 100), "dtype int64; expected float"),
        ((np.zeros(10, dtype=bool), 100), "dtype bool"),
        ((np.zeros(0), 100), "holds no samples"),
        (("song.xyz",), "unsupported file type"),
        (("missing.wav",), "no such file"),
        (({"a": 1}, 100), "has type dict"),
    ],
)
def test_bad_input_is_refused_clearly(args: tuple[Any, ...], match: str):
    """Wrong shapes, dtypes, rates and files raise UsageError saying what was expected."""
    with pytest.raises(UsageError, match=match):
        wisp.Audio(*args)


def test_wav_is_valid_for_the_stdlib_reader():
    """encode_wav writes a RIFF file that the stdlib wave module reads back."""
    with wave.open(__import__("io").BytesIO(encode_wav(np.zeros((10, 3)), 48000))) as w:
        assert (w.getnchannels(), w.getframerate(), w.getnframes()) == (3, 48000, 10)

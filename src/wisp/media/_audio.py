"""``wisp.Audio``: a sound clip from an array or a file.

Stored value (docs/run-file.md, "Typed values", ``audio`` version 1)::

    {"_type": "audio", "path": "media/<hash>.wav", "sample_rate": 16000,
     "channels": 1, "duration": 1.0, "caption": str or null}

Arrays are stored as PCM WAV (RIFF, little-endian, written with the stdlib
``wave`` module on the writer thread): int16/int32/uint8 samples as they are
(lossless), int8 shifted to unsigned 8-bit (lossless), float samples in
[-1, 1] as 16-bit PCM (clipped, NaN as 0; a quantisation step of 1/32767).
Files (``.wav .mp3 .ogg .oga .opus .flac .m4a``) are stored byte for byte;
``sample_rate``, ``channels`` and ``duration`` are read from WAV and FLAC
headers and are null for the other encodings.
"""

from __future__ import annotations

import io
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

__all__ = ["FILE_SUFFIXES", "MAX_CHANNELS", "MAX_SAMPLE_RATE", "Audio", "encode_wav", "probe"]

VERSION = 1
MAX_CHANNELS = 32
MAX_SAMPLE_RATE = 768_000
FILE_SUFFIXES = (".wav", ".mp3", ".ogg", ".oga", ".opus", ".flac", ".m4a")
_DTYPES = frozenset(
    {"float16", "bfloat16", "float32", "float64", "int16", "int32", "uint8", "int8"}
)
_WHAT = "wisp.Audio"


def _layout(shape: tuple[int, ...]) -> tuple[int, int, bool]:
    """(samples, channels, channels_first) of an (N,), (N, C) or (C, N) shape, or UsageError."""
    if len(shape) == 1:
        return shape[0], 1, False
    if len(shape) == 2:
        a, b = shape
        if b <= MAX_CHANNELS and a >= b:
            return a, b, False
        if a <= MAX_CHANNELS:
            return b, a, True  # torchaudio's (channels, samples)
    raise UsageError(
        f"{_WHAT}(data) has shape {shape}; expected (samples,), (samples, channels) or "
        f"(channels, samples) with 1 to {MAX_CHANNELS} channels"
    )


class Audio(Deferred):
    """A sound clip: an array of samples with ``sample_rate``, or the path of an audio file.

    Arrays may be (samples,) for mono, (samples, channels) or (channels,
    samples) (torchaudio's layout) with up to 32 channels, of dtype float
    (in [-1, 1]), int16, int32, uint8 or int8.  ``sample_rate`` (Hz, 1 to
    768000) is required for arrays.  The samples are copied when the Audio is
    made; WAV encoding happens on the writer thread.
    """

    __slots__ = (
        "_data",
        "_kind",
        "_nbytes",
        "_resolved",
        "caption",
        "channels",
        "sample_rate",
        "samples",
    )

    def __init__(
        self, data_or_path: Any, sample_rate: int | None = None, caption: str | None = None
    ) -> None:
        self.caption = check_caption(_WHAT, caption)
        self._resolved: dict[str, Any] | None = None
        data = data_or_path
        if isinstance(data, (str, bytes)) or hasattr(data, "__fspath__"):
            path, size, suffix = check_file(_WHAT, os.fsdecode(os.fspath(data)), FILE_SUFFIXES)
            if sample_rate is not None:
                _check_rate(sample_rate)
            self._kind = suffix
            self._data: Any = path
            self._nbytes = size
            self.sample_rate = sample_rate
            self.channels = self.samples = 0
            return
        if isinstance(data, Audio):
            raise UsageError(f"{_WHAT}(data) is already a wisp.Audio")
        if array_root(data) not in ARRAY_ROOTS and not isinstance(data, (list, tuple)):
            raise UsageError(
                f"{_WHAT}(data) has type {type(data).__name__}; expected a numpy/torch array "
                f"of samples or the path of a {'/'.join(s[1:] for s in FILE_SUFFIXES)} file"
            )
        if sample_rate is None:
            raise UsageError(f"{_WHAT}(data) of samples needs sample_rate= (in Hz)")
        self.sample_rate = _check_rate(sample_rate)
        if isinstance(data, (list, tuple)):
            dtype = "float64"
            shape: tuple[int, ...] = (len(data),)
        else:
            dtype = dtype_name(data)
            shape = tuple(int(n) for n in getattr(data, "shape", ()))
        if dtype not in _DTYPES:
            raise UsageError(
                f"{_WHAT}(data) has dtype {dtype}; expected float samples in [-1, 1], int16, "
                "int32, uint8 or int8"
            )
        n, c, first = _layout(shape)
        if n < 1:
            raise UsageError(f"{_WHAT}(data) has shape {shape}; it holds no samples")
        self.samples, self.channels = n, c
        self._kind = "cn" if first else "nc"
        self._data = snapshot(data, f"{_WHAT}(data)")
        self._nbytes = n * c * (4 if dtype == "int32" else 1 if dtype in ("uint8", "int8") else 2)

    def estimate_bytes(self) -> int:
        return self._nbytes

    @property
    def duration(self) -> float | None:
        """Seconds of sound (None for a compressed file, whose headers are not read)."""
        if self.samples and self.sample_rate:
            return self.samples / self.sample_rate
        return None

    # -- writer thread --------------------------------------------------------------------------

    def resolve(self, ctx: ResolveContext) -> dict[str, Any]:
        if self._resolved is None:
            if self._kind in ("nc", "cn"):
                a = self._data.array()
                if self._kind == "cn":
                    a = a.T
                content = encode_wav(a, self.sample_rate or 0)
                suffix = ".wav"
            else:
                content = read_file(self._data)
                suffix = self._kind
                info = probe(content, suffix)
                if info is not None:
                    rate, self.channels, self.samples = info
                    self.sample_rate = self.sample_rate or rate
            self._data = None
            self._resolved = {
                "_type": "audio",
                "path": ctx.save_media(content, suffix),
                "sample_rate": self.sample_rate,
                "channels": self.channels or None,
                "duration": self.duration,
                "caption": self.caption,
            }
        return self._resolved

    def __repr__(self) -> str:
        return f"<wisp.Audio {self.samples} samples x {self.channels} @ {self.sample_rate} Hz>"


def _check_rate(rate: Any) -> int:
    if isinstance(rate, bool) or not isinstance(rate, int):
        if isinstance(rate, float) and rate.is_integer():
            rate = int(rate)
        else:
            raise UsageError(f"{_WHAT}(sample_rate=...) must be an integer (Hz), got {rate!r}")
    if not 1 <= rate <= MAX_SAMPLE_RATE:
        raise UsageError(
            f"{_WHAT}(sample_rate=...) must be 1 to {MAX_SAMPLE_RATE} Hz, got {rate!r}"
        )
    return int(rate)


def encode_wav(samples: Any, rate: int) -> bytes:
    """PCM WAV bytes of (N,) or (N, C) samples (see the module docstring for dtypes)."""
    import wave

    import numpy as np

    a = np.asarray(samples)
    if a.ndim == 1:
        a = a[:, None]
    kind = a.dtype
    if kind.kind == "f":
        a = np.nan_to_num(a.astype(np.float32, copy=False), nan=0.0, posinf=1.0, neginf=-1.0)
        a = np.rint(np.clip(a, -1.0, 1.0) * 32767.0).astype("<i2")
    elif kind == np.int8:
        a = (a.astype(np.int16) + 128).astype(np.uint8)
    elif kind == np.int16:
        a = a.astype("<i2", copy=False)
    elif kind == np.int32:
        a = a.astype("<i4", copy=False)
    elif kind != np.uint8:
        raise UsageError(f"{_WHAT}(data) has dtype {kind}; expected float, int16, int32 or uint8")
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(a.shape[1])
        w.setsampwidth(a.dtype.itemsize)
        w.setframerate(rate)
        w.writeframes(np.ascontiguousarray(a).tobytes())
    return buf.getvalue()


def probe(content: bytes, suffix: str) -> tuple[int, int, int] | None:
    """(sample rate, channels, samples) from a WAV or FLAC header, else None."""
    if suffix == ".wav":
        import wave

        try:
            with wave.open(io.BytesIO(content), "rb") as w:
                return w.getframerate(), w.getnchannels(), w.getnframes()
        except (wave.Error, EOFError):
            return None  # e.g. float or extensible WAV: kept, but not described
    if suffix == ".flac" and content[:4] == b"fLaC" and len(content) >= 26:
        # the first metadata block is STREAMINFO: 18 bytes in, 20 bits of rate,
        # 3 bits of channels - 1, 5 bits of bits per sample - 1, 36 bits of samples
        (bits,) = struct.unpack(">Q", content[18:26])
        rate = bits >> 44
        channels = ((bits >> 41) & 0x7) + 1
        total = bits & 0xFFFFFFFFF
        return (rate, channels, total) if rate else None
    return None

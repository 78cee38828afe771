"""``wisp.Video``: frames from an array, or a video file.

Stored value (docs/run-file.md, "Typed values", ``video`` version 1)::

    {"_type": "video", "path": "media/<hash>.mp4", "format": "mp4", "width": w,
     "height": h, "frames": t, "fps": 4.0, "caption": str or null}

Arrays are (T, C, H, W) or (B, T, C, H, W) (wandb's layout; a batch is tiled
into a grid, row by row) with C = 1, 3 or 4 (alpha is dropped), uint8 or
float in [0, 1] (float frames whose largest value is above 1.5 are read as 0-255,
as wandb does).  The frames are copied when the Video is made; encoding
happens on the writer thread:

- ``mp4``: H.264 (yuv420p, CRF 18) through PyAV (``pip install 'wisp-tracker[video]'``),
  the default when PyAV is installed; odd widths/heights are padded by one
  black pixel;
- ``webm``: VP9 through PyAV;
- ``gif``: through Pillow (lossless for up to 256 colours per frame), the
  default when PyAV is missing.

Files (``.mp4 .webm .gif .ogv .mov .m4v``) are stored byte for byte, with
null ``width``/``height``/``frames`` (and ``fps`` unless given).
"""

from __future__ import annotations

import functools
import io
import math
import os
from typing import TYPE_CHECKING, Any

from wisp._deferred import Deferred
from wisp._tensors import snapshot
from wisp.errors import UsageError, install_hint
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

__all__ = ["FILE_SUFFIXES", "FORMATS", "Video", "encode_frames", "tile"]

VERSION = 1
FORMATS = ("mp4", "webm", "gif")
FILE_SUFFIXES = (".mp4", ".webm", ".gif", ".ogv", ".mov", ".m4v")
MAX_FPS = 240
_DTYPES = frozenset({"uint8", "float16", "bfloat16", "float32", "float64"})
_WHAT = "wisp.Video"
_INSTALL = f"install PyAV with `{install_hint('video')}` (or `pip install av`)"


@functools.cache
def have_module(name: str) -> bool:
    """Whether ``name`` can be imported (checked once, without importing it)."""
    import importlib.util

    return importlib.util.find_spec(name) is not None


def default_format() -> str:
    if have_module("av"):
        return "mp4"
    if have_module("PIL"):
        return "gif"
    raise ImportError(
        f"{_WHAT} of frames needs an encoder: {_INSTALL}, or Pillow for GIF (`pip install Pillow`)"
    )


class Video(Deferred):
    """A video: a (T, C, H, W) or (B, T, C, H, W) array of frames, or the path of a video file.

    ``fps`` (frames per second, default 4) applies to arrays; ``format`` is
    "mp4" (default with PyAV), "webm" or "gif" (default without PyAV).
    """

    __slots__ = (
        "_data",
        "_nbytes",
        "_resolved",
        "caption",
        "format",
        "fps",
        "frames",
        "height",
        "width",
    )

    def __init__(
        self,
        data_or_path: Any,
        caption: str | None = None,
        fps: float | None = None,
        format: str | None = None,  # noqa: A002 - wandb's name
    ) -> None:
        self.caption = check_caption(_WHAT, caption)
        self._resolved: dict[str, Any] | None = None
        if fps is not None and (
            isinstance(fps, bool)
            or not isinstance(fps, (int, float))
            or not 0 < fps <= MAX_FPS
            or math.isnan(fps)
        ):
            raise UsageError(f"{_WHAT}(fps=...) must be a number above 0 and at most {MAX_FPS}")
        self.fps: float | None = float(fps) if fps is not None else 4.0
        data = data_or_path
        if isinstance(data, str) or hasattr(data, "__fspath__"):
            path, size, suffix = check_file(_WHAT, os.fspath(data), FILE_SUFFIXES)
            self._data: Any = path
            self._nbytes = size
            self.format = suffix[1:]
            self.width = self.height = self.frames = 0
            self.fps = float(fps) if fps is not None else None  # the file's own rate
            return
        if isinstance(data, Video):
            raise UsageError(f"{_WHAT}(data) is already a wisp.Video")
        if array_root(data) not in ARRAY_ROOTS:
            raise UsageError(
                f"{_WHAT}(data) has type {type(data).__name__}; expected a numpy/torch array "
                "of frames (T, C, H, W) or (B, T, C, H, W), or the path of a video file"
            )
        if format is None:
            format = default_format()  # noqa: A001
        elif format not in FORMATS:
            raise UsageError(f"{_WHAT}(format=...) must be one of {FORMATS}, got {format!r}")
        elif format != "gif" and not have_module("av"):
            raise ImportError(f"{_WHAT}(format={format!r}) needs PyAV: {_INSTALL}")
        elif format == "gif" and not have_module("PIL"):
            raise ImportError(f"{_WHAT}(format='gif') needs Pillow: `pip install Pillow`")
        self.format = format
        shape = tuple(int(n) for n in getattr(data, "shape", ()))
        if len(shape) not in (4, 5) or shape[-3] not in (1, 3, 4):
            raise UsageError(
                f"{_WHAT}(data) has shape {shape}; expected (frames, channels, height, width) "
                "or (batch, frames, channels, height, width) with 1, 3 or 4 channels"
            )
        if min(shape) < 1:
            raise UsageError(f"{_WHAT}(data) has shape {shape}; it holds no pixels")
        dtype = dtype_name(data)
        if dtype not in _DTYPES:
            raise UsageError(
                f"{_WHAT}(data) has dtype {dtype}; expected uint8 (0-255) or float in [0, 1]"
            )
        b = shape[0] if len(shape) == 5 else 1
        rows, cols = grid(b)
        self.frames = shape[-4]
        self.height, self.width = shape[-2] * rows, shape[-1] * cols
        # the encoded size, roughly: GIF about one byte per pixel, H.264/VP9 far less
        raw = self.frames * self.height * self.width
        self._nbytes = raw if format == "gif" else raw * 3 // 10
        self._data = snapshot(data, f"{_WHAT}(data)")

    def estimate_bytes(self) -> int:
        return self._nbytes

    # -- writer thread --------------------------------------------------------------------------

    def resolve(self, ctx: ResolveContext) -> dict[str, Any]:
        if self._resolved is None:
            if isinstance(self._data, str):
                content = read_file(self._data)
                value: dict[str, Any] = {"width": None, "height": None, "frames": None}
            else:
                frames = to_uint8(tile(self._data.array()))
                content = encode_frames(frames, self.fps or 4.0, self.format)
                value = {"width": self.width, "height": self.height, "frames": self.frames}
            self._data = None
            self._resolved = {
                "_type": "video",
                "path": ctx.save_media(content, "." + self.format),
                "format": self.format,
                **value,
                "fps": self.fps,
                "caption": self.caption,
            }
        return self._resolved

    def __repr__(self) -> str:
        return f"<wisp.Video {self.frames} frames {self.width}x{self.height} {self.format}>"


def grid(b: int) -> tuple[int, int]:
    """(rows, columns) of the grid a batch of ``b`` videos is tiled into."""
    cols = math.ceil(math.sqrt(b))
    return math.ceil(b / cols), cols


def tile(a: Any) -> Any:
    """(T, H, W, C) frames of a (T, C, H, W) or (B, T, C, H, W) array (batch tiled, row-major)."""
    import numpy as np

    if a.ndim == 4:
        return a.transpose(0, 2, 3, 1)
    b, t, c, h, w = a.shape
    rows, cols = grid(b)
    if rows * cols != b:
        a = np.concatenate([a, np.zeros((rows * cols - b, t, c, h, w), dtype=a.dtype)])
    a = a.reshape(rows, cols, t, c, h, w).transpose(2, 0, 4, 1, 5, 3)
    return a.reshape(t, rows * h, cols * w, c)


def to_uint8(a: Any) -> Any:
    """(T, H, W, 3) uint8 RGB of (T, H, W, C) frames."""
    import numpy as np

    if a.dtype.kind == "f":
        a = np.nan_to_num(a, nan=0.0, posinf=255.0, neginf=0.0)
        scale = 1.0 if a.size and float(a.max()) > 1.5 else 255.0  # wandb's 0-255 floats
        a = (np.clip(a * scale, 0.0, 255.0) + 0.5).astype(np.uint8)
    elif a.dtype != np.uint8:
        raise UsageError(f"{_WHAT}(data) has dtype {a.dtype}; expected uint8 or float")
    c = a.shape[3]
    if c == 1:
        a = np.repeat(a, 3, axis=3)
    elif c == 4:
        a = a[..., :3]
    return np.ascontiguousarray(a)


def encode_frames(frames: Any, fps: float, fmt: str) -> bytes:
    """Encode (T, H, W, 3) uint8 frames as ``fmt`` ("mp4", "webm" or "gif")."""
    if fmt == "gif":
        return _encode_gif(frames, fps)
    return _encode_av(frames, fps, fmt)


def _encode_av(frames: Any, fps: float, fmt: str) -> bytes:
    from fractions import Fraction

    import numpy as np

    try:
        import av
    except ImportError as exc:
        raise ImportError(f"{_WHAT}(format={fmt!r}) needs PyAV: {_INSTALL}") from exc
    _, h, w, _ = frames.shape
    if h % 2 or w % 2:  # yuv420p needs even sizes
        frames = np.pad(frames, ((0, 0), (0, h % 2), (0, w % 2), (0, 0)))
    buf = io.BytesIO()
    with av.open(buf, "w", format=fmt) as container:
        codec = "libx264" if fmt == "mp4" else "libvpx-vp9"
        stream: Any = container.add_stream(codec, rate=Fraction(fps).limit_denominator(1001))
        stream.width, stream.height = frames.shape[2], frames.shape[1]
        stream.pix_fmt = "yuv420p"
        if fmt == "mp4":
            stream.options = {"crf": "18", "preset": "veryfast", "tune": "zerolatency"}
        else:
            stream.options = {"crf": "20", "b": "0", "deadline": "realtime", "cpu-used": "8"}
        for frame in frames:
            for packet in stream.encode(av.VideoFrame.from_ndarray(frame, format="rgb24")):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
    return buf.getvalue()


def _encode_gif(frames: Any, fps: float) -> bytes:
    from PIL import Image as PILImage

    images = []
    for frame in frames:
        img = PILImage.fromarray(frame, "RGB")
        colours: Any = img.getcolors(256)
        if colours is not None:  # up to 256 colours: an exact palette
            pal = PILImage.new("P", (1, 1))
            flat = [v for _, rgb in colours for v in rgb]
            pal.putpalette(flat + [0] * (768 - len(flat)))
            img = img.quantize(palette=pal, dither=PILImage.Dither.NONE)
        else:
            img = img.quantize(256, dither=PILImage.Dither.NONE)
        images.append(img)
    buf = io.BytesIO()
    images[0].save(
        buf,
        "GIF",
        save_all=True,
        append_images=images[1:],
        duration=max(20, round(1000 / fps)),
        loop=0,
        optimize=False,
        disposal=1,
    )
    return buf.getvalue()

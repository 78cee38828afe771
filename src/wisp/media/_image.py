"""``wisp.Image`` and galleries (a list of Images logged under one key).

Stored values (docs/run-file.md, "Typed values")::

    {"_type": "image", "path": "media/<hash>.png", "width": w, "height": h,
     "caption": str or null, "masks": {...}, "boxes": {...}}

``masks`` and ``boxes`` are present only when given (format in ``_overlays.py``).
    {"_type": "images", "items": [<image value>, ...]}

The pixels are copied when the Image is made (calling thread); conversion
and PNG encoding happen on the writer thread, and the file is named by its
content hash, so identical images are stored once.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

from wisp._deferred import Deferred
from wisp._tensors import snapshot
from wisp.errors import UsageError

if TYPE_CHECKING:
    from wisp._deferred import ResolveContext

__all__ = ["MODES", "Gallery", "Image", "gallery"]

#: Modes an image can be stored in: channels per mode.
MODES = {"L": 1, "LA": 2, "RGB": 3, "RGBA": 4}
_CHANNELS = (1, 3, 4)
_FILE_SUFFIXES = {"PNG": ".png", "JPEG": ".jpg", "GIF": ".gif", "WEBP": ".webp"}
_ARRAY_ROOTS = ("numpy", "torch", "jax", "jaxlib")
_FLOAT_KINDS = ("float16", "bfloat16", "float32", "float64")
_INT_KINDS = ("int8", "int16", "int32", "int64", "uint16", "uint32", "uint64")
_TORCH_DTYPES = frozenset({"uint8", "bool", *_FLOAT_KINDS, *_INT_KINDS})


def _pil_image() -> Any:
    try:
        from PIL import Image as PILImage
    except ImportError as exc:
        raise ImportError(
            "wisp.Image of a file or PIL image needs Pillow; install it with `pip install Pillow`"
        ) from exc
    return PILImage


def _layout(shape: tuple[int, ...], prefer_chw: bool) -> tuple[int, int, int, bool]:
    """(height, width, channels, is_chw) of an HW, HWC or CHW shape, or UsageError."""
    if len(shape) == 2:
        return shape[0], shape[1], 1, False
    if len(shape) == 3:
        first, last = shape[0] in _CHANNELS, shape[2] in _CHANNELS
        if first and (prefer_chw or not last):
            return shape[1], shape[2], shape[0], True
        if last:
            return shape[0], shape[1], shape[2], False
    raise UsageError(
        f"wisp.Image(data) has shape {shape}; expected (H, W), (H, W, C) or (C, H, W) "
        "with C = 1, 3 or 4 (log a batch as a list of wisp.Image)"
    )


class Image(Deferred):
    """An image: a numpy/torch/JAX array, a PIL image or a path to an image file.

    Arrays may be (H, W), (H, W, C) or (C, H, W) with C = 1, 3 or 4 channels
    (torch tensors are read as (C, H, W) when both would fit, other arrays as
    (H, W, C)), of dtype uint8 (0-255), bool, integers (clipped to 0-255) or
    float: in [0, 1] when no value exceeds 1, else 0-255 as wandb reads them
    (clipped; NaN becomes 0).  ``mode`` ("L", "LA", "RGB" or "RGBA") converts
    the image.  ``masks`` and ``boxes`` take wandb's segmentation masks and
    bounding boxes (see ``_overlays.py``).
    Files in PNG, JPEG, GIF or WebP are stored as they are; other inputs are
    stored as PNG.
    """

    __slots__ = (
        "_boxes",
        "_data",
        "_kind",
        "_masks",
        "_nbytes",
        "_resolved",
        "caption",
        "height",
        "mode",
        "width",
    )
    _data: Any  # an ArraySnapshot, a PIL image or a file path, until resolved

    def __init__(
        self,
        data: Any,
        caption: str | None = None,
        mode: str | None = None,
        *,
        masks: Any = None,
        boxes: Any = None,
        **wandb_only: Any,
    ) -> None:
        if wandb_only:  # grouping, classes, file_type, normalize: accepted, no effect
            unknown = set(wandb_only) - {"grouping", "classes", "file_type", "normalize"}
            if unknown:
                raise UsageError(f"wisp.Image() got unexpected argument(s) {sorted(unknown)}")
        if caption is not None and not isinstance(caption, str):
            raise UsageError(f"wisp.Image(caption=...) must be a string, got {caption!r}")
        if mode is not None and mode not in MODES:
            raise UsageError(
                f"wisp.Image(mode=...) must be one of {', '.join(MODES)}, got {mode!r}"
            )
        self.caption = caption
        self.mode = mode
        self._resolved: dict[str, Any] | None = None
        module = type(data).__module__ or ""
        root = module.partition(".")[0]
        if isinstance(data, (str, os.PathLike)):
            self._from_file(os.fspath(data))
        elif root == "PIL":
            self._from_pil(data)
        elif root in _ARRAY_ROOTS or isinstance(data, Image):
            if isinstance(data, Image):
                raise UsageError("wisp.Image(data) is already a wisp.Image")
            self._from_array(data, prefer_chw=root == "torch")
        else:
            raise UsageError(
                f"wisp.Image(data) has type {type(data).__name__}; expected a numpy/torch/JAX "
                "array, a PIL image or the path of an image file"
            )
        self._masks: Any = None
        self._boxes: Any = None
        if masks is not None or boxes is not None:
            from wisp.media import _overlays

            if masks is not None:
                self._masks = _overlays.check_masks(masks, self.height, self.width)
            if boxes is not None:
                self._boxes = _overlays.check_boxes(boxes)

    def _from_array(self, data: Any, prefer_chw: bool) -> None:
        shape = tuple(getattr(data, "shape", ()))
        h, w, c, chw = _layout(shape, prefer_chw)
        if h < 1 or w < 1:
            raise UsageError(f"wisp.Image(data) has shape {shape}; it holds no pixels")
        dt: Any = getattr(data, "dtype", None)
        kind = getattr(dt, "kind", None)
        # a numpy dtype: .kind is cheap, str() is not; torch: str() is cheap
        ok = kind in "bfiu" if kind is not None else str(dt).removeprefix("torch.") in _TORCH_DTYPES
        if not ok:
            dtype = str(dt).removeprefix("torch.")
            raise UsageError(
                f"wisp.Image(data) has dtype {dtype}; expected uint8 (0-255), bool, integers "
                "or float"
            )
        self._kind = "chw" if chw else "hwc"
        self._data = snapshot(data, "wisp.Image(data)")
        self.width, self.height = w, h
        self._nbytes = h * w * MODES.get(self.mode or "", c)

    def _from_pil(self, img: Any) -> None:
        pil = sys.modules.get("PIL.Image")
        if pil is None or not isinstance(img, pil.Image):
            raise UsageError(f"wisp.Image(data) has unsupported PIL type {type(img).__name__}")
        self._kind = "pil"
        self._data = img.copy()
        self.width, self.height = img.size
        self._nbytes = self.width * self.height * MODES.get(self.mode or img.mode, 4)

    def _from_file(self, path: str) -> None:
        try:
            st = os.stat(path)
        except OSError as exc:
            raise UsageError(f"wisp.Image({path!r}): no such image file ({exc.strerror})") from None
        if not os.path.isfile(path):
            raise UsageError(f"wisp.Image({path!r}) is not a file")
        _pil_image()  # fail now, on the calling thread, when Pillow is missing
        self._kind = "file"
        self._data = os.path.abspath(path)
        self.width = self.height = 0  # read from the file on the writer thread
        self._nbytes = st.st_size

    def estimate_bytes(self) -> int:
        return self._nbytes

    # -- writer thread --------------------------------------------------------------------------

    def resolve(self, ctx: ResolveContext) -> dict[str, Any]:
        if self._resolved is None:  # the same Image logged twice is encoded once
            kind = self._kind
            if kind == "file":
                path = self._resolve_file(ctx)
            else:
                pixels = self._pil_pixels() if kind == "pil" else self._array_pixels()
                if self.mode is not None:
                    pixels = convert_mode(pixels, MODES[self.mode])
                from wisp.media._png import encode_png

                path = ctx.save_media(encode_png(pixels), ".png")
            self._data = None  # the snapshot is not needed any more
            self._resolved = {
                "_type": "image",
                "path": path,
                "width": self.width,
                "height": self.height,
                "caption": self.caption,
            }
            if self._masks is not None:
                from wisp.media._overlays import resolve_masks

                self._resolved["masks"] = resolve_masks(self._masks, ctx)
                self._masks = None
            if self._boxes is not None:
                self._resolved["boxes"] = self._boxes
        return self._resolved

    def _array_pixels(self) -> Any:
        import numpy as np

        a = self._data.array()
        if a.ndim == 2:
            a = a[:, :, None]
        elif self._kind == "chw":
            a = a.transpose(1, 2, 0)
        if a.dtype == np.bool_:
            a = a.astype(np.uint8) * np.uint8(255)
        elif a.dtype.kind == "f":
            finite = a[np.isfinite(a)]
            if finite.size and float(finite.max()) > 1.0:  # 0-255, as wandb reads it
                a = np.nan_to_num(a, nan=0.0, posinf=255.0, neginf=0.0)
                a = (np.clip(a, 0.0, 255.0) + 0.5).astype(np.uint8)
            else:
                a = np.nan_to_num(a, nan=0.0, posinf=1.0, neginf=0.0)
                a = (np.clip(a, 0.0, 1.0) * 255.0 + 0.5).astype(np.uint8)
        elif a.dtype.kind in "iu" and a.dtype != np.uint8:
            a = np.clip(a, 0, 255).astype(np.uint8)
        elif a.dtype != np.uint8:
            raise UsageError(f"wisp.Image(data) has dtype {a.dtype}; expected uint8 or float")
        return np.ascontiguousarray(a)

    def _pil_pixels(self) -> Any:
        import numpy as np

        img = self._data
        if img.mode not in MODES:
            has_alpha = "A" in img.getbands() or "transparency" in img.info
            grey = img.mode.startswith(("1", "I", "F"))
            img = img.convert("RGBA" if has_alpha else "L" if grey else "RGB")
        a = np.asarray(img, dtype=np.uint8)
        return np.ascontiguousarray(a if a.ndim == 3 else a[:, :, None])

    def _resolve_file(self, ctx: ResolveContext) -> str:
        pil = _pil_image()
        path = self._data
        with open(path, "rb") as f:
            content = f.read()
        import io

        with pil.open(io.BytesIO(content)) as img:
            self.width, self.height = img.size
            suffix = _FILE_SUFFIXES.get(img.format or "")
            if suffix is not None and self.mode is None:
                return ctx.save_media(content, suffix)
            img.load()
            self._data = img.copy()
        pixels = self._pil_pixels()
        if self.mode is not None:
            pixels = convert_mode(pixels, MODES[self.mode])
        from wisp.media._png import encode_png

        return ctx.save_media(encode_png(pixels), ".png")

    def __repr__(self) -> str:
        return f"<wisp.Image {self.width}x{self.height} caption={self.caption!r}>"


def convert_mode(pixels: Any, channels: int) -> Any:
    """Convert (H, W, C) uint8 pixels to ``channels`` (grey uses ITU-R 601-2 luma, like PIL)."""
    import numpy as np

    have = pixels.shape[2]
    if have == channels:
        return pixels
    color, alpha = (pixels[:, :, :-1], pixels[:, :, -1:]) if have in (2, 4) else (pixels, None)
    want_color = 1 if channels <= 2 else 3
    if color.shape[2] == 3 and want_color == 1:
        luma = color.astype(np.uint32) @ np.array([299, 587, 114], dtype=np.uint32)
        color = ((luma + 500) // 1000).astype(np.uint8)[:, :, None]
    elif color.shape[2] == 1 and want_color == 3:
        color = np.repeat(color, 3, axis=2)
    if channels in (2, 4):
        if alpha is None:
            alpha = np.full((*color.shape[:2], 1), 255, dtype=np.uint8)
        color = np.concatenate([color, alpha], axis=2)
    return np.ascontiguousarray(color)


class Gallery(Deferred):
    """Several Images logged under one key."""

    __slots__ = ("_items",)

    def __init__(self, items: list[Image]) -> None:
        self._items = items

    def estimate_bytes(self) -> int:
        return max(item.estimate_bytes() for item in self._items)

    def resolve(self, ctx: ResolveContext) -> dict[str, Any]:
        return {"_type": "images", "items": [item.resolve(ctx) for item in self._items]}


MAX_GALLERY = 1000


def gallery(key: str, items: Any) -> Gallery:
    """The value ``log()`` makes of a list of Images (other Deferred lists are refused)."""
    for i, item in enumerate(items):
        if not isinstance(item, Image):
            raise UsageError(
                f"log() value for {key!r} is a list whose item {i} is {type(item).__name__}; "
                "a list of media must hold only wisp.Image"
            )
    if len(items) > MAX_GALLERY:
        raise UsageError(
            f"log() value for {key!r} is a list of {len(items)} images; at most {MAX_GALLERY}"
        )
    return Gallery(list(items))

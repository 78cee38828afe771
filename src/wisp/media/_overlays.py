"""Segmentation masks and bounding boxes on a ``wisp.Image`` (wandb's ``masks=``/``boxes=``).

Stored inside the image value (docs/run-file.md, "Typed values"; version 1)::

    "masks": {name: {"path": "media/<hash>.png", "class_labels": {"0": label, ...}}}
    "boxes": {name: {"box_data": [{"position": {...}, "class_id": int,
                                   "box_caption": str, "scores": {...},
                                   "domain": "pixel" | null}, ...],
                     "class_labels": {"0": label, ...}}}

A mask is a 2-D array of class ids (0-255), the image's height by width, stored as an
8-bit greyscale PNG whose pixel values are the ids.  A box ``position`` is either
``{"minX", "maxX", "minY", "maxY"}`` or ``{"middle": [x, y], "width", "height"}``, in
pixels with ``domain="pixel"``, else as fractions of the image (wandb's convention).
"""

from __future__ import annotations

from collections.abc import Mapping

from wisp._tensors import snapshot
from wisp.errors import UsageError

TYPE_CHECKING = False  # typing costs ~15 ms to import; only type checkers need it
if TYPE_CHECKING:
    from typing import Any

    from wisp._deferred import ResolveContext

__all__ = ["check_boxes", "check_masks", "resolve_masks"]

_POSITION_KEYS = ({"minX", "maxX", "minY", "maxY"}, {"middle", "width", "height"})


def _labels(what: str, labels: Any) -> dict[str, str]:
    if labels is None:
        return {}
    if not isinstance(labels, Mapping):
        raise UsageError(f"{what} class_labels must be a dict of id -> label, got {labels!r}")
    out = {}
    for k, v in labels.items():
        if isinstance(k, bool) or not isinstance(k, int):
            raise UsageError(f"{what} class_labels keys must be int class ids, got {k!r}")
        out[str(k)] = str(v)
    return out


def check_masks(masks: Any, height: int, width: int) -> dict[str, tuple[Any, dict[str, str]]]:
    """name -> (snapshot of the mask array, class labels); UsageError naming what is wrong."""
    if not isinstance(masks, Mapping):
        raise UsageError(f"wisp.Image(masks=...) must be a dict of name -> mask, got {masks!r}")
    out = {}
    for name, mask in masks.items():
        what = f"wisp.Image(masks={{{name!r}: ...}})"
        if not isinstance(name, str) or not isinstance(mask, Mapping) or "mask_data" not in mask:
            raise UsageError(f"{what} must be {{'mask_data': array, 'class_labels': {{...}}}}")
        data = mask["mask_data"]
        shape = tuple(getattr(data, "shape", ()))
        if len(shape) != 2 or (height and width and shape != (height, width)):
            raise UsageError(
                f"{what} mask_data has shape {shape}; expected the image's ({height}, {width})"
            )
        kind = getattr(getattr(data, "dtype", None), "kind", "?")
        if kind not in "biu":
            raise UsageError(f"{what} mask_data must hold integer class ids 0-255")
        out[name] = (snapshot(data, f"{what} mask_data"), _labels(what, mask.get("class_labels")))
    return out


def _num(what: str, v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        if hasattr(v, "item"):
            return _num(what, v.item())
        raise UsageError(f"{what} must be a number, got {v!r}")
    return float(v)


def check_boxes(boxes: Any) -> dict[str, Any]:
    """The boxes as JSON (copied now): UsageError naming the first bad box."""
    if not isinstance(boxes, Mapping):
        raise UsageError(f"wisp.Image(boxes=...) must be a dict of name -> boxes, got {boxes!r}")
    out: dict[str, Any] = {}
    for name, group in boxes.items():
        what = f"wisp.Image(boxes={{{name!r}: ...}})"
        if not isinstance(name, str) or not isinstance(group, Mapping):
            raise UsageError(f"{what} must be {{'box_data': [...], 'class_labels': {{...}}}}")
        items = []
        for i, box in enumerate(group.get("box_data") or ()):
            where = f"{what} box_data[{i}]"
            pos = box.get("position") if isinstance(box, Mapping) else None
            if not isinstance(pos, Mapping) or set(pos) not in _POSITION_KEYS:
                raise UsageError(
                    f"{where} position must have minX/maxX/minY/maxY or middle/width/height"
                )
            position: dict[str, Any] = {}
            for k, v in pos.items():
                if k == "middle":
                    position[k] = [_num(f"{where} middle", x) for x in v]
                else:
                    position[k] = _num(f"{where} {k}", v)
            cid = box.get("class_id")
            if isinstance(cid, bool) or not isinstance(cid, int):
                raise UsageError(f"{where} class_id must be an int, got {cid!r}")
            item: dict[str, Any] = {"position": position, "class_id": cid}
            if box.get("box_caption") is not None:
                item["box_caption"] = str(box["box_caption"])
            if box.get("scores"):
                item["scores"] = {
                    str(k): _num(f"{where} scores", v) for k, v in box["scores"].items()
                }
            if box.get("domain") is not None:
                item["domain"] = str(box["domain"])
            items.append(item)
        out[name] = {"box_data": items, "class_labels": _labels(what, group.get("class_labels"))}
    return out


def resolve_masks(
    masks: dict[str, tuple[Any, dict[str, str]]], ctx: ResolveContext
) -> dict[str, Any]:
    """Writer thread: each mask as a greyscale PNG of its class ids."""
    import numpy as np

    from wisp.media._png import encode_png

    out = {}
    for name, (snap, labels) in masks.items():
        ids = np.clip(snap.array(), 0, 255).astype(np.uint8)[:, :, None]
        path = ctx.save_media(encode_png(np.ascontiguousarray(ids)), ".png")
        out[name] = {"path": path, "class_labels": labels}
    return out

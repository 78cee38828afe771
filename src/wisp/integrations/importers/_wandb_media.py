"""wandb media in offline run folders, as wisp values.

wandb (0.1x and later) writes a logged media value as nested history items
(``["img", "_type"] = "image-file"``, ``["img", "path"] = "media/images/..."``) and the
file under the run folder's ``files/``.  Converted:

- ``image-file`` -> a wisp image (the PNG/JPEG/GIF bytes copied into the run's ``media/``);
- ``table-file`` -> a wisp table (``wisp.table`` version 1; cells that are not plain
  values, e.g. wandb's ``"Image"`` placeholders for images kept in artifacts, are kept
  as their JSON text);
- ``images/separated`` (a list of images) -> a wisp gallery;
- ``histogram`` -> a wisp histogram (bins and counts as wandb computed them).

Other kinds (audio, video, html, 3D objects, plots) are
counted in ``imported_from.skipped`` by kind.
"""

from __future__ import annotations

import json
import os
from typing import Any

from wisp._values import Deferred
from wisp.integrations.importers._writeback import Gallery, MediaBytes, Typed

__all__ = ["TableFile", "convert_value", "nest"]

_PLAIN = (int, float, str, bool, type(None))


def nest(items: Any) -> dict[str, Any]:
    """History/summary items (``key`` or ``nested_key`` + ``value_json``) as one dict."""
    out: dict[str, Any] = {}
    for item in items:
        path = list(item.nested_key) or [item.key]
        value = json.loads(item.value_json)
        node = out
        for part in path[:-1]:
            nxt = node.get(part)
            if not isinstance(nxt, dict):
                nxt = node[part] = {}
            node = nxt
        node[path[-1]] = value
    return out


class TableFile(Deferred):
    """A wandb table file's rows, stored as a wisp table on the writer thread."""

    __slots__ = ("columns", "data")

    def __init__(self, columns: list[str], data: list[list[Any]]) -> None:
        self.columns = columns
        self.data = data

    def resolve(self, ctx: Any) -> Any:
        from wisp.media._table import FORMAT, VERSION

        doc = {"format": FORMAT, "version": VERSION, "columns": self.columns, "data": self.data}
        raw = json.dumps(doc, allow_nan=True, separators=(",", ":"), ensure_ascii=False)
        path = ctx.save_media(raw.encode("utf-8"), ".table.json")
        return {"_type": "table", "path": path, "columns": self.columns, "rows": len(self.data)}


def _read(files_dir: str, rel: Any) -> bytes | None:
    if not isinstance(rel, str):
        return None
    root = os.path.realpath(files_dir)
    full = os.path.realpath(os.path.join(root, rel))
    if not full.startswith(root + os.sep) or not os.path.isfile(full):
        return None
    with open(full, "rb") as f:
        return f.read()


def _count(skipped: dict[str, int], what: str) -> None:
    skipped[what] = skipped.get(what, 0) + 1


def convert_value(value: Any, files_dir: str, skipped: dict[str, int]) -> Any:
    """A wandb history value as a wisp value; None when it is not imported (counted)."""
    if not isinstance(value, dict):
        return value
    kind = value.get("_type")
    if kind is None:
        return value  # a plain nested dict: log() flattens it to key/sub
    if kind == "histogram" and "bins" in value and "values" in value:
        return Typed(
            {
                "_type": "histogram",
                "bins": value["bins"],
                "counts": value["values"],
                "nan": 0,
                "inf": 0,
            }
        )
    if kind == "image-file":
        data = _read(files_dir, value.get("path"))
        if data is None:
            _count(skipped, "image-file (file missing)")
            return None
        suffix = os.path.splitext(str(value.get("path")))[1] or ".png"
        return MediaBytes(
            data,
            suffix,
            int(value.get("width") or 0),
            int(value.get("height") or 0),
            value.get("caption"),
        )
    if kind == "table-file":
        raw = _read(files_dir, value.get("path"))
        try:
            doc = json.loads(raw) if raw is not None else None
        except ValueError:
            doc = None
        if not isinstance(doc, dict) or not isinstance(doc.get("columns"), list):
            _count(skipped, "table-file (file missing or unreadable)")
            return None
        columns = [str(c) for c in doc["columns"]]
        rows = [
            [c if isinstance(c, _PLAIN) else json.dumps(c) for c in row]
            for row in doc.get("data") or []
            if isinstance(row, list)
        ]
        return TableFile(columns, rows)
    if kind == "images/separated" and isinstance(value.get("filenames"), list):
        captions = value.get("captions") or []
        items = []
        for i, rel in enumerate(value["filenames"]):
            data = _read(files_dir, rel)
            if data is None:
                _count(skipped, "images/separated (file missing)")
                return None
            caption = captions[i] if i < len(captions) else None
            items.append(
                MediaBytes(
                    data,
                    os.path.splitext(str(rel))[1] or ".png",
                    int(value.get("width") or 0),
                    int(value.get("height") or 0),
                    caption,
                )
            )
        return Gallery(items)
    _count(skipped, str(kind))
    return None

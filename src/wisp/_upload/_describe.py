"""What the server is told about a run before its records: the ``PUT /runs/{id}`` body.

Read from the run file's records (:func:`describe_records`), so the uploader and ``wisp
ui``'s batch importer (``wisp._ui_batch``) describe a run the same way.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any, cast

from wisp._runfile import Record, RecordTail, RecordType
from wisp._wire import RUN_RECORD_FIELDS, RunBody

__all__ = ["describe_records", "describe_run", "refers_to_files"]


def refers_to_files(payload: bytes) -> bool:
    """Whether a record's payload may name local files (media, saved files) that go to the
    server before the record: a cheap byte test, exact where it says no."""
    return b'"path"' in payload


def describe_run(path: str, *, crashed: bool = False) -> tuple[str, RunBody]:
    """The run id and ``PUT /runs/{id}`` body, from the run file as it is now."""
    tail = RecordTail(path)

    def records() -> Iterator[Record]:
        while recs := tail.read():
            yield from recs

    return describe_records(records(), path, crashed=crashed)


def describe_records(
    records: Iterable[Record], path: str, *, crashed: bool = False
) -> tuple[str, RunBody]:
    """:func:`describe_run` from the run file's records (``path`` names it in errors)."""
    first: dict[str, Any] | None = None
    config: dict[str, Any] = {}
    state = "running"
    for rec in records:
        t = rec.type
        if t == RecordType.RUN:
            state = "running"
            obj = json.loads(rec.payload)
            if first is None:
                first = obj
            else:  # a later segment, or name/tags/notes set mid-run: the latest wins
                first.update({k: obj[k] for k in ("name", "tags", "notes") if k in obj})
        elif t == RecordType.CONFIG:
            config = json.loads(rec.payload).get("config", {})
        elif t == RecordType.FINISH:
            state = json.loads(rec.payload).get("state", "finished")
    if first is None or not isinstance(first.get("run_id"), str):
        raise FileNotFoundError(f"{path}: no run record yet")
    if crashed and state == "running":
        state = "crashed"
    body = cast("RunBody", {k: first.get(k) for k in RUN_RECORD_FIELDS})
    body["tags"] = body["tags"] or []
    body["config"] = config
    body["state"] = state
    body["metadata"] = {
        k: v
        for k, v in first.items()
        if k not in RUN_RECORD_FIELDS and k not in ("run_id", "writer_id")
    }
    return first["run_id"], body

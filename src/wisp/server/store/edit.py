"""Editing and deleting runs (``PATCH``/``DELETE /api/v1/runs/{id}``) and listing saved files.

A delete removes the run and every row that belongs to it (points and blocks through its
metric keys, extras, media items, console lines, events, writers, metric specs) in one
transaction; media bytes stay in the blob store, shared by content hash.
"""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import delete, select, update

from wisp._protocol import RecordType
from wisp.server.store import lineage
from wisp.server.store import schema as S
from wisp.server.store.runs import with_config_json

__all__ = ["delete_run", "edit_run", "run_files"]


def edit_run(store: Any, run_id: str, cols: dict[str, Any]) -> dict[str, Any] | None:
    """Set validated columns (name, tags, notes, group, job type, config, summary) of a run;
    None when it is unknown."""
    with store.db.tx() as conn:
        if cols:
            vals = with_config_json(cols)
            res = conn.execute(update(S.runs).where(S.runs.c.id == run_id).values(**vals))
            if not res.rowcount:
                return None
        row = conn.execute(select(S.runs).where(S.runs.c.id == run_id)).first()
    return None if row is None else dict(store.run_dict(row))


def delete_run(store: Any, run_id: str) -> bool:
    """Delete a run and everything stored for it; False when it is unknown."""
    with store.db.tx() as conn:
        lineage.forget(conn, run_id)  # its fork record and the points its rewinds set aside
        kids = select(S.metric_keys.c.id).where(S.metric_keys.c.run_id == run_id)
        conn.execute(delete(S.chunks).where(S.chunks.c.key_id.in_(kids)))
        for table in (
            S.metric_keys,
            S.extras,
            S.media_items,
            S.media_refs,  # its media become garbage unless another run refers to them
            S.run_metrics,
            S.console,
            S.events,
            S.writers,
        ):
            conn.execute(delete(table).where(table.c.run_id == run_id))
        res = conn.execute(delete(S.runs).where(S.runs.c.id == run_id))
        return bool(res.rowcount)


def run_files(store: Any, run_id: str) -> list[dict[str, Any]]:
    """The files saved with ``wisp.save()`` (FILE records), last record per name wins."""
    e = S.events.c
    q = select(e.data).where(e.run_id == run_id, e.type == RecordType.FILE).order_by(e.id)
    out: dict[str, dict[str, Any]] = {}
    with store.engine.connect() as conn:
        for (data,) in conn.execute(q):
            try:
                doc = json.loads(data)
            except ValueError:
                continue
            if isinstance(doc, dict) and isinstance(doc.get("name"), str):
                out[doc["name"]] = {
                    "name": doc["name"],
                    "size": doc.get("size"),
                    "sha256": doc.get("sha256"),
                    "kind": doc.get("kind", "file"),
                }
    return list(out.values())

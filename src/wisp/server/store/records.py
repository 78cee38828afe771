"""Exactly-once ingestion of record batches: writers' acked sequence numbers and each record.

A batch ``(run, writer, first_seq, records)`` is applied in one write transaction:
records at or below the writer's acked seq are skipped, a gap is a 409
(:func:`store.ingest.conflict`).  The batch's numeric points are merged into their chunks
once, after its other records (:mod:`series.points`); the metric-key ids of recent runs are
cached in memory, keyed by the run's generation token (``runs.gen``), so a run deleted by
another server process and logged again under the same key never reuses its predecessor's ids.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from sqlalchemy import bindparam, select, update
from sqlalchemy.engine import Connection

from wisp._protocol import RecordType
from wisp.server.http.problem import Problem
from wisp.server.store import lineage
from wisp.server.store import schema as S
from wisp.server.store.db import Db
from wisp.server.store.ingest import Column, Prepared, conflict
from wisp.server.store.runs import REVIVE, UPDATE_RUN, RunStore, with_config_json

__all__ = ["RecordStore"]

_KEY_CACHE_MAX = 200_000
# statements run for every batch, built once (building one costs more than running it)
_W = S.writers.c
_WRITER = (_W.run_id == bindparam("run"), _W.writer_id == bindparam("writer"))
_ACKED = select(_W.acked_seq).where(*_WRITER)
_SET_ACKED = update(S.writers).where(*_WRITER)
_MK = S.metric_keys.c
_KEY_IDS = select(_MK.id, _MK.key).where(
    _MK.run_id == bindparam("run"), _MK.key.in_(bindparam("keys", expanding=True))
)
_SHA = re.compile(r"[0-9a-f]{64}")


class RecordStore:
    """Applies record batches to the run, points, extras, media, console and events tables."""

    def __init__(self, db: Db, runs: RunStore) -> None:
        self.db = db
        self.runs = runs
        self._key_ids: dict[tuple[str, str], int] = {}
        self._acked = db.dialect.for_update(_ACKED)

    def acked_seq(self, run_id: str, writer_id: str) -> int:
        w = S.writers.c
        with self.db.read() as conn:
            v = conn.execute(
                select(w.acked_seq).where(w.run_id == run_id, w.writer_id == writer_id)
            ).scalar()
        return -1 if v is None else int(v)

    def writers(self, run_id: str) -> dict[str, int]:
        """``{writer_id: acked seq}`` of every writer of a run."""
        w = S.writers.c
        with self.db.read() as conn:
            rows = conn.execute(select(w.writer_id, w.acked_seq).where(w.run_id == run_id))
            return {str(a): int(b) for a, b in rows}

    def ingest(
        self,
        run_id: str,
        writer_id: str,
        first_seq: int,
        records: list[Prepared],
        pause: Callable[[], None] | None = None,
    ) -> int:
        """Apply ``records`` (seq ``first_seq + i``) exactly once; returns the acked seq.
        ``pause()``, if given, is called between records (:mod:`wisp.server.readfirst`)."""
        new_keys: dict[tuple[str, str], int] = {}
        with self.db.tx() as conn:
            acked = self.ingest_in(conn, run_id, writer_id, first_seq, records, new_keys, pause)
        self.remember_keys(new_keys)
        return acked

    def remember_keys(self, new_keys: dict[tuple[str, str], int]) -> None:
        """Cache the metric-key ids of a committed transaction (:meth:`ingest_in`'s)."""
        if len(self._key_ids) > _KEY_CACHE_MAX:
            self._key_ids.clear()
        self._key_ids.update(new_keys)

    def ingest_in(
        self,
        conn: Connection,
        run_id: str,
        writer_id: str,
        first_seq: int,
        records: list[Prepared],
        new_keys: dict[tuple[str, str], int],
        pause: Callable[[], None] | None = None,
    ) -> int:
        """:meth:`ingest` inside the caller's write transaction; the metric-key ids it made
        go to ``new_keys``, for :meth:`remember_keys` once the transaction commits."""
        dialect = self.db.dialect
        user = self.runs.guard.on_writer(conn, run_id, writer_id)  # 409: another's writer
        dialect.insert_ignore(
            conn,
            S.writers,
            [{"run_id": run_id, "writer_id": writer_id, "acked_seq": -1, "user_id": user}],
            ["run_id", "writer_id"],
        )
        who = {"run": run_id, "writer": writer_id}
        acked = int(conn.execute(self._acked, who).scalar_one())
        if first_seq > acked + 1:
            raise conflict(acked)
        todo = records[acked + 1 - first_seq :]
        if not todo:
            return acked
        # before any other write: see _points (blocks of concurrent writers)
        dialect.lock_series(conn, run_id, {c.key for rec in todo for c in rec.points})
        gen = self.runs.gen(conn, run_id)
        if gen is None:  # records before the PUT: the path is the run's key (old clients)
            first = todo[0]
            if first.kind != RecordType.RUN or "project" not in first.data["cols"]:
                raise Problem(
                    404,
                    "run_not_found",
                    f"run {run_id!r} does not exist: PUT /api/v1/runs/{run_id} first",
                    "run_id",
                )
            cols = first.data["cols"]
            self.runs.check_legacy(conn, cols["project"], run_id)
            self.runs.create(conn, run_id, {**cols, "meta": first.data["meta"]})
            gen = self.runs.gen(conn, run_id) or ""
        else:
            self.runs.guard.on_write(conn, run_id, None)  # 409 unless the caller owns it
        ck = f"{run_id}:{gen}"  # the key-id cache: never a deleted run's ids
        points: list[Column] = []
        run_vals: dict[str, Any] = {}  # the runs row's new columns, in record order
        for i, rec in enumerate(todo, acked + 1 - first_seq):
            if pause is not None:
                pause()
            if rec.kind in (RecordType.RESUME, RecordType.LINEAGE):  # fork, rewind
                back = lineage.on_record(conn, self.runs.guard, run_id, rec, f"records[{i}]")
                if back is not None:  # the points before a rewind go in, then later ones aside
                    self._write_points(conn, run_id, ck, points, new_keys)
                    points = []
                    when = back[1] or self.db.clock()  # the client's time: forks compare it
                    lineage.set_aside_after(conn, dialect, run_id, back[0], when)
            self._apply(conn, run_id, rec, points, run_vals)
        now = self.db.clock()
        if pause is not None:
            pause()
        self._write_points(conn, run_id, ck, points, new_keys, pause)
        if points:
            run_vals["stepped_at"] = now  # not stalled (``stalled`` in the runs filter)
        if "summary" in run_vals:  # a fork's: over its view (store.lineage), its points in
            summary = lineage.view_summary(conn, dialect, run_id, run_vals["summary"])
            run_vals.update(with_config_json({"summary": summary}))
        new_acked = first_seq + len(records) - 1
        conn.execute(_SET_ACKED, {**who, "acked_seq": new_acked})
        # one UPDATE of the run for the batch: its RUN, CONFIG, SUMMARY, FINISH and RESUME
        # records set columns of one row, and of two that set a column the later wins
        conn.execute(UPDATE_RUN, {**run_vals, "run_key": run_id, "last_seen": now})
        if "state" not in run_vals:
            conn.execute(REVIVE, {"run_key": run_id})
        return new_acked

    def _write_points(
        self,
        conn: Connection,
        run_id: str,
        ck: str,
        points: list[Column],
        new_keys: dict[tuple[str, str], int],
        pause: Callable[[], None] | None = None,
    ) -> None:
        """Once per batch (and before a rewind): a chunk is rewritten once, not per record."""
        if points:
            ids = self._key_id_map(conn, run_id, ck, {c.key for c in points}, new_keys)
            self.db.dialect.write_points(conn, ids, points, pause)

    def _apply(
        self,
        conn: Connection,
        run_id: str,
        rec: Prepared,
        points: list[Column],
        run_vals: dict[str, Any],
    ) -> None:
        d = rec.data
        if rec.kind == RecordType.HISTORY:
            points.extend(rec.points)
            self._apply_history(conn, run_id, rec)
        elif rec.kind == RecordType.RUN:
            # a run never changes project (its id is unique per project)
            cols = {k: v for k, v in d["cols"].items() if k != "project"}
            run_vals.update(cols, meta=d["meta"], state="running", finished_at=None)
        elif rec.kind == RecordType.CONFIG:
            run_vals.update(with_config_json({"config": d["config"]}))
        elif rec.kind == RecordType.SUMMARY:  # a fork's: over its view, once points are in
            run_vals["summary"] = d["summary"]
        elif rec.kind == RecordType.METRIC:
            row = {"run_id": run_id, "name": d["name"], "spec": d["spec"]}
            self.db.dialect.upsert(conn, S.run_metrics, [row], ["run_id", "name"])
        elif rec.kind == RecordType.FINISH:
            fin = d["finished_at"] if d["finished_at"] is not None else self.db.clock()
            run_vals.update(state=d["state"], finished_at=fin, exit_code=d["exit_code"])
        elif rec.kind == RecordType.CONSOLE:
            rows = [{"run_id": run_id, "ts": ts, "stream": s, "text": t} for ts, s, t in d["lines"]]
            if rows:
                conn.execute(S.console.insert(), rows)
        else:
            if rec.kind == RecordType.RESUME:
                run_vals.update(state="running", finished_at=None)
            conn.execute(
                S.events.insert(), [{"run_id": run_id, "type": rec.kind, "data": d["text"]}]
            )

    def _key_id_map(
        self,
        conn: Connection,
        run_id: str,
        ck: str,
        keys: set[str],
        new_keys: dict[tuple[str, str], int],
    ) -> dict[str, int]:
        out: dict[str, int] = {}
        missing = []
        for k in keys:
            kid = self._key_ids.get((ck, k)) or new_keys.get((ck, k))
            if kid is None:
                missing.append(k)
            else:
                out[k] = kid
        if missing:
            self.db.dialect.insert_ignore(
                conn,
                S.metric_keys,
                [{"run_id": run_id, "key": k} for k in missing],
                ["run_id", "key"],
            )
            for i in range(0, len(missing), 500):
                part = missing[i : i + 500]
                for kid, k in conn.execute(_KEY_IDS, {"run": run_id, "keys": part}):
                    out[k] = kid
                    new_keys[(ck, k)] = kid
        return out

    def _apply_history(self, conn: Connection, run_id: str, rec: Prepared) -> None:
        """Extras and media of a history record (its points are written with the batch's)."""
        dialect = self.db.dialect
        if rec.extras:
            dialect.upsert(
                conn,
                S.extras,
                [{"run_id": run_id, "step": s, "time": t, "data": x} for s, t, x in rec.extras],
                ["run_id", "step"],
            )
        if rec.media:
            conn.execute(
                S.media_items.insert(),
                [
                    {"run_id": run_id, "key": k, "step": s, "time": t, "type": ty, "data": data}
                    for k, s, t, ty, data in rec.media
                ],
            )
            shas: set[str] = set()
            for item in rec.media:
                _media_shas(item[4], shas, 0)
            self.runs.guard.add_media_refs(conn, run_id, shas)


def _media_shas(v: object, out: set[str], depth: int) -> None:
    """The ``sha256`` values a media item refers to (tables may nest images)."""
    if depth > 8 or len(out) > 10_000:
        return
    if isinstance(v, dict):
        for k, x in v.items():
            if k == "sha256" and isinstance(x, str) and _SHA.fullmatch(x):
                out.add(x)
            elif isinstance(x, dict | list):
                _media_shas(x, out, depth + 1)
    elif isinstance(v, list):
        for x in v:
            if isinstance(x, dict | list):
                _media_shas(x, out, depth + 1)

"""Many runs' uploads in one write transaction (``wisp ui`` importing small local runs).

A :class:`RunWrite` is what the upload of one small run sends: the body of its
``PUT /runs/{id}`` (``by_project``) and of one ``POST /runs/{key}/records``, validated by
the functions those endpoints use (:func:`prepare_run_write`).  A :class:`WriteBatch`
applies many of them in one write transaction through the store code those endpoints
call (:meth:`RunStore.put_in <wisp.server.store.runs.RunStore.put_in>`,
:meth:`RecordStore.ingest_in <wisp.server.store.records.RecordStore.ingest_in>`), as
the caller the two requests would have been (the importer's API key), each run in a
savepoint: a run the store refuses (a :class:`~wisp.server.http.problem.Problem`) costs only
itself.  The rows written are those of the two requests, the PUT's audit entry included.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from sqlalchemy.engine import Connection

from wisp.server.http.problem import Problem
from wisp.server.http.routes import convert
from wisp.server.rights.matrix import ACTOR, Principal, need_scope
from wisp.server.schemas.runs import RunBody, RunPath
from wisp.server.store.db import Db
from wisp.server.store.ingest import Prepared, prepare_batch, run_put_cols
from wisp.server.store.projects import ProjectStore
from wisp.server.store.records import RecordStore
from wisp.server.store.runs import RunStore

__all__ = ["RunWrite", "WriteBatch", "open_batch", "prepare_run_write"]


@dataclass
class RunWrite:
    """One run's validated ``PUT /runs/{run_id}`` and ``POST .../records``."""

    run_id: str
    cols: dict[str, Any]
    by_project: bool
    writer_id: str
    first_seq: int
    records: list[Prepared]


def prepare_run_write(
    run_id: str, run_body: dict[str, Any], records_body: dict[str, Any]
) -> RunWrite:
    """Validate the two request bodies of a run as the endpoints do (a ``Problem`` names
    the bad field); nothing is written."""
    convert({"run_id": run_id}, RunPath, "path")
    convert(run_body, RunBody, "body")
    cols, by_project = run_put_cols(run_body)
    envelope, records = prepare_batch(records_body)
    return RunWrite(run_id, cols, by_project, envelope.writer_id, envelope.first_seq, records)


class WriteBatch:
    """Applies :class:`RunWrite` s inside one open write transaction (see the module doc)."""

    def __init__(
        self,
        conn: Connection,
        runs: RunStore,
        records: RecordStore,
        access: ProjectStore,
        actor: Principal,
        addr: str,
    ) -> None:
        self._conn = conn
        self._runs = runs
        self._records = records
        self._access = access
        self._actor = actor
        self._addr = addr
        self.new_keys: dict[tuple[str, str], int] = {}

    def apply(self, w: RunWrite) -> tuple[str, int]:
        """Create or update the run and ingest its records in a savepoint; returns the run's
        key and the writer's acknowledged seq.  A ``Problem`` undoes this run only."""
        conn = self._conn
        new_keys: dict[tuple[str, str], int] = {}
        # a savepoint in plain SQL: SQLAlchemy's nested transaction costs as much as a run's
        # other statements together; a DBAPI error still ends the whole transaction
        conn.exec_driver_sql("SAVEPOINT wisp_run")
        try:
            key = self._runs.put_in(conn, w.run_id, w.cols, w.by_project)
            target = f"/api/v1/runs/{w.run_id}"
            self._access.audit_in(conn, self._actor, "run.put", target, 200, self._addr)
            acked = self._records.ingest_in(
                conn, key, w.writer_id, w.first_seq, w.records, new_keys
            )
        except Problem:
            conn.exec_driver_sql("ROLLBACK TO SAVEPOINT wisp_run")
            conn.exec_driver_sql("RELEASE SAVEPOINT wisp_run")
            raise
        conn.exec_driver_sql("RELEASE SAVEPOINT wisp_run")
        self.new_keys.update(new_keys)
        return key, acked


@contextmanager
def open_batch(
    db: Db,
    runs: RunStore,
    records: RecordStore,
    access: ProjectStore,
    actor: Principal,
    addr: str,
) -> Iterator[WriteBatch]:
    """A :class:`WriteBatch` in a write transaction, committed when the block ends."""
    need_scope(actor, "write")  # what the two endpoints need of their caller
    token = ACTOR.set(actor)
    try:
        with db.tx() as conn:
            batch = WriteBatch(conn, runs, records, access, actor, addr)
            yield batch
        records.remember_keys(batch.new_keys)
    finally:
        ACTOR.reset(token)

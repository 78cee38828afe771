"""``wisp ui``'s cold start: small finished local runs imported many to a transaction.

Uploading a run costs a ``PUT /runs/{id}`` and a ``POST /runs/{key}/records``, each a
write transaction; for 10,000 runs of a few kilobytes that overhead is nearly all the
time.  :class:`BatchImporter` reads such a run whole and builds the two request bodies
its :class:`~wisp._upload._uploader.Uploader` would send: the same run description, and
the records as the server decodes them (read by the run file's decoder,
``decode_payload``, rather than written as JSON text by ``history_json`` and parsed
back).  It hands many runs' bodies to the server's store in one transaction
(:meth:`wisp.server.store.facade.Store.write_batch`, which validates them with the endpoints'
functions and writes them through the endpoints' store code, as the ui's API key).
Afterwards each run's ``upload.json`` says the server has the whole file, as the
uploader's would, so a restart or ``wisp sync`` to this server sends nothing again.

Only plain runs qualify (:meth:`BatchImporter.read`): a finished, untorn run file of
at most :data:`MAX_SMALL` bytes with one writer, no media, saved files, forked
writers, set-aside records, artifacts or upload progress.  Anything else, and a run
the store refuses, takes the per-run upload path.
"""

from __future__ import annotations

import concurrent.futures
import json
import logging
import os
from dataclasses import dataclass
from typing import Any

from wisp._rundir import CURSOR_FILE, LOCK_FILE, META_FILE, RUN_FILE, Cursor
from wisp._runfile import FRAME_SIZE, HEADER_SIZE, Record, RecordType, decode_payload, iter_records
from wisp._upload._uploader import describe_records, refers_to_files
from wisp.errors import CorruptRunFileError

__all__ = ["MAX_SMALL", "BatchImporter", "SmallRun"]

log = logging.getLogger("wisp")

MAX_SMALL = 1 << 20  # bytes: a run file one upload batch carries (the uploader's batch_bytes)
PLAIN = frozenset({RUN_FILE, META_FILE, CURSOR_FILE, LOCK_FILE})  # a run directory's files


@dataclass
class SmallRun:
    """A run read whole, with the bodies of its ``PUT /runs/{id}`` and records batch."""

    run_dir: str
    stat: tuple[int, int]  # run.wisp (size, mtime_ns) as read
    run_id: str
    writer_id: str
    last_seq: int
    run_body: dict[str, Any]
    records_body: dict[str, Any]


def _record(rec: Record) -> dict[str, Any]:
    """A record as the server decodes the uploader's (``{"type", "data"}``, history as
    ``{"rows": [...]}``), read by the run file's own decoder instead of through JSON text."""
    return {"type": rec.type, "data": decode_payload(rec.type, rec.payload)}


class BatchImporter:
    """Imports plain runs into ``store`` many at a time, as the API key ``write_key`` of the
    server at ``server_url`` (whose cursors the runs' ``upload.json`` files keep)."""

    def __init__(self, store: Any, write_key: str, server_url: str, addr: str = "127.0.0.1"):
        from wisp.server.http.auth import key_principal

        self.store = store
        self.actor = key_principal(store, write_key)
        self.server_url = server_url
        self.addr = addr  # where the requests would have come from (the audit log's address)
        # cursors are written on a thread while the next batches are read and written
        # (creating a file costs about what a run's database work does)
        self._executor: concurrent.futures.ThreadPoolExecutor | None = None
        self._saving: list[concurrent.futures.Future[None]] = []

    def read(self, run_dir: str) -> SmallRun | None:
        """The run, when it qualifies for a batch (module doc); None: upload it on its own."""
        try:
            names = os.listdir(run_dir)
            if not PLAIN.issuperset(names):
                return None
            if CURSOR_FILE in names:
                cur = Cursor.load(run_dir, self.server_url)
                if cur.offset != HEADER_SIZE or cur.acked_seq != -1 or cur.writer_id is not None:
                    return None  # some of it was sent: the uploader goes on from its cursor
            path = os.path.join(run_dir, RUN_FILE)
            with open(path, "rb") as f:
                st = os.fstat(f.fileno())
                if st.st_size > MAX_SMALL:
                    return None
                data = f.read(MAX_SMALL + 1)
            if len(data) != st.st_size:
                return None  # it is growing
            recs = list(iter_records(data))
            if not recs or recs[0].type != RecordType.RUN or recs[-1].type != RecordType.FINISH:
                return None  # not finished (running, or crashed: the uploader marks it)
            last = recs[-1]
            if last.offset + FRAME_SIZE + len(last.payload) != len(data):
                return None  # a torn tail: being written
            for r in recs[1:]:
                if r.type in (RecordType.RUN, RecordType.FILE) or refers_to_files(r.payload):
                    return None  # resumed, or files and media to upload first
            head = json.loads(recs[0].payload)
            writer_id = head.get("writer_id") if isinstance(head, dict) else None
            if not isinstance(writer_id, str):
                return None
            run_id, body = describe_records(recs, path)
        except (OSError, ValueError, CorruptRunFileError):
            return None  # the uploader reads it again and says what is wrong
        run_body: dict[str, Any] = {**body, "by_project": True}
        records = {"writer_id": writer_id, "first_seq": 0, "records": list(map(_record, recs))}
        stat = (st.st_size, st.st_mtime_ns)
        return SmallRun(run_dir, stat, run_id, writer_id, len(recs) - 1, run_body, records)

    def import_runs(
        self, runs: list[SmallRun]
    ) -> tuple[list[SmallRun], list[tuple[SmallRun, str]]]:
        """Send ``runs`` in one transaction; returns those now on the server (their cursors
        are saved on a thread, see :meth:`wait`) and those refused, each with the server's
        reason.  A database failure raises (nothing of the batch is written)."""
        from wisp.server.http.problem import Problem
        from wisp.server.store.batch import prepare_run_write

        refused: list[tuple[SmallRun, str]] = []
        writes = []
        for r in runs:
            try:
                writes.append((r, prepare_run_write(r.run_id, r.run_body, r.records_body)))
            except Problem as p:
                refused.append((r, f"{p.status} {p.code}: {p.message}"))
        done = []
        with self.store.write_batch(self.actor, self.addr) as batch:
            for r, w in writes:
                try:
                    batch.apply(w)
                except Problem as p:
                    refused.append((r, f"{p.status} {p.code}: {p.message}"))
                else:
                    done.append(r)
        for f in [f for f in self._saving if f.done()]:
            self._saving.remove(f)
            f.result()
        cursors = [(r.run_dir, r.stat[0], r.last_seq, r.writer_id) for r in done]
        self._saving.append(self._pool().submit(self._save_cursors, cursors))
        return done, refused

    def _save_cursors(self, runs: list[tuple[str, int, int, str]]) -> None:
        for run_dir, size, last_seq, writer_id in runs:
            try:
                Cursor(self.server_url, size, last_seq, writer_id, done=True).save_first(run_dir)
            except OSError as exc:  # without it a later sync sends the run again (and the
                # server skips what it has): worth a warning, not a failure
                log.warning("wisp ui: cannot save the upload cursor of %s: %s", run_dir, exc)

    def _pool(self) -> concurrent.futures.ThreadPoolExecutor:
        if self._executor is None:
            self._executor = concurrent.futures.ThreadPoolExecutor(1, "wisp-ui-cursors")
        return self._executor

    def wait(self) -> None:
        """Until the cursors of the runs imported so far are saved."""
        while self._saving:
            self._saving.pop(0).result()

    def close(self) -> None:
        self.wait()
        if self._executor is not None:
            self._executor.shutdown()
            self._executor = None

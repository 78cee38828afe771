"""The uploader: ships a run file to a wisp server, resumably, without losing a record.

The run file is the upload queue.  An :class:`Uploader` tails it from a saved
cursor (:class:`~wisp._runfile.RecordTail`), groups records into batches of one
writer segment, gzips them and posts them to ``POST /api/v1/runs/{id}/records``.
Every record has a sequence number, ``seq``: its ordinal within its writer's
segment (0 = the segment's RUN record; the first segment starts right after the
header).  The server applies only records above what it has acknowledged for
``(run_id, writer_id)``, so resending is always harmless and nothing is stored
twice.  Media files referenced by ``path`` in a record are uploaded first, by
sha256 (``HEAD`` then ``PUT`` when missing), and the record gains a ``sha256``.

The cursor lives next to the run file in ``upload.json`` (format version 1; the
format and its file names are owned by :mod:`wisp._rundir`, see
:class:`~wisp._rundir.Cursor`).  It is replaced atomically after each
acknowledged batch.  A cursor for another server is ignored (upload restarts
from the header; the server deduplicates).
While an uploader works on a run it holds an exclusive ``flock`` on
``upload.lock`` in the run directory, so ``wisp sync`` never races the run's own
uploader.

Failures: connection errors, timeouts, 429 and 5xx are retried with
exponential backoff and full jitter (``Retry-After`` is honoured); 413 halves
the batch; 409 rewinds to what the server has; 422 (a record the server refuses)
splits the batch until the refused record is alone, then *sets it aside*: the
record goes to ``rejected.jsonl`` in the run directory with the server's reason
(:func:`wisp._rundir.add_rejected`) and a WARNING record ``{"kind": "rejected",
...}`` takes its place in the upload (same seq), so the server counts it and every
other record still arrives.  Any other 4xx (401, 403, 404 of a run that cannot be
registered) stops the upload (``FatalApiError``), which the run reports at
``finish()``.  Nothing here ever raises into the training loop.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import random
import sys
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from wisp._protocol import row_problem
from wisp._rundir import (
    CURSOR_FILE,
    RUN_FILE,
    Cursor,
    add_rejected,
    fork_files,
    lock_uploads,
    read_rejected,
    unlock_uploads,
    write_rejected,
)
from wisp._runfile import (
    FRAME_SIZE,
    HEADER_SIZE,
    Record,
    RecordTail,
    RecordType,
    history_json,
    iter_records,
)
from wisp._upload._transport import ApiClient, Conflict
from wisp.errors import FatalApiError, RetryableApiError, UsageError

if TYPE_CHECKING:
    from wisp._run import Run

__all__ = ["CURSOR_FILE", "Cursor", "Uploader", "attach", "check_settings", "finish_upload"]

log = logging.getLogger("wisp")

_RUN_FIELDS = ("project", "name", "tags", "notes", "group", "job_type", "created_at")
_dumps = json.JSONEncoder(allow_nan=True, separators=(",", ":"), ensure_ascii=False).encode


def describe_run(path: str, *, crashed: bool = False) -> tuple[str, dict[str, Any]]:
    """The run id and ``PUT /runs/{id}`` body, from the run file as it is now."""
    tail = RecordTail(path)
    first: dict[str, Any] | None = None
    config: dict[str, Any] = {}
    state = "running"
    while True:
        recs = tail.read()
        if not recs:
            break
        for rec in recs:
            t = rec.type
            if t == RecordType.RUN:
                state = "running"
                if first is None:
                    first = json.loads(rec.payload)
            elif t == RecordType.CONFIG:
                config = json.loads(rec.payload).get("config", {})
            elif t == RecordType.FINISH:
                state = json.loads(rec.payload).get("state", "finished")
    if first is None or not isinstance(first.get("run_id"), str):
        raise FileNotFoundError(f"{path}: no run record yet")
    if crashed and state == "running":
        state = "crashed"
    body: dict[str, Any] = {k: first.get(k) for k in _RUN_FIELDS}
    body["tags"] = body["tags"] or []
    body["config"] = config
    body["state"] = state
    body["metadata"] = {
        k: v for k, v in first.items() if k not in _RUN_FIELDS and k not in ("run_id", "writer_id")
    }
    return first["run_id"], body


def _placeholder(entry: dict[str, Any]) -> bytes:
    """The WARNING record sent in place of a set-aside record (the server counts these)."""
    reason = str(entry.get("reason", ""))[:1000]
    doc = {"kind": "rejected", "type": entry.get("type"), "seq": entry.get("seq"), "reason": reason}
    return _dumps(doc).encode("utf-8")


class Uploader:
    """Uploads one run directory.  Use :meth:`start` (a thread) or :meth:`run` (here)."""

    def __init__(
        self,
        run_dir: str,
        client: ApiClient,
        *,
        batch_bytes: int = 1024 * 1024,  # ~110k points: seconds of server work at most
        compress: bool = True,
        poll_interval: float = 0.2,
        heartbeat_interval: float | None = None,
        backoff: tuple[float, float] = (0.25, 8.0),
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Any] | None = None,
        rand: Callable[[], float] = random.random,
    ) -> None:
        self.run_dir = run_dir
        self.path = os.path.join(run_dir, RUN_FILE)
        self.client = client
        self.batch_bytes = batch_bytes
        self.compress = compress
        self.poll_interval = poll_interval
        self.heartbeat_interval = heartbeat_interval
        self.backoff = backoff
        self.clock = clock
        self._wake = threading.Event()  # set by finish(): stop polling, look again now
        self._stopped = threading.Event()  # set by stop(): end backoff sleeps too
        self._sleep = sleep or self._stopped.wait
        self._poll = sleep or self._wake.wait
        self._rand = rand
        self.cursor = Cursor.load(run_dir, client.server_url)
        self.tail = RecordTail(self.path, self.cursor.offset)
        # (writer_id, seq, record) read but not yet acknowledged, in file order
        self._pending: list[tuple[str, int, Record]] = []
        self._read_writer = self.cursor.writer_id
        self._read_seq = self.cursor.acked_seq + 1
        self._finish_seen = False
        self._known_media: set[str] = set()
        self.run_id: str | None = None
        self.registered = threading.Event()
        self.ended = threading.Event()  # the upload thread has stopped (done or failed)
        self.crashed = False  # set by sync for a dead process: register the run as crashed
        # progress and outcome, read by finish()/sync
        self.records_sent = 0
        self.bytes_sent = 0
        self.media_sent = 0
        self.retries = 0
        self.last_error: BaseException | None = None
        self.error: BaseException | None = None  # fatal: the upload stopped
        self.done = threading.Event()
        self.thread: threading.Thread | None = None
        self._final = False
        self._stop = False
        self._last_contact = clock()
        self._lock_fd: int | None = None
        # records set aside (422): file offset -> the WARNING payload sent in their place
        # (a history record with some bad rows: its good rows); loaded from rejected.jsonl
        self._set_aside: dict[int, tuple[int, bytes]] = {}
        for e in read_rejected(run_dir):
            if "offset" not in e:
                continue
            if e.get("type") == RecordType.HISTORY and e.get("good") is not None:
                good = _dumps(e["good"]).encode("utf-8")
                self._set_aside[e["offset"]] = (RecordType.HISTORY, good)
            else:
                self._set_aside[e["offset"]] = (RecordType.WARNING, _placeholder(e))
        self.rejected = 0  # records set aside by this uploader
        self.retry_rejected = False  # send set-aside records again before marking done
        self.recovered = 0  # set-aside records the server took on a retry
        self._max_records: int | None = None  # while bisecting a refused batch

    # -- control -----------------------------------------------------------------------------

    def start(self) -> None:
        """Upload on a daemon thread until :meth:`finish` (live runs)."""
        self.thread = threading.Thread(target=self._thread_main, name="wisp-uploader", daemon=True)
        self.thread.start()

    def _thread_main(self) -> None:
        try:
            self.run(final=lambda: self._final)
        except FatalApiError as exc:
            self._report(exc)
        except Exception as exc:  # noqa: BLE001 - a background thread must never raise
            self.error = exc
            self._report(exc)
        finally:
            self.ended.set()

    def _report(self, exc: BaseException) -> None:
        log.warning(
            "wisp: uploading run %s stopped (%s: %s); the run file %s keeps everything, "
            "run `wisp sync %s` once the problem is fixed",
            self.run_id or "?",
            type(exc).__name__,
            exc,
            self.path,
            self.run_dir,
        )

    @property
    def finish_seen(self) -> bool:
        """True once the run file's finish record has been read."""
        return self._finish_seen

    def finish(self) -> None:
        """No more records will be appended: upload what is left, then end (live runs)."""
        self._final = True
        self._wake.set()

    def stop(self) -> None:
        self._stop = True
        self._stopped.set()
        self._wake.set()

    def pending_bytes(self) -> int:
        """Bytes of the run file not acknowledged by the server yet."""
        try:
            size = os.path.getsize(self.path)
        except OSError:
            return 0
        return max(0, size - self.cursor.offset)

    # -- the loop ----------------------------------------------------------------------------

    def run(
        self,
        final: Callable[[], bool],
        *,
        give_up_after: float | None = None,
        on_progress: Callable[[Uploader], None] | None = None,
    ) -> bool:
        """Upload until the file is complete on the server (True) or :meth:`stop` (False).

        ``final()`` says no more records will be appended.  Retryable failures are
        retried forever, or until ``give_up_after`` seconds pass without progress
        (then the last :class:`RetryableApiError` is raised).  A fatal one is raised.
        """
        self._lock_fd = lock_uploads(self.run_dir)
        if self._lock_fd is None:
            raise BlockingIOError(f"{self.run_dir} is being uploaded by another process")
        try:
            return self._run(final, give_up_after, on_progress)
        except FatalApiError as exc:
            self.error = exc
            raise
        finally:
            unlock_uploads(self._lock_fd)
            self._lock_fd = None
            self.client.close()

    def _run(
        self,
        final: Callable[[], bool],
        give_up_after: float | None,
        on_progress: Callable[[Uploader], None] | None,
    ) -> bool:
        failures = 0
        last_progress = self.clock()
        while not self._stop:
            try:
                progressed = self._step()
                if not progressed and final():
                    # everything appended before final() turned true is read by this step
                    progressed = self._step()
                    if not progressed:
                        self._mark_done()
                        return True
                if not progressed:
                    self._maybe_heartbeat()
            except RetryableApiError as exc:
                failures += 1
                self.retries += 1
                self.last_error = exc
                if give_up_after is not None and self.clock() - last_progress > give_up_after:
                    raise
                self._sleep(self._delay(failures, exc.retry_after))
                continue
            failures = 0
            last_progress = self.clock()
            if progressed:
                if on_progress is not None:
                    on_progress(self)
            else:
                self._poll(self.poll_interval)
                self._wake.clear()
        return False

    def pump(self, final: Callable[[], bool], max_steps: int = 64) -> int:
        """Do up to ``max_steps`` units of work without waiting or retrying; return how many.

        For callers that drive many runs from one loop (``wisp ui``).  Marks the upload
        done once ``final()`` is true and nothing is left.  Raises RetryableApiError and
        FatalApiError for the caller to handle.
        """
        steps = 0
        while steps < max_steps and self._step():
            steps += 1
        if steps < max_steps:
            if final():
                if self._step():
                    steps += 1
                else:
                    self._mark_done()
            elif steps == 0:
                self._maybe_heartbeat()
        return steps

    def _delay(self, failures: int, retry_after: float | None) -> float:
        base, cap = self.backoff
        delay: float = min(cap, base * 2.0 ** min(failures - 1, 30)) * (0.5 + 0.5 * self._rand())
        if retry_after is not None:
            delay = max(delay, min(retry_after, 60.0))
        return delay

    def _maybe_heartbeat(self) -> None:
        hb = self.heartbeat_interval
        if hb is None or self.run_id is None or not self.registered.is_set():
            return
        if self.clock() - self._last_contact >= hb:
            self.client.heartbeat(self.run_id)
            self._last_contact = self.clock()

    def _mark_done(self) -> None:
        self._upload_segments()
        if self.retry_rejected:
            self._retry_rejected()
        if self.crashed and self.run_id is not None:
            # the run records said "running": tell the server no finish record will come
            self._register()
        self.cursor.done = True
        self.cursor.save(self.run_dir)
        self.done.set()

    # -- one unit of work --------------------------------------------------------------------

    def _step(self) -> bool:
        """Register, or send one batch.  False when there is nothing to send."""
        if not self.registered.is_set():
            return self._register()
        if not self._pending:
            self._fill()
            if not self._pending:
                return False
        self._send_batch()
        return True

    def _register(self) -> bool:
        try:
            run_id, body = describe_run(self.path, crashed=self.crashed)
        except FileNotFoundError:
            return False  # the RUN record is not on disk yet
        self.run_id = run_id
        try:
            self.client.put_run(run_id, body)
        except FatalApiError as exc:
            if exc.status != 422:
                raise
            # the config or metadata read from the file holds what the server refuses: register
            # the run without them (the CONFIG records follow; a refused one is set aside)
            log.info("wisp: run %s registered without config/metadata (%s)", run_id, exc)
            self.client.put_run(
                run_id, {k: v for k, v in body.items() if k not in ("config", "metadata")}
            )
        self._last_contact = self.clock()
        self.registered.set()
        return True

    def _fill(self) -> None:
        for rec in self.tail.read(self.batch_bytes):
            if rec.type == RecordType.RUN:
                wid = json.loads(rec.payload).get("writer_id")
                if wid != self._read_writer:
                    self._read_writer, self._read_seq = wid, 0
            self._finish_seen = rec.type == RecordType.FINISH
            if self._read_writer is None:
                raise FatalApiError(f"{self.path}: records before the first run record")
            self._pending.append((self._read_writer, self._read_seq, rec))
            self._read_seq += 1

    def _send_batch(self) -> None:
        pending = self._pending
        writer_id = pending[0][0]
        first_seq = pending[0][1]
        batch: list[Record] = []
        size = 0
        limit = self._max_records
        for wid, _seq, rec in pending:
            if wid != writer_id or (batch and size + len(rec.payload) > self.batch_bytes):
                break
            if limit is not None and len(batch) >= limit:
                break
            batch.append(rec)
            size += len(rec.payload) + 24
        body = self._encode(writer_id, first_seq, batch)
        assert self.run_id is not None
        try:
            answer = self.client.post_records(self.run_id, body, gzip=self.compress)
        except FatalApiError as exc:
            if exc.status == 422:
                if len(batch) > 1:  # bisect: the refused record(s) end up alone
                    self._max_records = len(batch) // 2
                    return
                self._set_aside_record(writer_id, first_seq, batch[0], exc)
                return
            if exc.status == 413 and len(batch) > 1:
                self.batch_bytes = max(1, min(self.batch_bytes, size) // 2)
                log.info(
                    "wisp: server refused a batch as too large; batches now %d bytes",
                    self.batch_bytes,
                )
                return
            if exc.status == 404 and self.registered.is_set():
                self.registered.clear()  # the server lost the run: register it again
                raise RetryableApiError(str(exc), status=404) from exc
            raise
        self._last_contact = self.clock()
        if isinstance(answer, Conflict):
            self._rewind(writer_id, answer.acked_seq)
            return
        last_seq = first_seq + len(batch) - 1
        acked = min(answer, last_seq)
        n_acked = acked - first_seq + 1
        if n_acked <= 0:
            raise RetryableApiError(
                f"server acknowledged seq {answer} for a batch {first_seq}..{last_seq}"
            )
        if self._max_records is not None:  # past the refused record: grow back
            self._max_records *= 2
            if self._max_records >= 1 << 16:
                self._max_records = None
        last = batch[n_acked - 1]
        del pending[:n_acked]
        self.records_sent += n_acked
        self.bytes_sent += sum(len(r.payload) for r in batch[:n_acked])
        c = self.cursor
        c.offset = last.offset + FRAME_SIZE + len(last.payload)
        c.writer_id = writer_id
        c.acked_seq = acked
        c.done = False
        c.save(self.run_dir)

    def _set_aside_record(self, writer_id: str, seq: int, rec: Record, exc: FatalApiError) -> None:
        """The server refused ``rec`` alone: keep it in ``rejected.jsonl``, send a WARNING
        record in its place (same seq) and go on.

        A history record is first split by the protocol's row rule
        (:func:`wisp._protocol.row_problem`): its good rows are sent in its place and only
        the bad rows set aside; if the server refuses the good rows too, all of it is.
        """
        try:
            data = json.loads(self._wire(rec))
        except ValueError:
            data = None
        override = None
        if (
            rec.type == RecordType.HISTORY
            and rec.offset not in self._set_aside
            and isinstance(data, dict)
            and isinstance(data.get("rows"), list)
        ):
            bad = [r for r in data["rows"] if row_problem(r) is not None]
            good = [r for r in data["rows"] if row_problem(r) is None]
            if bad and good:
                override = (RecordType.HISTORY, _dumps({"rows": good}).encode("utf-8"))
                data = {"rows": bad}
                exc = FatalApiError(f"{exc} [rows: {row_problem(bad[0])}]", status=exc.status)
        entry = {
            "writer_id": writer_id,
            "seq": seq,
            "offset": rec.offset,
            "type": rec.type,
            "status": exc.status,
            "reason": str(exc),
            "rejected_at": time.time(),
            "data": data,
        }
        if override is not None:  # the rows sent in its place, for a later uploader
            entry["good"] = json.loads(override[1])
        add_rejected(self.run_dir, entry)
        self._set_aside[rec.offset] = override or (RecordType.WARNING, _placeholder(entry))
        if override is not None and self.run_id is not None:
            # the good rows take the record's seq: tell the server in a segment of its own
            side = {
                "writer_id": f"rejected-{writer_id[:32]}-{seq}",
                "first_seq": 0,
                "records": [{"type": RecordType.WARNING, "data": json.loads(_placeholder(entry))}],
            }
            self.client.post_records(self.run_id, _dumps(side).encode("utf-8"), gzip=False)
        self.rejected += 1
        log.warning(
            "wisp: the server refused a %s record of run %s (%s); it is set aside in %s "
            "and the upload goes on (`wisp sync --retry-rejected` sends it again)",
            RecordType.NAMES.get(rec.type, rec.type),
            self.run_id,
            exc,
            os.path.join(self.run_dir, "rejected.jsonl"),
        )

    def _upload_segments(self) -> None:
        """Send what forked children logged (``run.fork<PID>.wisp``), each file as the
        writer segment its RUN record names, from seq 0 (the server skips what it has).
        Their RUN records are not sent (the run exists; a RUN record would mark it running
        again), nor summaries or finish records (they write none)."""
        assert self.run_id is not None
        for path in fork_files(self.run_dir):
            writer_id = None
            records: list[Record] = []
            for rec in iter_records(path):
                if rec.type == RecordType.RUN:
                    writer_id = json.loads(rec.payload).get("writer_id")
                elif rec.type not in (RecordType.SUMMARY, RecordType.FINISH):
                    records.append(rec)
            if writer_id is None or not records:
                continue
            seq = 0
            limit = 1 << 30
            while seq < len(records):
                batch: list[Record] = []
                size = 0
                for rec in records[seq:]:
                    if batch and (
                        size + len(rec.payload) > self.batch_bytes or len(batch) >= limit
                    ):
                        break
                    batch.append(rec)
                    size += len(rec.payload) + 24
                body = self._encode(writer_id, seq, batch, main=False)
                try:
                    answer = self.client.post_records(self.run_id, body, gzip=self.compress)
                except FatalApiError as exc:
                    if exc.status != 422:
                        raise
                    if len(batch) > 1:  # find the refused record(s): one at a time
                        limit = 1
                        continue
                    entry = {
                        "file": os.path.basename(path),
                        "writer_id": writer_id,
                        "seq": seq,
                        "type": batch[0].type,
                        "status": exc.status,
                        "reason": str(exc),
                        "rejected_at": time.time(),
                        "data": json.loads(self._wire(batch[0])),
                    }
                    add_rejected(self.run_dir, entry)
                    self.rejected += 1
                    stub = Record(RecordType.WARNING, _placeholder(entry), batch[0].offset)
                    records[seq] = stub
                    continue
                if isinstance(answer, Conflict):
                    seq = answer.acked_seq + 1
                    continue
                seq = max(seq + len(batch), answer + 1)

    def _retry_rejected(self) -> None:
        """Send each set-aside record again, as a writer segment of its own
        (``retry-<writer>-<seq>``, so resending is harmless), followed by a WARNING record
        ``{"kind": "recovered"}`` the server subtracts from its count; keep the ones still
        refused (with the new reason) in ``rejected.jsonl``."""
        assert self.run_id is not None
        keep = []
        for e in read_rejected(self.run_dir):
            wid = f"retry-{str(e.get('writer_id', ''))[:32]}-{e.get('seq')}"
            note = {"kind": "recovered", "type": e.get("type"), "seq": e.get("seq")}
            body = _dumps(
                {
                    "writer_id": wid,
                    "first_seq": 0,
                    "records": [
                        {"type": e.get("type"), "data": e.get("data")},
                        {"type": RecordType.WARNING, "data": note},
                    ],
                }
            ).encode("utf-8")
            try:
                self.client.post_records(self.run_id, body, gzip=False)
            except FatalApiError as exc:
                if exc.status != 422:
                    raise
                keep.append({**e, "reason": str(exc), "rejected_at": time.time()})
                continue
            self.recovered += 1
        write_rejected(self.run_dir, keep)
        self.retry_rejected = False

    def _rewind(self, writer_id: str, acked_seq: int) -> None:
        """409: the server has less than we thought: read the file again from the start.

        Earlier segments are resent too (the server ignores what it has); records of
        ``writer_id`` up to ``acked_seq`` are skipped.
        """
        log.info(
            "wisp: server has run %s writer %s only up to seq %d; resending from there",
            self.run_id,
            writer_id,
            acked_seq,
        )
        self._pending.clear()
        self.tail.offset = HEADER_SIZE
        self._read_writer, self._read_seq = None, 0
        self.cursor = Cursor(self.cursor.server)
        skip_until = acked_seq
        while True:
            self._fill()
            if not self._pending:
                return
            keep = [p for p in self._pending if not (p[0] == writer_id and p[1] <= skip_until)]
            if keep:
                self._pending = keep
                return
            last = self._pending[-1]
            self.cursor.offset = last[2].offset + FRAME_SIZE + len(last[2].payload)
            self.cursor.writer_id, self.cursor.acked_seq = last[0], last[1]
            self._pending.clear()

    # -- encoding and media ------------------------------------------------------------------

    def _encode(
        self, writer_id: str, first_seq: int, batch: list[Record], *, main: bool = True
    ) -> bytes:
        """A gzip batch body; ``main``: records of the run file (set-aside ones replaced)."""
        parts = [
            b'{"writer_id":',
            _dumps(writer_id).encode(),
            b',"first_seq":',
            str(first_seq).encode(),
            b',"records":[',
        ]
        for i, rec in enumerate(batch):
            instead = self._set_aside.get(rec.offset) if main and self._set_aside else None
            if instead is None:
                rtype, payload = rec.type, self._wire(rec)
            else:
                rtype, payload = instead
            parts.append(
                b'{"type":%d,"data":' % rtype if i == 0 else b',{"type":%d,"data":' % rtype
            )
            parts.append(payload)
            parts.append(b"}")
        parts.append(b"]}")
        raw = b"".join(parts)
        if not self.compress:
            return raw
        import zlib

        z = zlib.compressobj(1, zlib.DEFLATED, 31)  # gzip container, fast level
        return z.compress(raw) + z.flush()

    def _wire(self, rec: Record) -> bytes:
        """A record's payload as JSON for the server (media uploaded, refs gain sha256)."""
        payload = rec.payload
        if rec.type == RecordType.HISTORY:  # binary columns in the file, JSON on the wire
            return history_json(payload, self._upload_refs if b'"path"' in payload else None)
        if b'"path"' in payload:
            return self._with_media(payload)
        return payload

    def _with_media(self, payload: bytes) -> bytes:
        obj = json.loads(payload)
        changed = self._upload_refs(obj)
        return _dumps(obj).encode("utf-8") if changed else payload

    def _upload_refs(self, obj: Any) -> bool:
        changed = False
        if isinstance(obj, dict):
            path = obj.get("path")
            if isinstance(path, str) and "sha256" not in obj:
                digest = self._upload_media(path)
                if digest is not None:
                    obj["sha256"] = digest
                    changed = True
            for v in obj.values():
                if isinstance(v, (dict, list)):
                    changed = self._upload_refs(v) or changed
        elif isinstance(obj, list):
            for v in obj:
                if isinstance(v, (dict, list)):
                    changed = self._upload_refs(v) or changed
        return changed

    def _upload_media(self, rel: str) -> str | None:
        root = os.path.realpath(self.run_dir)
        full = os.path.realpath(os.path.join(root, rel))
        if not full.startswith(root + os.sep) or not os.path.isfile(full):
            return None  # only files inside the run directory are uploaded
        with open(full, "rb") as f:
            data = f.read()
        digest = hashlib.sha256(data).hexdigest()
        if digest not in self._known_media and full.endswith(".table.json"):
            self._upload_table_images(data)
        if digest not in self._known_media:
            if not self.client.has_media(digest):
                self.client.put_media(digest, data)
                self.media_sent += 1
            self._known_media.add(digest)
        return digest

    def _upload_table_images(self, data: bytes) -> None:
        """Upload the images a table file refers to (the file itself is sent unchanged, so
        readers find them by the sha256 in their ``media/<sha256>.png`` names)."""
        try:
            table = json.loads(data)
        except ValueError:
            return  # not a table we can read: send it as it is
        if isinstance(table, dict):
            self._upload_refs(table.get("data"))


# -- online runs: the hooks called by init() and Run.finish() --------------------------------


def check_settings(settings: Any) -> None:
    """Refuse ``mode="online"`` without a server before any run directory exists."""
    if not settings.server_url:
        raise UsageError(
            "mode 'online' needs a server: set WISP_SERVER_URL (and WISP_API_KEY) or pass "
            "settings={'server_url': ..., 'api_key': ...}"
        )
    from wisp._upload._transport import HttpTransport

    HttpTransport(settings.server_url)  # checks the URL


def attach(run: Run) -> None:
    """Start uploading a new online run; wait at most ``init_timeout`` for it to register.

    The uploader is attached to the run as its ``"uploader"`` part: ``finish()``
    waits for it (:func:`finish_upload`) once the run file is closed.
    """
    s = run.settings
    assert run.dir is not None
    deadline = time.monotonic() + s.init_timeout
    client = ApiClient(s.server_url, s.api_key, timeout=10.0)
    up = Uploader(run.dir, client, heartbeat_interval=s.heartbeat_interval)

    def stop() -> None:
        wait, why = run.upload_wait()
        finish_upload(run, wait, limit=why)

    run.attach("uploader", up, stop, after_close=True)
    run.barrier(s.init_timeout)  # the run record is on disk: register from it
    up.start()
    # registered, or refused for good (401/403/422 end the thread at once): never wait out
    # init_timeout for an answer that has come
    while not up.registered.is_set() and not up.ended.is_set():
        left = deadline - time.monotonic()
        if left <= 0:
            break
        up.registered.wait(min(left, 0.02))
    if up.registered.is_set():
        run.url = f"{client.server_url}/runs/{run.id}"
    elif up.error is not None:
        import warnings

        from wisp.errors import WispWarning

        run.mode = "offline"
        warnings.warn(
            f"wisp: server {s.server_url} refused run {run.id} ({up.error}); the run is "
            f"recorded offline in {run.dir}: fix the cause, then `wisp sync {run.dir}` "
            "uploads it",
            WispWarning,
            stacklevel=4,
        )
    else:
        log.info(
            "wisp: server %s did not answer within init_timeout=%ss; training goes on, "
            "uploads will catch up",
            s.server_url,
            s.init_timeout,
        )


def human_size(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)  # pragma: no cover


def finish_upload(
    run: Run, timeout: float, *, stream: Any = None, limit: str = "upload_timeout"
) -> None:
    """Wait up to ``timeout`` s for the run's uploads; say what is left if time runs out.

    ``limit`` names the setting that set ``timeout``, for the message.
    """
    up: Uploader | None = run.part("uploader")
    if up is None or up.thread is None:
        return
    out = stream if stream is not None else sys.stderr
    up.finish()
    start = time.monotonic()
    deadline = start + timeout
    tty = bool(getattr(out, "isatty", lambda: False)())
    shown = False
    while up.thread.is_alive():
        now = time.monotonic()
        if now >= deadline:
            break
        up.thread.join(min(0.25, deadline - now))
        if up.thread.is_alive() and time.monotonic() - start > 1.0:
            left = up.pending_bytes()
            if tty:
                out.write(f"\rwisp: uploading run {run.id}: {human_size(left)} left ...  ")
                shown = True
            elif not shown:
                out.write(
                    f"wisp: uploading run {run.id}: {human_size(left)} left, waiting up to "
                    f"{timeout:.0f}s\n"
                )
                shown = True
    if shown and tty:
        out.write("\n")
    if up.rejected:
        import warnings

        from wisp.errors import WispWarning

        warnings.warn(
            f"wisp: run {run.id}: the server refused {up.rejected} record(s); they are set aside "
            f"in {os.path.join(run.dir or '', 'rejected.jsonl')} with its reason, everything else "
            f"was uploaded (`wisp sync --retry-rejected {run.dir}` sends them again)",
            WispWarning,
            stacklevel=3,
        )
    if up.done.is_set():
        if shown:
            out.write(f"wisp: run {run.id} uploaded\n")
        return
    up.stop()
    left = up.pending_bytes()
    if up.error is not None:
        why = f"the upload stopped: {type(up.error).__name__}: {up.error}"
    elif up.last_error is not None:
        why = (
            f"the server could not be reached within {limit}={timeout:.3g}s "
            f"(last error: {up.last_error})"
        )
    else:
        why = f"{limit}={timeout:.3g}s ran out"
    out.write(
        f"wisp: run {run.id}: {human_size(left)} of {run.path} not uploaded ({why}); it is safe "
        f"on disk, run `wisp sync {run.dir}` to finish uploading\n"
    )
    with contextlib.suppress(OSError, ValueError):
        out.flush()

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

The class drives the upload; its parts are private modules beside it: ``_describe`` (the
run's ``PUT`` body), ``_queue`` (reading, numbering, batching and encoding records),
``_media`` (the files records refer to), ``_rejected`` (set-aside records, fork segments)
and ``_transport`` (HTTP).
"""

from __future__ import annotations

import json
import logging
import os
import random
import threading
import time
from collections.abc import Callable
from typing import Any, cast

from wisp._rundir import (
    CURSOR_FILE,
    RUN_FILE,
    Cursor,
    add_rejected,
    id_of_dir,
    lock_uploads,
    unlock_uploads,
)
from wisp._runfile import Record, RecordType
from wisp._upload._describe import describe_records, describe_run, refers_to_files
from wisp._upload._media import MediaSender
from wisp._upload._queue import RecordQueue, encode_records, end_of, load_set_aside
from wisp._upload._rejected import (
    placeholder,
    retry_rejected,
    set_aside_entry,
    side_warning,
    upload_segments,
)
from wisp._upload._retry import retry_delay
from wisp._upload._transport import ApiClient, Conflict
from wisp._wire import RunBody
from wisp.errors import FatalApiError, RetryableApiError

__all__ = [
    "CURSOR_FILE",
    "Cursor",
    "Uploader",
    "describe_records",
    "describe_run",
    "refers_to_files",
]

log = logging.getLogger("wisp")


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
        self._kick = threading.Event()  # set by finish(): end the current backoff sleep once
        self._sleep = sleep or self._backoff_sleep
        self._poll = sleep or self._wake.wait
        self._rand = rand
        self.cursor = Cursor.load(run_dir, client.server_url)
        self._queue = RecordQueue(self.path, self.cursor)
        self._media = MediaSender(run_dir, client)
        self.run_id: str | None = None
        self.key: str | None = None  # the server's key of the run (ids are per project)
        self.registered = threading.Event()
        self.ended = threading.Event()  # the upload thread has stopped (done or failed)
        self.defer_refusal = False  # set while init() waits: it raises a refusal, not we
        self.silent_at_init = False  # set when init() waited init_timeout without an answer
        self.crashed = False  # set by sync for a dead process: register the run as crashed
        #: called once when the server says someone asked the run to stop (live runs)
        self.on_stop: Callable[[], None] | None = None
        # progress and outcome, read by finish()/sync
        self.records_sent = 0
        self.bytes_sent = 0
        self.retries = 0
        self.last_error: BaseException | None = None
        self.failing_since: float | None = None  # clock() of the first of the failing attempts
        self._said_failing = False  # the outage was said (once, on the "wisp" logger)
        self.error: BaseException | None = None  # fatal: the upload stopped
        self.done = threading.Event()
        self.thread: threading.Thread | None = None
        self._final = False
        self._stop = False
        self._last_contact = clock()
        self._lock_fd: int | None = None
        # records set aside (422): file offset -> the WARNING payload sent in their place
        # (a history record with some bad rows: its good rows); loaded from rejected.jsonl
        self._set_aside = load_set_aside(run_dir)
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
        if self.defer_refusal and isinstance(exc, FatalApiError):
            return  # init() is waiting for the answer and raises it (wisp._upload._live)
        log.warning(
            "wisp: uploading run %s stopped (%s: %s); the run file %s keeps everything, "
            "run `wisp sync %s` once the problem is fixed",
            self.run_id or id_of_dir(self.run_dir),
            type(exc).__name__,
            exc,
            self.path,
            self.run_dir,
        )

    @property
    def finish_seen(self) -> bool:
        """True once the run file's finish record has been read."""
        return self._queue.finish_seen

    @property
    def media_sent(self) -> int:
        """Media and saved files the server lacked and got from this uploader."""
        return self._media.sent

    def finish(self) -> None:
        """No more records will be appended: upload what is left, then end (live runs).

        A retry waiting out its backoff is made at once: ``finish()`` then knows soon
        whether the server answers (``wisp._upload._live.finish_upload``)."""
        self._final = True
        self._kick.set()
        self._wake.set()

    def _backoff_sleep(self, seconds: float) -> None:
        if not self._stopped.is_set():
            self._kick.wait(seconds)
            self._kick.clear()

    def stop(self) -> None:
        self._stop = True
        self._stopped.set()
        self._kick.set()
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
        """Upload until the file is complete on the server (True), or :meth:`stop` or
        ``final()`` before the file held a RUN record (False: ``registered`` unset).

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
                        if not self.registered.is_set():
                            return False  # no RUN record ever reached the file: nothing to send
                        self._mark_done()
                        return True
                if not progressed:
                    self._maybe_heartbeat()
            except RetryableApiError as exc:
                failures += 1
                self.retries += 1
                self.last_error = exc
                now = self.clock()
                self._failing(failures, exc, now)
                if give_up_after is not None and now - last_progress > give_up_after:
                    raise
                self._sleep(self._delay(failures, exc.retry_after))
                continue
            failures = 0
            last_progress = self.clock()
            if self.failing_since is not None:
                self._recovered()
            self._check_stop()
            if progressed:
                if on_progress is not None:
                    on_progress(self)
            else:
                self._poll(self.poll_interval)
                self._wake.clear()
        return False

    def _failing(self, failures: int, exc: RetryableApiError, now: float) -> None:
        """Note a failed attempt at ``now``; say once that a server which answered before
        stopped."""
        if self.failing_since is None:
            self.failing_since = now
        if failures >= 3 and self.registered.is_set() and not self._said_failing:
            self._said_failing = True  # a server that never answered is said by init()
            log.warning(
                "wisp: uploading run %s to %s is failing (%s); training goes on, the run file "
                "%s keeps everything and uploads resume when the server answers again",
                self.run_id or "?",
                self.client.server_url,
                exc,
                self.path,
            )

    def _recovered(self) -> None:
        if self._said_failing:
            log.warning(
                "wisp: uploading run %s to %s resumed", self.run_id or "?", self.client.server_url
            )
        self.failing_since = None
        self._said_failing = False

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
                elif self.registered.is_set():
                    self._mark_done()
            elif steps == 0:
                self._maybe_heartbeat()
        return steps

    def _delay(self, failures: int, retry_after: float | None) -> float:
        return retry_delay(failures, retry_after, self.backoff, self._rand)

    def _maybe_heartbeat(self) -> None:
        hb = self.heartbeat_interval
        if hb is None or self.key is None or not self.registered.is_set():
            return
        if self.clock() - self._last_contact >= hb:
            self.client.heartbeat(self.key)
            self._last_contact = self.clock()
        self._check_stop()

    def _check_stop(self) -> None:
        """Call ``on_stop`` (once) when the server said the run was asked to stop."""
        if self.client.stop_requested and self.on_stop is not None:
            on_stop, self.on_stop = self.on_stop, None
            on_stop()

    def _mark_done(self) -> None:
        assert self.key is not None
        self.rejected += upload_segments(
            self.client,
            self.key,
            self.run_dir,
            encode=lambda w, s, b: self._encode(w, s, b, main=False),
            wire=self._wire,
            batch_bytes=self.batch_bytes,
            compress=self.compress,
        )
        if self.retry_rejected:
            self.recovered += retry_rejected(self.client, self.key, self.run_dir)
            self.retry_rejected = False
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
        if not self._queue.pending:
            self._queue.fill(self.batch_bytes)
            if not self._queue.pending:
                return False
        self._send_batch()
        return True

    def _register(self) -> bool:
        """``PUT`` the run by its project and id; the answer's ``key`` addresses it from then
        on (run ids are unique per project, the key on the server)."""
        try:
            run_id, body = describe_run(self.path, crashed=self.crashed)
        except FileNotFoundError:
            return False  # the RUN record is not on disk yet
        self.run_id = run_id
        body["by_project"] = True
        try:
            answer = self._put(run_id, body)
        except FatalApiError as exc:
            if exc.status != 422:
                raise
            # the config or metadata read from the file holds what the server refuses: register
            # the run without them (the CONFIG records follow; a refused one is set aside)
            log.info("wisp: run %s registered without config/metadata (%s)", run_id, exc)
            bare = {k: v for k, v in body.items() if k not in ("config", "metadata")}
            answer = self._put(run_id, cast("RunBody", bare))
        run = answer.get("run")
        key = run.get("key") if isinstance(run, dict) else None
        self.key = key if isinstance(key, str) and key else run_id
        self._check_cursor(answer.get("writers"))
        self._last_contact = self.clock()
        self.registered.set()
        return True

    def _check_cursor(self, writers: Any) -> None:
        """A saved cursor says the server holds the run up to a writer's seq: check it
        against ``writers`` (the registration's answer, ``{writer_id: acked seq}``), or ask
        (a server from before that answer).  A server that holds less (its database
        restored from an older backup, deleted and made anew, the run deleted there) gets
        the file again from the start, where a trusting cursor would send nothing and leave
        the run without its history there."""
        writer_id, claimed = self.cursor.writer_id, self.cursor.acked_seq
        if writer_id is None or claimed < 0:
            return
        assert self.key is not None
        if isinstance(writers, dict):
            got = writers.get(writer_id, -1)
            held = got if type(got) is int else -1
        else:
            held = self.client.writer_acked(self.key, writer_id)
        if held < claimed:
            log.warning(
                "wisp: %s holds run %s only up to seq %d of %d (a restored or new database?); "
                "uploading it again",
                self.client.server_url,
                self.run_id,
                held,
                claimed,
            )
            self._rewind(writer_id, held)

    def _put(self, run_id: str, body: RunBody) -> dict[str, Any]:
        try:
            return self.client.put_run(run_id, body)
        except FatalApiError as exc:
            if exc.status != 422 or "by_project" not in str(exc):
                raise
            # a server from before run keys: the path is the key
            old = {k: v for k, v in body.items() if k != "by_project"}
            return self.client.put_run(run_id, cast("RunBody", old))

    def _send_batch(self) -> None:
        writer_id, first_seq, batch, size = self._queue.batch(self.batch_bytes, self._max_records)
        body = self._encode(writer_id, first_seq, batch)
        assert self.key is not None
        try:
            answer = self.client.post_records(self.key, body, gzip=self.compress)
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
        self._queue.acked(n_acked)
        self.records_sent += n_acked
        self.bytes_sent += sum(len(r.payload) for r in batch[:n_acked])
        c = self.cursor
        c.offset = end_of(batch[n_acked - 1])
        c.writer_id = writer_id
        c.acked_seq = acked
        c.done = False
        c.save(self.run_dir)

    def _set_aside_record(self, writer_id: str, seq: int, rec: Record, exc: FatalApiError) -> None:
        """The server refused ``rec`` alone: keep it in ``rejected.jsonl``, send a WARNING
        record in its place (same seq) and go on (``_rejected.set_aside_entry``: a history
        record's good rows are sent in its place and only the bad rows set aside)."""
        try:
            data = json.loads(self._wire(rec))
        except ValueError:
            data = None
        split = rec.offset not in self._set_aside  # refused again: set all of it aside
        entry, good = set_aside_entry(writer_id, seq, rec, data, exc, split=split)
        add_rejected(self.run_dir, entry)
        if good is None:
            self._set_aside[rec.offset] = (RecordType.WARNING, placeholder(entry))
        else:
            self._set_aside[rec.offset] = (RecordType.HISTORY, good)
            if self.key is not None:
                side_warning(self.client, self.key, entry)
        self.rejected += 1
        log.warning(
            "wisp: the server refused a %s record of run %s (%s); it is set aside in %s "
            "and the upload goes on (`wisp sync --retry-rejected` sends it again)",
            RecordType.NAMES.get(rec.type, rec.type),
            self.run_id,
            entry["reason"],
            os.path.join(self.run_dir, "rejected.jsonl"),
        )

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
        self.cursor = Cursor(self.cursor.server)
        self._queue.restart(writer_id, acked_seq, self.cursor, self.batch_bytes)

    # -- encoding ----------------------------------------------------------------------------

    def _encode(
        self, writer_id: str, first_seq: int, batch: list[Record], *, main: bool = True
    ) -> bytes:
        """A ``wisp._wire.RecordsBody`` (``wisp._upload._queue.encode_records``); ``main``:
        records of the run file (set-aside ones replaced)."""
        return encode_records(
            writer_id,
            first_seq,
            batch,
            wire=self._wire,
            instead=self._set_aside if main else None,
            compress=self.compress,
        )

    def _wire(self, rec: Record) -> bytes:
        """A record's payload as JSON for the server (media uploaded, refs gain sha256)."""
        return self._media.wire(rec)

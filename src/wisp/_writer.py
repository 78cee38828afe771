"""The writer thread: the only code that touches a run's file.

``Run.log()`` appends tuples to :attr:`Writer.queue` (a deque: appending is
atomic under the GIL and costs ~50 ns).  The writer drains it in small slices,
so the training thread never waits long for the GIL, turns rows into framed
history records, keeps the summary, and flushes every ``flush_interval``.

Anything that fails here is counted and reported once (logging), never raised
into the training loop; ``Run.finish()`` raises the first failure as a
:class:`~wisp.errors.WriterError`.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from functools import partial
from itertools import repeat, starmap
from operator import itemgetter

from wisp._deferred import Deferred
from wisp._metric import StepSync, spec_for, update_special
from wisp._periodic import Jobs
from wisp._protocol import clean_text
from wisp._rundir import (
    DISK_FULL,
    MEDIA_DIR,
    default_disk_full_memory,
    lock_run_file,
    save_media,
    writer_of,
)
from wisp._runfile import HEADER, RecordType, encode_history_batch, encode_record
from wisp._salvage import dumps, isolate, salvage

TYPE_CHECKING = False  # typing costs ~15 ms to import; only type checkers need it
if TYPE_CHECKING:
    from typing import Any

__all__ = ["Writer"]

# queue item kinds (first element of each tuple)
ROW = 0  # (ROW, step, timestamp, values)
ROW_DEFERRED = 1  # same, some values are Deferred
RECORD = 2  # (RECORD, type, payload_object)
SUMMARY_SET = 3  # (SUMMARY_SET, {key: value}, [keys to delete])
METRIC = 4  # (METRIC, spec dict)
BARRIER = 5  # (BARRIER, threading.Event)
CALL = 6  # (CALL, fn) run fn() on the writer thread
OWN_CALL = 7  # (OWN_CALL, fn) the same, for wisp's own calls that never block (run.json, ...)

_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_BUFFER_LIMIT = 1024 * 1024
SLICE = 512  # items a turn: 512 rows cost ~0.2 us less CPU each than 256 (fewer GIL hand-offs)
_RESUME = SLICE  # a waiting log() resumes this many rows below queue_size (see Writer._low)
_IDLE_MIN = 0.005
_IDLE_MAX = 0.1  # rows encoded per GIL hold, keeps the caller's p99 low
_STALL_MIN = 0.05  # back-off between writes to a full disk: 50 ms doubling to 2 s
_STALL_MAX = 2.0
_CLOSE_WAIT = 0.05  # close() waits this long for a slice to end, then leaves it to the thread
_CANCEL_WAIT = 1.0  # a job's cancel() waits this long for a run of it under way
_FINISH_RETRY = 5.0  # finish() retries a full disk this long at most, then counts rows lost
_MAX_WARNING_RECORDS = 100  # WARNING records per kind; the count goes on in the finish record


_kind = itemgetter(0)
# a row is (step, time, values), or a queued (ROW, step, time, values) as it is: read from its end
_values_of = itemgetter(-1)
_consume: Callable[[Any], None] = deque(maxlen=0).extend  # runs an iterator to its end


class Writer:
    """Owns the run file and drains the run's queue on its own thread."""

    def __init__(
        self,
        run_dir: str,
        file_name: str,
        *,
        flush_interval: float,
        fsync: str,
        queue_size: int,
        get_time: Callable[[], float] = time.monotonic,
        summaries: bool = True,
        disk_full_memory: int | None = None,
        inline: bool = False,
    ) -> None:
        """``summaries=False``: never write SUMMARY records (a forked child's segment).
        ``disk_full_memory``: bytes of encoded rows held while the disk is full (None: the
        default, :func:`default_disk_full_memory`).  ``inline``: no thread; whatever is put
        is written by the caller at once (:meth:`write_now`: a forked child's segment)."""
        self.run_dir = run_dir
        self.path = os.path.join(run_dir, file_name)
        self.media_dir = os.path.join(run_dir, MEDIA_DIR)
        self.flush_interval = flush_interval
        self.fsync = fsync
        self.queue_size = queue_size
        self.summaries = summaries
        self.inline = inline
        self.disk_full_memory = (
            default_disk_full_memory() if disk_full_memory is None else disk_full_memory
        )
        self.held_peak = 0  # the most bytes held back at once while the disk was full
        self.queue: deque[tuple[Any, ...]] = deque()
        self._get_time = get_time
        self._wake = threading.Event()
        # backpressure: log() waits on _room while the queue is full (_waiting); the writer
        # drains without yielding until _low, then sets it.  Only _RESUME rows below the
        # limit: a wider swing of queued rows (each a new tuple the garbage collector counts)
        # sets off collections, full ones included, in the user's process.
        self._room = threading.Event()
        self._low = max(queue_size // 2, queue_size - _RESUME)
        self._waiting = False
        # held while a slice is drained; os.fork() waits for it (bounded), so a child never
        # inherits a half-done import or encode from this thread (see _hooks.py)
        self.busy = threading.Lock()
        self._stop = False
        self._closed = False  # the file is closed: the thread ends at its next turn
        self._jobs = Jobs()  # run on this thread between slices, under busy (``every``)
        self._run_job = partial(self._guarded, "job")
        # Raw fd + our own buffer: no io object whose lock or buffer a fork could copy.
        self.fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | _O_CLOEXEC, 0o644)
        if not lock_run_file(self.fd):  # another process writes this file: refuse, never mix
            os.close(self.fd)
            from wisp.errors import RunStateError

            raise RunStateError(
                f"{self.path} is being written by {writer_of(run_dir, file_name)}; two processes "
                "never write one run: give this one another id (init(id=...), WISP_RUN_ID), or "
                "resume it once that process has ended (init(id=..., resume='allow'))"
            )
        self._buf = bytearray()
        self._buf_rows = 0  # rows in _buf, not on disk yet
        self._buf_marks: list[tuple[int, int]] = []  # (end of a record in _buf, its rows)
        self._file_end = os.fstat(self.fd).st_size  # the file ends on a whole record here
        # disk full (ENOSPC/EDQUOT): the error while writes are held back, else None
        self.stalled: OSError | None = None
        self.disk_full_error: OSError | None = None  # the last ENOSPC/EDQUOT, kept after it
        self._stall_delay = _STALL_MIN
        self._retry_at = 0.0
        self.rows_dropped = 0  # rows log() could not queue while the disk was full
        self.rows_given_up = 0  # rows still unwritten when finish() gave up on a full disk
        self._give_up_at: float | None = None
        if self._file_end == 0:
            self._buf += HEADER
            self._write_out()
        self.thread = threading.Thread(target=self._main, name="wisp-writer", daemon=True)
        # state owned by the writer thread
        self.summary: dict[str, Any] = {}
        self._summary_user: dict[str, Any] = {}
        self._summary_dirty = False
        self._metrics: list[dict[str, Any]] = []
        self._key_spec: dict[str, dict[str, Any] | None] = {}
        self._spec_for = partial(spec_for, self._key_spec, self._metrics)
        self._aggs: dict[str, Any] = {}
        self._step_sync = StepSync()
        self._has_special = False
        # counters, read by Run/doctor (ints: single writes are atomic)
        self.rows_written = 0
        self.records_written = 0
        self.bytes_written = 0
        self.backpressure_waits = 0
        self.failures: dict[str, int] = {}
        self.first_error: BaseException | None = None
        self.last_step: int | None = None

    # -- called from the user's thread -------------------------------------------------------

    def start(self) -> None:
        self.thread.start()

    def put(self, item: tuple[Any, ...], *, wake: bool = True) -> None:
        """Queue ``item`` and wake the thread (``wake=False``: at its next poll, as log()'s
        rows; finish() does, as it writes what is queued itself)."""
        self.queue.append(item)
        if self.inline:
            self.write_now()
        elif wake:
            self._wake.set()

    def write_now(self) -> None:
        """Encode and write everything queued, on the calling thread (``inline`` writers).
        While the disk is full rows are held up to ``disk_full_memory``, then dropped."""
        with self.busy:
            while self.queue:
                if self.over_budget():
                    self._drop_rows()
                    break
                self._guarded("write", self._drain_slice)
            self._guarded("write", self._write_out)

    def over_budget(self) -> bool:
        """True while the disk is full and the rows held back (encoded) fill
        ``disk_full_memory``: only then are new rows dropped."""
        return self.stalled is not None and len(self._buf) >= self.disk_full_memory

    def wait_for_space(self) -> None:
        """Backpressure: block the caller until the queue has room, and count it.

        While the disk is full the writer keeps draining the queue into its buffer (rows
        encoded, ~11 bytes a point) up to ``disk_full_memory`` bytes; past that the caller
        never waits: the row just queued is dropped and counted (``rows_dropped``), so
        memory stays bounded by the budget plus ``queue_size`` queued rows.
        """
        if not self.over_budget():
            self.backpressure_waits += 1
            limit = self.queue_size
            room = self._room
            room.clear()
            self._waiting = True  # the writer drains on, without yielding, to the low mark
            self._wake.set()
            try:
                while len(self.queue) >= limit and self.thread.is_alive():
                    if self.over_budget():
                        break
                    room.wait(0.01)  # set by the writer at the low mark; the timeout rechecks
            finally:
                self._waiting = False
            if len(self.queue) < limit or not self.over_budget():
                return
        try:
            item = self.queue.pop()
        except IndexError:
            return
        if item[0] == ROW or item[0] == ROW_DEFERRED:
            self._count_dropped(1)
        else:
            self.queue.append(item)  # not a row: keep it (records are few)

    def _count_dropped(self, rows: int) -> None:
        self.rows_dropped += rows
        if self.first_error is None:
            self.first_error = self.stalled

    def _drop_rows(self) -> None:
        """Over the budget on a full disk (inline writers): drop the queued rows, counted;
        other records stay queued (they are few)."""
        kept = [it for it in self.queue if it[0] != ROW and it[0] != ROW_DEFERRED]
        self._count_dropped(len(self.queue) - len(kept))
        self.queue.clear()
        self.queue.extend(kept)

    def barrier(self, timeout: float | None = None) -> bool:
        """Wait until everything queued before this call is written (not fsynced).

        False at once while the disk is full: readers never wait on a stalled writer.
        """
        if self.inline:
            self.write_now()
        if self.stalled is not None:
            return False
        if self._closed or not self.thread.is_alive():
            return not self.queue
        done = threading.Event()
        self.put((BARRIER, done))
        return done.wait(timeout)

    def close(self, timeout: float | None) -> bool:
        """Drain, flush, fsync (per policy) and stop.  False if the timeout ran out."""
        if self.inline:  # no thread: write now; a disk still full loses what is held
            self.write_now()
            if self.stalled is not None:
                self._give_up()
            else:
                self._guarded("flush", self._flush, self.fsync in ("interval", "finish"))
                self._guarded("close", self._close_fd)
            return True
        if self._close_here(_CLOSE_WAIT if timeout is None else min(timeout, _CLOSE_WAIT)):
            # not woken: the thread ends at its next poll (<= 0.1 s), and waking it now would
            # take the GIL from the caller
            return True
        if timeout is not None:  # a full disk is retried until shortly before the deadline
            wait = min(timeout * 0.8 - 0.05, _FINISH_RETRY)
            self._give_up_at = self._get_time() + max(0.0, wait)
        self._stop = True
        self._wake.set()
        if self.thread.is_alive():
            self.thread.join(timeout)
        return not self.thread.is_alive()

    def _close_here(self, wait: float) -> bool:
        """Drain, flush, fsync (per policy) and close on the calling thread, the writer thread
        held off by ``busy``: no hand-off and back (two wake-ups, 0.1-0.5 ms).  Only when
        what is queued cannot block (rows, records, the summary; not a deferred value or
        another call) and the disk is not full; else, or when the thread stays mid-slice for
        ``wait`` seconds, False: the thread does the rest under close()'s deadline."""
        if self.stalled is not None or not self.thread.is_alive():
            return False
        if not self.busy.acquire(timeout=wait):
            return False
        try:
            if self._closed:
                return True
            if self.stalled is not None or not all(map(self._quick, self.queue)):
                return False
            self._stop = True
            while self.queue and self.stalled is None:
                self._guarded("write", self._drain_slice)
            if self.stalled is None:
                self._guarded("flush", self._flush, self.fsync in ("interval", "finish"))
            if self.stalled is not None:
                return False
            self._guarded("close", self._close_fd)
        finally:
            self.busy.release()
        return True

    @staticmethod
    def _quick(item: tuple[Any, ...]) -> bool:
        """True for a queued item whose writing cannot block (see _close_here)."""
        kind: int = item[0]
        return kind != ROW_DEFERRED and kind != CALL

    def every(self, interval: float, job: Callable[[], object], first: float) -> Callable[[], None]:
        """Run ``job()`` on the writer thread ``first`` seconds from now, then every
        ``interval`` seconds (the system sampler: a run has one background thread, not
        two).  Returns ``cancel()``: once it returns, ``job`` never runs again, and is not
        running unless a run of it was stuck past ``_CANCEL_WAIT`` seconds."""
        handle = self._jobs.add(job, interval, self._get_time() + first)

        def cancel() -> None:  # waits for a run of the job under way (bounded: a stuck one)
            held = self.busy.acquire(timeout=_CANCEL_WAIT)
            self._jobs.remove(handle)
            if held:
                self.busy.release()

        return cancel

    # -- the writer thread -------------------------------------------------------------------

    def _main(self) -> None:
        next_flush = self._get_time() + self.flush_interval
        idle = _IDLE_MIN
        # the first poll comes a moment later, whatever was queued (run.json, the RUN and
        # CONFIG records): init() returns without this thread taking the GIL from it
        time.sleep(_IDLE_MIN)
        while not self._closed:
            if self.stalled is not None:
                if self._stall_step():
                    return
                continue
            if self.queue:
                with self.busy:
                    if self._closed:  # finished by close() on the calling thread
                        return
                    self._guarded("write", self._drain_slice)
                    if self._jobs:
                        self._jobs.run_due(self._get_time(), self._run_job)
                if self._waiting:  # log() is blocked on a full queue: no one to yield to
                    if len(self.queue) <= self._low:
                        self._room.set()
                        time.sleep(0)
                else:
                    time.sleep(0)  # hand the GIL back to the training thread between slices
                idle = _IDLE_MIN
            elif self._stop:
                with self.busy:
                    if self._closed:
                        return
                    self._guarded("flush", self._flush, self.fsync in ("interval", "finish"))
                    if self.stalled is not None:
                        continue  # the last write hit a full disk: retry until close()'s deadline
                    self._guarded("close", self._close_fd)
                return
            else:
                now = self._get_time()
                due = self._jobs.due()
                if now >= next_flush or now >= due:
                    with self.busy:
                        if self._closed:
                            return
                        if now >= due:
                            self._jobs.run_due(now, self._run_job)
                        if now >= next_flush:
                            self._guarded("flush", self._flush, self.fsync == "interval")
                            next_flush = now + self.flush_interval
                    continue
                # log() never signals (too costly per call): poll, backing off while idle.
                # A full queue signals through wait_for_space(), so bursts are never stuck.
                self._wake.wait(min(idle, next_flush - now, due - now))
                self._wake.clear()
                idle = min(idle * 2, _IDLE_MAX)

    def _stall_step(self) -> bool:
        """One turn of the loop while the disk is full: keep encoding queued rows into the
        buffer up to ``disk_full_memory``, retry the write with back-off (50 ms doubling to
        2 s).  True once finish() gave up on the disk (the file is closed)."""
        now = self._get_time()
        if self._stop and (self._give_up_at is None or now >= self._give_up_at):
            self._give_up()
            return True
        if self.queue and len(self._buf) < self.disk_full_memory:
            with self.busy:
                self._guarded("write", self._drain_slice)
            self.held_peak = max(self.held_peak, len(self._buf))
            self._room.set()  # log() rechecks the budget
            time.sleep(0)
        elif now < self._retry_at:
            self._wake.wait(self._retry_at - now)
            self._wake.clear()
        if self._get_time() >= self._retry_at and self.stalled is not None:
            self._retry_at = self._get_time() + self._stall_delay
            self._stall_delay = min(self._stall_delay * 2, _STALL_MAX)
            self._guarded("write", self._write_out)
        return False

    @property
    def rows_lost(self) -> int:
        """Rows that never reached the file because the disk was full."""
        return self.rows_dropped + self.rows_given_up

    def _give_up(self) -> None:
        """finish() while the disk is still full: count what is left as lost, keep the file
        ending on a whole record, close."""
        left = self._buf_rows + sum(1 for it in self.queue if it[0] == ROW or it[0] == ROW_DEFERRED)
        self.rows_given_up += left
        self._buf = bytearray()
        self._buf_rows = 0
        self._buf_marks = []
        self.queue.clear()
        if self.first_error is None:
            self.first_error = self.stalled
        self._guarded("close", self._close_fd)

    def _guarded(self, what: str, fn: Callable[..., Any], *args: Any) -> None:
        # The one boundary between the writer thread and the user: count, report once, go on.
        try:
            fn(*args)
        except Exception as exc:  # noqa: BLE001
            self.record_failure(what, exc)

    def count_failure(self, what: str) -> int:
        """Count a failure of kind ``what`` that is reported elsewhere; return the count."""
        n = self.failures.get(what, 0) + 1
        self.failures[what] = n
        return n

    def summary_view(self) -> dict[str, Any]:
        """The summary as computed, overridden by values the user set."""
        return {**self.summary, **self._summary_user}

    def record_failure(self, what: str, exc: BaseException) -> None:
        n = self.failures.get(what, 0) + 1
        self.failures[what] = n
        if self.first_error is None:
            self.first_error = exc
        if n == 1:
            import logging

            logging.getLogger("wisp").warning(
                "wisp: background %s failed (%s: %s); counting further failures, "
                "finish() will report them",
                what,
                type(exc).__name__,
                exc,
            )

    def _drain_slice(self) -> None:
        queue = self.queue
        popleft = queue.popleft
        # log() only appends; its one pop (a row dropped over the disk-full budget) happens
        # while the writer holds its budget's worth and drains nothing, so these pops all hit
        items = list(starmap(popleft, repeat((), min(SLICE, len(queue)))))  # a C loop
        if list(map(_kind, items)).count(ROW) == len(items):  # the usual slice: rows only
            if items:
                self._write_rows(items)  # rows as queued (read from their end)
            return
        # records among them: back to the queue's head (log() only appends at its tail),
        # taken one by one, so a failing call leaves the rest queued
        queue.extendleft(reversed(items))
        rows: list[Sequence[Any]] = []
        for _ in range(len(items)):
            item = popleft()
            kind = item[0]
            if kind == ROW:
                rows.append(item)
            elif kind == ROW_DEFERRED:
                rows.append((item[1], item[2], self._resolve(item[3])))
            else:
                if rows:
                    self._write_rows(rows)
                    rows = []
                self._handle(item)
        if rows:
            self._write_rows(rows)

    def _resolve(self, values: dict[str, Any]) -> dict[str, Any]:
        out = {}
        for key, value in values.items():
            if isinstance(value, Deferred):
                try:
                    value = value.resolve(self)
                except Exception as exc:  # noqa: BLE001 - one bad value must not lose the row
                    self.record_failure(f"value {key!r}", exc)
                    continue
            out[key] = value
        return out

    def _write_rows(self, rows: Sequence[Sequence[Any]]) -> None:
        if self._step_sync.names:
            for row in rows:
                self._step_sync.apply(row[-1], self._spec_for)
        try:
            payload, one_shape = encode_history_batch(rows)
        except Exception:  # noqa: BLE001 - one bad row must not lose the batch: isolate it
            rows = isolate(rows, self.reject)
            if not rows:
                return
            payload, one_shape = encode_history_batch(rows)
        self._append_raw(RecordType.HISTORY, payload, len(rows))
        self.rows_written += len(rows)
        self.last_step = rows[-1][-3]
        if self._has_special or self._metrics:
            for row in rows:
                update_special(self.summary, self._aggs, row[-1], self._spec_for)
        elif one_shape:  # the same keys in every row: the last row holds each one's last value
            self.summary.update(rows[-1][-1])
        else:  # every key's last value, in C
            _consume(map(self.summary.update, map(_values_of, rows)))
        self._summary_dirty = True

    def reject(self, what: str, where: str, reason: str) -> None:
        """Count one piece of data that could not be written, warn once, and leave a WARNING
        record in the run (``{"kind", "where", "reason", "count"}``) so nothing goes silently."""
        n = self.count_failure(what)
        if n == 1:
            import logging

            logging.getLogger("wisp").warning(
                "wisp: %s %s could not be written (%s); it is left out, further such failures "
                "are counted and finish() reports them",
                what,
                where,
                reason,
            )
        if n <= _MAX_WARNING_RECORDS:
            rec = {"kind": what, "where": clean_text(where), "reason": reason, "count": n}
            self._append_raw(RecordType.WARNING, dumps(rec).encode("utf-8"))

    def _handle(self, item: tuple[Any, ...]) -> None:
        kind = item[0]
        if kind == RECORD:
            self.append(item[1], item[2])
        elif kind == SUMMARY_SET:
            self._summary_user.update(item[1])
            self.summary.update(item[1])
            for key in item[2]:
                self._summary_user.pop(key, None)
                self.summary.pop(key, None)
            self._summary_dirty = True
        elif kind == METRIC:
            self._metrics.append(item[1])
            self._step_sync.add(item[1])
            self._key_spec.clear()
            self._has_special = True
            self.append(RecordType.METRIC, item[1])
        elif kind == BARRIER:
            self._write_out()
            item[1].set()
        elif kind in (CALL, OWN_CALL):
            item[1]()

    def write_summary(self) -> None:
        if self._summary_dirty and self.summaries:
            self.append(RecordType.SUMMARY, {"summary": {**self.summary, **self._summary_user}})
            self._summary_dirty = False

    def append(self, rtype: int, obj: Any) -> None:
        """Append one JSON record (writer thread only: from a queued call or a Deferred).

        A record with a piece that cannot be encoded (a lone surrogate, an integer past
        Python's conversion limit, a non-JSON object) is written without that piece: strings
        are sanitised (``clean_text``), other bad pieces left out and reported (``reject``).
        """
        try:
            data = dumps(obj).encode("utf-8")
        except (ValueError, TypeError, RecursionError):
            name = RecordType.NAMES.get(rtype, str(rtype))
            obj = salvage(obj, name, self.reject)
            data = dumps(obj).encode("utf-8")
        self._append_raw(rtype, data)

    def _append_raw(self, rtype: int, payload: bytes, rows: int = 0) -> None:
        data = encode_record(rtype, payload)
        self._buf += data
        self._buf_rows += rows
        self._buf_marks.append((len(self._buf), rows))
        self.records_written += 1
        self.bytes_written += len(data)
        if len(self._buf) >= _BUFFER_LIMIT and self.stalled is None:
            self._write_out()

    def _write_out(self) -> None:
        """Write the buffer.  A failed write is cut back to the last whole record
        (``ftruncate``) and the buffer kept; ENOSPC/EDQUOT stall the writer (retried with
        back-off by the main loop, which holds the queue meanwhile); other errors raise."""
        buf = self._buf
        if not buf:
            return
        view = memoryview(buf)
        done = 0
        try:
            while done < len(buf):
                done += os.write(self.fd, view[done:])
        except OSError as exc:
            view.release()  # before the buffer is resized
            if done:  # keep the whole records that made it, cut the torn one off
                keep, rows, n = 0, 0, 0
                for end, r in self._buf_marks:
                    if end > done:
                        break
                    keep, rows, n = end, rows + r, n + 1
                with contextlib.suppress(OSError):
                    os.ftruncate(self.fd, self._file_end + keep)
                self._file_end += keep
                del buf[:keep]
                self._buf_rows -= rows
                self._buf_marks = [(end - keep, r) for end, r in self._buf_marks[n:]]
            if exc.errno not in DISK_FULL:
                raise
            if self.stalled is None:
                self.stalled = self.disk_full_error = exc
                self._stall_delay = _STALL_MIN
                self._retry_at = self._get_time() + _STALL_MIN
                self.count_failure("disk full")
                import logging

                logging.getLogger("wisp").warning(
                    "wisp: the disk holding %s is full (%s); writes are held back in memory "
                    "(up to %d bytes, setting disk_full_memory) and retried; past that, "
                    "log() drops rows (counted)",
                    self.path,
                    exc,
                    self.disk_full_memory,
                )
            return
        finally:
            view.release()
        self._file_end += done
        del buf[:]
        self._buf_rows = 0
        self._buf_marks = []
        if self.stalled is not None:
            import logging

            logging.getLogger("wisp").warning(
                "wisp: writing %s again after the disk was full; %d rows were dropped meanwhile",
                self.path,
                self.rows_dropped,
            )
            self.stalled = None

    def _flush(self, sync: bool) -> None:
        self.write_summary()
        self._write_out()
        if sync:
            os.fsync(self.fd)

    def _close_fd(self) -> None:
        self._closed = True
        os.close(self.fd)

    def after_fork_in_child(self) -> None:
        """Make this writer inert in a forked child: nothing the child does reaches the file."""
        self._buf = bytearray()
        self._buf_marks = []
        self.queue = deque()
        self._wake = threading.Event()
        self._room = threading.Event()
        self._waiting = False
        self.busy = threading.Lock()
        null = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(null, self.fd)
        finally:
            os.close(null)

    # -- ResolveContext for Deferred values --------------------------------------------------

    def save_media(self, data: bytes, suffix: str) -> str:
        return save_media(self.run_dir, data, suffix)

    def failure_text(self) -> str:
        """What went wrong in the background: counts, rows lost to a full disk, the first
        error (``finish()`` raises it in a WriterError)."""
        counts = ", ".join(f"{k}: {v}" for k, v in self.failures.items())
        lost, full = self.rows_lost, self.disk_full_error
        return (
            f"background writes failed ({counts}); "
            + (f"{lost} rows lost to a full disk ({full}); " if lost else "")
            + (f"the disk is full ({full}); " if full is not None and not lost else "")
            + f"first error: {type(self.first_error).__name__}: {self.first_error}"
        )

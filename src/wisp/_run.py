"""The Run object: the calling-thread half of a run (the writer thread is the other)."""

from __future__ import annotations

import os
import sys
import threading
import time
import warnings
from collections.abc import Callable, Mapping

from wisp._config import Config
from wisp._protocol import MAX_STEP, project_entity, step_refusal
from wisp._registry import after_fork_in_child, live_runs, recent_runs, register, unregister
from wisp._run_fields import identity, run_json
from wisp._run_wandb import WandbRunApi
from wisp._rundir import META_FILE, RUN_FILE, write_meta
from wisp._runfile import RecordType
from wisp._settings import Settings
from wisp._summary import Summary
from wisp._values import prepare_row
from wisp._writer import CALL, METRIC, OWN_CALL, RECORD, ROW, ROW_DEFERRED, SUMMARY_SET, Writer
from wisp.errors import RunStateError, UsageError, WispWarning, WriterError

TYPE_CHECKING = False  # typing costs ~15 ms to import; only type checkers need it
if TYPE_CHECKING:
    from typing import Any

    from wisp._metric import Metric

__all__ = [
    "Config",
    "Run",
    "Summary",
    "after_fork_in_child",
    "live_runs",
    "recent_runs",
    "register",
]

_KNOWN_KEYS_MAX = 10_000  # keys remembered as valid by a run, for the fast path
# Values log() passes without a closer look; strings take the slow path for the size limit.
_FAST_TYPES = frozenset({float, int, bool, type(None)})


class Run(WandbRunApi):
    """One run.  Made by :func:`wisp.init`; use it as a context manager to finish it.

    wandb's attributes and methods (``path``, ``entity``, ``watch``, ...) come from
    :class:`~wisp._run_wandb.WandbRunApi`.
    """

    def __init__(
        self,
        *,
        settings: Settings,
        project: str,
        name: str,
        run_id: str,
        run_dir: str | None,
        tags: list[str],
        notes: str | None,
        group: str | None,
        job_type: str | None,
        config: Mapping[str, Any] | None,
        disabled: bool = False,
        get_time: Any = time.time,
        files: tuple[str, str] = (RUN_FILE, META_FILE),
        rank: dict[str, int] | None = None,
        origin: Mapping[str, Any] | None = None,
    ) -> None:
        """``origin``: an imported run's fields (host, pid, ...) for its RUN record, in place
        of this process's: the run is a copy of one that ran elsewhere."""
        self._settings = settings
        # the project's full name is "entity/project" when a user or team owns it by name
        self._entity, self.project = project_entity(project)
        self.name = name
        self.id = run_id
        self.dir = run_dir
        self.tags = tags
        self.notes = notes
        self.group = group
        self.job_type = job_type
        self.mode = "disabled" if disabled else (settings.mode or "offline")
        self._get_time = get_time
        self._pid = os.getpid()
        self._file, self._meta_file = files
        self.rank = rank  # {"rank", "world_size", "local_rank"} under a distributed launch
        self._step = 0
        self._pending: dict[str, Any] | None = None
        self._known_keys: set[str] = set()
        self._pending_deferred = False
        self._finished = False
        self._final_summary: dict[str, Any] = {}
        # re-entrant: a signal handler may finish the run while finish() is under way
        self._lock = threading.RLock()
        self.state = "running"
        self.exit_code: int | None = None
        self.url: str | None = None
        self.config = Config(None)
        self.summary = Summary(self)
        self._writer: Writer | None = None
        self._queue: Any = None
        self._qsize = settings.queue_size
        self._live = False
        # parts attached by init() and integrations, stopped by finish() (see attach())
        self._parts: dict[str, Any] = {}
        self._stops: list[Callable[[], None]] = []  # before the finish record, LIFO
        self._stops_after_close: list[Callable[[], None]] = []  # after the file is closed
        self._origin = None if origin is None else dict(origin)
        self._exit_deadline: float | None = None  # set by the exit hook: bounds finish()
        self._metric_specs: dict[str, dict[str, Any]] = {}  # define_metric, merged by name
        self._segment: dict[str, Any] | None = None  # this segment's RUN record (writer thread)
        self._fork_of: int | None = None  # in a forked child: the parent's pid (see fork())
        self._parent_pid: int | None = None
        self._fork_segment = False  # this process writes a fork segment, not the run file
        self.created_at = get_time()
        self.sweep_id = os.environ.get("WISP_SWEEP_ID") or None  # set by a sweep agent
        #: run.json members of a fork or a rewound run (``fork_from``, ``rewinds``: _lineage)
        self.lineage_meta: dict[str, Any] = {}
        self._meta_lock = threading.RLock()  # run.json: the writer thread's first, then ours
        if config:
            self.config.update(config)
        object.__setattr__(self.config, "_run", self)
        if disabled:
            return
        assert run_dir is not None
        if not os.path.isdir(run_dir):  # init() made it; importers' runs may not have
            os.makedirs(run_dir, exist_ok=True)
        from wisp import _meta  # imported here, never on the writer thread (fork + import locks)

        self._meta = _meta
        self._writer = self._new_writer(run_dir)
        self._queue = self._writer.queue
        self._live = True
        self._writer.start()
        # run.json and the RUN record (git) are the writer's first work, not init()'s
        self._writer.put((OWN_CALL, self._write_start))
        if self.config:
            self._changed_config()

    # -- recording ---------------------------------------------------------------------------

    @property
    def file_path(self) -> str | None:
        """The run file (wandb's ``run.path`` is ``entity/project/run_id``)."""
        return None if self.dir is None else os.path.join(self.dir, self._file)

    @property
    def step(self) -> int:
        """The step the next ``log()`` goes to."""
        return self._step

    def _run_record(self) -> dict[str, Any]:
        """This segment's RUN record: the run's fields and where it runs (host, python, git)."""
        if self._origin is not None:  # an imported run: where the original run ran
            return {
                **identity(self),
                "mode": "offline",
                "host": None,
                "pid": None,
                **self._origin,
            }
        return {**identity(self), **self._meta.collect(git=self._settings.git)}

    def _write_start(self) -> None:
        assert self._writer is not None
        try:
            if not self._finished:  # else finish() writes it, in its final state, at once
                self._write_meta("running")
        except OSError as exc:  # counted: finish() raises WriterError naming it
            self._writer.record_failure("run.json", exc)
        self._segment = self._run_record()
        self._writer.append(RecordType.RUN, self._segment)

    def update_identity(self) -> None:
        """``name``, ``tags`` or ``notes`` changed: repeat this segment's RUN record with the
        new values (same ``writer_id``, see docs/run-file.md) and rewrite ``run.json``."""
        if not self._live:
            return

        def write() -> None:
            assert self._writer is not None and self._segment is not None
            fields = {"name": self.name, "tags": list(self.tags), "notes": self.notes}
            self._segment = {**self._segment, **fields}
            self._writer.append(RecordType.RUN, self._segment)

        self.on_writer(write)
        self._write_meta("running")

    def _changed_config(self) -> None:
        self.record(RecordType.CONFIG, {"config": self.config.as_dict()})

    def _send(self, item: tuple[Any, ...]) -> None:
        if not self._live and not self._start_fork_segment():
            self._inactive("recording")
            return
        self._commit_pending()
        self._writer.put(item)  # type: ignore[union-attr]

    def _commit_pending(self) -> None:
        pending = self._pending
        if pending is not None:
            self._pending = None
            kind = ROW_DEFERRED if self._pending_deferred else ROW
            step = self._step
            self._step = step + 1
            self._enqueue((kind, step, self._get_time(), pending))

    def _inactive(self, what: str, stacklevel: int = 4) -> None:
        if self._pid != os.getpid():
            from wisp._logging import warn_once

            warn_once(
                f"wisp: {what} on run {self.id} in a forked child process is ignored; "
                "call wisp.init() in the child to record a run of its own",
                stacklevel=stacklevel,
            )
        elif self._finished:
            raise RunStateError(f"run {self.id} is finished; call wisp.init() to start a new one")

    def log(
        self, data: Mapping[str, Any], step: int | None = None, commit: bool | None = None
    ) -> None:
        """Record ``data`` at the current step.  Checks values and enqueues; never writes.

        ``step`` sets the step explicitly (rows with the same step merge, and a
        step lower than the current one is refused with a warning).  ``commit``
        closes the row; it defaults to True without ``step`` and False with it
        (the row closes when a later step arrives, or at finish).
        """
        # fast path: a live run, a dict of keys already checked once holding plain numbers,
        # a new row (the next automatic step, or an explicit step past the current one).
        # The value check is a loop, floats first: 2x cheaper than a set of map(type, ...).
        if (
            type(data) is dict
            and commit is None
            and self._live
            and self._known_keys.issuperset(data)
        ):
            for value in data.values():
                cls = type(value)
                if cls is not float and cls not in _FAST_TYPES:
                    break
            else:
                cur = self._step
                if step is None:
                    if self._pending is None and cur < MAX_STEP:
                        self._step = cur + 1
                        queue = self._queue
                        queue.append((ROW, cur, self._get_time(), data.copy()))
                        if len(queue) >= self._qsize:
                            self._writer.wait_for_space()  # type: ignore[union-attr]
                        return
                elif type(step) is int and cur < step < MAX_STEP:
                    pending = self._pending
                    self._step = step
                    self._pending = data.copy()
                    if pending is not None:  # the open row closes (as _enqueue, inlined)
                        queue = self._queue
                        kind = ROW_DEFERRED if self._pending_deferred else ROW
                        queue.append((kind, cur, self._get_time(), pending))
                        if len(queue) >= self._qsize:
                            self._writer.wait_for_space()  # type: ignore[union-attr]
                    self._pending_deferred = False
                    return
        self._log(data, step, commit)

    def _log(self, data: Mapping[str, Any], step: int | None, commit: bool | None) -> None:
        """log() off its fast path: checks and converts every value (``prepare_row``)."""
        if not self._live and (self.mode == "disabled" or not self._start_fork_segment()):
            if self.mode != "disabled":
                self._inactive("log()", stacklevel=5)
            return
        if (
            type(data) is dict
            and data.keys() <= self._known_keys
            and (_FAST_TYPES.issuperset(map(type, data.values())))
        ):
            row, deferred = data.copy(), False
        else:
            row, deferred = prepare_row(data, self._settings.max_value_bytes)
            self._remember_keys(data, row)
        cur = self._step
        if step is not None:
            if type(step) is not int:
                step = self._check_step(step)
            if step != cur:
                if step < cur:
                    warnings.warn(
                        f"wisp: log() at step {step} refused: the run is already at step {cur} "
                        "and steps must not go back; these values were not recorded",
                        WispWarning,
                        stacklevel=3,
                    )
                    return
                if step >= MAX_STEP:  # the server stores steps as signed 64-bit (protocol)
                    raise UsageError(step_refusal(data, step))
                if self._pending is not None:
                    self._commit_pending()
                self._step = cur = step
            if commit is None:
                commit = False
        elif commit is None:
            commit = True
        if cur >= MAX_STEP:  # the step counter ran past the range (after step=2**62 - 1)
            raise UsageError(step_refusal(data, cur))
        pending = self._pending
        if pending is not None:
            pending.update(row)
            deferred = deferred or self._pending_deferred
            row = pending
        if commit:
            self._pending = None
            self._step = cur + 1
            self._enqueue((ROW_DEFERRED if deferred else ROW, cur, self._get_time(), row))
        else:
            self._pending = row
            self._pending_deferred = deferred

    def _start_fork_segment(self) -> bool:
        """In a forked child, on its first record: a writer of its own on ``run.fork<PID>.wisp``
        (never the parent's file or locks), written through, no thread.  False when this
        process cannot record to the run."""
        if self._fork_of is None or self._finished or self.dir is None:
            return False
        from wisp._rundir import fork_file_name

        self._fork_of = None
        self._fork_segment = True
        self._pid = os.getpid()
        self._file = fork_file_name(self._pid)
        # no thread: log() writes through (wisp._shared_steps), so os._exit loses nothing
        self._writer = self._new_writer(self.dir, summaries=False, inline=True)
        self._queue = self._writer.queue
        self._live = True
        register(self)
        self._writer.put((OWN_CALL, self._write_segment_start))
        mp_util = sys.modules.get("multiprocessing.util")
        if mp_util is not None:  # a Pool worker ends with os._exit after its finalizers
            mp_util.Finalize(None, self._close_segment, exitpriority=100)
        return True

    def _new_writer(self, run_dir: str, **kw: Any) -> Writer:
        s = self._settings
        return Writer(
            run_dir,
            self._file,
            flush_interval=s.flush_interval,
            fsync=s.fsync,
            queue_size=s.queue_size,
            disk_full_memory=s.disk_full_memory,
            **kw,
        )

    def _write_segment_start(self) -> None:
        assert self._writer is not None
        self._segment = {**identity(self), "pid": self._pid, "fork_of": self._parent_pid}
        self._writer.append(RecordType.RUN, self._segment)

    def _close_segment(self, timeout: float | None = None) -> None:
        """End a fork segment: write what is queued, no summary, no finish record."""
        with self._lock:
            if not self._live or self._pid != os.getpid():
                return
            self._live = False
            self._commit_pending()
            unregister(self)
            assert self._writer is not None
            self._writer.close(self._settings.finish_timeout if timeout is None else timeout)

    def _remember_keys(self, data: Mapping[str, Any], row: dict[str, Any]) -> None:
        """Keys prepare_row() accepted as they are (not flattened) skip its key checks next time."""
        known = self._known_keys
        if len(known) < _KNOWN_KEYS_MAX:
            known.update(k for k in data if k in row)

    def _enqueue(self, item: tuple[Any, ...]) -> None:
        queue = self._queue
        queue.append(item)
        if len(queue) >= self._qsize:
            self._writer.wait_for_space()  # type: ignore[union-attr]

    @staticmethod
    def _check_step(step: Any) -> int:
        index: int
        if isinstance(step, bool) or not hasattr(step, "__index__"):
            raise UsageError(f"log() step must be an int, got {type(step).__name__} {step!r}")
        index = int(step.__index__())  # numpy and torch integer scalars
        if index < 0:
            raise UsageError(f"log() step must be >= 0, got {index}")
        return index

    def define_metric(
        self,
        name: str,
        step_metric: str | Metric | None = None,
        step_sync: bool | None = None,
        hidden: bool | None = None,
        summary: str | None = None,
        goal: str | None = None,
        overwrite: bool | None = None,
    ) -> Metric:
        """Describe metrics matching ``name`` (a glob like ``"val/*"``): x axis and summary.

        As in wandb: ``summary`` is one or more of last, min, max, mean, first, best
        (with ``goal``), none, joined by commas; calls for one name merge unless
        ``overwrite``; ``step_sync`` (default: True with a ``step_metric``) fills in the
        step metric's last value in rows that lack it.  See ``wisp._metric``.
        """
        from wisp._metric import Metric, merge

        spec = merge(
            self._metric_specs.get(name) if isinstance(name, str) else None,
            name,
            step_metric,
            step_sync,
            hidden,
            summary,
            goal,
            overwrite,
        )
        if self.mode != "disabled":
            self._send((METRIC, spec))
            self._metric_specs[name] = spec
        return Metric(spec)

    # -- the internal interface: for wisp's own modules (init, hooks, extras, uploader,
    # -- integrations, doctor), which never touch the attributes above -------------------------

    def summary_view(self) -> dict[str, Any]:
        """The summary as it stands after everything logged so far (waits for the writer)."""
        w = self._writer
        if w is None:
            return dict(self._final_summary)
        self._commit_pending()
        w.barrier(timeout=self._settings.finish_timeout)
        return w.summary_view()

    def summary_set(self, values: dict[str, Any], delete: tuple[str, ...] = ()) -> None:
        """Set user summary values (checked by ``prepare_row``) and delete keys."""
        self._send((SUMMARY_SET, values, delete))

    @property
    def settings(self) -> Settings:
        """The run's resolved settings (read-only)."""
        return self._settings

    @property
    def pid(self) -> int:
        """The process that created the run; a forked child's copy is inert."""
        return self._pid

    @property
    def live(self) -> bool:
        """True while the run records in this process (not finished, not a forked copy)."""
        return self._live

    @property
    def writer(self) -> Writer | None:
        """The writer (counters, ``failures``, ``first_error``, ``thread``); None when disabled."""
        return self._writer

    def record(self, rtype: int, payload: Any) -> None:
        """Enqueue one record (``RecordType``) after everything logged so far.

        Warns once in a forked child; raises RunStateError after ``finish()``.
        """
        self._send((RECORD, rtype, payload))

    def record_if_live(self, rtype: int, payload: Any) -> None:
        """Enqueue one record from a background part; dropped once the run stops recording."""
        if self._live and os.getpid() == self._pid:
            self._writer.put((RECORD, rtype, payload))  # type: ignore[union-attr]

    def on_writer(self, fn: Callable[[], None]) -> None:
        """Run ``fn()`` on the writer thread, after everything logged so far.

        ``fn`` may use the writer's :meth:`~wisp._writer.Writer.append`.
        """
        self._send((CALL, fn))

    def barrier(self, timeout: float | None = None) -> bool:
        """Close the pending row and wait until everything so far is written (not fsynced)."""
        w = self._writer
        if w is None:
            return True
        self._commit_pending()
        return w.barrier(timeout)

    def count_failure(self, what: str) -> int:
        """Count one background failure of kind ``what`` (shown by finish() and doctor).

        Returns the count so far; the caller reports the first one.
        """
        w = self._writer
        return 1 if w is None else w.count_failure(what)

    def start_at_step(self, step: int) -> None:
        """The next ``log()`` goes to ``step`` (a resumed run continues its steps)."""
        self._step = step

    def attach(
        self, name: str, part: Any, stop: Callable[[], None], *, after_close: bool = False
    ) -> None:
        """Attach a part (``"console"``, ``"system"``, ``"uploader"``, ...) that ``finish()`` stops.

        Parts are stopped in reverse order of attaching, before the finish record is
        queued; ``after_close`` parts (the uploader) once the run file is closed.  A
        failing ``stop`` is logged and finish() goes on.
        """
        self._parts[name] = part
        (self._stops_after_close if after_close else self._stops).append(stop)

    def part(self, name: str) -> Any:
        """The part attached as ``name``, or None."""
        return self._parts.get(name)

    def limit_finish(self, deadline: float) -> None:
        """Bound ``finish()`` (writer and uploads) by ``deadline`` (``time.monotonic()``)."""
        remaining = max(0.0, deadline - time.monotonic())
        self._settings = self._settings.replace(finish_timeout=remaining)
        self._exit_deadline = deadline

    def upload_wait(self) -> tuple[float, str]:
        """(seconds, the setting that sets them): how long finish() waits for uploads."""
        wait, why = self._settings.upload_timeout, "upload_timeout"
        if self._exit_deadline is not None:  # the exit hook: all runs in one exit_timeout
            left = max(0.0, self._exit_deadline - time.monotonic())
            if left < wait:
                wait, why = left, "exit_timeout"
        return wait, why

    def abandon(self, state: str) -> None:
        """Close the run file without a finish record, as a process that died leaves it."""
        w = self._writer
        assert w is not None
        self._live = False
        self._commit_pending()
        w.put((OWN_CALL, w.write_summary), wake=False)  # close() writes it
        w.close(self._settings.finish_timeout)
        self._finished = True
        self.state = state
        self._write_meta(state)

    def after_fork_in_child(self) -> None:
        """In a forked child (``wisp._registry.after_fork_in_child``): this run becomes an
        inert copy; its first record here starts a fork segment of its own.  Replaces the
        lock, never waits on it (another thread of the parent may have held it)."""
        self._live = False
        self._lock = threading.RLock()
        self._pending = None  # the parent's open row stays the parent's
        if self._writer is not None:
            self._writer.after_fork_in_child()
            self._parent_pid = self._pid
            self._fork_of = self._pid  # the first log() here starts a segment of its own

    def _stop_parts(self, stops: list[Callable[[], None]]) -> None:
        while stops:
            stop = stops.pop()
            try:
                stop()
            except Exception as exc:  # noqa: BLE001 - finish() must go on regardless
                from wisp._logging import logger

                logger().warning("wisp: stopping %s failed: %s", stop, exc)

    # -- finishing ---------------------------------------------------------------------------

    def finish(self, exit_code: int = 0, *, state: str | None = None) -> None:
        """Flush everything and close the run.  Idempotent; raises WriterError if writes failed."""
        if self._fork_segment:  # a forked child's part of the run: the parent finishes the run
            self._close_segment()
            return
        with self._lock:
            if self._finished or self._pid != os.getpid():
                return
            self._finished = True
            unregister(self)
            if self._writer is None:
                self.state = "finished"
                return
            self._stop_parts(self._stops)  # system sampler, console capture (wisp._extras)
            self._live = False
            self._commit_pending()
            final_state = state or ("finished" if exit_code == 0 else "failed")
            w = self._writer
            w.put((OWN_CALL, w.write_summary), wake=False)  # close() writes it
            w.put(
                (
                    RECORD,
                    RecordType.FINISH,
                    {
                        "state": final_state,
                        "exit_code": exit_code,
                        "finished_at": self._get_time(),
                        "last_step": self._step - 1 if self._step else None,
                        "backpressure_waits": w.backpressure_waits,
                        "failures": dict(w.failures),
                    },
                ),
                wake=False,
            )
            done = w.close(self._settings.finish_timeout)
            self.state = final_state
            self.exit_code = exit_code
            self._final_summary = w.summary_view()
            self._write_meta(final_state)
        self._stop_parts(self._stops_after_close)  # the uploader (wisp._upload._uploader)
        if not done:
            raise WriterError(
                f"run {self.id}: the writer did not finish within "
                f"{self._settings.finish_timeout}s; {len(w.queue)} queued items "
                f"are not in {self.file_path}"
                + (f"; {w.failure_text()}" if w.first_error is not None else "")
            ) from w.first_error
        left_out = w.failures.get("value", 0)
        if left_out:
            warnings.warn(
                f"wisp: run {self.id}: {left_out} logged value(s) could not be written and were "
                "left out (WARNING records in the run file name each one; wisp doctor lists them)",
                WispWarning,
                stacklevel=2,
            )
        if w.first_error is not None:
            raise WriterError(f"run {self.id}: {w.failure_text()}") from w.first_error

    def _write_meta(self, state: str) -> None:
        with self._meta_lock:  # the last rename holds what was set before it
            assert self.dir is not None
            write_meta(self.dir, run_json(self, state, self._file), self._meta_file)

    def refresh_meta(self) -> None:
        """Rewrite ``run.json`` (after ``lineage_meta`` changed)."""
        if self.dir is not None and self._live:
            self._write_meta(self.state)

    @property
    def failures(self) -> dict[str, int]:
        """Background failure counts by kind (empty when all is well)."""
        return {} if self._writer is None else dict(self._writer.failures)

    @property
    def backpressure_waits(self) -> int:
        """How often ``log()`` waited for room in a full queue."""
        return 0 if self._writer is None else self._writer.backpressure_waits

    def __enter__(self) -> Run:
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is None:
            self.finish()
        elif issubclass(exc_type, KeyboardInterrupt):
            self.finish(exit_code=130, state="killed")
        else:
            self.finish(exit_code=1)

    def __repr__(self) -> str:
        return (
            f"<wisp.Run {self.project_path}/{self.name} id={self.id} state={self.state} "
            f"dir={self.dir}>"
        )

    def _repr_html_(self) -> str:
        from html import escape

        link = f' · <a href="{escape(self.url)}" target="_blank">dashboard</a>' if self.url else ""
        return (
            f"<div><b>wisp run</b> {escape(self.project_path)}/<b>{escape(self.name)}</b> "
            f"<code>{escape(self.id)}</code> · {escape(self.state)}{link}<br>"
            f"<small>{escape(str(self.dir))}</small></div>"
        )

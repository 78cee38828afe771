"""The Run object: the calling-thread half of a run (the writer thread is the other)."""

from __future__ import annotations

import os
import threading
import time
import warnings
from collections.abc import Callable, Iterator, Mapping, MutableMapping

from wisp import _runfile
from wisp._config import Config
from wisp._rundir import META_FILE, RUN_FILE, write_meta
from wisp._runfile import RecordType
from wisp._settings import Settings
from wisp._values import SCALAR_TYPES, prepare_row
from wisp._writer import CALL, METRIC, RECORD, ROW, ROW_DEFERRED, SUMMARY_SET, Writer
from wisp.errors import RunStateError, UsageError, WispWarning, WriterError

TYPE_CHECKING = False  # typing costs ~15 ms to import; only type checkers need it
if TYPE_CHECKING:
    from typing import Any

    _MappingBase = MutableMapping[str, Any]
else:
    _MappingBase = MutableMapping

__all__ = ["Config", "Run", "Summary", "live_runs", "recent_runs", "register"]

_KNOWN_KEYS_MAX = 10_000  # keys remembered as valid by a run, for the fast path
# Values log() passes without a closer look; strings take the slow path for the size limit.
_FAST_TYPES = frozenset({float, int, bool, type(None)})
_SUMMARY_KINDS = ("last", "min", "max", "mean", "none")


class Summary(_MappingBase):
    """The run's summary: last value per key unless ``define_metric`` says otherwise.

    Reading waits until the writer has processed everything logged so far, so
    ``run.summary["loss"]`` right after ``log({"loss": x})`` is ``x``.  Values set
    here override the computed ones.
    """

    def __init__(self, run: Run) -> None:
        self._run = run

    def _view(self) -> dict[str, Any]:
        run = self._run
        w = run._writer
        if w is None:
            return dict(run._final_summary)
        run._commit_pending()
        w.barrier(timeout=run._settings.finish_timeout)
        return w.summary_view()

    def __getitem__(self, key: str) -> Any:
        return self._view()[key]

    def __setitem__(self, key: str, value: Any) -> None:
        if not isinstance(key, str) or not key:
            raise UsageError(f"summary keys must be non-empty strings, got {key!r}")
        self.update({key: value})

    def update(self, other: Any = (), /, **kwargs: Any) -> None:
        items = dict(other, **kwargs)
        row, deferred = prepare_row(items)
        if deferred:
            media = ", ".join(repr(k) for k, v in row.items() if type(v) not in SCALAR_TYPES)
            raise UsageError(f"summary values must be plain values; log media ({media}) with log()")
        self._run._send((SUMMARY_SET, row, ()))

    def __delitem__(self, key: str) -> None:
        if key not in self._view():
            raise KeyError(key)
        self._run._send((SUMMARY_SET, {}, (key,)))

    def __iter__(self) -> Iterator[str]:
        return iter(self._view())

    def __len__(self) -> int:
        return len(self._view())

    def __repr__(self) -> str:
        return f"Summary({self._view()!r})"


_live_runs: list[Run] = []
_recent_runs: list[Run] = []  # the last few finished runs, for doctor


class Run:
    """One run.  Made by :func:`wisp.init`; use it as a context manager to finish it."""

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
        self.project = project
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
        self.created_at = get_time()
        if config:
            self.config.update(config)
        object.__setattr__(self.config, "_run", self)
        if disabled:
            return
        assert run_dir is not None
        os.makedirs(run_dir, exist_ok=True)
        from wisp import _meta  # imported here, never on the writer thread (fork + import locks)

        self._meta = _meta
        self._writer = Writer(
            run_dir,
            self._file,
            flush_interval=settings.flush_interval,
            fsync=settings.fsync,
            queue_size=settings.queue_size,
        )
        self._queue = self._writer.queue
        self._write_meta("running")
        self._live = True
        self._writer.start()
        self._writer.put((CALL, self._write_start))
        if self.config:
            self._changed_config()

    # -- recording ---------------------------------------------------------------------------

    @property
    def path(self) -> str | None:
        """The run file."""
        return None if self.dir is None else os.path.join(self.dir, self._file)

    @property
    def step(self) -> int:
        """The step the next ``log()`` goes to."""
        return self._step

    def _identity(self) -> dict[str, Any]:
        """The run's own fields of its RUN record (see docs/run-file.md)."""
        from wisp import __version__

        fields: dict[str, Any] = {
            "run_id": self.id,
            "writer_id": os.urandom(8).hex(),
            "project": self.project,
            "name": self.name,
            "tags": self.tags,
            "notes": self.notes,
            "group": self.group,
            "job_type": self.job_type,
            "created_at": self.created_at,
            "mode": self.mode,
            "wisp_version": __version__,
        }
        if self.rank is not None:
            fields["rank"] = self.rank
        return fields

    def _run_record(self) -> dict[str, Any]:
        """This segment's RUN record: the run's fields and where it runs (host, python, git)."""
        if self._origin is not None:  # an imported run: where the original run ran
            return {
                **self._identity(),
                "mode": "offline",
                "host": None,
                "pid": None,
                **self._origin,
            }
        return {**self._identity(), **self._meta.collect(git=self._settings.git)}

    def _write_start(self) -> None:
        assert self._writer is not None
        self._writer.append(RecordType.RUN, self._run_record())

    def _changed_config(self) -> None:
        self.record(RecordType.CONFIG, {"config": self.config.as_dict()})

    def _send(self, item: tuple[Any, ...]) -> None:
        if not self._live:
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

    def _inactive(self, what: str) -> None:
        if self._pid != os.getpid():
            from wisp._logging import warn_once

            warn_once(
                f"wisp: {what} on run {self.id} in a forked child process is ignored; "
                "call wisp.init() in the child to record a run of its own",
                stacklevel=4,
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
        if not self._live:
            if self.mode == "disabled":
                return
            self._inactive("log()")
            return
        # fast path: a dict of keys already checked once, holding plain numbers
        if type(data) is dict and self._known_keys.issuperset(data):
            for v in data.values():
                if type(v) not in _FAST_TYPES:
                    row, deferred = prepare_row(data, self._settings.max_value_bytes)
                    break
            else:
                row = data.copy()
                deferred = False
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
                        stacklevel=2,
                    )
                    return
                if self._pending is not None:
                    self._commit_pending()
                self._step = cur = step
            if commit is None:
                commit = False
        elif commit is None:
            commit = True
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
        step_metric: str | None = None,
        summary: str = "last",
        *,
        hidden: bool = False,
    ) -> None:
        """Describe metrics matching ``name`` (a glob like ``"val/*"``): x axis and summary."""
        if not isinstance(name, str) or not name:
            raise UsageError(f"define_metric() name must be a non-empty string, got {name!r}")
        if summary not in _SUMMARY_KINDS:
            raise UsageError(
                f"define_metric({name!r}) summary must be one of {', '.join(_SUMMARY_KINDS)}, "
                f"got {summary!r}"
            )
        if step_metric is not None and (not isinstance(step_metric, str) or not step_metric):
            raise UsageError(f"define_metric({name!r}) step_metric must be a metric name")
        spec = {"name": name, "step_metric": step_metric, "summary": summary, "hidden": hidden}
        if self.mode == "disabled":
            return
        self._send((METRIC, spec))

    def log_artifact(
        self,
        artifact_or_path: Any,
        name: str | None = None,
        type: str | None = None,  # noqa: A002 - wandb's name
        aliases: list[str] | None = None,
        tags: list[str] | None = None,
    ) -> Any:
        """Log a ``wisp.Artifact`` (or a file/dir path) as produced by this run; returns at
        once, the work goes on in the background (see docs/artifacts.md)."""
        from wisp.artifacts._api import log_artifact

        if not self._live:
            self._inactive("log_artifact()")
        return log_artifact(self, artifact_or_path, name, type, aliases, tags)

    def use_artifact(
        self,
        artifact_or_name: Any,
        type: str | None = None,  # noqa: A002
        aliases: list[str] | None = None,
        use_as: str | None = None,
    ) -> Any:
        """Declare this run consumes ``"name:alias"`` / ``"name:vN"``; returns the Artifact."""
        from wisp.artifacts._api import use_artifact

        return use_artifact(self, artifact_or_name, type, aliases, use_as)

    # -- the internal interface: for wisp's own modules (init, hooks, extras, uploader,
    # -- integrations, doctor), which never touch the attributes above -------------------------

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
        w.put((CALL, w.write_summary))
        w.close(self._settings.finish_timeout)
        self._finished = True
        self.state = state
        self._write_meta(state)

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
        with self._lock:
            if self._finished or self._pid != os.getpid():
                return
            self._finished = True
            _unregister(self)
            if self._writer is None:
                self.state = "finished"
                return
            self._stop_parts(self._stops)  # system sampler, console capture (wisp._extras)
            self._live = False
            self._commit_pending()
            final_state = state or ("finished" if exit_code == 0 else "failed")
            w = self._writer
            w.put((CALL, w.write_summary))
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
                )
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
                f"are not in {self.path}"
            )
        if w.first_error is not None:
            counts = ", ".join(f"{k}: {v}" for k, v in w.failures.items())
            raise WriterError(
                f"run {self.id}: background writes failed ({counts}); first error: "
                f"{type(w.first_error).__name__}: {w.first_error}"
            ) from w.first_error

    def _write_meta(self, state: str) -> None:
        assert self.dir is not None
        meta = {
            "id": self.id,
            "project": self.project,
            "name": self.name,
            "state": state,
            "created_at": self.created_at,
            "pid": self._pid,
            "host": os.uname().nodename,
            "file": self._file,
            "rank": self.rank,
            "format_version": _runfile.FORMAT_VERSION,
            "exit_code": self.exit_code,
        }
        write_meta(self.dir, meta, self._meta_file)

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
            f"<wisp.Run {self.project}/{self.name} id={self.id} state={self.state} dir={self.dir}>"
        )

    def _repr_html_(self) -> str:
        from html import escape

        link = f' · <a href="{escape(self.url)}" target="_blank">dashboard</a>' if self.url else ""
        return (
            f"<div><b>wisp run</b> {escape(self.project)}/<b>{escape(self.name)}</b> "
            f"<code>{escape(self.id)}</code> · {escape(self.state)}{link}<br>"
            f"<small>{escape(str(self.dir))}</small></div>"
        )


def register(run: Run) -> None:
    """A run started by ``init()``: the exit hook and doctor see it until it finishes."""
    _live_runs.append(run)


def _unregister(run: Run) -> None:
    _recent_runs.append(run)
    del _recent_runs[:-5]
    if run in _live_runs:
        _live_runs.remove(run)


def live_runs() -> list[Run]:
    return list(_live_runs)


def recent_runs() -> list[Run]:
    """The last few runs finished in this process, newest last."""
    return list(_recent_runs)


def after_fork_in_child() -> None:
    """Forked child: the parent's runs become inert no-ops that warn once per process.

    Only the forking thread exists in the child, so nothing here may wait on a
    lock another thread could have held at the fork: locks are replaced, never
    released or joined on.
    """
    for run in _live_runs:
        run._live = False
        run._lock = threading.RLock()
        if run._writer is not None:
            run._writer.after_fork_in_child()
    _live_runs.clear()

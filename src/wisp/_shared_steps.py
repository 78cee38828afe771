"""One step counter for all the processes of a run once it forks, and write-through children.

A run's processes are the one that started it and every child forked from it that logs to
it (each child writes a segment file of its own, ``run.fork<PID>.wisp``: docs/safety.md).
Each numbers its rows, and the server keeps one value per key and step, so steps that two
processes assign on their own would collide: the local reader would show both values and the
server one.  Instead, from the first fork on, every process of the run takes its automatic
steps from one counter:

- Before the first ``os.fork()`` (``os.register_at_fork``, ``wisp._hooks``) the parent maps
  8 bytes of anonymous shared memory (``MAP_SHARED``: the children see the parent's writes
  and each other's) and a process-shared semaphore, the :class:`StepLedger`.  It holds the
  next step no process of the run has used.  The run object becomes a :class:`SharedStepRun`
  (its class is swapped; nothing else changes, and a process that never forks never gets
  here: its ``log()`` is the plain one).
- ``SharedStepRun.log()`` takes the semaphore, moves a row without an explicit step up to the
  counter, logs, and moves the counter past its step (and past its open row, whose step is
  taken).  Explicit steps are the caller's: they are checked against the process's own steps
  (never back) and move the counter too.
- In a forked child, ``log()`` writes through: the row (an open one too) is encoded and
  written to the child's segment before ``log()`` returns, by the calling thread; a child
  starts no writer thread.  A child that leaves with ``os._exit`` keeps every value it logged.

A semaphore left taken by a process killed inside ``log()`` is waited for 1 s at most; then
the step is assigned without it (counted as ``failures["step lock"]``, reported by finish()).
Where shared memory or semaphores cannot be made (no ``/dev/shm``), the run keeps numbering
steps per process, as before, and says so once on the ``wisp`` logger.
"""

from __future__ import annotations

import mmap
import os
import weakref

from wisp._run import Run
from wisp._writer import ROW, ROW_DEFERRED

TYPE_CHECKING = False  # typing costs ~15 ms to import; only type checkers need it
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

__all__ = ["SharedStepRun", "StepLedger", "before_fork"]

_LOCK_WAIT = 1.0  # seconds: a semaphore held longer belongs to a process that died in log()
_without_ledger: weakref.WeakSet[Run] = weakref.WeakSet()  # runs whose ledger failed


class StepLedger:
    """The next free step of a run, in memory shared with every forked child."""

    def __init__(self, next_step: int) -> None:
        from _multiprocessing import SemLock  # type: ignore[import-not-found]  # C, no mp import

        self._map = mmap.mmap(-1, 8)  # anonymous: MAP_SHARED | MAP_ANONYMOUS
        self.cell = memoryview(self._map).cast("q")
        self.cell[0] = next_step
        name = f"/wisp-steps-{os.getpid()}-{os.urandom(6).hex()}"
        self.lock = SemLock(1, 1, 1, name, True)  # a semaphore (kind 1), unlinked at once


class SharedStepRun(Run):
    """A run whose processes share one step counter (see the module docstring)."""

    _ledger: StepLedger

    def log(
        self, data: Mapping[str, Any], step: int | None = None, commit: bool | None = None
    ) -> None:
        ledger = self._ledger
        locked = ledger.lock.acquire(True, _LOCK_WAIT)
        try:
            if not locked:
                self.count_failure("step lock")
            cell = ledger.cell
            if step is None and self._pending is None and cell[0] > self._step:
                self._step = cell[0]
            super().log(data, step, commit)
            taken = self._step + (self._pending is not None)
            if self._fork_segment:
                self._write_through()
            if taken > cell[0]:
                cell[0] = taken
        finally:
            if locked:
                ledger.lock.release()

    def _write_through(self) -> None:
        """A forked child's rows are on disk when log() returns: the open row is written
        at its step (a later log() at that step writes another row there), then the queue."""
        pending = self._pending
        if pending is not None:
            self._pending = None
            kind = ROW_DEFERRED if self._pending_deferred else ROW
            self._writer.put((kind, self._step, self._get_time(), pending))  # type: ignore[union-attr]
        else:
            self._writer.write_now()  # type: ignore[union-attr]


def before_fork(run: Run) -> None:
    """In the parent, before each fork: give ``run`` a step ledger (once) that the children
    inherit, and bring the ledger up to the parent's next step."""
    taken = run._step + (run._pending is not None)
    if isinstance(run, SharedStepRun):
        if taken > run._ledger.cell[0]:
            run._ledger.cell[0] = taken
        return
    if run in _without_ledger:
        return  # it could not be made before: this run's processes number their own steps
    try:
        ledger = StepLedger(taken)
    except OSError as exc:  # no shared memory or semaphores here (e.g. no /dev/shm)
        _without_ledger.add(run)
        from wisp._logging import logger

        logger().warning(
            "wisp: run %s: no shared step counter for forked children (%s); a child's steps "
            "may repeat the parent's, and the server keeps one value per key and step",
            run.id,
            exc,
        )
        return
    run._ledger = ledger  # type: ignore[attr-defined]
    run.__class__ = SharedStepRun

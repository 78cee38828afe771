"""Periodic jobs a run's writer thread runs between its slices (``Writer.every``).

The system sampler is one: a run keeps one background thread, not one per helper, so
``init()`` starts one thread and ``finish()`` waits for none.  Each job runs on the writer
thread under its ``busy`` lock; its next turn is an interval after it ran (a slow reading
never makes readings pile up).
"""

from __future__ import annotations

import math
from collections.abc import Callable

__all__ = ["Jobs"]


class _Job:
    __slots__ = ("due", "fn", "interval")

    def __init__(self, due: float, interval: float, fn: Callable[[], object]) -> None:
        self.due, self.interval, self.fn = due, interval, fn


class Jobs:
    """The writer's periodic jobs.  ``add`` and ``remove`` may be called from any thread
    (list appends and removes are atomic); ``due`` and ``run_due`` from the writer thread."""

    def __init__(self) -> None:
        self._jobs: list[_Job] = []

    def __bool__(self) -> bool:
        return bool(self._jobs)

    def add(self, fn: Callable[[], object], interval: float, due: float) -> object:
        """Run ``fn`` at ``due`` (on the writer's clock), then every ``interval``; returns
        the handle :meth:`remove` takes."""
        job = _Job(due, interval, fn)
        self._jobs.append(job)
        return job

    def remove(self, handle: object) -> None:
        if handle in self._jobs:
            self._jobs.remove(handle)

    def due(self) -> float:
        """When the next job is due (``inf`` when there is none)."""
        return min((j.due for j in self._jobs), default=math.inf)

    def run_due(self, now: float, run: Callable[[Callable[[], object]], None]) -> None:
        """``run(fn)`` for each job due at ``now``; its next turn is an interval later."""
        for job in list(self._jobs):
            if now >= job.due:
                job.due = now + job.interval
                run(job.fn)

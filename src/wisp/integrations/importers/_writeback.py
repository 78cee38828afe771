"""Write an imported run as a normal wisp run directory, through the Run API.

The run's clock is injected, so every row, the creation and the finish carry
the original run's times; the RUN record says where the run came from
(``imported_from``) and carries the original host and program when known.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from typing import Any

from wisp._deferred import Deferred
from wisp._protocol import RunState
from wisp._run import Run
from wisp._rundir import RUNS_DIR, dir_name, find_by_id
from wisp._settings import Settings

__all__ = ["Gallery", "ImportedRun", "MediaBytes", "Typed", "existing_run_dir"]


class Typed(Deferred):
    """A typed value (histogram, image...) handed to ``log()`` as it is."""

    __slots__ = ("value",)

    def __init__(self, value: dict[str, Any]) -> None:
        self.value = value

    def resolve(self, ctx: Any) -> Any:
        return self.value


class MediaBytes(Deferred):
    """An encoded image stored in the run's ``media/`` folder on the writer thread."""

    __slots__ = ("caption", "data", "height", "suffix", "width")

    def __init__(
        self, data: bytes, suffix: str, width: int, height: int, caption: str | None = None
    ) -> None:
        self.data = data
        self.suffix = suffix
        self.width = width
        self.height = height
        self.caption = caption

    def resolve(self, ctx: Any) -> Any:
        path = ctx.save_media(self.data, self.suffix)
        return {
            "_type": "image",
            "path": path,
            "width": self.width,
            "height": self.height,
            "caption": self.caption,
        }


class Gallery(Deferred):
    """Several images at one step as a wisp gallery."""

    __slots__ = ("items",)

    def __init__(self, items: list[MediaBytes]) -> None:
        self.items = items

    def resolve(self, ctx: Any) -> Any:
        return {"_type": "images", "items": [item.resolve(ctx) for item in self.items]}


class _Clock:
    def __init__(self, t: float) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def existing_run_dir(base: str, run_id: str) -> str | None:
    """The run directory already holding ``run_id`` under ``base``, if any."""
    found = find_by_id(base, run_id, with_file=False)
    return found[0] if found else None


class ImportedRun:
    """A wisp run being filled from another tracker's records."""

    def __init__(
        self,
        base: str,
        *,
        run_id: str,
        project: str,
        name: str,
        created_at: float,
        origin: Mapping[str, Any],
        config: Mapping[str, Any] | None = None,
        tags: list[str] | None = None,
        notes: str | None = None,
        group: str | None = None,
        job_type: str | None = None,
    ) -> None:
        self.clock = _Clock(created_at)
        stamp = time.strftime("%Y%m%d_%H%M%S", time.localtime(created_at))
        self.dir = os.path.join(base, RUNS_DIR, dir_name(stamp, run_id))
        settings = Settings.resolve({"mode": "offline", "git": False, "dir": base})
        run = Run(
            settings=settings,
            project=project,
            name=name,
            run_id=run_id,
            run_dir=self.dir,
            tags=list(tags or []),
            notes=notes,
            group=group,
            job_type=job_type,
            config=dict(config or {}),
            get_time=self.clock,
            origin=origin,
        )
        self.run: Run = run
        self.rows = 0

    def log(self, step: int, timestamp: float, values: dict[str, Any]) -> None:
        """One history row at ``step`` with its original time (steps must not go back)."""
        if not values:
            return
        self.clock.t = timestamp
        self.run.log(values, step=max(step, self.run.step), commit=True)
        self.rows += 1

    def record(self, rtype: int, payload: Any) -> None:
        self.run.record(rtype, payload)

    def finish(
        self, end_time: float, exit_code: int | None, summary: Mapping[str, Any] | None = None
    ) -> str:
        """Close the run: finished/failed by ``exit_code``; no exit code leaves it crashed."""
        run = self.run
        if summary:
            run.summary.update(summary)
        self.clock.t = end_time
        if exit_code is not None:
            run.finish(exit_code, state="finished" if exit_code == 0 else "failed")
            return self.dir
        # the original run never finished: close the file without a finish record
        run.abandon(RunState.CRASHED)
        return self.dir

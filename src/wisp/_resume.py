"""``wisp.init(id=..., resume=...)``: continue an existing run in its own run file.

A resumed run appends a new *writer segment* to the same ``run.wisp``: a RUN
record with a fresh ``writer_id``, then a RESUME record (type 12)::

    {"run_id": str, "previous_writer_id": str, "last_step": int | null,
     "resumed_at": unix seconds, "segment": int}

``segment`` counts writer segments (the first is 0).  Steps continue after the
last step found in the file; config and summary start from the run's last
snapshots.  A torn record left by a killed process is cut off first, so the new
segment is readable.  On the server the new segment is just another writer of
the same run (see ``wisp._upload._uploader``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from wisp._meta import process_alive
from wisp._rundir import RUN_FILE, RUNS_DIR, find_by_id, id_of_dir, mark_not_done, read_meta
from wisp._runfile import RecordTail, RecordType, decode_history, scan
from wisp.errors import RunFileError, RunStateError, UsageError

if TYPE_CHECKING:
    from wisp._run import Run

__all__ = ["Resumed", "find_resumable", "refuse_live_twin"]


class Resumed(NamedTuple):
    """What a resumed run continues from."""

    run_dir: str
    project: str | None
    name: str | None
    config: dict[str, Any]
    summary: dict[str, Any]
    last_step: int | None
    previous_writer_id: str | None
    segments: int

    def merge_config(self, config: Mapping[str, Any] | None) -> dict[str, Any]:
        """The run's last config updated with the one given to ``init()``."""
        return {**self.config, **(config or {})}

    def apply(self, run: Run) -> None:
        """Continue the steps and record the RESUME record after the new RUN record."""
        run.start_at_step(0 if self.last_step is None else self.last_step + 1)
        writer = run.writer
        assert writer is not None
        payload = {
            "run_id": run.id,
            "previous_writer_id": self.previous_writer_id,
            "last_step": self.last_step,
            "resumed_at": run.created_at,
            "segment": self.segments,
        }
        summary = self.summary

        def start_segment() -> None:
            writer.append(RecordType.RESUME, payload)
            writer.summary.update(summary)

        run.on_writer(start_segment)
        mark_not_done(self.run_dir)


def find_resumable(base: str, run_id: str | None, resume: Any) -> Resumed | None:
    """The run to continue, None for a new run; UsageError when ``resume`` forbids either."""
    mode = "allow" if resume in (True, "auto", "allow") else resume
    if run_id is None:
        if mode == "must":
            raise UsageError("init(resume='must') needs the id of the run to resume: id=...")
        return None
    found = find_by_id(base, run_id)
    if not found:
        if mode == "must":
            raise UsageError(
                f"init(resume='must'): no run with id {run_id!r} under "
                f"{os.path.join(base, RUNS_DIR)} "
                "(set dir= or WISP_DIR to where the run was written)"
            )
        return None
    run_dir = found[-1]
    if mode == "never":
        raise UsageError(
            f"init(resume='never'): a run with id {run_id!r} already exists at {run_dir}; "
            "choose another id, or resume='allow' to continue it"
        )
    return _read(run_dir)


def _writing_process(run_dir: str) -> str | None:
    """``"process PID on HOST"`` while another live process writes the run in ``run_dir``."""
    meta = read_meta(run_dir)
    pid = meta.get("pid")
    if (
        meta.get("state") == "running"
        and pid != os.getpid()
        and process_alive(pid, meta.get("host"))
    ):
        return f"process {pid} on {meta.get('host')}"
    return None


def refuse_live_twin(base: str, run_id: str) -> None:
    """A new run given an id that a live process is writing under ``base`` is refused at
    ``init()`` (RunStateError naming that process): two writers of one id never mix steps."""
    for run_dir in find_by_id(base, run_id):
        other = _writing_process(run_dir)
        if other is not None:
            raise RunStateError(
                f"init(id={run_id!r}): {other} is writing run {run_id} ({run_dir}); two "
                "processes never write one run: give this one another id, or resume it once "
                "that process has ended (init(id=..., resume='allow'))"
            )


def _read(run_dir: str) -> Resumed:
    path = os.path.join(run_dir, RUN_FILE)
    other = _writing_process(run_dir)
    if other is not None:
        raise RunStateError(f"cannot resume run {id_of_dir(run_dir)}: {other} is still writing it")
    try:
        info = scan(path)
        if info.ignored:
            os.truncate(path, info.valid_end)  # a torn tail would hide the new segment
    except OSError as exc:
        raise RunFileError(f"cannot resume from {path}: {exc}") from exc
    first: dict[str, Any] = {}
    last_writer: str | None = None
    segments = 0
    config: dict[str, Any] = {}
    summary: dict[str, Any] = {}
    last_history: bytes | None = None
    last_step: int | None = None
    tail = RecordTail(path)
    while recs := tail.read():
        for rec in recs:
            t = rec.type
            if t == RecordType.HISTORY:
                last_history = rec.payload
            elif t == RecordType.RUN:
                obj = json.loads(rec.payload)
                first = first or obj
                last_writer = obj.get("writer_id")
                segments += 1
            elif t == RecordType.CONFIG:
                config = json.loads(rec.payload).get("config", {})
            elif t == RecordType.SUMMARY:
                summary = json.loads(rec.payload).get("summary", {})
            elif t in (RecordType.FINISH, RecordType.RESUME):
                step = json.loads(rec.payload).get("last_step")
                if type(step) is int:
                    last_step = step if last_step is None else max(last_step, step)
    if last_history is not None:
        rows = decode_history(last_history)
        if rows and type(rows[-1][0]) is int:
            last_step = rows[-1][0] if last_step is None else max(last_step, rows[-1][0])
    return Resumed(
        run_dir=run_dir,
        project=first.get("project"),
        name=first.get("name"),
        config=config,
        summary=summary,
        last_step=last_step,
        previous_writer_id=last_writer,
        segments=segments,
    )

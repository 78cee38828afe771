"""What a run says about itself: its fields in the RUN record and in ``run.json``
(docs/run-file.md), built from the run's public attributes."""

from __future__ import annotations

import os

from wisp._runfile import FORMAT_VERSION

TYPE_CHECKING = False  # typing costs ~15 ms to import; only type checkers need it
if TYPE_CHECKING:
    from typing import Any

    from wisp._run import Run

__all__ = ["identity", "run_json"]


def identity(run: Run) -> dict[str, Any]:
    """The run's own fields of its RUN record (a new ``writer_id`` each call)."""
    from wisp._version import __version__

    fields: dict[str, Any] = {
        "run_id": run.id,
        "writer_id": os.urandom(8).hex(),
        "project": run.project_path,
        "name": run.name,
        "tags": run.tags,
        "notes": run.notes,
        "group": run.group,
        "job_type": run.job_type,
        "created_at": run.created_at,
        "mode": run.mode,
        "wisp_version": __version__,
    }
    if run.rank is not None:
        fields["rank"] = run.rank
    if run.sweep_id:
        fields["sweep_id"] = run.sweep_id
    return fields


def run_json(run: Run, state: str, file_name: str) -> dict[str, Any]:
    """``run.json`` of ``run`` in ``state``, its records in ``file_name``."""
    meta = {
        "id": run.id,
        "project": run.project_path,
        "name": run.name,
        "state": state,
        "created_at": run.created_at,
        "pid": run.pid,
        "host": os.uname().nodename,
        "file": file_name,
        "rank": run.rank,
        "format_version": FORMAT_VERSION,
        "exit_code": run.exit_code,
        **run.lineage_meta,
    }
    if state != "running":  # what a fork of this run needs, without reading its file
        step = run.step
        meta["last_step"] = step - 1 if step else None
        meta["config"] = run.config.as_dict()
    return meta

"""Fork and rewind: ``init(fork_from="RUN?_step=N")`` and ``init(resume_from="RUN?_step=N")``.

A run's lineage lives in its run file (format version 1, docs/run-file.md):

* **Fork** (record type 13, LINEAGE), written once after the first RUN record of a new
  run::

      {"kind": "fork", "parent_id": str, "parent_project": str, "step": N,
       "parent_dir": "../run-<stamp>-<id>" | null, "parent_bytes": int | null,
       "forked_at": unix seconds}

  The run's history, as readers see it, is its parent's history up to and including
  step ``N`` followed by its own rows (which start at ``N + 1``).  Nothing is copied: a
  reader reads the parent's run file, found by ``parent_dir`` (relative to the fork's
  directory) or else by ``parent_id`` among the runs next to it, up to ``parent_bytes``
  (the parent file's size when the fork was made, so whatever the parent logs or
  rewinds later never changes the fork).  A fork of a fork reads through both.
* **Rewind** (a RESUME record, type 12, with a ``rewind`` member)::

      {"run_id", "previous_writer_id", "last_step": N, "resumed_at", "segment",
       "rewind": {"step": N, "previous_last_step": int, "rows": int}}

  Rows logged before this record with a step greater than ``N`` are *set aside*: kept
  in the file, listed by readers (``RunData.set_aside``), restorable, left out of the
  history, the summary and exports unless asked for.  A SUMMARY record recomputed
  over the rows kept follows the RESUME record.

``run.json`` repeats what discovery needs without reading run files: ``"fork_from":
{"run_id", "project", "step"}`` on a fork, ``"rewinds": [{"step", "at"}, ...]`` on a
rewound run, and, once a run ends, its ``"last_step"`` and ``"config"`` (so forking a
finished run reads two small files, whatever its size).
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Mapping

from wisp._protocol import RecordType, is_valid_id, step_problem
from wisp.errors import NotFoundError, UsageError

TYPE_CHECKING = False  # typing costs ~15 ms to import; only type checkers need it
if TYPE_CHECKING:
    from typing import Any

    from wisp._resume import Resumed
    from wisp._run import Run

__all__ = [
    "LINEAGE_VERSION",
    "Fork",
    "Moment",
    "check_branch_args",
    "check_rewind",
    "find_fork",
    "note_rewind",
    "parse_moment",
    "restore_set_aside",
    "rewind",
]

LINEAGE_VERSION = 1
_FORMAT = "'<run>?_step=<step>' (RUN an id, project/id or entity/project/id)"


class Moment:
    """A step of a run: ``RUN?_step=N`` (wandb's RunMoment; only ``_step`` is supported)."""

    __slots__ = ("project", "run_id", "step")

    def __init__(self, run_id: str, step: int, project: str | None = None) -> None:
        self.run_id, self.step, self.project = run_id, step, project

    def __repr__(self) -> str:
        where = f"{self.project}/" if self.project else ""
        return f"{where}{self.run_id}?_step={self.step}"


def parse_moment(value: Any, arg: str) -> Moment:
    """``RUN?_step=N`` -> Moment; UsageError in wandb's words for anything else."""
    bad = UsageError(
        f"Could not parse passed run moment string {value!r} for {arg}, expected format "
        f"{_FORMAT}. Currently, only the metric '_step' is supported. "
        "Example: 'ans3bsax?_step=123'."
    )
    if not isinstance(value, str) or value.count("?") != 1:
        raise bad
    path, query = value.split("?")
    metric, _, raw = query.partition("=")
    if metric != "_step":
        raise bad
    try:
        number = float(raw) if not raw.isdigit() else int(raw)
    except ValueError:
        raise bad from None
    if not math.isfinite(number) or number < 0 or number != int(number):
        raise UsageError(f"{arg}={value!r}: the step must be a whole number >= 0, got {raw}")
    if step_problem(int(number)) is not None:
        raise UsageError(f"{arg}={value!r}: step {step_problem(int(number))}")
    parts = path.split("/")
    if len(parts) > 3 or not is_valid_id(parts[-1]) or not all(parts[:-1]):
        raise bad
    project = "/".join(parts[:-1]) or None
    return Moment(parts[-1], int(number), project)


def check_branch_args(
    fork_from: Any, resume_from: Any, resume: Any, run_id: str | None
) -> tuple[Moment | None, Moment | None]:
    """Parse ``fork_from``/``resume_from`` and refuse the combinations wandb refuses."""
    given = [n for n, v in (("fork_from", fork_from), ("resume", resume)) if v not in (None, False)]
    if resume_from is not None:
        given.append("resume_from")
    if len(given) > 1:
        raise UsageError(
            "`fork_from`, `resume`, or `resume_from` are mutually exclusive. "
            "Please specify only one of them."
        )
    fork = None if fork_from is None else parse_moment(fork_from, "fork_from")
    back = None if resume_from is None else parse_moment(resume_from, "resume_from")
    if fork is not None and run_id is not None and run_id == fork.run_id:
        raise UsageError(
            "Provided `run_id` is the same as the run to `fork_from`. Please provide a "
            "different `run_id` or remove the `run_id` argument. If you want to rewind the "
            "current run, please use `resume_from` instead."
        )
    if back is not None and run_id is not None and run_id != back.run_id:
        import warnings

        from wisp.errors import WispWarning

        warnings.warn(
            f"wisp: init() id={run_id!r} differs from the run of resume_from={resume_from!r}; "
            "resume_from takes precedence (as in wandb)",
            WispWarning,
            stacklevel=4,
        )
    return fork, back


def _past_end(arg: str, moment: Moment, last: int | None) -> UsageError:
    what = "has no history" if last is None else f"ends at step {last}"
    return UsageError(
        f"{arg}={moment!r}: step {moment.step} is past the last step of run "
        f"{moment.run_id!r}, which {what}; choose a step it logged"
    )


def _find_dir(base: str, moment: Moment, arg: str) -> str:
    from wisp._rundir import RUNS_DIR, find_by_id, read_meta

    for run_dir in reversed(find_by_id(base, moment.run_id)):
        project = read_meta(run_dir).get("project")
        if moment.project is None or project is None or _same_project(moment.project, project):
            return run_dir
    raise NotFoundError(
        f"{arg}={moment!r}: run {moment.run_id!r} was not found"
        + (f" in project {moment.project!r}" if moment.project else "")
        + f" under {os.path.join(base, RUNS_DIR)} (set dir= or WISP_DIR to where it was written)"
    )


def _same_project(asked: str, project: str) -> bool:
    """``project/id`` matches a run of ``entity/project`` too (the entity is then implied)."""
    return asked == project or ("/" not in asked and project.rsplit("/", 1)[-1] == asked)


def _scan_state(path: str) -> tuple[dict[str, Any], int | None]:
    """(config, last step) of a run file (a parent still running or one that crashed: its
    ``run.json`` has neither), hopping over payloads: only config and resume records and the
    last history batch are read (steps never go back, so it holds the last step)."""
    from wisp._runfile import _FRAME, FRAME_SIZE, HEADER_SIZE, decode_history

    config: dict[str, Any] = {}
    last: int | None = None
    history: tuple[int, int] | None = None
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        pos = HEADER_SIZE
        f.seek(pos)
        while pos + FRAME_SIZE <= size:
            n, _crc, rtype = _FRAME.unpack(f.read(FRAME_SIZE))
            if pos + FRAME_SIZE + n > size:
                break  # a record still being written (or torn)
            if rtype == RecordType.HISTORY:
                history = (pos + FRAME_SIZE, n)
            elif rtype in (RecordType.CONFIG, RecordType.RESUME):
                obj = json.loads(f.read(n))
                back = obj.get("rewind")
                if rtype == RecordType.CONFIG:
                    config = obj.get("config", {})
                elif isinstance(back, dict) and type(back.get("step")) is int:
                    last, history = back["step"], None
            pos += FRAME_SIZE + n
            f.seek(pos)
        rows: list[Any] = []
        if history is not None:
            f.seek(history[0])
            rows = decode_history(f.read(history[1]))
    if rows and type(rows[-1][0]) is int:
        last = rows[-1][0] if last is None else max(last, rows[-1][0])
    return config, last


class Fork:
    """What a new run forked from ``parent`` at ``moment.step`` starts from."""

    def __init__(self, moment: Moment, run_dir: str, meta: Mapping[str, Any]) -> None:
        from wisp._rundir import RUN_FILE

        self.moment = moment
        self.parent_dir = run_dir
        self.parent_project = str(meta.get("project") or "")
        path = os.path.join(run_dir, RUN_FILE)
        self.parent_bytes = os.path.getsize(path)
        if meta.get("state") not in (None, "running") and "last_step" in meta:
            self.config: dict[str, Any] = dict(meta.get("config") or {})
            last = meta["last_step"]
        else:
            self.config, last = _scan_state(path)
        if last is None or moment.step > last:
            raise _past_end("fork_from", moment, last)

    def merge_config(self, config: Mapping[str, Any] | None) -> dict[str, Any]:
        """The parent's config updated with the one given to ``init()``."""
        return {**self.config, **(config or {})}

    def upload_parent(self, settings: Any) -> None:
        """Online: the parent (and its own parents) reaches the server before the fork.  One
        the server cannot take now is left to ``wisp sync``, which sends parents first."""
        from wisp._rundir import sync_status

        server = str(settings.server_url).rstrip("/")
        if sync_status(self.parent_dir, server)[0]:
            return
        from wisp._upload._sync import sync
        from wisp.errors import ApiError

        try:
            sync(
                [self.parent_dir],
                follow=False,
                server_url=server,
                api_key=settings.api_key,
                give_up_after=settings.init_timeout,
                progress=False,
            )
        except ApiError as exc:
            import logging

            logging.getLogger("wisp").warning(
                "wisp: the parent of this fork (%s) could not be uploaded now (%s); "
                "`wisp sync` uploads it before the fork",
                self.parent_dir,
                exc,
            )

    def apply(self, run: Run) -> None:
        """Start the run's steps after the fork step and write the LINEAGE record."""
        assert run.dir is not None
        step = self.moment.step
        run.start_at_step(step + 1)
        payload = {
            "kind": "fork",
            "parent_id": self.moment.run_id,
            "parent_project": self.parent_project,
            "step": step,
            "parent_dir": os.path.relpath(self.parent_dir, run.dir),
            "parent_bytes": self.parent_bytes,
            "forked_at": run.created_at,
        }
        writer = run.writer
        assert writer is not None
        run.on_writer(lambda: writer.append(RecordType.LINEAGE, payload))
        run.lineage_meta["fork_from"] = {
            "run_id": self.moment.run_id,
            "project": self.parent_project,
            "step": step,
        }
        run.refresh_meta()


def check_rewind(base: str, moment: Moment) -> None:
    """NotFoundError in resume_from's words when the run to rewind is not under ``base``."""
    _find_dir(base, moment, "resume_from")


def find_fork(base: str, moment: Moment) -> Fork:
    """The run to fork from, checked: it exists under ``base`` and logged step ``N``."""
    from wisp._rundir import read_meta

    run_dir = _find_dir(base, moment, "fork_from")
    return Fork(moment, run_dir, read_meta(run_dir))


def rewind(moment: Moment, resumed: Resumed) -> Resumed:
    """``resumed`` taken back to ``moment.step``: its later rows set aside, its summary
    recomputed over the rows kept (user-set summary keys stay), steps going on at N + 1."""
    from wisp._lineage_read import Replay, user_set
    from wisp._reader import open_run

    if moment.project and resumed.project and not _same_project(moment.project, resumed.project):
        raise NotFoundError(
            f"resume_from={moment!r}: run {moment.run_id!r} is in project {resumed.project!r}"
        )
    step = moment.step
    if resumed.last_step is None or step > resumed.last_step:
        raise _past_end("resume_from", moment, resumed.last_step)
    data = open_run(resumed.run_dir)
    if data.parent is not None and step < data.parent["step"]:
        raise UsageError(
            f"resume_from={moment!r}: run {moment.run_id!r} was forked from "
            f"{data.parent['run_id']!r} at step {data.parent['step']}; rewind it to that step "
            "or later, or fork its parent at the step you want"
        )
    own, upto = Replay(data.own_metrics), Replay(data.metrics)
    fork = data.parent
    if fork is not None:  # the parent's part: steps up to the fork step, all kept
        for row in data.view_rows():
            if row[0] > fork["step"]:
                break
            upto.add(row[2])
    rows = 0  # one pass over the file's own rows (streamed)
    for row in data.iter_own():
        own.add(row[2])
        if row[0] <= step:
            upto.add(row[2])
        else:
            rows += 1
    summary = {**upto.summary, **user_set(own, resumed.summary)}
    extra = {"rewind": {"step": step, "previous_last_step": resumed.last_step, "rows": rows}}
    return resumed._replace(last_step=step, summary=summary, extra=extra)


def note_rewind(run: Run, step: int) -> None:
    """Add this rewind to ``run.json``'s ``rewinds`` (the run's earlier ones kept)."""
    from wisp._rundir import read_meta

    assert run.dir is not None
    earlier = read_meta(run.dir).get("rewinds")
    past = list(earlier) if isinstance(earlier, list) else []
    run.lineage_meta["rewinds"] = [*past, {"step": step, "at": time.time()}]
    run.refresh_meta()


def restore_set_aside(run_dir: str, new_id: str, index: int = -1) -> str:
    """Bring back the rows rewind ``index`` of the run in ``run_dir`` set aside, as a new
    run next to it: a fork of the run at the rewind's step whose own rows are those rows
    (wandb keeps a rewound run's original history as an archived run).  Returns its
    directory; the rewound run itself is left as it is."""
    from wisp._reader import open_run
    from wisp._rundir import META_FILE, RUN_FILE, dir_name, write_meta
    from wisp._runfile import HEADER, encode_history, encode_record

    data = open_run(run_dir)
    parts = data.set_aside
    if not parts:
        raise UsageError(f"run {data.id!r} has no rows set aside by a rewind")
    try:
        part = parts[index]
    except (IndexError, TypeError):
        raise UsageError(
            f"rewind index {index!r} out of range: run {data.id!r} has {len(parts)} rewind(s)"
        ) from None
    now = time.time()
    stamp = time.strftime("%Y%m%d_%H%M%S")
    new_dir = os.path.join(os.path.dirname(run_dir), dir_name(stamp, new_id))
    os.makedirs(new_dir)
    name = f"{data.name}-rewind{part['rewind']}"
    run = {**data.metadata, "run_id": new_id, "name": name, "writer_id": os.urandom(8).hex()}
    run["created_at"] = now
    rows = [list(r) for r in part["rows"]]
    last = rows[-1][0] if rows else part["step"]
    fork = {
        "kind": "fork",
        "parent_id": data.id,
        "parent_project": data.project,
        "step": part["step"],
        "parent_dir": os.path.relpath(run_dir, new_dir),
        "parent_bytes": os.path.getsize(os.path.join(run_dir, RUN_FILE)),
        "forked_at": now,
        "restored_rewind": part["rewind"],
    }
    finish = {"state": "finished", "exit_code": 0, "finished_at": now, "last_step": last}
    records = [
        (RecordType.RUN, run),
        (RecordType.LINEAGE, fork),
        (RecordType.CONFIG, {"config": data.config}),
        (RecordType.FINISH, finish),
    ]
    blob = [HEADER]
    for rtype, obj in records:
        if rtype == RecordType.FINISH and rows:
            blob.append(encode_record(RecordType.HISTORY, encode_history(rows)))
        blob.append(encode_record(rtype, json.dumps(obj).encode("utf-8")))
    with open(os.path.join(new_dir, RUN_FILE), "wb") as f:
        f.write(b"".join(blob))
    meta = {
        "id": new_id,
        "project": data.project,
        "name": name,
        "state": "finished",
        "created_at": now,
        "file": RUN_FILE,
        "format_version": 1,
        "exit_code": 0,
        "last_step": last,
        "config": data.config,
        "fork_from": {"run_id": data.id, "project": data.project, "step": part["step"]},
    }
    write_meta(new_dir, meta, META_FILE)
    return new_dir

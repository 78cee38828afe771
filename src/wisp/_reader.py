"""Reading runs back: ``wisp.open_run(path)``.

Works on a finished run, a run still being written, and a run whose process
was killed: the reader stops at the first torn or corrupt record and reports
how many bytes it ignored.

A run recorded by several ranks (``init(ranks="all")``, see ``_ranks.py``) has
one run file per rank in its directory (``run.wisp`` for rank 0,
``run.rank<N>.wisp`` for rank N).  ``open_run(dir)`` merges them into one
:class:`RunData` whose history keys, summary keys and metric names are
prefixed ``rank<N>/`` (every rank, 0 included) so per-rank series stay
distinct; ``RunData.ranks`` maps each rank to its own, unprefixed RunData.

A fork of another run (``init(fork_from=...)``) reads as its parent's rows up to the
fork step, then its own; rows a rewind (``init(resume_from=...)``) set aside are left
out of the history and listed in ``RunData.set_aside`` (``wisp._lineage``).

Rows that forked child processes logged to the run are in segment files of their
own (``run.fork<PID>.wisp``); ``open_run(dir)`` yields them after the run's own
rows, child by child, with their keys unchanged (a child's consecutive rows at one
step merged, later values winning, as the server keeps them); ``RunData.forks`` maps
each pid to its segment.  Summary and state are the run's own.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator

from wisp._lineage_read import LineageView
from wisp._meta import process_alive
from wisp._rundir import RUN_FILE, fork_files, rank_files
from wisp._runfile import RecordType, iter_records, scan
from wisp._summary import SummaryDict
from wisp.errors import RunFileError

TYPE_CHECKING = False  # typing costs ~15 ms to import; only type checkers need it
if TYPE_CHECKING:
    from typing import Any

__all__ = ["RunData", "find_run_file", "open_run"]


def _loads(payload: bytes) -> Any:
    return json.loads(payload)


def find_run_file(path: str | os.PathLike[str]) -> str:
    p = os.fspath(path)
    if os.path.isdir(p):
        candidate = os.path.join(p, RUN_FILE)
        if not os.path.exists(candidate):
            ranks = rank_files(p)
            if not ranks:
                raise RunFileError(f"{p} is not a wisp run directory (no {RUN_FILE})")
            return ranks[min(ranks)]
        return candidate
    if not os.path.exists(p):
        raise RunFileError(f"no run file or run directory at {p}")
    return p


class RunData(LineageView):
    """A run read from disk.  Records are read once, at open; ``history()`` decodes lazily."""

    def __init__(self, path: str, *, limit: int | None = None, depth: int = 0) -> None:
        """``limit``: read the file's first ``limit`` bytes only (a fork's view of its parent);
        ``depth``: how many forks down from the run opened (a loop guard)."""
        self.path = path
        self.dir = os.path.dirname(os.path.abspath(path))
        #: rank -> that rank's RunData, for a run recorded by several ranks (else empty)
        self.ranks: dict[int, RunData] = {}
        self._state: str | None = None  # set on merged multi-rank runs
        self.metadata: dict[str, Any] = {}
        self.config: dict[str, Any] = {}
        self._summary: dict[str, Any] = SummaryDict()
        self._summary_view = False  # a fork's summary is computed over its view when read
        self.metrics: list[dict[str, Any]] = []
        self.finish: dict[str, Any] | None = None
        self.records: dict[str, list[Any]] = {}
        self._history_payloads: list[bytes] = []
        self._extra_rows: list[Any] | None = None
        self.forks: dict[int, RunData] = {}
        #: the fork's LINEAGE record, or None (``parent``: the parent it names, found or not)
        self.lineage: dict[str, Any] | None = None
        self._rewinds: list[tuple[int, dict[str, Any]]] = []
        self._depth = depth
        self._own: tuple[list[Any], list[dict[str, Any]]] | None = None
        self._parent: RunData | None = None
        with open(path, "rb") as f:
            data = f.read() if limit is None else f.read(limit)
        info = scan(data)
        self.record_count = info.records
        self.ignored_bytes = info.ignored
        for rec in iter_records(data):
            t = rec.type
            if t == RecordType.HISTORY:
                self._history_payloads.append(rec.payload)
                continue
            obj = _loads(rec.payload)
            if t == RecordType.RUN:
                if not self.metadata:
                    self.metadata = obj
                else:  # a later segment, or name/tags/notes changed mid-run
                    for k in ("name", "tags", "notes"):
                        if k in obj:
                            self.metadata[k] = obj[k]
            elif t == RecordType.CONFIG:
                self.config = obj["config"]
            elif t == RecordType.SUMMARY:
                self._summary = SummaryDict(obj["summary"])
            elif t == RecordType.METRIC:
                self.metrics.append(obj)
            elif t == RecordType.FINISH:
                self.finish = obj
            else:
                if t == RecordType.LINEAGE and obj.get("kind") == "fork" and not self.lineage:
                    self.lineage = obj
                elif t == RecordType.RESUME and isinstance(obj.get("rewind"), dict):
                    self._rewinds.append((len(self._history_payloads), obj["rewind"]))
                self.records.setdefault(RecordType.NAMES.get(t, str(t)), []).append(obj)
        self.own_metrics = self.metrics
        if self.lineage is not None:
            self._open_parent(RunData)

    # -- identity ----------------------------------------------------------------------------

    @property
    def id(self) -> str:
        return str(self.metadata.get("run_id", ""))

    @property
    def name(self) -> str:
        return str(self.metadata.get("name", ""))

    @property
    def project(self) -> str:
        return str(self.metadata.get("project", ""))

    @property
    def state(self) -> str:
        """finished / failed / killed from the finish record; running or crashed without one.

        A merged multi-rank run shows the most telling state of its ranks, in the
        order running, failed, killed, crashed, finished.
        """
        if self._state is not None:
            return self._state
        if self.finish is not None:
            return str(self.finish.get("state", "finished"))
        if process_alive(self.metadata.get("pid"), self.metadata.get("host")):
            return "running"
        return "crashed"

    # -- history -----------------------------------------------------------------------------

    def _rows(self) -> Iterator[Any]:
        """(step, timestamp, values) in logged order; a merged run goes rank by rank."""
        if self._extra_rows is not None:  # merged with forked children's segments
            yield from self._extra_rows
            return
        if self.ranks:
            for rank in sorted(self.ranks):
                for step, ts, values in self.ranks[rank]._rows():
                    yield step, ts, {f"rank{rank}/{k}": v for k, v in values.items()}
            return
        yield from self.view_rows()

    def history(
        self, keys: list[str] | None = None, *, set_aside: bool = False
    ) -> Iterator[dict[str, Any]]:
        """Rows in logged order: ``{"_step": s, "_timestamp": t, key: value, ...}``.

        A merged multi-rank run yields rank 0's rows, then rank 1's, and so on.
        ``set_aside``: then the rows rewinds set aside, each with ``"_rewind": i``.
        """
        want = set(keys) if keys is not None else None
        parts = [(None, self._rows())]
        if set_aside:
            parts += [(p["rewind"], iter(p["rows"])) for p in self.set_aside]
        for rewind, rows in parts:
            for step, ts, values in rows:
                if want is not None:
                    values = {k: v for k, v in values.items() if k in want}
                    if not values:
                        continue
                row = {"_step": step, "_timestamp": ts}
                if rewind is not None:
                    row["_rewind"] = rewind
                row.update(values)
                yield row

    def history_columns(
        self, keys: list[str] | None = None
    ) -> dict[str, tuple[list[int], list[float], list[float]]]:
        """key -> (steps, timestamps, values) of the numeric values of :meth:`history` (of
        ``keys``, or all), in logged order; no row is built when the history is this file's
        own records alone."""
        from wisp._runfile import history_columns

        want = None if keys is None else set(keys)
        out: dict[str, tuple[list[int], list[float], list[float]]] = {}
        plain = not (self.ranks or self._extra_rows is not None or self._rewinds)
        if plain and self._parent is None:
            for payload in self._history_payloads:
                history_columns(payload, out, want)
            return out
        for step, ts, values in self._rows():
            for k, v in values.items():
                if (want is None or k in want) and (type(v) is float or type(v) is int):
                    col = out.setdefault(k, ([], [], []))
                    col[0].append(step)
                    col[1].append(ts)
                    col[2].append(float(v))
        return out

    def scalars(self, key: str, x: str | None = None) -> tuple[list[Any], list[Any]]:
        """(steps, values) of one metric.

        ``x`` names another key to index by instead of the row step: the step metric a
        library declared with ``define_metric`` (``"trainer/global_step"``), or
        ``"defined"`` for whatever :meth:`step_metric` finds for ``key``.  Rows without
        a value of ``x`` are left out.
        """
        if x == "defined":
            x = self.step_metric(key)
        steps: list[Any] = []
        values: list[Any] = []
        for step, _ts, row in self._rows():
            if key in row:
                if x is None:
                    steps.append(step)
                elif x in row:
                    steps.append(row[x])
                else:
                    continue
                values.append(row[key])
        return steps, values

    def step_metric(self, key: str) -> str | None:
        """The step metric declared for ``key`` by ``define_metric`` (exact names before
        globs, the last declaration of a name winning), or None."""
        from fnmatch import fnmatchcase

        exact: str | None = None
        glob: str | None = None
        for spec in self.metrics:
            name, sm = spec.get("name"), spec.get("step_metric")
            if not sm or not isinstance(name, str) or sm == key:
                continue
            if name == key:
                exact = sm
            elif any(c in name for c in "*?[") and fnmatchcase(key, name):
                glob = sm
        return exact or glob

    # -- media (decoding lives in wisp.media._read) ------------------------------------------

    def histograms(self, key: str) -> tuple[list[int], list[Any]]:
        """(steps, [HistogramData(counts, edges, nan, inf)]) with numpy arrays."""
        from wisp.media._read import histogram_data

        steps, values = self.scalars(key)
        return steps, [histogram_data(key, v) for v in values]

    def images(self, key: str) -> tuple[list[int], list[list[str]]]:
        """(steps, [absolute image paths]) : one path per image, several for a gallery."""
        from wisp.media._read import image_paths

        steps, values = self.scalars(key)
        return steps, [self._located(image_paths(self.dir, key, v)) for v in values]

    def media_files(self, key: str) -> tuple[list[int], list[list[str]]]:
        """(steps, [absolute file paths]) of any media stored as files (audio, video, html,
        object3d, images, tables, charts): one path per value, several for a gallery."""
        from wisp.media._read import media_files

        steps, values = self.scalars(key)
        return steps, [self._located(media_files(self.dir, key, v)) for v in values]

    def table(self, key: str, step: int | None = None) -> list[dict[str, Any]]:
        """The rows of the table (or wisp.plot chart) logged at ``step`` (default: the last),
        image cells as paths."""
        from wisp.media._read import read_table

        value = self._value_at(key, step)
        columns, rows = read_table(self._media_dir(value), key, value)
        return [dict(zip(columns, row, strict=True)) for row in rows]

    def table_frame(self, key: str, step: int | None = None) -> Any:
        """The table logged at ``step`` (default: the last) as a pandas DataFrame."""
        try:
            import pandas as pd
        except ImportError as exc:
            raise ImportError(
                "RunData.table_frame() needs pandas; install it with `pip install pandas`"
            ) from exc
        from wisp.media._read import read_table

        value = self._value_at(key, step)
        columns, rows = read_table(self._media_dir(value), key, value)
        return pd.DataFrame(rows, columns=columns)

    def _value_at(self, key: str, step: int | None) -> Any:
        steps, values = self.scalars(key)
        if not steps:
            raise KeyError(f"no values logged under {key!r}")
        if step is None:
            return values[-1]
        for s, v in zip(reversed(steps), reversed(values), strict=True):
            if s == step:
                return v
        raise KeyError(f"no value of {key!r} at step {step}")

    def keys(self) -> list[str]:
        seen: dict[str, None] = {}
        for _s, _t, row in self._rows():
            seen.update(dict.fromkeys(row))
        return list(seen)

    def to_pandas(self) -> Any:
        """History as a pandas DataFrame (needs pandas: ``pip install pandas``)."""
        try:
            import pandas as pd
        except ImportError as exc:
            raise ImportError(
                "RunData.to_pandas() needs pandas; install it with `pip install pandas`"
            ) from exc
        return pd.DataFrame.from_records(list(self.history()))

    def __repr__(self) -> str:
        return f"<wisp.RunData {self.project}/{self.name} id={self.id} state={self.state}>"


_STATE_ORDER = ("running", "failed", "killed", "crashed", "finished")


def _merge_ranks(files: dict[int, str]) -> RunData:
    """One RunData over every rank's file; series keep their rank as a key prefix."""
    parts = {rank: RunData(path) for rank, path in sorted(files.items())}
    first = parts[min(parts)]
    merged = RunData.__new__(RunData)
    merged.__dict__.update(first.__dict__)
    merged.ranks = parts
    merged._history_payloads = []
    merged.summary = SummaryDict(
        (f"rank{rank}/{k}", v) for rank, part in parts.items() for k, v in part.summary.items()
    )
    merged.metrics = [
        {**m, "name": f"rank{rank}/{m['name']}"}
        for rank, part in parts.items()
        for m in part.metrics
    ]
    merged.record_count = sum(p.record_count for p in parts.values())
    merged.ignored_bytes = sum(p.ignored_bytes for p in parts.values())
    merged.metadata = {**first.metadata, "ranks": sorted(parts)}
    states = {p.state for p in parts.values()}
    merged._state = next((s for s in _STATE_ORDER if s in states), first.state)
    finishes = [p.finish for p in parts.values() if p.finish is not None]
    telling = [f for f in finishes if f.get("state") == merged._state]
    merged.finish = None if len(finishes) < len(parts) else (telling or finishes)[0]
    return merged


def open_run(path: str | os.PathLike[str]) -> RunData:
    """Read a run directory (or one run file).

    A directory written by several ranks is merged (see the module docstring);
    the path of one rank's file reads that rank alone.
    """
    file = find_run_file(path)
    p = os.fspath(path)
    if os.path.isdir(p):
        ranks = rank_files(p)
        if ranks:
            if os.path.exists(os.path.join(p, RUN_FILE)):
                ranks[0] = os.path.join(p, RUN_FILE)
            return _with_forks(_merge_ranks(ranks), p)
        return _with_forks(RunData(file), p)
    return RunData(file)


def _with_forks(data: RunData, run_dir: str) -> RunData:
    """Add the rows forked children logged (``run.fork<PID>.wisp``) after the run's own,
    child by child; ``data.forks`` maps each child's pid to its own RunData."""
    paths = fork_files(run_dir)
    data.forks = {}
    if not paths:
        return data
    data._extra_rows = list(data._rows())
    for path in paths:
        part = RunData(path)
        pid = int(os.path.basename(path)[len("run.fork") : -len(".wisp")])
        data.forks[pid] = part
        data._extra_rows.extend(_merge_step_runs(part._rows()))
        data.record_count += part.record_count
        data.ignored_bytes += part.ignored_bytes
    return data


def _merge_step_runs(rows: Iterator[Any]) -> Iterator[Any]:
    """A forked child's rows with consecutive rows at one step merged (later values win),
    as the server stores them: a child writes each ``log()`` through, so ``log(.., step=5)``
    twice is two rows at step 5 in its segment (docs/safety.md)."""
    held = None
    for step, ts, values in rows:
        if held is not None and held[0] == step:
            held = (step, ts, {**held[2], **values})
            continue
        if held is not None:
            yield held
        held = (step, ts, values)
    if held is not None:
        yield held

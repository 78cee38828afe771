"""Reading a fork or a rewound run (the records are in ``wisp._lineage``'s docstring).

``wisp._reader`` calls :func:`own_rows` for a run file holding rewinds and :func:`load_parent`
for a fork; the parent's file is opened with the reader's own class, passed in, so this
module does not import the reader.  The summary over a run's view is :func:`summarize`,
replaying rows with the writer's rules (``wisp._metric``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Mapping

from wisp._runfile import decode_history
from wisp._summary import SummaryDict
from wisp.errors import RunFileError

TYPE_CHECKING = False  # typing costs ~15 ms to import; only type checkers need it
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "MAX_DEPTH",
    "LineageView",
    "Replay",
    "load_parent",
    "own_rows",
    "summarize",
    "user_set",
]

#: forks of forks deeper than this are refused (a loop of hand-made files ends here)
MAX_DEPTH = 64


def own_rows(
    payloads: list[bytes], rewinds: list[tuple[int, dict[str, Any]]]
) -> tuple[list[Any], list[dict[str, Any]]]:
    """(rows kept, set aside) of one run file: ``rewinds`` are (history records before the
    rewind, its ``rewind`` member); each sets aside the rows before it past its step."""
    rows: list[Any] = []
    aside: list[dict[str, Any]] = []
    pending = list(rewinds)

    def cut(upto: int) -> None:
        nonlocal rows
        while pending and pending[0][0] <= upto:
            _, rw = pending.pop(0)
            step = rw.get("step")
            if type(step) is not int:
                continue
            aside.append(
                {"rewind": len(aside), "step": step, "rows": [r for r in rows if r[0] > step]}
            )
            rows = [r for r in rows if r[0] <= step]

    for i, payload in enumerate(payloads):
        cut(i)
        rows.extend(decode_history(payload))
    cut(len(payloads))
    return rows, aside


def _parent_dir(run_dir: str, lineage: Mapping[str, Any]) -> str | None:
    from wisp._rundir import find_by_id, is_run_dir, read_meta

    parent_id = lineage.get("parent_id")
    hint = lineage.get("parent_dir")
    if isinstance(hint, str):
        path = os.path.normpath(os.path.join(run_dir, hint))
        if is_run_dir(path) and read_meta(path).get("id") in (None, parent_id):
            return path
    if not isinstance(parent_id, str):
        return None
    found = find_by_id(os.path.dirname(os.path.dirname(run_dir)), parent_id)
    return found[-1] if found else None


def load_parent(data: Any, opener: Callable[..., Any]) -> Any:
    """The parent RunData of fork ``data`` as it was when the fork was made (its file read
    up to ``parent_bytes``), or None when it is not on this machine."""
    from wisp._rundir import RUN_FILE

    lineage = data.lineage
    path = _parent_dir(data.dir, lineage)
    if path is None:
        return None
    depth = data._depth + 1
    if depth > MAX_DEPTH:
        raise RunFileError(f"{data.path}: forks of forks deeper than {MAX_DEPTH} (a loop?)")
    limit = lineage.get("parent_bytes")
    return opener(
        os.path.join(path, RUN_FILE), limit=limit if type(limit) is int else None, depth=depth
    )


def _spec_for(metrics: list[dict[str, Any]], key: str) -> dict[str, Any] | None:
    from fnmatch import fnmatchcase

    for m in reversed(metrics):
        name = m.get("name")
        if isinstance(name, str) and fnmatchcase(key, name):
            return dict(m)
    return None


class Replay:
    """The summary the writer computes over the rows :meth:`add` is given (its rules:
    ``wisp._metric``), row by row."""

    def __init__(self, metrics: list[dict[str, Any]]) -> None:
        self.metrics = metrics
        self.summary: dict[str, Any] = {}
        self._aggs: dict[str, Any] = {}
        self._specs: dict[str, dict[str, Any] | None] = {}

    def add(self, values: dict[str, Any]) -> None:
        from wisp._metric import update_summary

        summary, specs = self.summary, self._specs
        for key, value in values.items():
            if key not in specs:
                specs[key] = _spec_for(self.metrics, key)
            spec = specs[key]
            how = spec.get("summary", "last") if spec else "last"
            if how == "last":
                summary[key] = value
            elif how != "none" and spec is not None:
                update_summary(summary, self._aggs, key, value, spec)


def _replay(rows: Iterable[Any], metrics: list[dict[str, Any]]) -> Replay:
    out = Replay(metrics)
    for row in rows:
        out.add(row[2])
    return out


def user_set(computed: Replay, recorded: Mapping[str, Any]) -> dict[str, Any]:
    """The keys of a SUMMARY record (``recorded``) the user set: those that replaying the
    run's own rows (``computed``) does not give."""
    got = computed.summary
    return {k: v for k, v in recorded.items() if k not in got or got[k] != v}


def summarize(
    view: Iterable[Any],
    metrics: list[dict[str, Any]],
    recorded: Mapping[str, Any],
    own: Iterable[Any],
    own_metrics: list[dict[str, Any]],
) -> dict[str, Any]:
    """The summary over ``view``'s rows, plus the keys the user set in ``recorded`` (the
    run's SUMMARY record over its ``own`` rows)."""
    return {**_replay(view, metrics).summary, **user_set(_replay(own, own_metrics), recorded)}


class LineageView:
    """What ``wisp._reader.RunData`` adds for lineage: a fork's view through its parent, the
    rows rewinds set aside, and a summary over the view.  RunData sets the attributes."""

    dir: str
    path: str
    lineage: dict[str, Any] | None
    metrics: list[dict[str, Any]]
    own_metrics: list[dict[str, Any]]
    _summary: dict[str, Any]
    _summary_view: bool
    _parent: Any
    _depth: int
    _own: tuple[list[Any], list[dict[str, Any]]] | None
    _rewinds: list[tuple[int, dict[str, Any]]]
    _history_payloads: list[bytes]

    def _open_parent(self, opener: Callable[..., Any]) -> None:
        self._parent = load_parent(self, opener)
        if self._parent is None:
            return  # not on this machine: the run's own rows only (``parent["found"]``)
        self.metrics = [*self._parent.metrics, *self.own_metrics]
        self._summary_view = True

    @property
    def summary(self) -> dict[str, Any]:
        """The last SUMMARY record; a fork's is recomputed over its view (first read)."""
        if self._summary_view:
            self._summary_view = False
            self._summary = SummaryDict(
                summarize(
                    self.view_rows(), self.metrics, self._summary, self.iter_own(), self.own_metrics
                )
            )
        return self._summary

    @summary.setter
    def summary(self, value: dict[str, Any]) -> None:
        self._summary, self._summary_view = SummaryDict(value), False

    @property
    def parent(self) -> dict[str, Any] | None:
        """A fork's parent: ``{"run_id", "project", "step", "dir", "found"}``; else None."""
        lin = self.lineage
        if lin is None:
            return None
        p = self._parent
        return {
            "run_id": lin.get("parent_id"),
            "project": lin.get("parent_project"),
            "step": lin.get("step"),
            "dir": None if p is None else p.dir,
            "found": p is not None,
        }

    def _split(self) -> tuple[list[Any], list[dict[str, Any]]]:
        if self._own is None:
            self._own = own_rows(self._history_payloads, self._rewinds)
        return self._own

    def own_rows(self) -> list[Any]:
        """This file's own rows, (step, timestamp, values), without those set aside."""
        return self._split()[0]

    def iter_own(self) -> Iterator[Any]:
        """:meth:`own_rows`, streamed when no rewind set rows aside (one batch in memory)."""
        if self._rewinds:
            yield from self.own_rows()
            return
        for payload in self._history_payloads:
            yield from decode_history(payload)

    @property
    def set_aside(self) -> list[dict[str, Any]]:
        """Rows rewinds set aside, oldest rewind first: ``{"rewind": i, "step": N,
        "rows": [(step, timestamp, values), ...]}`` (kept in the file, never in history)."""
        return self._split()[1]

    def view_rows(self) -> Iterator[Any]:
        """The run's history as readers see it: a fork's parent's rows up to the fork step,
        then this file's own rows (without those set aside)."""
        if self._parent is not None and self.lineage is not None:
            step = self.lineage.get("step")
            for row in self._parent.view_rows():  # steps never go back in a run's view
                if type(step) is not int or row[0] > step:
                    break
                yield row
        yield from self.iter_own()

    def _located(self, paths: list[str]) -> list[str]:
        """Media of a fork's parent part live in the parent's directory (or further up)."""
        out = []
        for path in paths:
            rel, parent = os.path.relpath(path, self.dir), self._parent
            while not os.path.exists(path) and parent is not None:
                if os.path.exists(os.path.join(parent.dir, rel)):
                    path = os.path.join(parent.dir, rel)
                parent = parent._parent
            out.append(path)
        return out

    def _media_dir(self, value: Any) -> str:
        """The directory a typed value's ``path`` is in: this run's, or a fork's parent's."""
        path = value.get("path") if isinstance(value, dict) else None
        if not isinstance(path, str):
            return self.dir
        return os.path.dirname(self._located([os.path.join(self.dir, path)])[0][: -len(path)])

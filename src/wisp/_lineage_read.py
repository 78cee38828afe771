"""Reading a fork or a rewound run (the records are in ``wisp._lineage``'s docstring).

``wisp._reader`` calls :func:`own_rows` for a run file holding rewinds and :func:`load_parent`
for a fork; the parent's file is opened with the reader's own class, passed in, so this
module does not import the reader.  The summary over a run's view is :func:`summarize`,
replaying rows with the writer's rules (``wisp._metric``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping

from wisp._runfile import decode_history
from wisp.errors import RunFileError

TYPE_CHECKING = False  # typing costs ~15 ms to import; only type checkers need it
if TYPE_CHECKING:
    from typing import Any

__all__ = ["MAX_DEPTH", "Replay", "load_parent", "own_rows", "summarize", "user_set"]

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

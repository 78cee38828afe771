"""The measures of automation triggers: ``change(summary.x, N steps)`` and ``zscore(summary.x)``.

The filter language parses them (``query.filter``); the runs list refuses them.  An automation
pass computes them here, in Python, for the runs it evaluates (the runs of one project that
changed since the previous pass), and hands them to the SQL of the trigger as a
``CASE runs.id WHEN ... THEN value`` of bound numbers, so the rest of the expression keeps its
one SQL meaning:

- ``change``: two chunk reads per run (the metric's last chunk and the chunk holding the step
  ``N`` before the last) — the value at the last logged step minus the value at the latest step
  at or before ``last - N``.  No value without that much history or when either end is not
  finite.
- ``zscore``: one read of the key over all the project's runs, ``(value - mean) / std`` with the
  population standard deviation over the runs that hold a finite number.  No value with fewer
  than two such runs or no spread.
"""

from __future__ import annotations

import math
from typing import Any

from sqlalchemy import Float, case, literal, select

from wisp.server.store import schema as S

__all__ = ["Measures", "change_values", "no_measures", "zscore_values"]


def _at(conn: Any, key_id: int, step: int | None) -> tuple[int, float] | None:
    """(step, value) of the metric's last point at or before ``step`` (the last: None)."""
    import numpy as np

    from wisp.server.series.chunks import decode

    c = S.chunks.c
    q = select(c.data).where(c.key_id == key_id)
    if step is not None:
        q = q.where(c.s0 <= step)
    blob = conn.execute(q.order_by(c.s0.desc()).limit(1)).scalar()
    if blob is None:
        return None
    steps, _, values = decode(bytes(blob))
    i = len(steps) - 1 if step is None else int(np.searchsorted(steps, step, side="right")) - 1
    return None if i < 0 else (int(steps[i]), float(values[i]))


def change_values(store: Any, keys: list[str], path: list[str], steps: int) -> dict[str, float]:
    """``change(summary.<path>, steps)`` of each run key that has one."""
    mk = S.metric_keys.c
    metric = ".".join(path[1:])
    out: dict[str, float] = {}
    with store.db.read() as conn:
        q = select(mk.run_id, mk.id).where(mk.run_id.in_(keys), mk.key == metric)
        for run, kid in conn.execute(q).all():
            last = _at(conn, kid, None)
            if last is None:
                continue
            past = _at(conn, kid, last[0] - steps)
            if past is None:
                continue
            diff = last[1] - past[1]
            if math.isfinite(diff):
                out[run] = diff
    return out


def zscore_values(store: Any, project: str, keys: list[str], path: list[str]) -> dict[str, float]:
    """``zscore(<path>)`` of each run key, over all the project's runs."""
    r = S.runs.c
    doc = r.config if path[0] == "config" else r.summary
    num = store.dialect.json_number(doc, path[1:])
    with store.db.read() as conn:
        rows = conn.execute(select(r.id, num).where(r.project == project)).all()
    vals = {k: float(v) for k, v in rows if v is not None and math.isfinite(float(v))}
    if len(vals) < 2:
        return {}
    mean = math.fsum(vals.values()) / len(vals)
    std = math.sqrt(math.fsum((v - mean) ** 2 for v in vals.values()) / len(vals))
    if not std > 0.0:
        return {}
    return {k: (vals[k] - mean) / std for k in keys if k in vals}


class Measures:
    """The ``measure`` callback of ``query.runs.parse_filter`` for one project's runs ``keys``:
    each measure is computed once per pass and becomes a SQL value."""

    def __init__(self, store: Any, project: str, keys: list[str]) -> None:
        self.store = store
        self.project = project
        self.keys = keys
        self._done: dict[str, dict[str, float]] = {}

    def values(self, field: dict[str, Any]) -> dict[str, float]:
        name = field["name"]
        if name not in self._done:
            if field["measure"] == "change":
                got = change_values(self.store, self.keys, field["path"], int(field["steps"]))
            else:
                got = zscore_values(self.store, self.project, self.keys, field["path"])
            self._done[name] = got
        return self._done[name]

    def __call__(self, field: dict[str, Any]) -> Any:
        vals = self.values(field)
        if not vals:
            return literal(None, Float)
        return case({k: literal(v, Float) for k, v in vals.items()}, value=S.runs.c.id, else_=None)


def no_measures(field: dict[str, Any]) -> Any:
    """The ``measure`` callback that only validates (an automation being added)."""
    return literal(None, Float)

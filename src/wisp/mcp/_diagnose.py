"""``diagnose_run``: what is wrong with a run, from one pass over each scalar metric.

Findings (format version 1), each ``{"kind", "key", "detail"}``:

- ``non_finite``: NaN or inf values (with ``first_step``);
- ``diverging``: a loss- or error-like key whose last value is above its first and well above
  its minimum;
- ``plateau``: a key that moved less than 1 % of its range over the last fifth of its values
  (20 values or more);
- ``overfitting``: ``val/<name>`` ends more than 25 % above ``train/<name>`` for a loss.
"""

from __future__ import annotations

import math
from typing import Any

from wisp.mcp._json import is_num, jsonable

__all__ = ["diagnose"]

#: how many metric keys of a run are examined at most
MAX_KEYS = 100


def diagnose(r: Any) -> dict[str, Any]:
    """The findings and per-key statistics of run ``r`` (a :class:`wisp.api.Run`)."""
    findings: list[dict[str, Any]] = []
    stats: dict[str, dict[str, Any]] = {}
    keys = [k for k in r.metric_keys() if not k.startswith(("system/", "_"))][:MAX_KEYS]
    for key in keys:
        s = _key_stats(r, key)
        if s is None:
            continue
        stats[key] = s
        if s["nan"] or s["inf"]:
            findings.append(
                {
                    "kind": "non_finite",
                    "key": key,
                    "detail": f"{s['nan']} NaN and {s['inf']} inf of {s['count']} values",
                    "first_step": s["first_bad_step"],
                }
            )
        lossy = "loss" in key.lower() or "err" in key.lower()
        if lossy and s["min"] is not None and s["last"] is not None:
            span = abs(s["first"] - s["min"]) or abs(s["min"]) or 1.0
            if s["last"] - s["min"] > 0.5 * span and s["last"] > s["first"]:
                findings.append(
                    {
                        "kind": "diverging",
                        "key": key,
                        "detail": f"last {s['last']:.4g} is above its first value "
                        f"{s['first']:.4g} and its minimum {s['min']:.4g} "
                        f"(at step {s['min_step']})",
                    }
                )
        if s["count"] >= 20 and s["tail_change"] is not None and s["tail_change"] < 0.01:
            findings.append(
                {
                    "kind": "plateau",
                    "key": key,
                    "detail": f"changed {s['tail_change'] * 100:.2f}% over the last fifth "
                    "of its values",
                }
            )
    for key, s in stats.items():
        if not key.startswith("train/"):
            continue
        other = stats.get("val/" + key[len("train/") :])
        if other is None or s["last"] is None or other["last"] is None:
            continue
        gap = other["last"] - s["last"]
        if "loss" in key and gap > 0.25 * max(abs(s["last"]), 1e-12):
            findings.append(
                {
                    "kind": "overfitting",
                    "key": key,
                    "detail": f"val {other['last']:.4g} vs train {s['last']:.4g} (gap {gap:.4g})",
                }
            )
    return {
        "run": r.path,
        "state": r.state,
        "findings": findings,
        "metrics": jsonable(stats),
        "healthy": not findings,
    }


def _key_stats(r: Any, key: str) -> dict[str, Any] | None:
    """One pass over a key's points: counts, first/last/min and the tail's relative change."""
    count = nan = inf = 0
    first = last = lo = None
    lo_step = first_bad = None
    values: list[float] = []
    for row in r.scan_history(keys=[key]):
        v = row.get(key)
        if not is_num(v):
            continue
        count += 1
        v = float(v)
        if not math.isfinite(v):
            if math.isnan(v):
                nan += 1
            else:
                inf += 1
            if first_bad is None:
                first_bad = row.get("_step")
            continue
        values.append(v)
        if first is None:
            first = v
        last = v
        if lo is None or v < lo:
            lo, lo_step = v, row.get("_step")
    if count == 0:
        return None
    tail_change = None
    if len(values) >= 20:
        tail = values[-max(len(values) // 5, 2) :]
        scale = max(abs(x) for x in values) or 1.0
        tail_change = (max(tail) - min(tail)) / scale
    return {
        "count": count,
        "nan": nan,
        "inf": inf,
        "first_bad_step": first_bad,
        "first": first,
        "last": last,
        "min": lo,
        "min_step": lo_step,
        "tail_change": tail_change,
    }

"""Many runs' series at once (a report's line panel): the per-run series, read in one pass."""

from __future__ import annotations

import math
from typing import Any

from wisp.server.series.buckets import series
from wisp.server.series.many import run_series
from wisp.server.store.ingest import prepare_records


def _log(store: Any, rid: str, steps: int, holes: tuple[int, ...] = ()) -> None:
    store.put_run(rid, {"project": "p", "created_at": 1.0})
    rows: list[list[Any]] = []
    for s in range(steps):
        loss = None if s in holes else math.sin(s / 50 + len(rid)) + s / steps
        rows.append([s, 1.0 + s, {"loss": loss, "acc": s / steps}])
    rows[7][2]["loss"] = math.nan  # a non-finite value: no extreme
    recs = [{"type": 3, "data": {"rows": rows[j : j + 3000]}} for j in range(0, steps, 3000)]
    store.ingest(rid, "w", 0, prepare_records(recs))


def _one(store: Any, runs: list[str], keys: list[str], **kw: Any) -> dict[Any, Any]:
    got = series(store, runs, keys, **kw)
    return {(s["run"], s["key"]): {k: s[k] for k in ("x", "y", "min", "max")} for s in got}


def test_run_series_equals_each_runs_series(store: Any) -> None:
    """Runs of one length, a shorter one and one with None logged under a key (read one by one)
    give, per run and key, the buckets the per-run series gives, on SQLite and PostgreSQL."""
    for i in range(4):
        _log(store, f"r{i}", 9000)
    _log(store, "short", 700)
    _log(store, "holes", 5000, holes=(100, 2500))
    runs = ["r0", "r1", "r2", "r3", "short", "holes", "absent"]
    for kw in ({"buckets": 400}, {"buckets": 400, "hi": 6000}, {"buckets": 1000, "hi": 600}):
        want = _one(store, runs, ["loss", "acc", "nothing"], **kw)
        got = run_series(store, runs, ["loss", "acc", "nothing"], **kw)
        assert set(got) == set(want) and len(got) == 12
        for k, s in want.items():
            assert got[k] == s, (kw, k)
    assert run_series(store, runs, ["loss"], hi=-1) == {}

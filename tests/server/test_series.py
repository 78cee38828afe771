"""Series downsampling: SQL/block aggregation matches a brute-force reference."""

from __future__ import annotations

import math
import random
from typing import Any

from wisp.server.series.buckets import series
from wisp.server.store.ingest import prepare_records


def _load(store: Any, values: dict[int, float], run: str = "r") -> None:
    store.put_run(run, {"project": "p", "created_at": 0.0})
    rows = [[s, 1000.0 + s, {"m": v}] for s, v in sorted(values.items())]
    for i in range(0, len(rows), 5000):
        store.ingest(
            run,
            "w",
            i // 5000,
            prepare_records([{"type": 3, "data": {"rows": rows[i : i + 5000]}}]),
        )


def _reference(values: dict[int, float], buckets: int, lo: int, hi: int) -> dict[int, list[Any]]:
    """Bucket by the block-aligned rule documented in _series._block_series."""
    pts = sorted((s, v) for s, v in values.items() if lo <= s <= hi)
    s_lo, s_hi = pts[0][0], pts[-1][0]
    origin = (s_lo // 64) * 64
    width = -(-(s_hi - s_lo + 1) // buckets)
    width = -(-width // 64) * 64
    while (s_hi - origin) // width >= buckets:
        width += 64
    out: dict[int, list[Any]] = {}
    for s, v in pts:
        b = (s - origin) // width
        if b not in out:
            out[b] = [s, v, v, v, v]
        e = out[b]
        e[2], e[3], e[4] = min(e[2], v), max(e[3], v), v
    return out


def test_downsampled_buckets_are_exact(store: Any) -> None:
    """Every bucket carries the true x of its first point and min, max, first and last."""
    rng = random.Random(7)
    values = {s: rng.uniform(-5, 5) for s in range(0, 200_000, 3) if rng.random() < 0.9}
    _load(store, values)
    for lo, hi in ((0, 10**9), (1234, 150_001)):
        got = series(store, ["r"], ["m"], lo=lo, hi=hi, buckets=100)[0]
        ref = _reference(values, 100, lo, hi)
        assert got["raw"] is False and len(got["x"]) <= 100
        assert got["count"] == sum(1 for s in values if lo <= s <= hi)
        want = [ref[b] for b in sorted(ref)]
        assert got["x"] == [w[0] for w in want]
        assert got["first"] == [w[1] for w in want]
        assert got["min"] == [w[2] for w in want]
        assert got["max"] == [w[3] for w in want]
        assert got["last"] == got["y"] == [w[4] for w in want]


def test_small_ranges_are_raw_and_after_is_incremental(store: Any) -> None:
    """At most `buckets` points come back raw; `after` returns only newer points."""
    values = {s: float(s) for s in range(50)}
    _load(store, values)
    got = series(store, ["r"], ["m"], buckets=100)[0]
    assert got["raw"] is True and got["x"] == list(range(50)) and got["y"] == got["min"]
    newer = series(store, ["r"], ["m"], after=45)[0]
    assert newer["x"] == [46, 47, 48, 49] and newer["count"] == 4


def test_dense_short_range_uses_points(store: Any) -> None:
    """A range narrower than one block per bucket is bucketed straight from the points."""
    values = {s: math.sin(s) for s in range(5000)}
    _load(store, values)
    got = series(store, ["r"], ["m"], buckets=1000)[0]
    assert got["raw"] is False and len(got["x"]) == 1000 and got["count"] == 5000
    assert got["x"][:3] == [0, 5, 10]
    assert got["min"][0] == min(values[s] for s in range(5))


def test_time_and_step_metric_axes(store: Any) -> None:
    """x=time, x=relative and x=<metric> use the row time or the other metric as x."""
    store.put_run("r", {"project": "p", "created_at": 1000.0})
    rows = [[s, 1000.0 + 2 * s, {"m": float(s), "epoch": float(s // 10)}] for s in range(30)]
    store.ingest("r", "w", 0, prepare_records([{"type": 3, "data": {"rows": rows}}]))
    t = series(store, ["r"], ["m"], x="time")[0]
    assert t["x"][:2] == [1000.0, 1002.0]
    rel = series(store, ["r"], ["m"], x="relative", lo=10)[0]
    assert rel["x"][0] == 10.0 and rel["count"] == 25
    ep = series(store, ["r"], ["m"], x="epoch", buckets=3)[0]
    assert ep["x"] == [0.0, 1.0, 2.0] and ep["last"] == [9.0, 19.0, 29.0]


def test_nonfinite_values_in_buckets_match_a_reference(store: Any) -> None:
    """With NaN/inf among the values (whole chunks, split chunks and range ends alike):
    min/max are over finite values, a non-finite first/last is null, and `nonfinite`
    counts them; raw answers carry null for them."""
    rng = random.Random(11)
    specials = [math.nan, math.inf, -math.inf]
    values = {
        s: rng.choice(specials) if rng.random() < 0.05 else rng.uniform(-1, 1)
        for s in range(0, 60_000, 2)
    }
    _load(store, values)
    for buckets, lo, hi in ((100, 0, 10**9), (5000, 333, 50_001), (10**6, 1000, 3000)):
        got = series(store, ["r"], ["m"], lo=lo, hi=hi, buckets=buckets)[0]
        pts = sorted((s, v) for s, v in values.items() if lo <= s <= hi)
        assert got["count"] == len(pts)
        assert got["nonfinite"] == sum(1 for _, v in pts if not math.isfinite(v))
        fin = {s: (v if math.isfinite(v) else None) for s, v in pts}
        if got["raw"]:
            assert got["x"] == [s for s, _ in pts] and got["y"] == [fin[s] for s, _ in pts]
            continue
        xs = got["x"]
        for i, x0 in enumerate(xs):
            x1 = xs[i + 1] if i + 1 < len(xs) else hi + 1
            inb = [s for s, _ in pts if x0 <= s < x1]
            f = [fin[s] for s in inb if fin[s] is not None]
            assert got["first"][i] == fin[inb[0]] and got["last"][i] == fin[inb[-1]]
            assert (got["min"][i], got["max"][i]) == ((min(f), max(f)) if f else (None, None))


def test_buckets_of_whole_chunks_only(store: Any) -> None:
    """Buckets that each hold several whole stored chunks (no range end, no split chunk)
    fold the chunks' aggregates: one entry per bucket with the true first/last/min/max."""
    values = {s: float((s * 7919) % 1000) for s in range(0, 256 * 64)}
    _load(store, values)
    got = series(store, ["r"], ["m"], buckets=4)[0]
    ref = _reference(values, 4, 0, 10**9)
    want = [ref[b] for b in sorted(ref)]
    assert got["x"] == [w[0] for w in want] and len(got["x"]) == 4
    assert got["first"] == [w[1] for w in want] and got["last"] == [w[4] for w in want]
    assert got["min"] == [w[2] for w in want] and got["max"] == [w[3] for w in want]


def _rows(store: Any, rows: list[list[Any]]) -> None:
    store.put_run("r", {"project": "p", "created_at": 1000.0})
    store.ingest("r", "w", 0, prepare_records([{"type": 3, "data": {"rows": rows}}]))


def test_nan_none_and_text_are_gaps_with_their_steps(store: Any) -> None:
    """NaN, inf, None and text under a numeric key come back as x without y, counted in gaps."""
    bad = {10: math.nan, 11: math.inf, 20: None, 21: "diverged"}
    _rows(store, [[s, 1000.0 + s, {"m": bad.get(s, float(s))}] for s in range(40)])
    got = series(store, ["r"], ["m"], buckets=100)[0]
    assert got["raw"] is True and got["x"] == list(range(40))
    assert [got["y"][s] for s in (9, 10, 11, 20, 21, 22)] == [9.0, None, None, None, None, 22.0]
    assert [s for s, g in enumerate(got["gaps"]) if g] == [10, 11, 20, 21]
    assert (got["count"], got["nonfinite"], got["nonnumeric"]) == (38, 2, 2)
    # against time and a step metric the same steps are gaps
    t = series(store, ["r"], ["m"], x="time")[0]
    assert [x - 1000.0 for x, g in zip(t["x"], t["gaps"], strict=True) if g] == [10, 11, 20, 21]
    # downsampled: the buckets holding them count them; a finite-only series has no gaps
    ds = series(store, ["r"], ["m"], buckets=4)[0]
    assert ds["raw"] is False and sum(ds["gaps"]) == 4 and ds["gaps"][0] == 0
    after = series(store, ["r"], ["m"], after=15)[0]
    assert after["x"][0] == 16 and after["nonnumeric"] == 2


def test_finite_series_has_no_gaps_and_block_path_counts_nan(store: Any) -> None:
    """A long series downsampled from the chunks counts its NaN per bucket; a clean one has none."""
    values = {s: (math.nan if s == 5000 else float(s)) for s in range(100_000)}
    _load(store, values)
    got = series(store, ["r"], ["m"], buckets=100)[0]
    assert got["nonfinite"] == 1 and sum(got["gaps"]) == 1
    assert got["gaps"][next(i for i, x in enumerate(got["x"]) if x > 5000) - 1] == 1
    clean = series(store, ["r"], ["m"], lo=10_000, buckets=100)[0]
    assert clean["gaps"] is None and clean["nonnumeric"] == 0


def test_holes_lookup_with_a_range_beyond_any_step(store: Any) -> None:
    """Bounds past the largest step, infinite or NaN clamp instead of failing in the database."""
    _rows(store, [[s, 1000.0 + s, {"m": None if s == 5 else float(s)}] for s in range(10)])
    assert series(store, ["r"], ["m"], lo=2.0**63)[0]["count"] == 0
    assert series(store, ["r"], ["m"], hi=2.0**64, lo=-(2.0**70))[0]["x"] == list(range(10))
    assert series(store, ["r"], ["m"], after=math.inf)[0]["count"] == 0
    got = series(store, ["r"], ["m"], lo=math.nan, hi=math.inf)[0]
    assert got["x"] == list(range(10)) and got["nonnumeric"] == 1

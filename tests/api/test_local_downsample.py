"""A local run's series are downsampled as the server does it (wisp.api._local._downsample)."""

from __future__ import annotations

import math
import random
from typing import Any

from wisp.api._local import _downsample


def _reference(xs: list[int], ys: list[float], buckets: int) -> dict[str, Any]:
    """Point by point: bucket ``int((x - lo) / width)``, first x, last y, finite extremes."""
    if len(xs) <= buckets:
        return {"x": xs, "y": ys, "min": ys, "max": ys, "raw": True, "count": len(xs)}
    lo, width = xs[0], (xs[-1] - xs[0] + 1) / buckets
    out: dict[str, list[Any]] = {"x": [], "y": [], "min": [], "max": []}
    cur = -1
    for x, y in zip(xs, ys, strict=True):
        b = min(int((x - lo) / width), buckets - 1)
        if b != cur:
            cur = b
            for k, v in (("x", x), ("y", y), ("min", None), ("max", None)):
                out[k].append(v)
        out["y"][-1] = y
        if math.isfinite(y):
            mn, mx = out["min"][-1], out["max"][-1]
            out["min"][-1] = y if mn is None or y < mn else mn
            out["max"][-1] = y if mx is None or y > mx else mx
    return {**out, "raw": False, "count": len(xs)}


def test_bisected_buckets_equal_the_point_by_point_rule() -> None:
    """Random sorted steps (sparse and dense, NaN and infinities among the values) give the
    same buckets, values and extremes as the point-by-point rule."""
    rng = random.Random(7)
    special = (math.nan, math.inf, -math.inf)
    for _ in range(200):
        n = rng.randint(1, 3000)
        xs = sorted(rng.sample(range(10 ** rng.randint(1, 7) + n), n))
        ys = [rng.choice(special) if rng.random() < 0.05 else rng.random() for _ in xs]
        buckets = rng.randint(1, 500)
        assert repr(_downsample(xs, ys, buckets)) == repr(_reference(xs, ys, buckets))


def test_a_reports_numpy_downsampling_follows_the_same_rule() -> None:
    """A report's local series (numpy when installed) equal the rule's, unsorted steps and a
    step bound included."""
    from wisp.reports._source import _by_step

    rng = random.Random(3)
    for _ in range(100):
        n = rng.randint(1, 4000)
        xs = sorted(rng.sample(range(10 ** rng.randint(1, 6) + n), n))
        ys = [math.nan if rng.random() < 0.03 else rng.random() for _ in xs]
        hi = rng.choice([None, xs[len(xs) // 2]])
        buckets = rng.randint(1, 500)
        cut = [i for i, x in enumerate(xs) if hi is None or x <= hi]
        want = _reference([xs[i] for i in cut], [ys[i] for i in cut], buckets)
        shuffled = list(zip(xs, ys, strict=True))
        if rng.random() < 0.3:  # out of order: sorted by step first
            rng.shuffle(shuffled)
        got = _by_step([p[0] for p in shuffled], [p[1] for p in shuffled], hi, buckets)
        assert repr({k: got[k] for k in ("x", "y", "min", "max")}) == repr(
            {k: want[k] for k in ("x", "y", "min", "max")}
        )

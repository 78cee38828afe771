"""Bulk paths for points and blocks: exact round trips and blocks equal to their points."""

from __future__ import annotations

import math
import random
import struct
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from sqlalchemy import text

from wisp.server._ingest import prepare_records


def _blocks_from_points(store: Any) -> list[tuple[Any, ...]]:
    """The 64-step block aggregates computed from scratch over ``points``."""
    pts: dict[tuple[int, int], list[tuple[int, float | None, int]]] = {}
    with store.engine.connect() as conn:
        for k, s, v, nf in conn.execute(
            text("SELECT key_id, step, value, nf FROM points ORDER BY key_id, step")
        ):
            pts.setdefault((k, s // 64), []).append((s, v, nf))
    out = []
    for (k, blk), ps in sorted(pts.items()):
        fin = [v for _, v, _ in ps if v is not None]
        lo, hi = (min(fin), max(fin)) if fin else (None, None)
        nonfinite = sum(1 for _, _, nf in ps if nf)
        out.append((k, blk, len(ps), lo, hi, ps[0][0], ps[-1][0], ps[0][1], ps[-1][1], nonfinite))
    return out


def test_blocks_kept_incrementally_match_blocks_from_points(store: Any) -> None:
    """Appends (merged per block), rewrites and in-record duplicates (recomputed) all leave
    every block equal to its aggregate over the stored points."""
    rng = random.Random(7)
    store.put_run("r", {"project": "p"})
    recs: list[dict[str, Any]] = []
    step = 5
    for _ in range(12):  # appends of odd sizes and gaps, crossing block edges
        rows = []
        for _ in range(rng.randint(1, 150)):
            v = rng.choice([rng.uniform(-5, 5)] * 6 + [math.nan, math.inf, -math.inf, 3])
            rows.append([step, 1e9 + step, {"a": v, "b": rng.random()}])
            step += rng.choice([1, 1, 1, 2, 70])
        recs.append({"type": 3, "data": {"rows": rows}})
    recs.append({"type": 3, "data": {"rows": [[s, 1.0, {"a": -100.0}] for s in range(0, 300, 7)]}})
    recs.append({"type": 3, "data": {"rows": [[9, 1.0, {"c": 1.0}], [9, 2.0, {"c": 2.0}]]}})
    recs.append({"type": 3, "data": {"rows": [[20, 1.0, {"d": math.nan}], [3, 1.0, {"d": 0.5}]]}})
    recs.append({"type": 3, "data": {"rows": [[step + 64 * 9, 1.0, {"a": math.nan}]]}})
    for i in range(0, len(recs), 3):
        store.ingest("r", "w", i, prepare_records(recs[i : i + 3]))
    with store.engine.connect() as conn:
        got = [
            tuple(r)
            for r in conn.execute(
                text(
                    "SELECT key_id, blk, n, vmin, vmax, smin, smax, first_v, last_v, nonfinite "
                    "FROM blocks ORDER BY key_id, blk"
                )
            )
        ]
        c_values = list(conn.execute(text("SELECT value FROM points WHERE step = 9")).scalars())
    assert got == _blocks_from_points(store)
    assert len(got) > 20
    assert 2.0 in c_values and 1.0 not in c_values  # the later duplicate won


def _stored_blocks(store: Any) -> list[tuple[Any, ...]]:
    with store.engine.connect() as conn:
        return [
            tuple(r)
            for r in conn.execute(
                text(
                    "SELECT key_id, blk, n, vmin, vmax, smin, smax, first_v, last_v, nonfinite "
                    "FROM blocks ORDER BY key_id, blk"
                )
            )
        ]


def test_concurrent_writers_of_one_run_keep_blocks_exact(store: Any) -> None:
    """Two writers of one run ingesting the same keys into the same blocks in concurrent
    transactions (appends merged, shuffled rows recomputed, shared steps replaced) leave
    every block equal to its aggregate over the stored points, round after round."""
    store.put_run("r", {"project": "p"})
    keys = ("a", "b")
    rngs = [random.Random(w) for w in (0, 1)]
    barrier = threading.Barrier(2, timeout=30)

    def ingest(w: int, i: int) -> None:
        rng = rngs[w]
        base = i * 256  # both writers hit the same 4 blocks each round
        steps = list(range(base + w, base + 256, 2))  # disjoint steps: appends are merged
        if i % 2:  # shuffled steps: the touched blocks are recomputed from points
            rng.shuffle(steps)
        if i % 4 == 3:  # and some steps of the other writer too: replaced points
            steps += rng.sample(range(base, base + 256), 16)
        rows = [[s, 1e9 + s, {k: rng.uniform(-1e3, 1e3) for k in keys}] for s in steps]
        recs = prepare_records([{"type": 3, "data": {"rows": rows}}])
        barrier.wait()
        try:
            store.ingest("r", f"w{w}", i, recs)
        except BaseException:
            barrier.abort()  # the other writer fails fast instead of waiting
            raise

    with ThreadPoolExecutor(2) as pool:
        for i in range(40):
            for f in [pool.submit(ingest, w, i) for w in (0, 1)]:
                f.result(timeout=60)
            got = _stored_blocks(store)
            assert len(got) == (i + 1) * 4 * len(keys)
            assert got == _blocks_from_points(store), f"round {i}"


def _bits(v: float | None) -> bytes | None:
    return None if v is None else struct.pack("<d", v)


@pytest.mark.parametrize("n", [1, 199, 200, 401])
def test_points_round_trip_bit_exact(store: Any, n: int) -> None:
    """Steps, times and values come back bit for bit (subnormals, extremes, NaN/inf flags)
    whatever the batch size relative to the multi-row statement size."""
    rng = random.Random(n)
    specials = [5e-324, sys.float_info.max, -sys.float_info.max, 1e-310, 7, -(2**53)]
    rows = []
    for i in range(n):
        step = (1 << 62) - 1 - 3 * (n - i)
        v = specials[i % len(specials)] if i % 3 == 0 else rng.uniform(-1e6, 1e6)
        w = [math.nan, math.inf, -math.inf, 0.25][i % 4]
        rows.append([step, 1e9 + i / 7, {"v": v, "w": w}])
    store.put_run("r", {"project": "p"})
    store.ingest("r", "w", 0, prepare_records([{"type": 3, "data": {"rows": rows}}]))
    with store.engine.connect() as conn:
        got = conn.execute(
            text(
                "SELECT k.key, p.step, p.time, p.value, p.nf FROM points p "
                "JOIN metric_keys k ON k.id = p.key_id ORDER BY k.key, p.step"
            )
        ).all()
    want = [(r[0], r[1], r[2]["v"]) for r in rows]
    assert [(s, _bits(t), _bits(v), nf) for k, s, t, v, nf in got if k == "v"] == [
        (s, _bits(t), _bits(float(v)), 0) for s, t, v in want
    ]
    codes = {0: 1, 1: 2, 2: 3, 3: 0}
    assert [(s, v, nf) for k, s, _, v, nf in got if k == "w"] == [
        (r[0], 0.25 if i % 4 == 3 else None, codes[i % 4]) for i, r in enumerate(rows)
    ]

"""Numeric history in chunks: exact round trips, aggregates equal to their points, rewrites."""

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

from wisp.server.series.chunks import CHUNK, decode
from wisp.server.store.ingest import prepare_records


def _bits(v: float | None) -> bytes | None:
    return None if v is None else struct.pack("<d", v)


def _fin(v: float) -> float | None:
    return v if math.isfinite(v) else None


def _chunks(store: Any) -> dict[str, dict[int, tuple[float, float]]]:
    """key -> {step: (time, value)} decoded from every chunk, after checking each chunk:
    its aggregates are those of its points, it holds 1..CHUNK points, and the step ranges
    of a key do not overlap."""
    out: dict[str, dict[int, tuple[float, float]]] = {}
    last: dict[str, int] = {}
    with store.engine.connect() as conn:
        rows = conn.execute(
            text(
                "SELECT k.key, c.s0, c.s1, c.n, c.vmin, c.vmax, c.first_v, c.last_v, "
                "c.nonfinite, c.data FROM chunks c JOIN metric_keys k ON k.id = c.key_id "
                "ORDER BY k.key, c.s0"
            )
        ).all()
    for key, s0, s1, n, vmin, vmax, fv, lv, nonfinite, data in rows:
        steps, times, values = (a.tolist() for a in decode(bytes(data)))
        fin = [v for v in values if math.isfinite(v)]
        assert 1 <= n <= CHUNK and len(steps) == n
        assert steps == sorted(set(steps)) and (steps[0], steps[-1]) == (s0, s1)
        assert s0 > last.get(key, -1), f"{key}: chunk at {s0} overlaps the one before"
        last[key] = s1
        assert (vmin, vmax) == ((min(fin), max(fin)) if fin else (None, None))
        assert (fv, lv) == (_fin(values[0]), _fin(values[-1]))
        assert nonfinite == n - len(fin)
        got = out.setdefault(key, {})
        got.update(zip(steps, zip(times, values, strict=True), strict=True))
    return out


def _same(a: float, b: float) -> bool:
    return _bits(a) == _bits(b) or (math.isnan(a) and math.isnan(b))


def test_appends_rewrites_and_duplicates_keep_chunks_exact(store: Any) -> None:
    """Appends of odd sizes, sparse steps, rewrites of stored steps and duplicates within a
    batch leave exactly the last-written point of every step, in valid chunks."""
    rng = random.Random(7)
    store.put_run("r", {"project": "p"})
    want: dict[str, dict[int, tuple[float, float]]] = {}
    recs: list[dict[str, Any]] = []
    step = 5

    def log(rows: list[Any]) -> None:
        recs.append({"type": 3, "data": {"rows": rows}})
        for s, t, vals in rows:
            for k, v in vals.items():
                want.setdefault(k, {})[s] = (t, float(v))

    for _ in range(12):  # appends of odd sizes and gaps, crossing chunk edges
        rows = []
        for _ in range(rng.randint(1, 400)):
            v = rng.choice([rng.uniform(-5, 5)] * 6 + [math.nan, math.inf, -math.inf, 3])
            rows.append([step, 1e9 + step, {"a": v, "b": rng.random()}])
            step += rng.choice([1, 1, 1, 2, 70])
        log(rows)
    log([[s, 1.0, {"a": -100.0}] for s in range(0, 3000, 7)])  # rewrites across many chunks
    log([[9, 1.0, {"c": 1.0}], [9, 2.0, {"c": 2.0}]])  # a duplicate: the later wins
    log([[20, 1.0, {"d": math.nan}], [3, 1.0, {"d": 0.5}]])  # out of order
    log([[step + 64 * 9, 1.0, {"a": math.nan}]])
    for i in range(0, len(recs), 3):
        store.ingest("r", "w", i, prepare_records(recs[i : i + 3]))
    got = _chunks(store)
    assert set(got) == set(want)
    for k in want:
        assert sorted(got[k]) == sorted(want[k]), k
        for s, (t, v) in want[k].items():
            assert got[k][s][0] == t and _same(got[k][s][1], v), (k, s)
    assert got["c"] == {9: (2.0, 2.0)}
    assert len(got["a"]) > 2 * CHUNK


def test_rewriting_one_step_rewrites_one_chunk(store: Any) -> None:
    """Re-logging one stored step replaces that point in place: one chunk row changes, the
    others keep their bytes, and re-ingesting the same value changes nothing."""
    store.put_run("r", {"project": "p"})
    rows = [[s, 1e9 + s, {"m": float(s)}] for s in range(10 * CHUNK)]
    store.ingest("r", "w", 0, prepare_records([{"type": 3, "data": {"rows": rows}}]))

    def snapshot() -> dict[int, bytes]:
        with store.engine.connect() as conn:
            q = text("SELECT s0, data FROM chunks ORDER BY s0")
            return {s0: bytes(d) for s0, d in conn.execute(q)}

    before = snapshot()
    assert len(before) == 10
    one = [[3 * CHUNK + 5, 5.0, {"m": -1.5}]]
    store.ingest("r", "w", 1, prepare_records([{"type": 3, "data": {"rows": one}}]))
    after = snapshot()
    assert sorted(after) == sorted(before)
    assert [s for s in before if before[s] != after[s]] == [3 * CHUNK]
    assert _chunks(store)["m"][3 * CHUNK + 5] == (5.0, -1.5)
    store.ingest("r", "w", 2, prepare_records([{"type": 3, "data": {"rows": one}}]))
    assert snapshot() == after


def test_concurrent_writers_of_one_run_keep_chunks_exact(store: Any) -> None:
    """Two writers of one run ingesting the same keys into the same chunks in concurrent
    transactions (interleaved steps, shuffled rows, shared steps) lose no point, round
    after round."""
    store.put_run("r", {"project": "p"})
    keys = ("a", "b")
    rngs = [random.Random(w) for w in (0, 1)]
    barrier = threading.Barrier(2, timeout=30)
    seen: set[int] = set()
    lock = threading.Lock()

    def ingest(w: int, i: int) -> None:
        rng = rngs[w]
        base = i * 256
        steps = list(range(base + w, base + 256, 2))  # both writers fill the same chunks
        if i % 2:
            rng.shuffle(steps)
        if i % 4 == 3:  # and some steps of the other writer too
            steps += rng.sample(range(base, base + 256), 16)
        rows = [[s, 1e9 + s, {k: rng.uniform(-1e3, 1e3) for k in keys}] for s in steps]
        recs = prepare_records([{"type": 3, "data": {"rows": rows}}])
        with lock:
            seen.update(steps)
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
            got = _chunks(store)
            for k in keys:
                assert sorted(got[k]) == sorted(seen), f"round {i}"


@pytest.mark.parametrize("n", [1, 199, 256, 401])
def test_points_round_trip_bit_exact(store: Any, n: int) -> None:
    """Steps, times and values come back bit for bit (subnormals, extremes, steps near
    2**62, NaN and +-inf with their nf codes) whatever the batch size."""
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
    got = _chunks(store)
    assert [(s, _bits(t), _bits(v)) for s, (t, v) in sorted(got["v"].items())] == [
        (r[0], _bits(r[1]), _bits(float(r[2]["v"]))) for r in rows
    ]
    import numpy as np

    from wisp.server.series.chunks import nf_codes

    ws = [v for _, (_, v) in sorted(got["w"].items())]
    assert nf_codes(np.array(ws)).tolist() == [[1, 2, 3, 0][i % 4] for i in range(n)]


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_upgrade_moves_points_into_chunks(backend: str, tmp_path: Any) -> None:
    """A schema-2 database's points (NaN/+-inf, sparse steps, several keys, more than one
    chunk each) come out of the 0005_points upgrade bit for bit, with 64-bit key ids."""
    from contextlib import ExitStack
    from pathlib import Path

    from alembic import command
    from alembic.config import Config

    from tests.server.conftest import PG_HOST
    from wisp.server.store.db import make_engine
    from wisp.testing import temporary_postgres_database

    with ExitStack() as stack:
        if backend == "sqlite":
            url = f"sqlite:///{tmp_path / 'old.db'}"
        else:
            url = stack.enter_context(temporary_postgres_database(PG_HOST))
        engine = make_engine(url)
        cfg = Config()
        import wisp.server.store.db as db_mod

        cfg.set_main_option("script_location", str(Path(db_mod.__file__).with_name("migrations")))
        rng = random.Random(3)
        want: dict[str, dict[int, tuple[float, float | None, int]]] = {}
        with engine.begin() as conn:
            cfg.attributes["connection"] = conn
            command.upgrade(cfg, "0004_team")
            for kid, key in ((1, "a"), (2, "b"), (3, "c")):
                conn.execute(
                    text("INSERT INTO metric_keys (id, run_id, key) VALUES (:i, 'r', :k)"),
                    {"i": kid, "k": key},
                )
                rows = []
                step = 0
                for _ in range(rng.choice([1, 300, 700])):
                    nf = rng.choice([0, 0, 0, 1, 2, 3])
                    v = None if nf else rng.uniform(-1e9, 1e9)
                    rows.append({"k": kid, "s": step, "t": 1e9 + rng.random(), "v": v, "nf": nf})
                    want.setdefault(key, {})[step] = (rows[-1]["t"], v, nf)
                    step += rng.choice([1, 1, 5, 1000])
                conn.execute(
                    text(
                        "INSERT INTO points (key_id, step, time, value, nf) "
                        "VALUES (:k, :s, :t, :v, :nf)"
                    ),
                    rows,
                )
            command.upgrade(cfg, "head")
        from wisp.server import open_store

        store = open_store(url)
        try:
            got = _chunks(store)
            with store.engine.connect() as conn:
                names = set(store.engine.dialect.get_table_names(conn))
                if backend == "postgresql":
                    typ = conn.execute(
                        text(
                            "SELECT data_type FROM information_schema.columns "
                            "WHERE table_name = 'metric_keys' AND column_name = 'id'"
                        )
                    ).scalar()
                    assert typ == "bigint"
        finally:
            store.close()
        engine.dispose()
    assert "points" not in names and "blocks" not in names
    nfv = {1: math.nan, 2: math.inf, 3: -math.inf}
    for key, pts in want.items():
        assert sorted(got[key]) == sorted(pts)
        for s, (t, v, nf) in pts.items():
            assert got[key][s][0] == t
            assert _same(got[key][s][1], nfv[nf] if nf else float(v or 0.0))

"""Metric storage at scale: bytes per point on disk and read latencies (issue 23).

Fills a database through the server's ingestion code (``prepare_records`` + ``Store.ingest``,
what ``POST /records`` calls) with ``--runs`` runs x ``--keys`` metrics, plus one run
``big`` holding one metric of ``--big`` points, ``--points`` points in all, then prints:

- bytes per point on disk: every table of numeric history with its indexes (and TOAST),
  ``pg_total_relation_size`` on PostgreSQL, the ``dbstat`` pages on SQLite;
- series over HTTP for the big run's metric at 1,000 / 10,000 / 100,000 buckets (p50/p99);
- the same metric at full resolution: ``series()`` in the server process (raw points) and
  ``POST /export/histories`` (Arrow) over HTTP;
- the runs list: ``GET /projects/bench/runs`` with a config filter, sorted on a summary value;
- the fill rate (one process, batches of ``--batch`` rows) and the load average with each figure.

Values are noisy float64 random walks and timestamps carry microsecond jitter, as a training
loop's ``time.time()`` would, so compression is not flattered by constant deltas.

Usage: python benchmarks/bench_storage.py [--points 10000000] [--backends postgresql,sqlite]
       [--db URL (measure an existing filled database; no fill)] [--keep]
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

PG = os.environ.get("WISP_BENCH_PG", "postgresql://postgres@127.0.0.1:5432")
PROJECT = "bench"
TABLES = ("points", "blocks", "chunks", "metric_keys")


def _load() -> str:
    a, b, c = os.getloadavg()
    return f"load {a:.2f} {b:.2f} {c:.2f}"


def _pct(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, round(q / 100 * (len(s) - 1)))]


def _fmt(xs: list[float]) -> str:
    return f"p50 {_pct(xs, 50) * 1e3:8.1f} ms  p99 {_pct(xs, 99) * 1e3:8.1f} ms"


def _rows(rng: Any, keys: list[str], lo: int, hi: int, t0: float, state: Any) -> list[Any]:
    """Rows ``[step, time, {key: value}]`` for steps lo..hi-1 (random walks in ``state``)."""
    import numpy as np

    n = hi - lo
    steps = np.arange(lo, hi)
    times = t0 + steps * 0.05 + rng.uniform(0, 1e-3, n)
    walk = state + np.cumsum(rng.normal(0, 0.01, (n, len(keys))), axis=0)
    state[:] = walk[-1]
    cols = [walk[:, j].tolist() for j in range(len(keys))]
    return [
        [s, t, dict(zip(keys, vals, strict=True))]
        for s, t, vals in zip(steps.tolist(), times.tolist(), zip(*cols, strict=True), strict=True)
    ]


def fill(url: str, runs: int, keys: int, steps: int, big: int, batch: int) -> float:
    """Write the data set; returns seconds."""
    import numpy as np

    from wisp.server import open_store
    from wisp.server.store.ingest import prepare_records

    rng = np.random.default_rng(0)
    names = [f"metric{j:02d}" for j in range(keys)]
    store = open_store(url)
    t_start = time.perf_counter()
    try:

        def run(rid: str, i: int, ks: list[str], n: int) -> None:
            store.put_run(rid, {"project": PROJECT, "name": rid})
            meta = {"project": PROJECT, "name": rid, "host": "h"}
            recs: list[dict[str, Any]] = [
                {"type": 1, "data": meta},
                {"type": 2, "data": {"config": {"lr": 10 ** -(1 + i % 5), "seed": i}}},
            ]
            store.ingest(rid, "w", 0, prepare_records(recs))
            seq, state = 2, np.ones(len(ks))
            for lo in range(0, n, batch):
                rows = _rows(rng, ks, lo, min(n, lo + batch), 1.7e9 + i, state)
                store.ingest(rid, "w", seq, prepare_records([{"type": 3, "data": {"rows": rows}}]))
                seq += 1
            fin = [
                {"type": 4, "data": {"summary": {"loss": float(state[0])}}},
                {"type": 6, "data": {"state": "finished", "exit_code": 0}},
            ]
            store.ingest(rid, "w", seq, prepare_records(fin))

        if big:
            run("big", 0, ["loss"], big)
        for r in range(runs):
            run(f"r{r:05d}", r, names, steps)
            if r % 100 == 99:
                done = big + (r + 1) * keys * steps
                dt = time.perf_counter() - t_start
                rate = f"{done / dt / 1e3:.0f}k/s"
                print(f"  filled {done:,} points, {rate}  ({_load()})", flush=True)
    finally:
        store.close()
    return time.perf_counter() - t_start


def sizes(url: str) -> dict[str, int]:
    """Bytes on disk per numeric-history table (with its indexes and TOAST)."""
    if url.startswith("sqlite"):
        path = url.split("///", 1)[1]
        with sqlite3.connect(path) as c:
            c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            got = c.execute(
                "SELECT m.tbl_name, sum(d.pgsize) FROM dbstat d JOIN sqlite_master m "
                "ON m.name = d.name GROUP BY m.tbl_name"
            ).fetchall()
        return {t: int(n) for t, n in got if t in TABLES}
    import psycopg

    with psycopg.connect(url.replace("postgresql+psycopg", "postgresql"), autocommit=True) as c:
        c.execute("CHECKPOINT")
        got = c.execute(
            "SELECT relname, pg_total_relation_size(oid) FROM pg_class "
            "WHERE relkind = 'r' AND relname = ANY(%s)",
            [list(TABLES)],
        ).fetchall()
    return {t: int(n) for t, n in got}


def _count_points(url: str) -> int:
    from sqlalchemy import text

    from wisp.server import open_store

    store = open_store(url)
    try:
        with store.engine.connect() as conn:
            names = set(store.engine.dialect.get_table_names(conn))
            q = "SELECT sum(n) FROM chunks" if "chunks" in names else "SELECT count(*) FROM points"
            return int(conn.execute(text(q)).scalar() or 0)
    finally:
        store.close()


def measure(url: str, repeat: int, work: Path) -> None:
    import httpx

    from wisp.server import open_store
    from wisp.server.series.buckets import series
    from wisp.testing import Server

    with Server(work, db=url) as srv, httpx.Client(base_url=srv.url + "/api/v1") as http:
        http.headers["Authorization"] = f"Bearer {srv.key}"

        def timed(fn: Any, n: int = repeat) -> list[float]:
            fn()  # warm: plans, caches
            out = []
            for _ in range(n):
                t0 = time.perf_counter()
                fn()
                out.append(time.perf_counter() - t0)
            return out

        for b in (1000, 10_000, 100_000):
            q = {"runs": "big", "keys": "loss", "buckets": b}

            def get_series(q: dict[str, Any] = q) -> None:
                r = http.get("/series", params=q, timeout=300)
                r.raise_for_status()
                assert r.json()["series"][0]["count"] > 0

            print(f"series big/loss {b:>7,} buckets (HTTP): {_fmt(timed(get_series))}  ({_load()})")

        body = {"runs": ["big"], "keys": ["loss"], "format": "arrow"}

        def export() -> None:
            with http.stream("POST", "/export/histories", json=body, timeout=300) as r:
                r.raise_for_status()
                for _ in r.iter_bytes():
                    pass

        print(f"export big/loss full resolution (HTTP, Arrow): {_fmt(timed(export, 5))}")
        q2 = {"filter": "config.lr < 0.001", "sort": "summary.loss", "limit": 50}

        def runs_list() -> None:
            r = http.get(f"/projects/{PROJECT}/runs", params=q2, timeout=300)
            r.raise_for_status()

        print(f"runs list (filter + sort, 50 of the project): {_fmt(timed(runs_list))}")
    store = open_store(url)
    try:

        def raw() -> None:
            s = series(store, ["big"], ["loss"], buckets=10**8)[0]
            assert s["raw"]

        print(f"series() full resolution, in process (raw): {_fmt(timed(raw, 5))}  ({_load()})")
    finally:
        store.close()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--points", type=int, default=10_000_000)
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--keys", type=int, default=10)
    ap.add_argument("--big", type=int, default=1_000_000, help="points of the big run's metric")
    ap.add_argument("--batch", type=int, default=1000, help="rows per ingested batch")
    ap.add_argument("--backends", default="postgresql,sqlite")
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--db", help="measure this filled database instead of filling one")
    ap.add_argument("--keep", action="store_true", help="keep the filled databases")
    args = ap.parse_args()
    steps = max(1, (args.points - args.big) // (args.runs * args.keys))
    total = args.big + args.runs * args.keys * steps
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        targets: list[tuple[str, str, bool]] = []
        if args.db:
            targets.append(("given", args.db, False))
        else:
            for backend in args.backends.split(","):
                if backend == "sqlite":
                    keep_dir = Path(tempfile.gettempdir()) if args.keep else work
                    url = f"sqlite:///{keep_dir / f'bench_storage_{uuid.uuid4().hex[:6]}.db'}"
                else:
                    import psycopg

                    name = f"wisp_storage_{uuid.uuid4().hex[:8]}"
                    with psycopg.connect(f"{PG}/postgres", autocommit=True) as c:
                        c.execute(f'CREATE DATABASE "{name}"')
                    url = f"{PG}/{name}"
                targets.append((backend, url, True))
        for backend, url, filled_here in targets:
            print(f"== {backend}: {url}")
            try:
                if filled_here:
                    print(
                        f"filling {total:,} points: {args.runs:,} runs x {args.keys} keys x "
                        f"{steps:,} steps + big/loss {args.big:,} (batches of {args.batch} rows)"
                    )
                    dt = fill(url, args.runs, args.keys, steps, args.big, args.batch)
                    print(f"filled in {dt:.1f} s = {total / dt / 1e3:.0f}k points/s  ({_load()})")
                n = _count_points(url)
                got = sizes(url)
                size = sum(got.values())
                parts = ", ".join(f"{t} {b / 2**20:.0f} MiB" for t, b in sorted(got.items()))
                print(f"points {n:,}: {size / 2**20:.0f} MiB = {size / max(n, 1):.1f} bytes/point")
                print(f"  ({parts})")
                print(f"  extrapolated to 1B points: {size / max(n, 1) * 1e9 / 2**30:.0f} GiB")
                measure(url, args.repeat, work / backend)
            finally:
                if filled_here and not args.keep and backend == "postgresql":
                    import psycopg

                    name = url.rsplit("/", 1)[1]
                    with psycopg.connect(f"{PG}/postgres", autocommit=True) as c:
                        c.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


if __name__ == "__main__":
    main()

"""Tracking-server benchmark: HTTP ingest, series downsampling, runs query, server RSS.

Runs a real ``wisp.server.serve`` process per backend (SQLite in a temp dir, and a
fresh PostgreSQL database on 127.0.0.1:5432) and prints, for each:

- ingest: scalar points/s through ``POST /records`` (10 keys per row, 2 client threads)
- series: one 1,000,000-point metric downsampled to 1,000 buckets, p50/p99 over HTTP
- runs:   10,000 runs filtered on config + state and sorted on a config value, p50/p99
- rss:    the server process's peak resident memory

Usage: python benchmarks/bench_server.py [--points 1000000] [--backends sqlite,postgresql]
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import random
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import httpx

PG = "postgresql://postgres@127.0.0.1:5432"


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _rss_kib(pid: int) -> tuple[int, int]:
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        k, _, v = line.partition(":")
        fields[k] = v.strip()
    return int(fields["VmRSS"].split()[0]), int(fields["VmHWM"].split()[0])


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def bench(backend: str, points: int, tmp: Path) -> dict[str, Any]:
    from wisp.server import open_store
    from wisp.server.store.ingest import prepare_records

    if backend == "sqlite":
        url = f"sqlite:///{tmp / 'bench.db'}"
    else:
        import psycopg

        name = f"wisp_bench_{uuid.uuid4().hex[:8]}"
        with psycopg.connect(f"{PG}/postgres", autocommit=True) as c:
            c.execute(f'CREATE DATABASE "{name}"')
        url = f"{PG}/{name}"
    store = open_store(url)
    _, key = store.create_key("write")
    hdr = {"Authorization": f"Bearer {key}"}
    port = _port()
    code = (
        "from wisp.server import serve; "
        f"serve(db={url!r}, media_dir={str(tmp / 'media')!r}, port={port}, log_level='warning')"
    )
    proc = subprocess.Popen([sys.executable, "-c", code])
    base = f"http://127.0.0.1:{port}"
    out: dict[str, Any] = {"backend": backend}
    try:
        for _ in range(300):
            try:
                httpx.get(f"{base}/api/openapi.json", timeout=1)
                break
            except httpx.TransportError:
                time.sleep(0.1)
        # -- ingest through HTTP ---------------------------------------------------------------
        keys = [f"train/k{i}" for i in range(10)]
        rows_per_batch = 2000
        n_batches = max(2, points // (rows_per_batch * len(keys)))
        rng = random.Random(0)
        bodies: dict[str, list[bytes]] = {}
        for w in ("w0", "w1"):
            run = f"ingest-{w}"
            httpx.put(f"{base}/api/v1/runs/{run}", json={"project": "bench"}, headers=hdr)
            bodies[run] = []
            for b in range(n_batches // 2):
                rows = [
                    [s, 1e9 + s, {k: rng.random() for k in keys}]
                    for s in range(b * rows_per_batch, (b + 1) * rows_per_batch)
                ]
                rec = {"type": 3, "data": {"rows": rows}}
                body = {"writer_id": w, "first_seq": b, "records": [rec]}
                bodies[run].append(json.dumps(body).encode())

        def push(run: str) -> None:
            with httpx.Client(
                timeout=120, headers={**hdr, "content-type": "application/json"}
            ) as c:
                for body in bodies[run]:
                    r = c.post(f"{base}/api/v1/runs/{run}/records", content=body)
                    r.raise_for_status()

        t0 = time.perf_counter()
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            list(pool.map(push, list(bodies)))
        dt = time.perf_counter() - t0
        total = sum(len(v) for v in bodies.values()) * rows_per_batch * len(keys)
        out["ingest_pts_s"] = total / dt
        # -- one 1M-point series ---------------------------------------------------------------
        store.put_run("big", {"project": "bench"})
        chunk = 50_000
        for i, a in enumerate(range(0, 1_000_000, chunk)):
            rows = [
                [s, 1e9 + s, {"loss": 1.0 / (1 + s) + rng.random() * 1e-3}]
                for s in range(a, a + chunk)
            ]
            store.ingest("big", "w", i, prepare_records([{"type": 3, "data": {"rows": rows}}]))
        times = []
        with httpx.Client(timeout=30, headers=hdr) as c:
            for _ in range(15):
                t = time.perf_counter()
                r = c.get(
                    f"{base}/api/v1/series", params={"runs": "big", "keys": "loss", "buckets": 1000}
                )
                times.append(time.perf_counter() - t)
                s = r.json()["series"][0]
                assert s["count"] == 1_000_000 and len(s["x"]) <= 1000
        out["series_p50_ms"], out["series_p99_ms"] = _pct(times, 0.5) * 1e3, _pct(times, 0.99) * 1e3
        # -- 10k runs --------------------------------------------------------------------------
        with store.db.tx() as conn:  # bulk seed; the query is what is measured
            from wisp.server.store import schema as S

            now = time.time()
            conn.execute(
                S.runs.insert(),
                [
                    {
                        "id": f"run{i:05d}",
                        "project": "many",
                        "name": f"run {i}",
                        "state": rng.choice(["finished", "failed", "running"]),
                        "tags": ["t"],
                        "notes": "",
                        "run_group": None,
                        "job_type": None,
                        "config": {"lr": 10 ** rng.uniform(-5, -1), "bs": rng.choice([32, 64])},
                        "summary": {"acc": rng.random()},
                        "meta": {},
                        "created_at": now - i,
                        "finished_at": None,
                        "exit_code": None,
                        "last_seen": now,
                    }
                    for i in range(10_000)
                ],
            )
        times = []
        params = {
            "filter": "config.lr < 0.01 and state = finished",
            "sort": "config.lr",
            "order": "desc",
            "limit": 50,
        }
        with httpx.Client(timeout=30, headers=hdr) as c:
            for _ in range(15):
                t = time.perf_counter()
                r = c.get(f"{base}/api/v1/projects/many/runs", params=params)
                times.append(time.perf_counter() - t)
                assert r.status_code == 200 and r.json()["total"] > 1000
        out["runs_p50_ms"], out["runs_p99_ms"] = _pct(times, 0.5) * 1e3, _pct(times, 0.99) * 1e3
        out["rss_mib"], out["peak_rss_mib"] = (v / 1024 for v in _rss_kib(proc.pid))
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        store.close()
        if backend != "sqlite":
            import psycopg

            with psycopg.connect(f"{PG}/postgres", autocommit=True) as c:
                c.execute(f'DROP DATABASE IF EXISTS "{url.rsplit("/", 1)[1]}" WITH (FORCE)')
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--points", type=int, default=1_000_000, help="points to ingest over HTTP")
    ap.add_argument("--backends", default="sqlite,postgresql")
    args = ap.parse_args()
    print(
        f"{'backend':<11}{'ingest pts/s':>14}{'series p50/p99 ms':>20}"
        f"{'runs p50/p99 ms':>18}{'rss/peak MiB':>15}"
    )
    print("targets:   >=300,000      <=150           <=200            <=200")
    for backend in args.backends.split(","):
        with tempfile.TemporaryDirectory() as tmp:
            r = bench(backend, args.points, Path(tmp))
        print(
            f"{backend:<11}{r['ingest_pts_s']:>14,.0f}"
            f"{r['series_p50_ms']:>11.1f}/{r['series_p99_ms']:<8.1f}"
            f"{r['runs_p50_ms']:>9.1f}/{r['runs_p99_ms']:<8.1f}"
            f"{r['rss_mib']:>7.0f}/{r['peak_rss_mib']:<7.0f}"
        )


if __name__ == "__main__":
    main()

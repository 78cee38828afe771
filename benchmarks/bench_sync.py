"""Uploading a run of N scalar points to a local wisp server (SQLite and PostgreSQL).

For each database, in the same process and against the same fresh server:

1. offline: a training loop logs N points (rows of 10 keys) with no server; then
   ``wisp.sync()`` uploads the run: time and points/s of the upload.
2. online: the same loop with the server configured; ``finish()`` waits for the upload.

Printed: upload time and points/s, and the CPU time of the training process
(all its threads: training loop, writer, uploader) online vs offline, so the
difference is what uploading costs the training process.  Also log() p50/p99.

    python benchmarks/bench_sync.py            # N = 10_000_000
    WISP_BENCH_SYNC_POINTS=1000000 python benchmarks/bench_sync.py
    WISP_BENCH_SYNC_DBS=sqlite python benchmarks/bench_sync.py
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from typing import Any

import wisp

KEYS = 10
PG_ADMIN = "postgresql://postgres@127.0.0.1:5432/test"
PG_DB = "wisp_bench_sync"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    def __init__(self, db: str, workdir: str) -> None:
        from wisp.server import keys_create

        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.key = keys_create("write", "bench", db=db)[1]
        code = (
            "import sys; from wisp.server import serve; serve(db=sys.argv[1], "
            "media_dir=sys.argv[2], port=int(sys.argv[3]), no_auth=True, log_level='warning')"
        )
        self.proc = subprocess.Popen(
            [sys.executable, "-c", code, db, os.path.join(workdir, "media"), str(self.port)]
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(f"{self.url}/api/v1/projects", timeout=1).read()
                return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError("server did not start")

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(30)


def fresh_postgres() -> str | None:
    try:
        import psycopg
    except ImportError:
        return None
    try:
        with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {PG_DB}")
            conn.execute(f"CREATE DATABASE {PG_DB}")
    except psycopg.Error as exc:
        print(f"postgresql: not available ({exc})")
        return None
    return f"postgresql://postgres@127.0.0.1:5432/{PG_DB}"


def train(rows: int, settings: dict[str, Any], workdir: str) -> dict[str, float]:
    """Log ``rows`` rows of KEYS scalars; CPU and wall time of the whole run, finish included."""
    lat_every = 97
    lat: list[float] = []
    cpu0, t0 = time.process_time(), time.perf_counter()
    run = wisp.init(project="bench-sync", dir=workdir, settings=settings)
    names = [f"k{j}" for j in range(KEYS)]
    for i in range(rows):
        row = {name: i * 0.001 + j for j, name in enumerate(names)}
        if i % lat_every == 0:
            s = time.perf_counter()
            wisp.log(row)
            lat.append(time.perf_counter() - s)
        else:
            wisp.log(row)
    t_logged = time.perf_counter()
    run.finish()
    t1, cpu1 = time.perf_counter(), time.process_time()
    lat.sort()
    return {
        "wall": t1 - t0,
        "loop": t_logged - t0,
        "finish": t1 - t_logged,
        "cpu": cpu1 - cpu0,
        "p50": lat[len(lat) // 2] * 1e6,
        "p99": lat[int(len(lat) * 0.99)] * 1e6,
        "dir": run.dir,  # type: ignore[dict-item]
    }


def bench(db_name: str, db_url: str, points: int, workdir: str) -> None:
    rows = points // KEYS
    srv = Server(db_url, workdir)
    try:
        off = train(rows, {"mode": "offline"}, workdir)
        t0 = time.perf_counter()
        (res,) = wisp.sync([off["dir"]], server_url=srv.url, api_key=srv.key, progress=False)
        up = time.perf_counter() - t0
        assert res.done
        on = train(
            rows,
            {"server_url": srv.url, "api_key": srv.key, "upload_timeout": 3600.0},
            workdir,
        )
    finally:
        srv.stop()
    n = rows * KEYS
    print(f"\n== {db_name}: {n:,} points ({rows:,} rows x {KEYS} keys) ==")
    print(
        f"sync() upload of the offline run: {up:.1f} s, {n / up:,.0f} points/s, "
        f"{res.bytes / up / 1e6:.1f} MB/s of run file"
    )
    print(
        f"offline run: loop {off['loop']:.1f} s, finish {off['finish']:.1f} s, "
        f"CPU {off['cpu']:.1f} s; log() p50 {off['p50']:.1f} us p99 {off['p99']:.1f} us"
    )
    print(
        f"online run:  loop {on['loop']:.1f} s, finish {on['finish']:.1f} s "
        f"(waiting for uploads), CPU {on['cpu']:.1f} s; "
        f"log() p50 {on['p50']:.1f} us p99 {on['p99']:.1f} us"
    )
    extra = on["cpu"] - off["cpu"]
    print(
        f"upload CPU in the training process: {extra:.1f} s "
        f"({extra / off['cpu'] * 100:+.0f}% vs offline, {extra / n * 1e9:.0f} ns/point); "
        f"online end-to-end {n / on['wall']:,.0f} points/s"
    )


def main() -> None:
    points = int(os.environ.get("WISP_BENCH_SYNC_POINTS", 10_000_000))
    dbs = os.environ.get("WISP_BENCH_SYNC_DBS", "sqlite,postgresql").split(",")
    print(f"bench_sync: N = {points:,} scalar points per run, {os.cpu_count()} CPUs")
    with tempfile.TemporaryDirectory() as tmp:
        if "sqlite" in dbs:
            work = os.path.join(tmp, "sqlite")
            os.makedirs(work)
            bench("sqlite", f"sqlite:///{work}/server.db", points, work)
        if "postgresql" in dbs:
            url = fresh_postgres()
            if url is not None:
                work = os.path.join(tmp, "pg")
                os.makedirs(work)
                bench("postgresql", url, points, work)


if __name__ == "__main__":
    main()

"""``wisp.Api`` bulk reads against a real server on PostgreSQL, and MLflow side by side.

Targets (issue 17), all on one PostgreSQL server over loopback:

- ``runs.histories()``: R runs x M metrics x S steps into one pandas DataFrame
  (1,000 x 10 x 10,000 = 100M points: <= 30 s, client RSS growth <= 3x the frame);
- ``scan_history``: one run's M x P points, every point, >= 2M points/s;
- listing T runs with a config filter and their summaries: <= 1 s;
- MLflow's ``search_runs`` + ``get_metric_history`` on the same data through an MLflow
  server on the same PostgreSQL (its own database there), reported as a ratio (skipped,
  saying so, when mlflow is not importable or its server does not start).

Data is written through the server's ingestion code (``prepare_records`` +
``Store.ingest``, what the HTTP API calls), not the SDK: filling 100M points through the SDK
is an upload benchmark.  Defaults are scaled down for a small machine; the sizes used are
printed with every figure.  Each timing is the p50 of ``--repeat`` runs (p99/max beside).

Filling 100M points takes long: ``--db URL`` names an existing PostgreSQL database that is
filled once and kept; a later run with the same ``--db`` seeds only runs not yet finished
there (an interrupted fill resumes), so the reads can be measured again and again.  MLflow
logs at ~10k points/s, so its side uses the first ``--mlflow-runs`` runs (same data) and the
ratio compares both on those runs, in points/s.

Usage: python benchmarks/bench_api.py [--runs 1000] [--metrics 10] [--steps 10000]
       [--scan-steps 1000000] [--table-runs 10000] [--repeat 3] [--pg URL | --db URL]
       [--mlflow-runs 2] [--no-mlflow]
"""

from __future__ import annotations

import argparse
import gc
import math
import os
import random
import resource
import socket
import tempfile
import time
from pathlib import Path
from typing import Any

from _peers import start_mlflow_server, stop

PG = os.environ.get("WISP_BENCH_PG", "postgresql://postgres@127.0.0.1:5432")
BATCH_ROWS = 5000


def _pct(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, round(q / 100 * (len(s) - 1)))]


def _fmt(xs: list[float]) -> str:
    return f"p50 {_pct(xs, 50):.3f} s  p99 {_pct(xs, 99):.3f} s  max {max(xs):.3f} s"


def _rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def _peak_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0.0


def _keys(m: int) -> list[str]:
    return [f"metric{j:02d}" for j in range(m)]


def _finished(db_url: str, project: str) -> set[str]:
    """Ids of the finished runs of ``project`` already in the database (a resumed fill)."""
    from sqlalchemy import text

    from wisp.server.store.db import make_engine, migrate

    engine = make_engine(db_url)
    try:
        migrate(engine)
        with engine.connect() as conn:
            q = text("SELECT id FROM runs WHERE project = :p AND state = 'finished'")
            return {str(row[0]) for row in conn.execute(q, {"p": project})}
    finally:
        engine.dispose()


def seed(db_url: str, project: str, runs: int, metrics: int, steps: int, prefix: str) -> float:
    """``runs`` runs of ``metrics`` x ``steps`` points, through the server's ingestion code
    (runs already finished in the database are kept as they are)."""
    from wisp.server import open_store
    from wisp.server.store.ingest import prepare_records

    keys = _keys(metrics)
    done = _finished(db_url, project)
    store = open_store(db_url)
    t0 = time.perf_counter()
    try:
        for r in range(runs):
            rid = f"{prefix}{r:05d}"
            if rid in done:  # a partly seeded run resumes: ingest skips acknowledged seqs
                continue
            store.put_run(rid, {"project": project, "name": f"run-{r}"})
            recs: list[dict[str, Any]] = [
                {"type": 1, "data": {"project": project, "name": f"run-{r}", "host": "h"}},
                {"type": 2, "data": {"config": {"lr": 10 ** -(1 + r % 4), "seed": r}}},
            ]
            store.ingest(rid, "w", 0, prepare_records(recs))
            seq = 2
            for lo in range(0, steps, BATCH_ROWS):
                rows = [
                    [s, 1.7e9 + s, {k: math.sin(s * 1e-3 + j) + r for j, k in enumerate(keys)}]
                    for s in range(lo, min(steps, lo + BATCH_ROWS))
                ]
                store.ingest(rid, "w", seq, prepare_records([{"type": 3, "data": {"rows": rows}}]))
                seq += 1
            fin = [{"type": 6, "data": {"state": "finished", "exit_code": 0}}]
            store.ingest(rid, "w", seq, prepare_records(fin))
    finally:
        store.close()
    return time.perf_counter() - t0


def seed_table(db_url: str, n: int) -> float:
    """``n`` finished runs with config and summary (the runs-list target)."""
    from wisp.server import open_store
    from wisp.server.store.ingest import prepare_records

    rng = random.Random(0)
    done = _finished(db_url, "table")
    store = open_store(db_url)
    t0 = time.perf_counter()
    try:
        for i in range(n):
            rid = f"t{i:05d}"
            lr = 10 ** rng.uniform(-5, -1)
            acc, loss = rng.random(), rng.random()
            if rid in done:
                continue
            store.put_run(rid, {"project": "table", "name": f"run-{i:05d}"})
            recs = [
                {"type": 1, "data": {"project": "table", "name": f"run-{i:05d}", "host": "h"}},
                {"type": 2, "data": {"config": {"lr": lr, "bs": 64}}},
                {"type": 4, "data": {"summary": {"acc": acc, "loss": loss}}},
                {"type": 6, "data": {"state": "finished"}},
            ]
            store.ingest(rid, "w", 0, prepare_records(recs))
    finally:
        store.close()
    return time.perf_counter() - t0


def bench_histories(
    api: Any, keys: list[str], repeat: int
) -> tuple[list[float], int, float, float]:
    """Seconds per ``histories()``, rows, frame MB, client peak RSS growth MB (first call).

    A one-run call first loads pandas/pyarrow, so the growth is the data's, not imports'.
    """
    api.runs("bulk", filters="config.seed = 0").histories(keys=keys)
    times = []
    rows = 0
    frame_mb = growth = 0.0
    for i in range(repeat):
        gc.collect()
        base = _rss_mb()
        t0 = time.perf_counter()
        df = api.runs("bulk").histories(keys=keys)
        times.append(time.perf_counter() - t0)
        if i == 0:
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            rows = len(df)
            frame_mb = df.memory_usage(deep=True).sum() / 2**20
            growth = peak - base
        del df
    return times, rows, frame_mb, growth


def bench_scan(api: Any, run_id: str, repeat: int) -> tuple[list[float], int]:
    times = []
    points = 0
    run = api.run(run_id)
    for _ in range(repeat):
        t0 = time.perf_counter()
        n = 0
        for row in run.scan_history():
            n += len(row) - 1
        times.append(time.perf_counter() - t0)
        points = n
    return times, points


def bench_list(api: Any, repeat: int) -> tuple[list[float], int]:
    times = []
    n = 0
    for _ in range(repeat):
        t0 = time.perf_counter()
        runs = list(api.runs("table", filters={"config.lr": {"$lt": 0.01}}))
        total = sum(r.summary["acc"] for r in runs)
        times.append(time.perf_counter() - t0)
        n = len(runs)
        assert total >= 0
    return times, n


# -- MLflow --------------------------------------------------------------------------------------


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def mlflow_side(
    pg_url: str, work: Path, runs: int, metrics: int, steps: int, repeat: int
) -> tuple[list[float], int] | str:
    """Seconds for search_runs + get_metric_history over every run and metric (or why not)."""
    try:
        import mlflow  # noqa: F401
        from mlflow.entities import Metric
        from mlflow.tracking import MlflowClient
    except ImportError as exc:
        return f"skipped: mlflow is not importable ({exc})"
    started = start_mlflow_server(pg_url, work, _port(), workers=1, name="bench_api")
    if isinstance(started, str):
        return started
    proc, url = started
    try:
        client = MlflowClient(tracking_uri=url)
        exp = client.create_experiment("bulk")
        keys = _keys(metrics)
        t0 = time.perf_counter()
        for r in range(runs):
            run = client.create_run(exp)
            client.log_param(run.info.run_id, "lr", 10 ** -(1 + r % 4))
            batch: list[Any] = []
            for s in range(steps):
                for j, k in enumerate(keys):
                    batch.append(Metric(k, math.sin(s * 1e-3 + j) + r, 0, s))
                    if len(batch) == 1000:  # MLflow's log_batch limit
                        client.log_batch(run.info.run_id, metrics=batch)
                        batch = []
            if batch:
                client.log_batch(run.info.run_id, metrics=batch)
            client.set_terminated(run.info.run_id)
        print(
            f"mlflow: logged {runs * metrics * steps:,} points in {time.perf_counter() - t0:.1f} s"
        )
        times = []
        points = 0
        for _ in range(repeat):
            t0 = time.perf_counter()
            found = client.search_runs([exp], max_results=50000)
            points = 0
            for run in found:
                for k in keys:
                    points += len(client.get_metric_history(run.info.run_id, k))
            times.append(time.perf_counter() - t0)
        return times, points
    finally:
        stop(proc)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--metrics", type=int, default=10)
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--scan-steps", type=int, default=100_000, help="steps of the scanned run")
    ap.add_argument("--table-runs", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--pg", default=PG, help="PostgreSQL admin URL (a temporary DB is made)")
    ap.add_argument("--db", help="an existing PostgreSQL database: filled once, kept, reused")
    ap.add_argument("--mlflow-runs", type=int, default=2, help="runs on MLflow's side")
    ap.add_argument("--no-mlflow", action="store_true")
    args = ap.parse_args()

    import contextlib

    import wisp
    from wisp.testing import Server, temporary_postgres_database

    keys = _keys(args.metrics)
    ml_runs = min(args.runs, args.mlflow_runs)
    kept = contextlib.nullcontext(args.db) if args.db else temporary_postgres_database(args.pg)
    with tempfile.TemporaryDirectory() as tmp, kept as url:
        work = Path(tmp)
        pts = args.runs * args.metrics * args.steps
        t_seed = seed(url, "bulk", args.runs, args.metrics, args.steps, "b")
        t_scan_seed = seed(url, "scan", 1, args.metrics, args.scan_steps, "s")
        t_table = seed_table(url, args.table_runs)
        print(
            f"seeded {pts:,} bulk points in {t_seed:.1f} s, "
            f"{args.metrics * args.scan_steps:,} scan points in {t_scan_seed:.1f} s, "
            f"{args.table_runs:,} table runs in {t_table:.1f} s"
        )
        with Server(work, db=url) as srv, wisp.Api(srv.url, srv.key) as api:
            h_times, rows, frame_mb, growth = bench_histories(api, keys, args.repeat)
            s_times, s_points = bench_scan(api, "s00000", args.repeat)
            l_times, listed = bench_list(api, args.repeat)
            w_list = []
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                for i in range(ml_runs):
                    r = api.run(f"bulk/b{i:05d}")
                    for k in keys:
                        list(r.scan_history(keys=[k]))
                w_list.append(time.perf_counter() - t0)
            server_peak = _peak_mb(srv.proc.pid) if srv.proc is not None else 0.0
        size = f"{args.runs:,} runs x {args.metrics} metrics x {args.steps:,} steps"
        print(f"histories() -> DataFrame ({size} = {pts:,} points, {rows:,} rows): {_fmt(h_times)}")
        print(
            f"  {pts / _pct(h_times, 50) / 1e6:.1f}M points/s; frame {frame_mb:.0f} MB, "
            f"client peak RSS growth {growth:.0f} MB = {growth / max(frame_mb, 1e-9):.2f}x frame; "
            f"server peak RSS {server_peak:.0f} MB; load {os.getloadavg()[0]:.1f}"
        )
        print(
            f"scan_history (1 run, {s_points:,} points): {_fmt(s_times)}  "
            f"-> {s_points / _pct(s_times, 50) / 1e6:.2f}M points/s"
        )
        lt = f"list {args.table_runs:,} runs, config filter ({listed:,} match) + summaries"
        print(f"{lt}: {_fmt(l_times)}")
        ml_pts = ml_runs * args.metrics * args.steps
        print(
            f"wisp per-run per-metric scan_history over {ml_runs} runs ({ml_pts:,} points, "
            f"MLflow's shape): {_fmt(w_list)}"
        )
        if args.no_mlflow:
            print("mlflow: skipped (--no-mlflow)")
            return
        with temporary_postgres_database(args.pg) as ml_url:  # its own tables (runs, ...)
            got = mlflow_side(ml_url, work, ml_runs, args.metrics, args.steps, args.repeat)
        if isinstance(got, str):
            print(f"mlflow: {got}")
            return
        m_times, m_points = got
        m_rate = m_points / _pct(m_times, 50)
        print(
            f"mlflow search_runs + get_metric_history ({ml_runs} runs, {m_points:,} points): "
            f"{_fmt(m_times)} -> {m_rate / 1e6:.2f}M points/s; wisp histories() "
            f"{pts / _pct(h_times, 50) / m_rate:.1f}x MLflow's points/s, wisp in MLflow's "
            f"shape {ml_pts / _pct(w_list, 50) / m_rate:.1f}x"
        )


if __name__ == "__main__":
    main()

"""Automations benchmark: HTTP ingest with 20 automations on the project vs none.

A real ``wisp server`` (``wisp.testing.Server``) per case, on SQLite (and PostgreSQL with
``--backends sqlite,postgresql``). 4 runs upload history batches (50 rows x 10 keys) plus a
summary record each, from 2 client threads; the automations (thresholds, NaN, state, stalled,
change over a window, z-score, artifact and alert events, none of which ever matches, so
only evaluation is measured) are evaluated by the server's worker over the changed runs, off
the request path. Prints points/s per case and the ratio (the issue's bar: within 10 %).

Usage: python benchmarks/bench_automations.py [--batches 200] [--backends sqlite]
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import tempfile
import time
import urllib.request
from typing import Any

from wisp._protocol import RecordType
from wisp.testing import Server, temporary_postgres_database

PG = "postgresql://postgres@127.0.0.1:5432"
WHENS = [
    "summary.loss > 1e9",
    "summary.loss = nan",
    "state = crashed",
    "stalled > 1d",
    "summary.acc >= 2 and config.lr < 0",
    "change(summary.k0, 100 steps) > 1e9",  # two chunk reads per changed run and pass
    "zscore(summary.loss) > 1e9",  # one read of the project's runs per pass
    "artifact.alias = production",
    "alert.level = ERROR",
]


def _post(srv: Server, method: str, path: str, body: Any) -> None:
    req = urllib.request.Request(
        f"{srv.url}/api/v1{path}", data=json.dumps(body).encode(), method=method
    )
    req.add_header("Authorization", f"Bearer {srv.key}")
    req.add_header("Content-Type", "application/json")
    urllib.request.urlopen(req, timeout=60).read()


def _upload(srv: Server, run: str, batches: int) -> int:
    _post(srv, "PUT", f"/runs/{run}", {"project": "bench"})
    points = 0
    for b in range(batches):
        rows = [[b * 50 + i, 1.0, {f"k{j}": float(i + j) for j in range(10)}] for i in range(50)]
        recs = [
            {"type": RecordType.HISTORY, "data": {"rows": rows}},
            {"type": RecordType.SUMMARY, "data": {"summary": {"loss": float(b), "acc": 0.5}}},
        ]
        _post(
            srv,
            "POST",
            f"/runs/{run}/records",
            {"writer_id": "w", "first_seq": 2 * b, "records": recs},
        )
        points += 500
    return points


def case(db: str, tmp: str, autos: int, batches: int) -> float:
    with Server(f"{tmp}/{autos}", db=db, key_scope="admin") as srv:
        for i in range(autos):
            body = {"when": WHENS[i % len(WHENS)], "webhook": "http://127.0.0.1:9/x"}
            _post(srv, "POST", "/projects/bench/automations", body)
        start = time.perf_counter()
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            runs = [f"r{autos}-{i}" for i in range(4)]
            total = sum(pool.map(lambda r: _upload(srv, r, batches), runs))
        return total / (time.perf_counter() - start)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--batches", type=int, default=200)
    ap.add_argument("--backends", default="sqlite")
    args = ap.parse_args()
    print(f"{'backend':<11} {'automations':>11} {'points/s':>10} {'vs none':>8}")
    for backend in args.backends.split(","):
        with tempfile.TemporaryDirectory() as tmp:
            rates = {}
            for n in (0, 20, 0, 20):  # interleaved: the machine's load drifts
                if backend == "sqlite":
                    db = f"sqlite:///{tmp}/{n}-{len(rates)}.db"
                    rate = case(db, f"{tmp}/{len(rates)}", n, args.batches)
                else:
                    with temporary_postgres_database(PG) as db:
                        rate = case(db, f"{tmp}/{len(rates)}", n, args.batches)
                rates.setdefault(n, []).append(rate)
            base = max(rates[0])
            for n, rs in sorted(rates.items()):
                best = max(rs)
                print(f"{backend:<11} {n:>11} {best:>10,.0f} {best / base:>8.2f}")


if __name__ == "__main__":
    main()

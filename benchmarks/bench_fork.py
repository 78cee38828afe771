"""Forking and rewinding a big run (issue 37): fork cost at 10M points, on disk and in time.

Writes a finished run of ``--points`` history rows (one float metric, the run file framed
by ``wisp._runfile`` in batches, as the writer frames them) and prints, median of
``--repeat`` tries each:

- ``init() + finish()`` of a plain new run (the baseline) and of ``fork_from`` the big run
  at its middle step: the fork's extra cost is finding the parent and reading its
  ``run.json`` (last step, config); its directory's size on disk (nothing is copied);
- the same fork of the big run while it looks unfinished (its ``run.json`` without
  ``last_step``: the parent's file is read to find its last step, O(points));
- reading the fork's history back (``open_run().history()``: half the parent's rows);
- ``resume_from`` (rewind) of the big run to 90% of its steps: O(points), as it reads the
  file once to recompute the summary.

With ``--server``, the same on the server (SQLite in a temporary folder, or with
``--pg URL`` a fresh PostgreSQL database on that server, dropped afterwards): a parent of
``--points`` points, then the fork's registration and LINEAGE record ingested (baseline: a
plain run's), the database's growth, the fork's lineage answer and its series (1,000
buckets: half the parent's points read through it).  The parent's points are written
straight into ``chunks`` (the store's chunk encoder and ``Dialect.write_chunks``, the path
ingestion ends in) unless ``--ingest`` sends them through the ingestion code in batches of
100,000 rows (about 9x slower: 18 s per million points on SQLite on a shared machine).

Usage: python benchmarks/bench_fork.py [--points 10000000] [--repeat 5]
       [--server [--pg postgresql://postgres@127.0.0.1:5432] [--ingest]]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any


def _big_run(base: Path, points: int) -> tuple[str, str]:
    from wisp._rundir import dir_name, write_meta
    from wisp._runfile import HEADER, RecordType, encode_history, encode_record

    run_id = "bigrun01"
    run_dir = base / "wisp" / dir_name("20260101_000000", run_id)
    run_dir.mkdir(parents=True)
    now = time.time()
    head = {"run_id": run_id, "writer_id": "0" * 16, "project": "bench", "name": "big"}
    with open(run_dir / "run.wisp", "wb") as f:
        f.write(HEADER)
        f.write(encode_record(RecordType.RUN, json.dumps(head).encode()))
        f.write(encode_record(RecordType.CONFIG, json.dumps({"config": {"lr": 0.1}}).encode()))
        batch = 65_536
        for lo in range(0, points, batch):
            rows = [
                [s, now + s * 1e-3, {"loss": 1.0 / (1 + s)}]
                for s in range(lo, min(points, lo + batch))
            ]
            f.write(encode_record(RecordType.HISTORY, encode_history(rows)))
        fin = {"state": "finished", "exit_code": 0, "finished_at": now, "last_step": points - 1}
        f.write(encode_record(RecordType.FINISH, json.dumps(fin).encode()))
    meta = {"id": run_id, "project": "bench", "name": "big", "state": "finished", "created_at": now,
            "file": "run.wisp", "format_version": 1, "exit_code": 0,
            "last_step": points - 1, "config": {"lr": 0.1}}  # fmt: skip
    write_meta(str(run_dir), meta)
    return run_id, str(run_dir)


def _timed(fn: object, repeat: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()  # type: ignore[operator]
        times.append(time.perf_counter() - t)
    return statistics.median(times), out


def _du(path: str) -> int:
    return sum(f.stat().st_size for f in Path(path).rglob("*") if f.is_file())


def _bulk(store: Any, points: int) -> None:
    """The parent's points written straight into ``chunks`` (1M points a transaction)."""
    import numpy as np
    from sqlalchemy import select

    from wisp.server.series.chunks import pieces
    from wisp.server.store import schema as S

    mk = S.metric_keys.c
    with store.db.tx() as conn:
        new = [{"run_id": "big", "key": "loss"}]
        store.dialect.insert_ignore(conn, S.metric_keys, new, ["run_id", "key"])
        kid: Any = conn.execute(select(mk.id).where(mk.run_id == "big", mk.key == "loss")).scalar()
    for lo in range(0, points, 1_000_000):
        st = np.arange(lo, min(points, lo + 1_000_000), dtype=np.int64)
        with store.db.tx() as conn:
            rows = pieces(int(kid), st, 1.7e9 + st.astype(np.float64), 1.0 / (1.0 + st))
            store.dialect.write_chunks(conn, rows, [])


def _server(points: int, repeat: int, pg: str | None, ingest: bool) -> None:
    import contextlib

    from wisp.server import open_store
    from wisp.server.series.buckets import series
    from wisp.server.series.grouped import grouped_series
    from wisp.server.store import lineage
    from wisp.server.store.ingest import prepare_records
    from wisp.testing import temporary_postgres_database

    base = Path(tempfile.mkdtemp(prefix="wisp-bench-fork-db-"))
    stack = contextlib.ExitStack()
    if pg:
        url = stack.enter_context(temporary_postgres_database(pg))
    else:
        url = f"sqlite:///{base / 'wisp.db'}"

    def db_size() -> int:  # the database file and its write-ahead log, or PG's database size
        if not pg:
            return sum(p.stat().st_size for p in base.glob("wisp.db*"))
        from sqlalchemy import text

        with store.engine.connect() as conn:
            got: Any = conn.execute(text("SELECT pg_database_size(current_database())")).scalar()
            return int(got)

    store = open_store(url)
    try:
        t = time.perf_counter()
        meta = {"project": "bench", "name": "big", "host": "h"}
        store.put_run("big", {"project": "bench", "name": "big"})
        store.ingest("big", "w", 0, prepare_records([{"type": 1, "data": meta}]))
        seq, batch = 1, 100_000
        for lo in range(0, points if ingest else 0, batch):
            rows = [
                [s, 1.7e9 + s, {"loss": 1.0 / (1 + s)}] for s in range(lo, min(points, lo + batch))
            ]
            store.ingest("big", "w", seq, prepare_records([{"type": 3, "data": {"rows": rows}}]))
            seq += 1
        if not ingest:
            _bulk(store, points)
        how = "ingested" if ingest else "written as chunks"
        print(f"server ({'PostgreSQL' if pg else 'SQLite'}): parent of {points:,} points {how} "
              f"in {time.perf_counter() - t:.0f} s, database {db_size() / 1e6:.0f} MB")  # fmt: skip
        mid = points // 2
        n = [0]

        def register(fork: bool) -> None:
            n[0] += 1
            rid = f"f{n[0]}"
            store.put_run(rid, {"project": "bench", "name": rid})
            recs: list[dict[str, object]] = [{"type": 1, "data": {**meta, "name": rid}}]
            if fork:
                lin = {"kind": "fork", "parent_id": "big", "parent_project": "bench", "step": mid}
                recs.append({"type": 13, "data": lin})
            store.ingest(rid, "w", 0, prepare_records(recs))

        plain_s, _ = _timed(lambda: register(False), repeat)
        size = db_size()
        fork_s, _ = _timed(lambda: register(True), repeat)
        grown = db_size() - size
        print(f"server: a plain run registered        {plain_s * 1e3:8.1f} ms")
        print(f"server: a fork registered (+LINEAGE)  {fork_s * 1e3:8.1f} ms; database grew "
              f"{grown:,} bytes for {repeat} forks")  # fmt: skip
        with store.engine.connect() as conn:
            d_s, _ = _timed(lambda: lineage.describe(conn, f"f{n[0]}", None), repeat)
        print(f"server: the fork's lineage (GET /runs/{{id}}/lineage) {d_s * 1e3:8.1f} ms")
        s_s, got = _timed(lambda: series(store, [f"f{n[0]}"], ["loss"], buckets=1000), 1)
        count = got[0]["count"] if got else 0  # type: ignore[index]
        print(f"server: the fork's series (1,000 buckets over {count:,} points): {s_s:.2f} s")
        g_s, _ = _timed(
            lambda: grouped_series(store, "bench", keys=["loss"], group_by=[], runs=[f"f{n[0]}"]),
            1,
        )
        print(f"server: the fork's grouped series (1,000 buckets): {g_s:.2f} s")
        print(f"load {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    finally:
        store.close()
        stack.close()
        shutil.rmtree(base, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--points", type=int, default=10_000_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--server", action="store_true")
    ap.add_argument("--pg", default=None, help="a PostgreSQL server's admin URL (with --server)")
    ap.add_argument("--ingest", action="store_true", help="fill the parent by ingestion")
    args = ap.parse_args()
    if args.server:
        _server(args.points, args.repeat, args.pg, args.ingest)
        return
    warnings.simplefilter("ignore")
    os.environ.update(WISP_GIT="false", WISP_SYSTEM_METRICS="false", WISP_CONSOLE="off")
    import wisp

    base = Path(tempfile.mkdtemp(prefix="wisp-bench-fork-"))
    try:
        t = time.perf_counter()
        run_id, run_dir = _big_run(base, args.points)
        size = os.path.getsize(os.path.join(run_dir, "run.wisp"))
        print(f"parent: {args.points:,} points, run file {size / 1e6:.0f} MB, "
              f"written in {time.perf_counter() - t:.1f} s")  # fmt: skip
        d, mid = str(base), args.points // 2
        settings = {"silent": True}

        def plain() -> str | None:
            r = wisp.init(project="bench", dir=d, mode="offline", settings=settings)
            r.finish()
            return r.dir

        def fork() -> str | None:
            r = wisp.init(
                fork_from=f"{run_id}?_step={mid}", dir=d, mode="offline", settings=settings
            )
            r.finish()
            return r.dir

        base_s, _ = _timed(plain, args.repeat)
        fork_s, fork_dir = _timed(fork, args.repeat)
        print(f"init()+finish(), a new run:          {base_s * 1e3:8.1f} ms")
        extra = (fork_s - base_s) * 1e3
        size = _du(str(fork_dir))
        print(f"init(fork_from=...)+finish():        {fork_s * 1e3:8.1f} ms (+{extra:.1f} ms)")
        print(f"  the fork's directory on disk: {size:,} bytes")
        meta_path = os.path.join(run_dir, "run.json")
        meta = json.loads(Path(meta_path).read_text())
        Path(meta_path).write_text(json.dumps({**meta, "state": "running", "pid": None}))
        scan_s, _ = _timed(fork, 1)
        Path(meta_path).write_text(json.dumps(meta))
        print(f"  of a parent without run.json's last_step (file read): {scan_s * 1e3:8.1f} ms")
        read_s, n = _timed(lambda: sum(1 for _ in wisp.open_run(str(fork_dir)).history()), 1)
        print(f"open_run(fork).history(): {n:,} rows in {read_s:.2f} s")
        back = int(args.points * 0.9)

        def rewind() -> None:
            wisp.init(
                resume_from=f"{run_id}?_step={back}", dir=d, mode="offline", settings=settings
            ).finish()

        rew_s, _ = _timed(rewind, 1)
        print(f"init(resume_from=...)+finish() at 90%: {rew_s:.2f} s (reads the file once)")
        print(f"load {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()

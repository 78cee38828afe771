"""SDK core benchmarks: import cost, init(), log() latency, durable throughput, finish, memory.

Run with ``make bench`` (or ``python benchmarks/bench_sdk.py``).  Import timings run
with PYTHONDONTWRITEBYTECODE unset after ``compileall``, so they measure cached
bytecode, as users get it.  Ratios compare figures taken in this same run.
"""

from __future__ import annotations

import compileall
import contextlib
import gc
import io
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import deque
from pathlib import Path
from typing import Any

import wisp

HERE = Path(__file__).resolve().parent
SRC = Path(wisp.__file__).resolve().parent
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def _proc_ms(code: str) -> float:
    t0 = time.perf_counter()
    # output captured (init() prints where the run went): the table stays readable
    subprocess.run([sys.executable, "-c", code], check=True, env=ENV, capture_output=True)
    return (time.perf_counter() - t0) * 1000


def _init(**kwargs: Any) -> Any:
    """``wisp.init()``, its two stderr lines (where the run went) kept out of the table."""
    with contextlib.redirect_stderr(io.StringIO()):
        return wisp.init(**kwargs)


def _over_bare(code: str, runs: int) -> tuple[float, float]:
    """Median of (code - bare) over interleaved pairs of fresh processes, and the bare median."""
    diffs, bares = [], []
    for _ in range(runs):
        bare = _proc_ms("pass")
        diffs.append(_proc_ms(code) - bare)
        bares.append(bare)
    return statistics.median(diffs), statistics.median(bares)


def _rss_kb() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024


def bench_import(rows: list[tuple[str, str, str]], runs: int = 15) -> None:
    compileall.compile_dir(str(SRC), quiet=1)
    imp, bare = _over_bare("import wisp", runs)
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; a=set(sys.modules); import wisp; print(len(set(sys.modules)-a))",
        ],
        check=True,
        env=ENV,
        capture_output=True,
        text=True,
    )
    with tempfile.TemporaryDirectory() as d:
        code = (
            f"import wisp; r = wisp.init(project='b', dir={d!r}, "
            "settings={'git': False}); wisp.log({'x': 1.0}); r.finish()"
        )
        full, _ = _over_bare(code, runs)
    rows.append(("import wisp over bare interpreter", f"{imp:.2f} ms", "<= 5 ms"))
    rows.append(("modules loaded by import wisp", out.stdout.strip(), "<= 25"))
    rows.append(("import+init+log+finish over bare", f"{full:.1f} ms", "<= 50 ms"))
    rows.append(("  (bare interpreter start, median)", f"{bare:.1f} ms", ""))


def bench_init(rows: list[tuple[str, str, str]], tmp: str) -> None:
    times = []
    for i in range(20):
        t0 = time.perf_counter()
        r = _init(project="b", dir=os.path.join(tmp, f"i{i}"))
        times.append((time.perf_counter() - t0) * 1000)
        r.finish()
    rows.append(("init() in-process, median of 20", f"{statistics.median(times):.2f} ms", ""))


def _percentiles(ns: list[int]) -> tuple[float, float, float]:
    ns.sort()
    n = len(ns)
    return ns[n // 2] / 1000, ns[int(n * 0.99)] / 1000, ns[-1] / 1000


def bench_log_latency(rows: list[tuple[str, str, str]], tmp: str, calls: int = 200_000) -> None:
    pc = time.perf_counter_ns
    # baseline: the cheapest possible enqueue of the same data, timed the same way
    q: deque[object] = deque()
    base = []
    for i in range(calls):
        d = {"a": 0.1 * i, "b": 1.0, "c": 2.0, "d": 3.0, "e": 4.0}
        t0 = pc()
        q.append((0, i, time.time(), d.copy()))
        base.append(pc() - t0)
        if len(q) > 10000:
            q.clear()
    run = _init(project="b", dir=tmp, settings={"git": False})
    lat = []
    log = run.log
    gc.collect()
    for i in range(calls):
        d = {"a": 0.1 * i, "b": 1.0, "c": 2.0, "d": 3.0, "e": 4.0}
        t0 = pc()
        log(d, step=i)
        lat.append(pc() - t0)
    run.finish()
    b50, b99, _ = _percentiles(base)
    p50, p99, pmax = _percentiles(lat)
    rows.append((f"log() 5 floats, explicit step, {calls} calls: p50", f"{p50:.2f} us", "<= 2 us"))
    rows.append(("log() p99", f"{p99:.2f} us", "<= 25 us"))
    rows.append(("log() max", f"{pmax:.0f} us", ""))
    rows.append(("  baseline dict.copy+deque.append p50 / p99", f"{b50:.2f} / {b99:.2f} us", ""))
    rows.append(("  log() p50 / baseline p50", f"{p50 / b50:.1f}x", ""))
    rows.append(("  backpressure waits", str(run.backpressure_waits), ""))


def _timed_logs(log: Any, calls: int) -> list[int]:
    pc = time.perf_counter_ns
    lat = []
    for i in range(calls):
        d = {"a": 0.1 * i, "b": 1.0, "c": 2.0, "d": 3.0, "e": 4.0}
        t0 = pc()
        log(d)
        lat.append(pc() - t0)
    return lat


def bench_log_after_fork(rows: list[tuple[str, str, str]], tmp: str, calls: int = 100_000) -> None:
    """log() in a parent that has forked (one step counter shared with its children), and a
    forked child's write-through log() (each row written before the call returns)."""
    run = _init(project="f", dir=tmp, settings={"git": False})
    before, _, _ = _percentiles(_timed_logs(run.log, calls))
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: write-through log() to its own segment
        os.close(read)
        p50, p99, _ = _percentiles(_timed_logs(run.log, 5_000))
        os.write(write, f"{p50} {p99}".encode())
        os._exit(0)
    os.close(write)
    child = os.read(read, 100).decode().split()
    os.close(read)
    os.waitpid(pid, 0)
    gc.collect()
    after, after99, _ = _percentiles(_timed_logs(run.log, calls))
    run.finish()
    c50, c99 = float(child[0]), float(child[1])
    rows.append(("log() 5 floats, auto step, before any fork: p50", f"{before:.2f} us", ""))
    rows.append(
        (
            "  after a fork, in the parent (shared steps): p50 / p99",
            f"{after:.2f} / {after99:.2f} us",
            "",
        )
    )
    rows.append(("  in a forked child (write-through): p50 / p99", f"{c50:.2f} / {c99:.2f} us", ""))


def bench_throughput(rows: list[tuple[str, str, str]], tmp: str, points: int = 1_000_000) -> None:
    gc.collect()
    rss0 = _rss_kb()
    run = _init(project="b", dir=tmp, settings={"git": False})
    nrows = points // 5
    t0 = time.perf_counter()
    for i in range(nrows):
        run.log(
            {"a": 0.1 * i, "b": math.nan if i % 1000 == 0 else 1.0, "c": 2.0, "d": 3, "e": 4.0},
            step=i,
        )
    t_logged = time.perf_counter()
    rss_logged = _rss_kb()
    run.finish()
    t_done = time.perf_counter()
    gc.collect()
    rss1 = _rss_kb()
    data = wisp.open_run(run.dir)
    n = sum(len(r) - 2 for r in data.history())
    assert n == points, (n, points)
    total = t_done - t0
    rows.append(
        (
            "durable throughput (log 1M points + finish)",
            f"{points / total:,.0f} pts/s",
            ">= 1,000,000",
        )
    )
    rows.append(("  log loop alone", f"{points / (t_logged - t0):,.0f} pts/s", ""))
    rows.append(("finish() after 1M points", f"{(t_done - t_logged) * 1000:.0f} ms", "<= 200 ms"))
    rows.append(("RSS growth after 1M points", f"{(rss1 - rss0) / 1024:.1f} MB", "<= 15 MB"))
    rows.append(
        (
            "  RSS growth at the end of the log loop, before finish()",
            f"{(rss_logged - rss0) / 1024:.1f} MB",
            "",
        )
    )
    rows.append(("  backpressure waits", str(run.backpressure_waits), ""))
    rows.append(("  run file size", f"{os.path.getsize(run.file_path) / 1e6:.1f} MB", ""))


def main() -> list[tuple[str, str, str]]:
    rows: list[tuple[str, str, str]] = []
    bench_import(rows)
    with tempfile.TemporaryDirectory() as tmp:
        bench_init(rows, tmp)
        bench_log_latency(rows, tmp)
        bench_throughput(rows, tmp)
        bench_log_after_fork(rows, tmp)
    width = max(len(r[0]) for r in rows)
    print(f"\n== SDK core ({sys.version.split()[0]}, {os.cpu_count()} cpus) ==")
    print(f"{'measure'.ljust(width)}  {'value':>16}  target")
    for name, value, target in rows:
        print(f"{name.ljust(width)}  {value:>16}  {target}")
    return rows


if __name__ == "__main__":
    main()

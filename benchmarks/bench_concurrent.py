"""Ingest under load (issue 23): N concurrent online runs, each its own SDK process, into a
real ``wisp server`` on a fresh PostgreSQL database, while a dashboard-style poller measures
what a person looking at the project would wait.

- ingest: aggregate points/s over the N processes, from the moment they are released
  together (runs already registered, interpreters started) until the last ``finish()``
  returned (every point acknowledged by the server);
- poll: one poll = ``GET /projects/P/runs`` (the runs table) + ``GET /series`` of one
  key of one run at 1,000 buckets (a chart), back to back on one keep-alive connection,
  every ``--poll-interval`` s during the ingest; p50/p99/max, and the same idle afterwards;
  the three slowest polls with their time after the release and each request's ms (in
  brackets: the server's own time to answer it, its ``Server-Timing`` header), and the
  percentiles of that server time per poll, to tell the server's share from the poller's;
- the scheduler's floor: how late a process that only sleeps 5 ms at a time, in a session of
  its own, wakes up while the clients log (no poll can be faster than the machine lets the
  server, its database backends and the poller run);
- MLflow: the same N processes logging through ``MlflowClient.log_batch`` (1,000 metrics a
  call, its limit) to an ``mlflow server`` on its own database on the same PostgreSQL, with
  the same poller (``runs/search`` + ``metrics/get-history``), reported as a ratio.  MLflow
  logs two orders of magnitude slower, so its processes log ``--mlflow-steps`` steps each
  (points/s are compared).  Skipped, saying so, when mlflow is not importable.

Targets: >= 400k points/s aggregate with 16 runs; poll p99 <= 250 ms during ingest, and at
most 3x the idle poll's p99.

``--client-nice N`` runs the client processes (wisp's and MLflow's) at ``nice N``: they stand
for training machines, which in a deployment do not share the server's cores; at the
default (0) the 16 of them compete with the server on the same 2 cores as equals.  Quote
both figures.

Sessions: Linux (with ``kernel.sched_autogroup_enabled``, the default of most distributions)
shares the CPU fairly between sessions first, then between the processes of a session.  By
default the benchmark starts processes as they are on one machine in use: the server in a
session of its own (as a service manager, or its own terminal, starts it), the clients in
one session of their own (as a launcher started from a terminal starts its jobs), and the
poller in the benchmark's (a browser's); every PostgreSQL backend (which calls ``setsid``)
is a session of its own.  ``--one-session`` starts them all in the benchmark's session, as
earlier runs did: then each server thread and the poller wait for a CPU among the 16 busy
clients.  Quote both.

Usage: python benchmarks/bench_concurrent.py [--procs 16] [--steps 50000] [--metrics 10]
       [--workers 1] [--ingest-concurrency N] [--client-nice N] [--one-session]
       [--mlflow-steps 500]
       [--no-mlflow] [--pg URL]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _peers import start_mlflow_server, stop

PG = os.environ.get("WISP_BENCH_PG", "postgresql://postgres@127.0.0.1:5432")

WISP_CLIENT = """
import os, sys, time
os.nice(int(os.environ.get("BENCH_CLIENT_NICE", "0")))
import wisp
url, key, go = sys.argv[1:4]
steps, metrics = int(sys.argv[4]), int(sys.argv[5])
settings = {"server_url": url, "api_key": key, "system_metrics": False, "console": "off",
            "upload_timeout": 3600, "silent": True}
run = wisp.init(project="load", mode="online", config={"pid": os.getpid()}, settings=settings)
print("ready", run.id, flush=True)
while not os.path.exists(go):
    time.sleep(0.005)
keys = [f"metric{j:02d}" for j in range(metrics)]
for s in range(steps):
    run.log({k: s * 1e-3 + j for j, k in enumerate(keys)}, step=s)
run.finish()
print("done", time.time(), flush=True)
"""

MLFLOW_CLIENT = """
import os, sys, time
os.nice(int(os.environ.get("BENCH_CLIENT_NICE", "0")))
from mlflow.entities import Metric
from mlflow.tracking import MlflowClient
url, exp, go = sys.argv[1:4]
steps, metrics = int(sys.argv[4]), int(sys.argv[5])
client = MlflowClient(tracking_uri=url)
run = client.create_run(exp)
print("ready", run.info.run_id, flush=True)
while not os.path.exists(go):
    time.sleep(0.005)
keys = [f"metric{j:02d}" for j in range(metrics)]
batch = []
for s in range(steps):
    ts = int(time.time() * 1000)
    for j, k in enumerate(keys):
        batch.append(Metric(k, s * 1e-3 + j, ts, s))
        if len(batch) == 1000:
            client.log_batch(run.info.run_id, metrics=batch)
            batch = []
if batch:
    client.log_batch(run.info.run_id, metrics=batch)
client.set_terminated(run.info.run_id)
print("done", time.time(), flush=True)
"""


#: started in a session of its own, it starts the clients there (one session for all, as
#: jobs a launcher starts from a terminal of its own): prints each client's first line, then,
#: once all have ended, one JSON line of [exit code, stdout, end of stderr] per client
LAUNCHER = """
import json, subprocess, sys
cmds = json.loads(sys.argv[1])
pipe = subprocess.PIPE
procs = [subprocess.Popen(c, stdout=pipe, stderr=pipe, text=True) for c in cmds]
for p in procs:
    print(p.stdout.readline().strip(), flush=True)
ends = []
for p in procs:
    out, err = p.communicate()
    ends.append([p.returncode, out, err[-2000:]])
print(json.dumps(ends), flush=True)
"""


#: a process that only sleeps, 5 ms at a time: how late each wake-up comes is the wait for a
#: CPU of a process that asks for almost none; on SIGTERM it prints each lateness (ms)
SLEEPER = """
import signal, sys, time
late = []
def done(*_):
    print(" ".join(f"{x:.2f}" for x in late), flush=True)
    sys.exit(0)
signal.signal(signal.SIGTERM, done)
pc = time.perf_counter
while True:
    t = pc()
    time.sleep(0.005)
    late.append((pc() - t - 0.005) * 1e3)
"""


class Sleeper:
    """:data:`SLEEPER` in a session of its own, for as long as the clients log: the floor the
    machine's scheduler puts under every poll (a poll is ~20 wake-ups of threads and
    database backends).  Its wake-ups were up to ~1 s late in the first seconds of the
    ingest on the 2-core machine, while a SCHED_FIFO sleeper's stayed under 3 ms: the CPU
    is withheld by the kernel's fair scheduler, not taken by the machine's host."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", SLEEPER],
            stdout=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )

    def stop(self) -> list[float]:
        """Each wake-up's lateness, in ms."""
        self.proc.terminate()
        out, _ = self.proc.communicate(timeout=30)
        return [float(x) for x in out.split()]


class Clients:
    """The client processes: each one in the benchmark's session (``apart=False``), or all
    in one session of their own under a launcher."""

    def __init__(self, cmds: list[list[str]], env: Any, *, apart: bool) -> None:
        self.apart = apart
        pipe = subprocess.PIPE
        if apart:
            launch = [sys.executable, "-c", LAUNCHER, json.dumps(cmds)]
            self.procs = [
                subprocess.Popen(
                    launch, stdout=pipe, stderr=pipe, text=True, env=env, start_new_session=True
                )
            ]
        else:
            self.procs = [
                subprocess.Popen(c, stdout=pipe, stderr=pipe, text=True, env=env) for c in cmds
            ]
        self.n = len(cmds)

    def first_lines(self) -> list[str]:
        """Each client's first line (``ready <run id>``, or empty where it failed)."""
        if self.apart:
            out = self.procs[0].stdout
            assert out is not None
            return [out.readline().strip() for _ in range(self.n)]
        lines = []
        for p in self.procs:
            assert p.stdout is not None
            lines.append(p.stdout.readline().strip())
        return lines

    def ends(self) -> list[tuple[int, str, str]]:
        """Once all have ended: each client's exit code, the rest of its stdout, its stderr."""
        if self.apart:
            out, err = self.procs[0].communicate(timeout=3600)
            lines = out.strip().splitlines()
            if self.procs[0].returncode != 0 or not lines:
                raise RuntimeError(f"the launcher failed: {err[-2000:]}")
            return [(rc, o, e) for rc, o, e in json.loads(lines[-1])]
        got = []
        for p in self.procs:
            out, err = p.communicate(timeout=3600)
            got.append((p.returncode, out, err))
        return got

    def kill(self) -> None:
        """Whatever is still running (a client that did not start, a failed run)."""
        for p in self.procs:
            if p.poll() is None:
                if self.apart:
                    os.killpg(p.pid, signal.SIGKILL)  # the launcher and its clients
                else:
                    p.kill()
            p.communicate()


def _pct(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, round(q / 100 * (len(s) - 1)))] if s else float("nan")


def _ms(xs: list[float]) -> str:
    return (
        f"p50 {_pct(xs, 50) * 1e3:.0f} ms  p99 {_pct(xs, 99) * 1e3:.0f} ms  "
        f"max {max(xs, default=float('nan')) * 1e3:.0f} ms  ({len(xs)} polls)"
    )


def _cpu_s(pid: int) -> tuple[float, float]:
    """CPU seconds (user + system) of process ``pid``'s main thread and of the whole process
    (Linux /proc; its child processes not included)."""
    tick = os.sysconf("SC_CLK_TCK")

    def read(path: str) -> float:
        with open(path) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / tick

    return read(f"/proc/{pid}/task/{pid}/stat"), read(f"/proc/{pid}/stat")


def _load() -> str:
    return "load " + "/".join(f"{x:.1f}" for x in os.getloadavg())


def _nice(args: argparse.Namespace) -> dict[str, str]:
    """The client processes' environment: their niceness (``--client-nice``)."""
    return {"BENCH_CLIENT_NICE": str(args.client_nice)}


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


#: one request of a poll: its wall time and the server's time to answer (``Server-Timing``
#: ``app;dur``; None where the server does not say), in seconds
Took = tuple[float, float | None]


def _server_s(r: Any) -> float | None:
    """The ``app;dur`` of a response's ``Server-Timing`` header, in seconds."""
    for part in r.headers.get("server-timing", "").split(","):
        name, _, dur = part.strip().partition(";dur=")
        if name == "app" and dur:
            return float(dur) / 1e3
    return None


def _took(t: Took) -> str:
    wall, server = t
    return f"{wall * 1e3:.0f}" + (f" [server {server * 1e3:.0f}]" if server is not None else "")


class Poller(threading.Thread):
    """Calls ``poll`` every ``interval`` s until stopped; keeps each call's wall time and
    what it returns (the wall time of each of its requests)."""

    def __init__(self, poll: Callable[[], list[Took]], interval: float) -> None:
        super().__init__(daemon=True)
        self.poll = poll
        self.interval = interval
        self.times: list[float] = []
        self.started: list[float] = []  # perf_counter at each poll's start
        self.parts: list[list[Took]] = []  # each poll's requests' times
        self.stopped = threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        while not self.stopped.is_set():
            t0 = time.perf_counter()
            try:
                parts = self.poll()
            except BaseException as exc:  # noqa: BLE001 - reported by the caller
                self.error = exc
                return
            self.times.append(time.perf_counter() - t0)
            self.started.append(t0)
            self.parts.append(parts)
            self.stopped.wait(self.interval)

    def finish(self) -> list[float]:
        self.stopped.set()
        self.join(60)
        if self.error is not None:
            raise RuntimeError(f"a poll failed: {self.error!r}") from self.error
        return self.times


def drive(
    cmds: list[list[str]],
    go: Path,
    poll: Callable[[], list[Took]],
    interval: float,
    env: Any,
    *,
    apart: bool,
) -> tuple[float, list[float], list[str], list[list[Took]]]:
    """Start the client processes, release them together once all are ready, poll while
    they run (``apart``: in one session of their own); (seconds from release to the last
    one done, poll times, run ids, each poll's requests' times).  Prints the slowest polls:
    when (seconds after the release) and each request's wall time, with the server's own
    time to answer it in brackets."""
    clients = Clients(cmds, env, apart=apart)
    sleeper: Sleeper | None = None
    try:
        ids = []
        for line in clients.first_lines():
            if not line.startswith("ready "):
                raise RuntimeError(f"a client did not start: {line!r}")
            ids.append(line.split()[1])
        poller = Poller(poll, interval)
        poller.start()
        time.sleep(1.0)  # a few idle polls first would mix in; they are cheap, keep them out
        poller.times.clear()
        poller.started.clear()
        poller.parts.clear()
        sleeper = Sleeper()
        t0 = time.time()
        p0 = time.perf_counter()
        go.touch()
        ends = []
        for rc, out, err in clients.ends():
            done = [ln for ln in out.splitlines() if ln.startswith("done")]
            if rc != 0 or not done:
                raise RuntimeError(f"a client failed ({rc}): {err[-2000:]}")
            ends.append(float(done[0].split()[1]))
        late = sleeper.stop()
    finally:
        clients.kill()
        if sleeper is not None and sleeper.proc.poll() is None:
            sleeper.proc.kill()
            sleeper.proc.communicate()
    times = poller.finish()
    slow = sorted(zip(times, poller.started, poller.parts, strict=True), reverse=True)[:3]
    said = [
        f"{t * 1e3:.0f} ms at {s - p0:.1f} s ({' + '.join(_took(x) for x in ps)})"
        for t, s, ps in slow
    ]
    print(f"  slowest polls (requests' ms): {'; '.join(said)}")
    print(
        f"  a sleeper in a session of its own (5 ms sleeps), wake-ups late: p50 "
        f"{_pct(late, 50):.1f} ms  p99 {_pct(late, 99):.1f} ms  max {max(late, default=0):.0f} ms"
    )
    return max(ends) - t0, times, ids, poller.parts


def idle_polls(poll: Callable[[], list[Took]], n: int = 30) -> list[float]:
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        poll()
        times.append(time.perf_counter() - t0)
    return times


def wisp_side(args: argparse.Namespace, work: Path, url: str) -> dict[str, Any]:
    import httpx

    from wisp.testing import Server

    extra = ["--workers", str(args.workers)] if args.workers > 1 else []
    if args.ingest_concurrency is not None:
        extra += ["--ingest-concurrency", str(args.ingest_concurrency)]
    if args.ingest_processes is not None:
        extra += ["--ingest-processes", str(args.ingest_processes)]
    apart = not args.one_session
    with Server(work / "server", db=url, args=extra, own_session=apart) as srv:
        go = work / "go-wisp"
        sizes = [str(args.steps), str(args.metrics)]
        cmds = [
            [sys.executable, "-c", WISP_CLIENT, srv.url, srv.key, str(go), *sizes]
            for _ in range(args.procs)
        ]
        client = httpx.Client(
            base_url=f"{srv.url}/api/v1",
            headers={"Authorization": f"Bearer {srv.key}"},
            timeout=60,
        )
        target: dict[str, str] = {}

        def poll() -> list[Took]:
            t0 = time.perf_counter()
            r = client.get("/projects/load/runs", params={"limit": 50})
            r.raise_for_status()
            runs = r.json()["runs"]
            took = [(time.perf_counter() - t0, _server_s(r))]
            rid = target.setdefault("run", runs[-1]["id"]) if runs else None
            if rid:
                q = {"runs": rid, "keys": "metric00", "buckets": 1000}
                t1 = time.perf_counter()
                r = client.get("/series", params=q)
                r.raise_for_status()
                took.append((time.perf_counter() - t1, _server_s(r)))
            return took

        env = {**os.environ, "WISP_DIR": str(work / "runs"), **_nice(args)}
        load0 = _load()
        assert srv.proc is not None
        cpu0 = _cpu_s(srv.proc.pid)
        secs, times, ids, parts = drive(cmds, go, poll, args.poll_interval, env, apart=apart)
        cpu1 = _cpu_s(srv.proc.pid)
        load1 = _load()
        idle = idle_polls(poll)
        # every point arrived: the count of one bucket over the whole run (any --steps;
        # raw points stop at the series' 100,000 buckets)
        doc = srv.get(f"/series?runs={ids[0]}&keys=metric00&x=step&buckets=1")
        got = sum(int(s["count"]) for s in doc["series"])
        client.close()
    assert got == args.steps, f"run {ids[0]} has {got} of {args.steps} points"
    pts = args.procs * args.steps * args.metrics
    server = [sum(s or 0.0 for _, s in ps) for ps in parts]
    return {
        "secs": secs,
        "pts": pts,
        "polls": times,
        "server": server,
        "idle": idle,
        "load": f"{load0} -> {load1}",
        "cpu": (cpu1[0] - cpu0[0], cpu1[1] - cpu0[1]),
    }


def mlflow_side(args: argparse.Namespace, work: Path, url: str) -> dict[str, Any] | str:
    try:
        import httpx
        import mlflow  # noqa: F401
        from mlflow.tracking import MlflowClient
    except ImportError as exc:
        return f"skipped: mlflow is not importable ({exc})"
    started = start_mlflow_server(
        url,
        work,
        _port(),
        workers=args.workers,
        name="bench_concurrent",
        own_session=not args.one_session,
    )
    if isinstance(started, str):
        return started
    proc, base = started
    try:
        exp = MlflowClient(tracking_uri=base).create_experiment("load")
        go = work / "go-mlflow"
        sizes = [str(args.mlflow_steps), str(args.metrics)]
        cmds = [
            [sys.executable, "-c", MLFLOW_CLIENT, base, exp, str(go), *sizes]
            for _ in range(args.procs)
        ]
        client = httpx.Client(base_url=f"{base}/api/2.0/mlflow", timeout=60)
        target: dict[str, str] = {}

        def poll() -> list[Took]:
            t0 = time.perf_counter()
            r = client.post("/runs/search", json={"experiment_ids": [exp], "max_results": 50})
            r.raise_for_status()
            runs = r.json().get("runs", [])
            took: list[Took] = [(time.perf_counter() - t0, None)]
            rid = target.setdefault("run", runs[-1]["info"]["run_id"]) if runs else None
            if rid:
                q = {"run_id": rid, "metric_key": "metric00"}
                t1 = time.perf_counter()
                client.get("/metrics/get-history", params=q).raise_for_status()
                took.append((time.perf_counter() - t1, None))
            return took

        load0 = _load()
        env = {**os.environ, **_nice(args)}
        secs, times, _ids, _parts = drive(
            cmds, go, poll, args.poll_interval, env, apart=not args.one_session
        )
        load1 = _load()
        idle = idle_polls(poll)
        client.close()
        pts = args.procs * args.mlflow_steps * args.metrics
        return {
            "secs": secs,
            "pts": pts,
            "polls": times,
            "idle": idle,
            "load": f"{load0} -> {load1}",
        }
    finally:
        stop(proc)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--procs", type=int, default=16, help="concurrent runs (processes)")
    ap.add_argument("--steps", type=int, default=50_000, help="steps each wisp run logs")
    ap.add_argument("--metrics", type=int, default=10, help="keys logged per step")
    ap.add_argument("--workers", type=int, default=1, help="server worker processes (both)")
    ap.add_argument("--ingest-concurrency", type=int, help="the server's option (default: its own)")
    ap.add_argument("--ingest-processes", type=int, help="the server's option (default: its own)")
    ap.add_argument("--poll-interval", type=float, default=0.5, help="seconds between polls")
    ap.add_argument(
        "--client-nice", type=int, default=0, help="niceness of the client processes (0: as equals)"
    )
    ap.add_argument(
        "--one-session",
        action="store_true",
        help="start the server and the clients in the benchmark's session (Linux autogroup "
        "scheduling: see the module doc); by default each has a session of its own",
    )
    ap.add_argument("--mlflow-steps", type=int, default=500, help="steps each MLflow run logs")
    ap.add_argument("--no-mlflow", action="store_true")
    ap.add_argument("--pg", default=PG, help="PostgreSQL admin URL (temporary DBs are made)")
    args = ap.parse_args()

    from wisp.testing import temporary_postgres_database

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        with temporary_postgres_database(args.pg) as url:
            w = wisp_side(args, work, url)
        rate = w["pts"] / w["secs"]
        print(
            f"wisp: {args.procs} SDK processes x {args.steps:,} steps x {args.metrics} keys = "
            f"{w['pts']:,} points in {w['secs']:.1f} s -> {rate / 1e3:.0f}k points/s "
            f"(server --workers {args.workers}, --ingest-concurrency "
            f"{'default' if args.ingest_concurrency is None else args.ingest_concurrency}; "
            f"clients at nice {args.client_nice}"
            f"; {'one session' if args.one_session else 'sessions apart'}; {w['load']})"
        )
        print(f"  poll (runs list + one series) during ingest: {_ms(w['polls'])}")
        print(f"    of which inside the server (Server-Timing, both requests): {_ms(w['server'])}")
        print(f"  poll idle afterwards: {_ms(w['idle'])}")
        print(
            f"  the server's CPU over the ingest: event-loop thread {w['cpu'][0]:.2f} s, "
            f"its process {w['cpu'][1]:.2f} s (ingest processes not counted)"
        )
        busy, idle = _pct(w["polls"], 99), _pct(w["idle"], 99)
        print(
            f"  targets: ingest {rate / 1e3:.0f}k points/s [>= 400k]; poll p99 during ingest "
            f"{busy * 1e3:.0f} ms [<= 250 ms]; p99 during ingest / idle {busy / idle:.1f}x [<= 3x]"
        )
        # with ~30 polls a p99 is the slowest one: say how many polls each target leaves out
        over = sum(t > 0.25 for t in w["polls"]), sum(t > 3 * idle for t in w["polls"])
        n = len(w["polls"])
        print(f"  polls over 250 ms: {over[0]} of {n}; over 3x the idle p99: {over[1]} of {n}")
        if args.no_mlflow:
            print("mlflow: skipped (--no-mlflow)")
            return
        with temporary_postgres_database(args.pg) as ml_url:
            m = mlflow_side(args, work, ml_url)
        if isinstance(m, str):
            print(f"mlflow: {m}")
            return
        m_rate = m["pts"] / m["secs"]
        print(
            f"mlflow: {args.procs} processes x {args.mlflow_steps:,} steps x {args.metrics} keys "
            f"= {m['pts']:,} points in {m['secs']:.1f} s -> {m_rate / 1e3:.1f}k points/s "
            f"({m['load']})"
        )
        print(f"  poll (runs/search + get-history) during ingest: {_ms(m['polls'])}")
        print(f"  poll idle afterwards: {_ms(m['idle'])}")
        print(f"wisp ingests {rate / m_rate:.0f}x MLflow's points/s")


if __name__ == "__main__":
    main()

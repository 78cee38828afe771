"""Fork safety: multiprocessing pools of every start method, and os.fork() under load."""

from __future__ import annotations

from pathlib import Path

import pytest

import wisp

from ._proc import only_run, rows, run_script

POOL_SCRIPT = """
import multiprocessing as mp
import sys

import wisp


def task(i):
    # fork: the parent's run, in a segment file of this worker's own; spawn/forkserver: no run
    wisp.log({"child": i})
    return i * i


if __name__ == "__main__":
    method = sys.argv[1]
    run = wisp.init(project="pool", config={"method": "same"})
    for i in range(50):
        wisp.log({"loss": 1.0 / (i + 1), "tag": "x" * (i % 7)})
    print("start method untouched:", mp.get_start_method(allow_none=True) is None)
    if method == "none":
        results = [task_i * task_i for task_i in range(100)]
    else:
        pool = mp.get_context(method).Pool(2)
        results = pool.map(task, range(100), chunksize=5)
        pool.close()
        pool.join()
    for r in results:
        wisp.log({"result": r})
    run.summary["total"] = sum(results)
    run.finish()
"""


def _pool_run(base: Path, method: str) -> tuple[list[dict[str, object]], list[object]]:
    """The parent's own rows, and the ``child`` values the merged run holds."""
    base.mkdir()
    proc = run_script(base, POOL_SCRIPT, method, timeout=90)
    assert proc.returncode == 0, proc.stderr
    assert "start method untouched: True" in proc.stdout
    data = only_run(base)
    assert data.state == "finished"
    assert data.ignored_bytes == 0
    assert data.summary["total"] == sum(i * i for i in range(100))
    own = wisp.open_run(data.path)  # the run file alone
    return rows(own), [r["child"] for r in data.history() if "child" in r]


@pytest.mark.parametrize("method", ["fork", "forkserver", "spawn"])
def test_pool_children_logging_leave_parent_run_identical(tmp_path: Path, method: str) -> None:
    """A Pool of 100 tasks whose children call wisp.log neither hangs nor changes the parent's values; fork workers' values are all kept, at steps of their own."""
    baseline, _ = _pool_run(tmp_path / "baseline", "none")
    with_pool, children = _pool_run(tmp_path / method, method)
    assert len(baseline) == 150
    if method == "fork":  # the workers took steps 50..149 of the run's one counter
        assert [r["_step"] for r in with_pool] == [*range(50), *range(150, 250)]
        assert [{**r, "_step": 0} for r in with_pool] == [{**r, "_step": 0} for r in baseline]
    else:
        assert with_pool == baseline
    assert sorted(children) == (list(range(100)) if method == "fork" else [])


FORK_STRESS = """
import os
import time

import wisp

run = wisp.init(project="stress", settings={"flush_interval": 0.01})
payload = "y" * 200
worst = 0.0
step = 0
for n in range(200):
    for _ in range(300):  # keep the writer busy draining while we fork
        wisp.log({"n": n, "step_value": step, "text": payload})
        step += 1
    t0 = time.monotonic()
    pid = os.fork()
    if pid == 0:
        wisp.log({"n": -1})  # the parent's run: a segment file of the child's own
        if n % 50 == 0:  # a fresh, independent run of the child's own
            child = wisp.init(project="child", settings={"signals": False})
            child.log({"child_of": n})
            child.finish()
        os._exit(0)
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() - t0 > 5:
            os.kill(pid, 9)
            raise SystemExit(f"child {n} did not exit within 5 s")
        time.sleep(0.001)
    assert os.waitstatus_to_exitcode(status) == 0, status
    worst = max(worst, time.monotonic() - t0)
run.finish()
print(f"forks=200 worst_child_seconds={worst:.3f} rows={step}")
"""


def test_200_forks_while_writer_busy_every_child_exits(tmp_path: Path) -> None:
    """200 os.fork() calls taken while the writer drains: each child exits within 5 s, no torn record."""
    proc = run_script(tmp_path, FORK_STRESS, timeout=240)
    assert proc.returncode == 0, proc.stderr
    assert "forks=200" in proc.stdout
    every = [wisp.open_run(d) for d in (tmp_path / "wisp").glob("run-*")]
    parents = [r for r in every if r.project == "stress"]
    children = [r for r in every if r.project == "child"]
    assert len(parents) == 1 and len(children) == 4, every
    data = parents[0]
    assert data.state == "finished" and data.ignored_bytes == 0
    values = [r["step_value"] for r in data.history() if "step_value" in r]
    assert values == list(range(200 * 300))  # nothing lost or duplicated
    # children's rows are in their own segments, never in the parent's file
    assert all("step_value" in r for r in wisp.open_run(data.path).history())
    for child in children:
        assert child.state == "finished"
        assert [r["child_of"] for r in child.history()] in ([0], [50], [100], [150])


FORK_VALUES = """
import multiprocessing as mp
import os
import sys

import wisp


def task(i):
    wisp.log({"task": i})
    return i


if __name__ == "__main__":
    run = wisp.init(project="forks", settings={"flush_interval": 0.05})
    for i in range(10):
        wisp.log({"loss": float(i)})
    pids = []
    for c in range(20):
        pid = os.fork()
        if pid == 0:
            wisp.log({"child": c})
            if c % 2:
                wisp.flush()  # then os._exit: nothing flushed is lost
                os._exit(0)
            sys.exit(0)  # the exit hook closes the child's segment
        pids.append(pid)
    for pid in pids:
        assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0
    pool = mp.get_context("fork").Pool(4)
    assert sorted(pool.map(task, range(100))) == list(range(100))
    pool.close()
    pool.join()
    wisp.log({"loss": 10.0})
    run.finish()
    print("run dir:", run.dir)
"""


def test_forked_children_and_pool_workers_record_every_value(tmp_path: Path) -> None:
    """20 os.fork() children (half leaving by os._exit after wisp.flush()) and Pool(4).map over 100 tasks: 20/20 and 100/100 recorded."""
    proc = run_script(tmp_path, FORK_VALUES, timeout=120)
    assert proc.returncode == 0, proc.stderr
    data = only_run(tmp_path)
    assert data.state == "finished" and data.ignored_bytes == 0
    got = list(data.history())
    assert sorted(r["child"] for r in got if "child" in r) == list(range(20))
    assert sorted(r["task"] for r in got if "task" in r) == list(range(100))
    assert [r["loss"] for r in got if "loss" in r] == [float(i) for i in range(11)]
    own = wisp.open_run(data.path)  # the parent's file holds only the parent's rows
    assert [set(r) - {"_step", "_timestamp"} for r in own.history()] == [{"loss"}] * 11
    assert len(data.forks) >= 21 and data.summary == own.summary


POOL_EXIT = """
import multiprocessing as mp
import os
import signal

import wisp


def task(i):
    return i


def disposition(_):
    return signal.getsignal(signal.SIGTERM) == signal.SIG_DFL, (
        signal.getsignal(signal.SIGINT) is signal.default_int_handler
    )


if __name__ == "__main__":
    run = wisp.init(project="pools")  # signals on: wisp's handlers in this process
    print("parent hooked:", signal.getsignal(signal.SIGTERM) != signal.SIG_DFL)
    with mp.get_context("fork").Pool(2) as pool:
        print("worker handlers restored:", set(pool.map(disposition, range(8))))
    for n in range(100):  # each `with` ends in terminate(): SIGTERM to workers waiting
        with mp.get_context("fork").Pool(4) as pool:
            pool.map(task, range(20))
        wisp.log({"pools": n})
    run.finish()
    print("done")
"""


def test_with_pool_exits_every_time_when_wisp_hooks_sigterm(tmp_path: Path) -> None:
    """Forked workers get the pre-wisp SIGTERM/SIGINT handlers back, so 100 `with Pool(4)` blocks (each ending in terminate()) all exit; an inherited Python-level handler let a worker sleep through its SIGTERM and hang the pool's exit."""
    proc = run_script(tmp_path, POOL_EXIT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "parent hooked: True" in proc.stdout
    assert "worker handlers restored: {(True, True)}" in proc.stdout
    assert proc.stdout.rstrip().endswith("done")

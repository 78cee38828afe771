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
    wisp.log({"child": i})  # parent's run (fork) or no run (spawn/forkserver): a no-op
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
        with mp.get_context(method).Pool(2) as pool:
            results = pool.map(task, range(100), chunksize=5)
    for r in results:
        wisp.log({"result": r})
    run.summary["total"] = sum(results)
    run.finish()
"""


def _pool_run(base: Path, method: str) -> list[dict[str, object]]:
    base.mkdir()
    proc = run_script(base, POOL_SCRIPT, method, timeout=90)
    assert proc.returncode == 0, proc.stderr
    assert "start method untouched: True" in proc.stdout
    data = only_run(base)
    assert data.state == "finished"
    assert data.ignored_bytes == 0
    assert data.summary["total"] == sum(i * i for i in range(100))
    return rows(data)


@pytest.mark.parametrize("method", ["fork", "forkserver", "spawn"])
def test_pool_children_logging_leave_parent_run_identical(tmp_path: Path, method: str) -> None:
    """A Pool of 100 tasks whose children call wisp.log neither hangs nor changes the parent's run."""
    baseline = _pool_run(tmp_path / "baseline", "none")
    with_pool = _pool_run(tmp_path / method, method)
    assert len(baseline) == 150
    assert with_pool == baseline


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
        wisp.log({"n": -1})  # the parent's run: an inert no-op in the child
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
    values = [r["step_value"] for r in data.history()]
    assert values == list(range(200 * 300))  # nothing lost, duplicated or from a child
    for child in children:
        assert child.state == "finished"
        assert [r["child_of"] for r in child.history()] in ([0], [50], [100], [150])

"""Nothing lost, the last cases (issue 32), each against real SQLite and PostgreSQL servers.

A step at the edge of the range, a short disk-full burst, workers sharing a key, forked
children that leave with ``os._exit``, and one run id started twice: every value that reached
``log()`` is in the run file and on the server (or was refused at the call, naming it), and
the counts agree exactly.
"""

from __future__ import annotations

import collections
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from tests.safety._proc import tmpfs

import wisp
from wisp.errors import UsageError
from wisp.testing import Server

pytestmark = pytest.mark.timeout(300)


def _settings(server: Server, base: Path, **extra: Any) -> dict[str, Any]:
    return {
        "server_url": server.url,
        "api_key": server.key,
        "dir": str(base),
        "flush_interval": 0.05,
        "git": False,
        "system_metrics": False,
        "console": "off",
        **extra,
    }


def _env(server: Server, base: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WISP_", "WANDB_"))}
    return {
        **env,
        "WISP_MODE": "online",
        "WISP_SERVER_URL": server.url,
        "WISP_API_KEY": server.key,
        "WISP_DIR": str(base),
        "WISP_GIT": "false",
        "WISP_SYSTEM_METRICS": "false",
        "WISP_CONSOLE": "off",
        "WISP_FLUSH_INTERVAL": "0.05",
    }


def _script(
    base: Path, server: Server, code: str, *args: str, env: dict[str, str] | None = None
) -> subprocess.Popen[str]:
    """``code`` as a script in a real interpreter (``-W error``), uploading to ``server``."""
    path = base / f"script{time.monotonic_ns()}.py"
    path.write_text(textwrap.dedent(code))
    return subprocess.Popen(
        [sys.executable, "-X", "faulthandler", "-W", "error", str(path), *args],
        cwd=base,
        env={**_env(server, base), **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _done(proc: subprocess.Popen[str], timeout: float = 120) -> tuple[int, str, str]:
    """The script's exit code and output; one that outlives ``timeout`` is killed (its pipes
    closed here, never left to a later test's garbage collection) and fails with its stderr."""
    with proc:
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGABRT)  # -X faulthandler: every thread's stack to stderr
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
            out, err = proc.communicate()
            pytest.fail(f"the script ran past {timeout} s; stdout:\n{out}\nstderr:\n{err}")
    return proc.returncode, out, err


def _only_run_dir(base: Path) -> Path:
    (run_dir,) = sorted((base / "wisp").glob("run-*"))
    return run_dir


def _local(run_dir: Path | str, key: str) -> list[tuple[int, Any]]:
    return [(r["_step"], r[key]) for r in wisp.open_run(run_dir).history() if key in r]


def _history_on_server(server: Server, run_id: str, key: str) -> list[tuple[int, Any]]:
    """(step, value) of ``key`` from the server's history export (JSON lines), not the series."""
    req = urllib.request.Request(
        f"{server.url}/api/v1/runs/{run_id}/history?keys={key}",
        headers={"Authorization": f"Bearer {server.key}"},
    )
    with urllib.request.urlopen(req, timeout=30) as resp:
        rows = [json.loads(line) for line in resp.read().splitlines() if line.strip()]
    return [(r["_step"], r[key]) for r in rows if r.get(key) is not None]


def test_a_step_past_the_range_is_refused_at_the_call_and_poisons_nothing(
    server: Server, tmp_path: Path, no_run: None
) -> None:
    """After step=2**62-1 the next step is refused at log() naming the key and the rule; the 101 good points reach file and server, the run finishes."""
    run = wisp.init(project="edge", settings=_settings(server, tmp_path))
    for i in range(100):
        run.log({"g": float(i)})
    run.log({"g": -1.0}, step=2**62 - 1, commit=True)
    for i in range(100):
        with pytest.raises(UsageError, match=r"'g'.*step must be >= 0 and < 2\*\*62"):
            run.log({"g": float(i)})
    run.finish()
    expected = [(i, float(i)) for i in range(100)] + [(2**62 - 1, -1.0)]
    assert _local(run.dir, "g") == expected
    assert server.points(run.id, "g") == expected
    doc = server.get(f"/runs/{run.id}")
    assert doc["state"] == "finished" and doc.get("rejected", 0) == 0


def test_a_short_disk_full_burst_keeps_every_row_within_the_memory_budget(
    server: Server, tmp_path: Path, no_run: None
) -> None:
    """On a 6 MiB tmpfs: 12,000 rows of 5 floats while it is full, then 12,000 after: all rows in the file and on the server, held memory under the budget."""
    budget = 4 * 1024 * 1024
    with tmpfs(tmp_path / "small", "6m") as disk:
        filler = disk / "filler"
        filler.write_bytes(b"\0" * (5 * 1024 * 1024 + 900 * 1024))
        run = wisp.init(
            project="burst",
            settings=_settings(server, disk, disk_full_memory=budget, finish_timeout=20),
        )
        w = run.writer
        assert w is not None
        n = 0
        deadline = time.monotonic() + 60
        while w.stalled is None and time.monotonic() < deadline:
            run.log({f"k{j}": float(n + j) for j in range(5)})
            n += 1
            if n % 1000 == 0:
                time.sleep(0.01)  # let the writer reach the disk
        assert w.stalled is not None, "the disk never filled"
        for _ in range(12_000):
            run.log({f"k{j}": float(n + j) for j in range(5)})
            n += 1
        deadline = time.monotonic() + 30  # the writer encodes the held rows into memory
        while w.held_peak == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert w.rows_dropped == 0 and 0 < w.held_peak <= budget
        filler.unlink()  # space returns
        for _ in range(12_000):
            run.log({f"k{j}": float(n + j) for j in range(5)})
            n += 1
        run.finish()  # no WriterError: nothing was lost
        assert w.rows_lost == 0 and run.failures.get("disk full") == 1
        local = _local(run.dir, "k0")
        assert local == [(i, float(i)) for i in range(n)]
        assert server.points(run.id, "k0") == local
        assert server.points(run.id, "k4") == _local(run.dir, "k4")


def test_past_the_budget_rows_are_dropped_counted_and_memory_stays_bounded(
    tmp_path: Path, no_run: None
) -> None:
    """With a 256 KiB budget, 100,000 rows logged while the disk is full: held bytes stay under the budget, RSS growth stays small, every row is either in the file or counted as lost."""
    budget = 256 * 1024
    with tmpfs(tmp_path / "small", "2m") as disk:
        filler = disk / "filler"
        filler.write_bytes(b"\0" * (2 * 1024 * 1024 - 64 * 1024))
        run = wisp.init(
            project="budget",
            dir=str(disk),
            settings={"git": False, "disk_full_memory": budget, "finish_timeout": 4},
        )
        w = run.writer
        assert w is not None
        n = 0
        deadline = time.monotonic() + 60
        while w.stalled is None and time.monotonic() < deadline:
            run.log({"a": float(n), "b": 1.0})
            n += 1
        assert w.stalled is not None, "the disk never filled"
        rss0 = _rss_bytes()
        for _ in range(100_000):
            run.log({"a": float(n), "b": 1.0})
            n += 1
        time.sleep(0.3)
        assert w.held_peak <= budget + 256 * 64  # the budget and at most one slice over
        assert len(w.queue) <= run.settings.queue_size
        # 100,000 rows held as Python dicts would be ~30 MB; held encoded and capped they are not
        assert _rss_bytes() - rss0 < 16 * 1024 * 1024
        filler.unlink()
        with pytest.raises(wisp.errors.WriterError, match="rows lost to a full disk"):
            run.finish()
        kept = len(_local(run.dir, "a"))
        assert kept + w.rows_lost == n and w.rows_dropped > 0


def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


POOL = """
import multiprocessing as mp
import wisp


def task(i):
    wisp.log({"shared": i})
    return i


if __name__ == "__main__":
    run = wisp.init(project="pool")
    for i in range(10):
        wisp.log({"loss": float(i)})
    with mp.get_context("fork").Pool(4) as pool:
        pool.map(task, range(100))
    for i in range(10):
        wisp.log({"loss": float(10 + i)})
    run.finish()
    print(run.id)
"""


def test_workers_sharing_a_key_keep_every_value_alike_in_file_and_server(
    server: Server, tmp_path: Path
) -> None:
    """100 Pool(4) tasks log one key to the parent's run: 100 values at 100 distinct steps, the same in the merged file, the server's series, history and export."""
    code, out, err = _done(_script(tmp_path, server, POOL))
    assert code == 0, err
    run_id = out.split()[-1]
    run_dir = _only_run_dir(tmp_path)
    local = _local(run_dir, "shared")
    assert sorted(v for _, v in local) == list(range(100))
    assert len({s for s, _ in local}) == 100  # one step per value, across the segments
    steps = collections.Counter(r["_step"] for r in wisp.open_run(run_dir).history())
    assert max(steps.values()) == 1  # no step shared by two rows of any writer
    assert sorted(server.points(run_id, "shared")) == sorted(local)
    assert sorted(_history_on_server(server, run_id, "shared")) == sorted(local)
    api = wisp.Api(server_url=server.url, api_key=server.key)
    try:
        scanned = api.run(f"pool/{run_id}").scan_history(keys=["shared"])
        assert sorted((r["_step"], r["shared"]) for r in scanned) == sorted(local)
    finally:
        api.close()
    assert len(server.points(run_id, "loss")) == 20


FORKS = """
import os
import wisp

run = wisp.init(project="forks")
pids = []
for i in range(20):
    pid = os.fork()
    if pid == 0:
        wisp.log({"child": float(i)})
        if i == 0:  # one key twice at one explicit step: one value, the later, as in a parent
            wisp.log({"twice": 1.0}, step=10**6)
            wisp.log({"twice": 2.0, "also": 3.0}, step=10**6)
        os._exit(0)
    pids.append(pid)
for pid in pids:
    os.waitpid(pid, 0)
run.finish()
print(run.id)
"""


def test_forked_children_that_leave_with_os_exit_keep_their_values(
    server: Server, tmp_path: Path
) -> None:
    """20 os.fork() children each log one value and call os._exit(0): 20 of 20 in the file and on the server; a key logged twice at one step reads as one value in both."""
    code, out, err = _done(_script(tmp_path, server, FORKS))
    assert code == 0, err
    run_id = out.split()[-1]
    run_dir = _only_run_dir(tmp_path)
    local = _local(run_dir, "child")
    assert sorted(v for _, v in local) == [float(i) for i in range(20)]
    assert sorted(server.points(run_id, "child")) == sorted(local)
    assert _local(run_dir, "twice") == server.points(run_id, "twice") == [(10**6, 2.0)]
    assert _local(run_dir, "also") == server.points(run_id, "also") == [(10**6, 3.0)]


TWICE = """
import sys
import time
import wisp

run = wisp.init(project="twice")
print("started", flush=True)
for i in range(30):
    wisp.log({"x": float(i)})
    time.sleep(float(sys.argv[1]))
run.finish()
"""


def test_the_same_run_id_started_twice_is_refused_naming_the_other_process(
    server: Server, tmp_path: Path
) -> None:
    """A second process with the same WISP_RUN_ID while the first writes is refused at init() naming its pid; the run holds 30 rows, locally and on the server."""
    env_id = {"WISP_RUN_ID": "twice-1"}
    first = _script(tmp_path, server, TWICE, "0.05", env=env_id)
    assert first.stdout is not None and first.stdout.readline().strip() == "started"
    second = _script(tmp_path, server, TWICE, "0", env=env_id)
    code2, _, err2 = _done(second)
    code1, _, err1 = _done(first)
    assert code1 == 0, err1
    assert code2 != 0 and "RunStateError" in err2
    assert f"process {first.pid} on" in err2 and "twice-1" in err2
    assert "?" not in err2.replace("resume='allow'))", "")  # never a '?' for a run id
    local = _local(_only_run_dir(tmp_path), "x")
    assert local == [(i, float(i)) for i in range(30)]
    assert server.points("twice-1", "x") == local

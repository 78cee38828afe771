"""Exit paths: normal exit, uncaught exceptions, signals, kill -9, and a bounded exit."""

from __future__ import annotations

import random
import signal
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

import wisp
from tests._procs import reaped, stop
from wisp._runfile import scan

from ._proc import child_env, only_run, run_script

SCRIPT = """
import os
import signal
import sys
import time

import wisp

mode = sys.argv[1]
if mode == "user-handler":
    def handler(signum, frame):
        print("user handler ran", flush=True)
    signal.signal(signal.SIGTERM, handler)
run = wisp.init(project="exit")
for i in range(100):
    wisp.log({"i": i})
if mode == "exception":
    raise ValueError("boom")
if mode == "sigterm":
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(30)
if mode == "user-handler":
    os.kill(os.getpid(), signal.SIGTERM)
    wisp.log({"i": 100})  # the run stays usable after the user's handler
    run.finish()
if mode == "sigint-caught":
    try:
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(30)
    except KeyboardInterrupt:
        print("caught", flush=True)
    wisp.log({"i": 100})
    run.finish()
if mode == "sigint":
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(30)
"""

CASES = {
    # mode: (process exit code, run state, run exit code, rows)
    "normal": (0, "finished", 0, 100),
    "exception": (1, "failed", 1, 100),
    "sigterm": (-signal.SIGTERM, "killed", 128 + signal.SIGTERM, 100),
    "user-handler": (0, "finished", 0, 101),
    "sigint": (-signal.SIGINT, "killed", 130, 100),  # Python dies of SIGINT, as it should
    "sigint-caught": (0, "finished", 0, 101),
}


@pytest.mark.parametrize("mode", sorted(CASES))
def test_exit_path_sets_run_state(tmp_path: Path, mode: str) -> None:
    """Each way a script ends leaves the run in the matching state, and signals still act."""
    proc = run_script(tmp_path, SCRIPT, mode, timeout=30)
    code, state, run_code, n = CASES[mode]
    assert proc.returncode == code, proc.stderr
    data = only_run(tmp_path)
    assert (data.state, data.finish and data.finish["exit_code"]) == (state, run_code)
    assert [r["i"] for r in data.history()] == list(range(n))
    if mode == "user-handler":
        assert "user handler ran" in proc.stdout
    if mode == "sigint-caught":
        assert "caught" in proc.stdout


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # as nohup or a background job starts it


@pytest.mark.slow
def test_sigint_tests_pass_when_the_suite_starts_with_sigint_ignored(tmp_path: Path) -> None:
    """The SIGINT tests pass when pytest itself was started from a shell that ignores SIGINT (tests/conftest.py restores it for the children)."""
    root = Path(__file__).resolve().parents[2]
    test = f"{__file__}::test_exit_path_sets_run_state"
    args = ["-q", "-p", "no:cacheprovider", "-k", "sigint", test, "--rootdir", str(root)]
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", *args],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=240,
        preexec_fn=_ignore_sigint,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "2 passed" in proc.stdout


STUCK = """
import threading
import wisp
from wisp._values import Deferred

class Stuck(Deferred):
    def resolve(self, ctx):
        threading.Event().wait()  # a value that never resolves: the writer is stuck

run = wisp.init(project="stuck", settings={"exit_timeout": 1.0})
wisp.log({"a": 1})
wisp.log({"b": Stuck()})
"""


def test_exit_with_stuck_writer_is_bounded(tmp_path: Path) -> None:
    """A writer that never finishes delays interpreter exit by exit_timeout, not forever."""
    t0 = time.monotonic()
    proc = run_script(tmp_path, STUCK, timeout=20)
    elapsed = time.monotonic() - t0
    assert proc.returncode == 0
    assert "did not finish cleanly at exit" in proc.stderr
    assert elapsed < 8, elapsed


KILLED = """
import sys
import wisp

run = wisp.init(project="kill9", settings={"flush_interval": 0.005})
print("ready", flush=True)
i = 0
while True:
    wisp.log({"i": i, "sq": i * i, "text": "z" * (i % 300)})
    i += 1
"""


def test_kill_9_leaves_readable_prefix(tmp_path: Path) -> None:
    """kill -9 at 20 random moments: every run file reads back a clean prefix, shown crashed."""
    rng = random.Random(1234)
    script = tmp_path / "killed.py"
    script.write_text(KILLED)
    for n in range(20):
        base = tmp_path / f"k{n}"
        base.mkdir()
        proc = subprocess.Popen(
            [sys.executable, "-W", "error", str(script)],
            cwd=base,
            env=child_env(base),
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert proc.stdout is not None
            assert proc.stdout.readline().strip() == "ready"
            time.sleep(rng.uniform(0.0, 0.4))
            proc.kill()
            assert proc.wait(timeout=10) == -signal.SIGKILL
        finally:
            stop(proc)
        data = only_run(base)
        assert data.state == "crashed" and data.finish is None
        got = list(data.history())
        assert not got or data.metadata["run_id"]  # rows never come without the run record
        assert [r["i"] for r in got] == list(range(len(got)))
        for r in got:
            assert r["sq"] == r["i"] ** 2 and r["text"] == "z" * (r["i"] % 300)
        # bytes not read back can only be a torn last record (it runs past the end of the
        # file), never a complete record that fails its CRC
        raw = (data.path and Path(data.path).read_bytes()) or b""
        info = scan(raw)
        if info.ignored >= 9:
            (length,) = struct.unpack_from("<I", raw, info.valid_end)
            assert info.valid_end + 9 + length > info.size


def test_kill_9_prefix_is_not_trivial(tmp_path: Path) -> None:
    """A process killed well after it started has flushed rows that read back."""
    script = tmp_path / "killed.py"
    script.write_text(KILLED)
    proc = subprocess.Popen(
        [sys.executable, str(script)], cwd=tmp_path, env=child_env(tmp_path), stdout=subprocess.PIPE
    )
    with reaped(proc):
        assert proc.stdout is not None and proc.stdout.readline().strip() == b"ready"
        time.sleep(0.5)
    data = wisp.open_run(next((tmp_path / "wisp").glob("run-*")))
    assert len(list(data.history())) > 1000

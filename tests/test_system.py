"""System metrics sampler (src/wisp/_system.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
from typing import Any

import pytest

from tests._procs import reaped
from wisp._system import SystemSampler


def test_sampler_reports_process_memory_and_rates(tmp_path: Any) -> None:
    """Two samples yield RSS, memory, disk usage and per-second rates computed over the injected clock."""
    out: list[dict[str, Any]] = []
    clock = iter([100.0, 101.0])
    s = SystemSampler(
        out.append,
        disk_path=str(tmp_path),
        get_time=lambda: 5.0,
        get_monotonic=lambda: next(clock),
        gpus=False,
    )
    s.sample_once()
    s.sample_once()
    first, second = out
    assert first["ts"] == 5.0
    assert "system/cpu_percent" not in first["values"]  # no rate without a previous sample
    v = second["values"]
    assert 1.0 < v["system/rss_mb"] < 100_000
    assert 0.0 <= v["system/mem_percent"] <= 100.0
    assert 0.0 < v["system/disk_used_percent"] <= 100.0
    assert v["system/cpu_percent"] >= 0.0
    assert v["system/net_recv_mbps"] >= 0.0
    assert all(k.startswith("system/") for k in v)


def test_cpu_percent_matches_cpu_time_used() -> None:
    """CPU % between two samples equals this process's CPU time over wall time (busy loop)."""
    import time

    out: list[dict[str, Any]] = []
    s = SystemSampler(out.append, gpus=False)
    s.sample_once()
    cpu0, wall0 = time.process_time(), time.monotonic()
    x = 0
    while time.process_time() - cpu0 < 0.3:
        x += 1
    s.sample_once()
    expected = 100.0 * (time.process_time() - cpu0) / (time.monotonic() - wall0)
    assert out[-1]["values"]["system/cpu_percent"] == pytest.approx(expected, abs=12.0)


def test_rss_includes_children() -> None:
    """A child process holding 200 MiB shows up in the RSS of the parent's sample."""
    out: list[dict[str, Any]] = []
    s = SystemSampler(out.append, gpus=False)
    base = s.sample_once()
    assert base is not None
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; b = bytearray(200 * 1024 * 1024); print('ready', flush=True); sys.stdin.read()",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    with reaped(child):
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "ready"
        after = s.sample_once()
        child.communicate("", timeout=30)
    assert after is not None
    grown = after["values"]["system/rss_mb"] - base["values"]["system/rss_mb"]
    assert grown > 150


def test_failing_emit_is_counted_not_raised() -> None:
    """An exception in the sink is counted and the sampler keeps going."""

    def bad(_: dict[str, Any]) -> None:
        raise OSError("disk gone")

    s = SystemSampler(bad, gpus=False)
    assert s.sample_once() is None
    assert s.sample_once() is None
    assert s.failures == 2


def test_no_cuda_context_with_torch(tmp_path: Any) -> None:
    """With torch imported, a run sampling system metrics never initialises CUDA nor loads libcuda."""
    try:
        import torch  # noqa: F401
    except ImportError:
        if os.environ.get("CI"):
            pytest.fail("torch is required in CI (pip install -e '.[test-cli]')")
        pytest.skip("torch not installed")
    script = textwrap.dedent(f"""
        import time, torch, wisp
        before = torch.cuda.is_initialized()
        run = wisp.init(project="p", dir={str(tmp_path)!r},
                        settings={{"system_interval": 0.02, "console": "off", "system_metrics": True}},
                        )
        time.sleep(0.3)
        run.finish()
        maps = open("/proc/self/maps").read()
        print(before, torch.cuda.is_initialized(), "libcuda" in maps)
        d = wisp.open_run(run.dir)
        print(len(d.records["system"]))
    """)
    res = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert res.returncode == 0, res.stderr
    flags, count = res.stdout.split("\n")[:2]
    assert flags == "False False False"
    assert int(count) >= 3


def test_a_run_samples_on_its_writer_thread_with_no_thread_of_its_own(tmp_path: Any) -> None:
    """With system metrics on, a run starts one wisp thread (the writer), and the samples it takes there reach the run file."""
    import time

    import wisp

    run = wisp.init(
        project="p",
        dir=str(tmp_path),
        settings={
            "system_metrics": True,
            "system_interval": 0.02,
            "console": "off",
            "git": False,
            "silent": True,
        },
    )
    try:
        threads = sorted(t.name for t in threading.enumerate() if t.name.startswith("wisp-"))
        deadline = time.monotonic() + 30
        while run.writer is not None and run.writer.records_written < 4:
            assert time.monotonic() < deadline, "no system samples within 30 s"
            time.sleep(0.01)
    finally:
        run.finish()
    assert threads == ["wisp-writer"]
    assert len(wisp.open_run(run.dir).records["system"]) >= 2

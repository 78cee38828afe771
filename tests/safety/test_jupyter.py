"""A real IPython kernel, driven with jupyter_client: notebook behaviours."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import wisp

from ._proc import child_env


@pytest.fixture
def kernel(tmp_path: Path) -> Iterator[Any]:
    from jupyter_client.manager import start_new_kernel

    env = child_env(tmp_path)
    km, kc = start_new_kernel(kernel_name="python3", cwd=str(tmp_path), env=env, startup_timeout=60)
    try:
        yield km, kc
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def run_cell(kc: Any, code: str, timeout: float = 60) -> tuple[str, dict[str, Any]]:
    """Execute ``code``; return (stdout text, execute_reply content): stderr (wisp's own
    "where the run went" lines) is left out."""
    out: list[str] = []

    def on_output(msg: dict[str, Any]) -> None:
        if msg["msg_type"] == "stream" and msg["content"]["name"] == "stdout":
            out.append(msg["content"]["text"])

    reply = kc.execute_interactive(code, timeout=timeout, output_hook=on_output)
    return "".join(out), reply["content"]


def test_kernel_rerun_init_interrupt_and_memory(kernel: Any, tmp_path: Path) -> None:
    """High-rate logging keeps the kernel alive with bounded memory; re-init and interrupts are safe."""
    km, kc = kernel
    out, reply = run_cell(
        kc,
        "import wisp, time\n"
        "callbacks_before = {k: list(v) for k, v in get_ipython().events.callbacks.items()}\n"
        "run1 = wisp.init(project='nb')\n"
        "print(type(run1._repr_html_()).__name__, run1.id in run1._repr_html_())\n"
        "print(callbacks_before == {k: list(v) for k, v in get_ipython().events.callbacks.items()})\n",
    )
    assert reply["status"] == "ok", reply
    assert out.split() == ["str", "True", "True"]  # an HTML repr; no IPython event hooks

    # 10 s of high-rate logging: memory must level off (the queue is bounded), the kernel lives
    out, reply = run_cell(
        kc,
        "def rss():\n"
        "    for line in open('/proc/self/status'):\n"
        "        if line.startswith('VmRSS'):\n"
        "            return int(line.split()[1]) // 1024\n"
        "samples, n, t0 = [], 0, time.monotonic()\n"
        "while time.monotonic() - t0 < 10:\n"
        "    for _ in range(1000):\n"
        "        wisp.log({'loss': n * 0.5, 'acc': 1.0 / (n + 1)}); n += 1\n"
        "    if len(samples) < (time.monotonic() - t0) * 4:\n"
        "        samples.append(rss())\n"
        "print(n, len(run1._queue), samples[4], max(samples[4:]))\n",
        timeout=90,
    )
    assert reply["status"] == "ok", reply
    n, queued, rss_1s, rss_max = map(int, out.split())
    assert n > 20_000
    assert queued <= 10_000  # the queue never grows past its bound
    assert rss_max - rss_1s < 64, (rss_1s, rss_max)
    assert km.is_alive()

    # re-running the init cell finishes the previous run and starts a new one
    out, reply = run_cell(
        kc,
        "old = run1\nrun1 = wisp.init(project='nb')\nprint(old.state, run1.state, wisp.run is run1)\n",
    )
    assert reply["status"] == "ok", reply
    assert out.split() == ["finished", "running", "True"]

    # interrupt a cell mid-loop; the run stays usable and finishable
    msg_id = kc.execute("i = 0\nwhile True:\n    wisp.log({'x': i}); i += 1\n")
    time.sleep(1.5)
    km.interrupt_kernel()
    reply = kc.get_shell_msg(timeout=30)
    while reply["parent_header"].get("msg_id") != msg_id:
        reply = kc.get_shell_msg(timeout=30)
    assert reply["content"]["status"] == "error"
    assert reply["content"]["ename"] == "KeyboardInterrupt"
    out, reply = run_cell(
        kc, "wisp.log({'after': 1})\nrun1.finish()\nprint(run1.state, run1.dir, i)\n"
    )
    assert reply["status"] == "ok", reply
    state, run_dir, last_i = out.split()
    assert state == "finished"
    assert km.is_alive()

    data = wisp.open_run(run_dir)
    assert data.state == "finished"
    xs = [r["x"] for r in data.history() if "x" in r]
    assert xs == list(range(len(xs))) and len(xs) >= int(last_i) - 1
    assert list(data.history())[-1].get("after") == 1

"""System-metrics sampler and console capture overhead.

Prints: the CPU cost of one sample (p50/p99), the sampler's CPU use as % of one
core at the default 10 s interval and at 1 s (derived from the per-sample cost)
and at 0.1 s (measured: a live sampler thread for a few seconds, against an
idle baseline in the same process), and the cost of a captured print() vs an
uncaptured one.
"""

from __future__ import annotations

import io
import os
import statistics
import sys
import time

from wisp._console import ConsoleCapture, StreamProxy
from wisp._system import SystemSampler


def per_sample_cost(n: int = 200) -> list[float]:
    sink: list[object] = []
    s = SystemSampler(sink.append, disk_path=".", gpus=True)
    s.sample_once()
    costs = []
    for _ in range(n):
        t = time.thread_time()
        s.sample_once()
        costs.append(time.thread_time() - t)
    s.stop()
    return costs


def process_cpu() -> float:
    t = os.times()
    return t.user + t.system


def live_overhead(interval: float, seconds: float) -> tuple[float, int]:
    """Process CPU % of one core with a sampler thread running, minus an idle baseline."""
    c0, w0 = process_cpu(), time.monotonic()
    time.sleep(seconds)
    idle = (process_cpu() - c0) / (time.monotonic() - w0)
    sink: list[object] = []
    s = SystemSampler(sink.append, interval=interval, disk_path=".")
    c0, w0 = process_cpu(), time.monotonic()
    s.start()
    time.sleep(seconds)
    s.stop()
    busy = (process_cpu() - c0) / (time.monotonic() - w0)
    return 100.0 * (busy - idle), len(sink)


def print_cost(n: int = 200_000) -> tuple[float, float]:
    line = "epoch 3 step 1234 loss 0.123456\n"
    plain = io.StringIO()
    t = time.perf_counter()
    for _ in range(n):
        plain.write(line)
    base = (time.perf_counter() - t) / n
    sink: list[object] = []
    cap = ConsoleCapture(sink.append)
    proxy = StreamProxy(io.StringIO(), "stdout", cap)
    t = time.perf_counter()
    for _ in range(n):
        proxy.write(line)
    wrapped = (time.perf_counter() - t) / n
    return base, wrapped


def main() -> None:
    costs = sorted(per_sample_cost())
    p50 = statistics.median(costs)
    p99 = costs[int(len(costs) * 0.99) - 1]
    print(
        f"one sample (CPU time): p50 {p50 * 1e6:.0f} us, p99 {p99 * 1e6:.0f} us "
        f"({'/proc' if sys.platform.startswith('linux') else 'psutil/os'})"
    )
    for interval in (10.0, 1.0):
        print(
            f"sampler overhead at {interval:g} s interval: {100 * p50 / interval:.4f}% of one core"
            f"{' (default)' if interval == 10.0 else ''}"
        )
    pct, n = live_overhead(0.1, 3.0)
    print(
        f"sampler overhead at 0.1 s interval, measured live: {pct:.2f}% of one core "
        f"({n} samples in 3 s; derived from p50: {100 * p50 / 0.1:.2f}%)"
    )
    base, wrapped = print_cost()
    print(
        f"write() of one line: {base * 1e9:.0f} ns plain, {wrapped * 1e9:.0f} ns captured "
        f"(+{(wrapped - base) * 1e9:.0f} ns, x{wrapped / base:.1f})"
    )


if __name__ == "__main__":
    main()

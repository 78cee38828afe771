"""Media benchmark: what log() costs the training thread, and what the writer can keep up with.

    python benchmarks/bench_media.py [--quick]

Prints, for a CPU tensor, a 1M-element Histogram source and a 512x512 Image:
- the calling-thread p50/p99 of ``log()`` (the media object built beforehand),
- the p50 of building the media object (the private copy of the data), next to
  a plain ``numpy.copy`` of the same data measured in the same run,
- the writer-thread cost of resolving it (binning, PNG encoding, file write);
then the writer throughput when logging one new 256x256 image per step.
Targets (issue 4): log() <= 20 us p50 each; >= 200 image steps/s.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

import wisp


def _pct(samples_ns: list[int], q: float) -> float:
    s = sorted(samples_ns)
    return s[min(len(s) - 1, int(q * len(s)))] / 1000.0


def _time(fn: Callable[[], Any], n: int) -> list[int]:
    out = []
    clock = time.perf_counter_ns
    for _ in range(n):
        t0 = clock()
        fn()
        out.append(clock() - t0)
    return out


def _row(name: str, samples: list[int], extra: str = "") -> None:
    print(
        f"  {name:<44} p50 {_pct(samples, 0.5):9.1f} us  p99 {_pct(samples, 0.99):9.1f} us{extra}"
    )


def _log_cost(run: wisp.Run, key: str, make: Callable[[], Any], n: int) -> list[int]:
    """Times of run.log({key: value}) alone, the value made outside the timed region."""
    clock = time.perf_counter_ns
    out = []
    for _ in range(n):
        value = make()
        t0 = clock()
        run.log({key: value})
        out.append(clock() - t0)
        if len(run._writer.queue) > 64:  # type: ignore[union-attr]
            run._writer.barrier()  # type: ignore[union-attr]  # keep memory bounded
    return out


def calling_thread(n: int, root: str) -> None:
    print("calling thread: log() with the value built beforehand (target <= 20 us p50)")
    run = wisp.init(project="bench-media", dir=root, settings={"git": False})
    rng = np.random.default_rng(0)
    scalar = torch.tensor(0.5)
    src_hist = rng.normal(size=1_000_000).astype(np.float32)
    src_hist_t = torch.from_numpy(src_hist.copy())
    img512 = rng.integers(0, 256, (512, 512, 3), dtype=np.uint8)

    h1m = wisp.Histogram(src_hist)
    i512 = wisp.Image(img512)
    print("  - the same pre-built value logged again and again: log() itself")
    _row("log() float (baseline)", _log_cost(run, "f", lambda: 0.5, n))
    _row("log() 0-d CPU torch tensor", _log_cost(run, "t", lambda: scalar, n))
    _row("log() Histogram, 1M float32 source", _log_cost(run, "h", lambda: h1m, n // 4))
    _row("log() Image, 512x512x3 uint8", _log_cost(run, "i", lambda: i512, n))
    print("  - a new value built before each call (untimed), the writer busy with the last ones")
    hist = _log_cost(run, "h", lambda: wisp.Histogram(src_hist), max(50, n // 10))
    _row("log() Histogram, 1M float32 source", hist)
    image = _log_cost(run, "i", lambda: wisp.Image(img512), max(50, n // 5))
    _row("log() Image, 512x512x3 uint8", image)
    print("calling thread: building the value = the private copy (vs numpy.copy, same run)")
    m = max(30, n // 40)
    copy_h = _time(lambda: src_hist.copy(), m)
    _row("numpy.copy 1M float32 (baseline)", copy_h)
    for name, fn in [
        ("Histogram(numpy 1M float32)", lambda: wisp.Histogram(src_hist)),
        ("Histogram(torch 1M float32, CPU)", lambda: wisp.Histogram(src_hist_t)),
    ]:
        s = _time(fn, m)
        _row(name, s, f"  ({_pct(s, 0.5) / _pct(copy_h, 0.5):.2f}x copy)")
    copy_i = _time(lambda: img512.copy(), m)
    _row("numpy.copy 512x512x3 uint8 (baseline)", copy_i)
    s = _time(lambda: wisp.Image(img512), m)
    _row("Image(numpy 512x512x3 uint8)", s, f"  ({_pct(s, 0.5) / _pct(copy_i, 0.5):.2f}x copy)")
    run.finish()

    print("writer thread: resolve() per value (binning / PNG encoding / file write)")
    run = wisp.init(project="bench-media", dir=root, settings={"git": False})
    ctx = run._writer
    k = max(10, n // 100)

    def fresh_image(shape: tuple[int, ...]) -> Callable[[], Any]:
        base = _photo(shape, rng)

        def make() -> Any:
            base[0, 0, 0] += 1  # a new image each time: no dedup, no cache
            return wisp.Image(base)

        return make

    for name, make in [
        ("Histogram 1M float32, 64 bins", lambda: wisp.Histogram(src_hist)),
        ("Image 512x512x3 photo-like -> PNG", fresh_image((512, 512, 3))),
        ("Image 256x256x3 photo-like -> PNG", fresh_image((256, 256, 3))),
    ]:
        values = [make() for _ in range(k)]
        it = iter(values)
        cpu0 = time.thread_time()
        wall = _time(lambda it=it: next(it).resolve(ctx), k)  # type: ignore[misc]
        cpu = (time.thread_time() - cpu0) / k * 1e6
        _row(name, wall, f"  (CPU {cpu:.0f} us mean)")
    run.finish()


def _photo(shape: tuple[int, ...], rng: Any) -> Any:
    """A photo-like test image: smooth gradients plus sensor-like noise."""
    h, w, c = shape
    ramp = np.add.outer(np.arange(h), np.arange(w))[:, :, None] * (255.0 / (h + w))
    tint = np.array([1.0, 0.8, 0.6])[:c]
    return np.clip(ramp * tint + rng.normal(0, 8, shape), 0, 255).astype(np.uint8)


def throughput(steps: int, root: str, kind: str) -> None:
    rng = np.random.default_rng(1)
    if kind == "noise":
        img = rng.integers(0, 256, (256, 256, 3), dtype=np.uint8)
    else:
        img = _photo((256, 256, 3), rng)
    run = wisp.init(project="bench-media", dir=root, settings={"git": False})
    writer = run._writer.thread  # type: ignore[union-attr]
    assert writer.ident is not None
    cpu_clock = time.pthread_getcpuclockid(writer.ident)
    cpu0 = time.clock_gettime(cpu_clock)
    clock = time.perf_counter_ns
    calls = []
    t0 = time.perf_counter()
    for step in range(steps):
        img[0, 0, 0] = step & 255  # a different image every step, changed in place after log()
        img[0, 1, 0] = step >> 8
        c0 = clock()
        run.log({"img": wisp.Image(img), "loss": 1.0 / (step + 1)})
        calls.append(clock() - c0)
    run._writer.barrier()  # type: ignore[union-attr]
    cpu = time.clock_gettime(cpu_clock) - cpu0
    run.finish()
    elapsed = time.perf_counter() - t0
    print(
        f"  {kind:<11} {steps} steps in {elapsed:6.2f} s = {steps / elapsed:7.1f} steps/s "
        f"(target >= 200); writer CPU {cpu / steps * 1e3:.2f} ms/step = capacity "
        f"{steps / cpu:.0f} steps per writer-CPU-second"
    )
    print(
        f"  {'':<11} log(Image(img)) incl. the copy: p50 {_pct(calls, 0.5):.1f} us, "
        f"p99 {_pct(calls, 0.99):.1f} us, mean {statistics.mean(calls) / 1000:.1f} us"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer iterations")
    args = parser.parse_args()
    n = 400 if args.quick else 2000
    with tempfile.TemporaryDirectory() as root:
        calling_thread(n, root)
        print("writer throughput: one new 256x256x3 image per step, until finish() returns")
        for kind in ("photo-like", "noise"):
            throughput(300 if args.quick else 1000, root, kind)


if __name__ == "__main__":
    main()

"""Media benchmark: what log() costs the training thread, and what the writer can keep up with.

    python benchmarks/bench_media.py [--quick]

Prints, for a CPU tensor, a 1M-element Histogram source and a 512x512 Image:
- the calling-thread p50/p99 of ``log()`` (the media object built beforehand),
- the p50 of building the media object (the private copy of the data), next to
  a plain ``numpy.copy`` of the same data measured in the same run,
- the writer-thread cost of resolving it (binning, PNG encoding, file write);
then the writer throughput when logging one new 256x256 image per step.
Targets (issue 4): log() <= 20 us p50 each; >= 200 image steps/s.

Then (issue 19; ``--kinds`` runs only this part) for a pre-built Video
16x3x128x128, Audio of 1 s at 16 kHz and Object3D of 100k points: log() p50/p99
and the cost of building each (the private copy) next to numpy.copy; the writer
throughput for one new 16-frame 128x128 video per step (H.264 through PyAV);
and wisp.plot.pr_curve / roc_curve on 1M predictions.
Targets: log() <= 20 us p50 beyond the copy; >= 20 video steps/s; curves <= 0.5 s.
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


def kinds_calling_thread(n: int, root: str) -> None:
    print("calling thread: log() of pre-built Video / Audio / Object3D (target <= 20 us p50)")
    run = wisp.init(project="bench-media", dir=root, settings={"git": False})
    rng = np.random.default_rng(2)
    frames = rng.integers(0, 256, (16, 3, 128, 128), dtype=np.uint8)
    samples = rng.uniform(-1, 1, 16_000).astype(np.float32)
    points = rng.normal(size=(100_000, 3)).astype(np.float32)
    built = {
        "Video 16x3x128x128 uint8": (lambda: wisp.Video(frames, fps=8), frames),
        "Audio 1 s @ 16 kHz float32": (lambda: wisp.Audio(samples, sample_rate=16_000), samples),
        "Object3D 100k x 3 float32": (lambda: wisp.Object3D(points), points),
    }
    for name, (make, _) in built.items():
        value = make()
        _row(f"log() {name}", _log_cost(run, "m", lambda value=value: value, n))  # type: ignore[misc]
    for name, (make, src) in built.items():
        m = max(30, n // 10)
        copy = _time(lambda src=src: src.copy(), m)  # type: ignore[misc]
        made = _time(make, m)
        _row(f"build {name}", made, f"  (numpy.copy p50 {_pct(copy, 0.5):.1f} us)")
    run.finish()


def video_throughput(steps: int, root: str) -> None:
    print("writer throughput: one new 16-frame 128x128 video per step (target >= 20 steps/s)")
    rng = np.random.default_rng(3)
    y, x = np.mgrid[0:128, 0:128]
    frames = np.stack(
        [np.stack([(x * 2 + i * 8) % 256, y * 2, np.full_like(x, 90)]) for i in range(16)]
    ).astype(np.uint8)
    frames += rng.integers(0, 8, frames.shape, dtype=np.uint8)  # some sensor noise
    run = wisp.init(project="bench-media", dir=root, settings={"git": False})
    calls = []
    clock = time.perf_counter_ns
    t0 = time.perf_counter()
    for step in range(steps):
        frames[0, 0, 0, 0] = step & 255  # a new video each step
        c0 = clock()
        run.log({"video": wisp.Video(frames, fps=8), "loss": 1.0 / (step + 1)})
        calls.append(clock() - c0)
    run._writer.barrier()  # type: ignore[union-attr]
    elapsed = time.perf_counter() - t0
    run.finish()
    print(
        f"  {steps} steps in {elapsed:6.2f} s = {steps / elapsed:6.1f} steps/s; "
        f"log(Video(frames)) incl. the copy: p50 {_pct(calls, 0.5):.1f} us"
    )


def curves(n: int) -> None:
    print(f"wisp.plot curves on {n:,} predictions (target <= 0.5 s)")
    rng = np.random.default_rng(4)
    y = rng.integers(0, 2, n)
    s = rng.random(n) * 0.7 + y * 0.3
    probas = np.stack([1 - s, s], axis=1)
    for name, fn in [("pr_curve", wisp.plot.pr_curve), ("roc_curve", wisp.plot.roc_curve)]:
        times = _time(lambda fn=fn: fn(y, probas), 5)  # type: ignore[misc]
        chart = fn(y, probas)
        rows = chart.estimate_bytes()
        print(
            f"  {name:<10} p50 {_pct(times, 0.5) / 1e3:7.1f} ms  max "
            f"{max(times) / 1e6:7.1f} ms  (table about {rows // 1024} KiB)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer iterations")
    parser.add_argument("--kinds", action="store_true", help="only video/audio/3-D/plot")
    args = parser.parse_args()
    n = 400 if args.quick else 2000
    with tempfile.TemporaryDirectory() as root:
        kinds_calling_thread(n, root)
        video_throughput(60 if args.quick else 200, root)
        curves(1_000_000)
        if args.kinds:
            return
        calling_thread(n, root)
        print("writer throughput: one new 256x256x3 image per step, until finish() returns")
        for kind in ("photo-like", "noise"):
            throughput(300 if args.quick else 1000, root, kind)


if __name__ == "__main__":
    main()

"""The GPU side of wisp's promise, proved in one command (docs/safety.md, "CUDA").

    python benchmarks/gpu_proof.py            # a few minutes on a CUDA machine

Checks, each printed as ``ok``/``FAIL``/``skip`` with its figure, exit code 1 on a FAIL:

1. ``import wisp`` and ``wisp.init()`` leave ``torch.cuda.is_initialized()`` as it was.
2. ``log()`` of CUDA scalars, tensors, histograms and a 4-D image batch never synchronises
   the device: every call runs under ``torch.cuda.set_sync_debug_mode("error")``, which
   raises on any synchronising CUDA call, and the values read back exactly.
3. DataLoader workers started by ``fork`` while the parent holds CUDA log through the
   parent's run and every value arrives (wisp's fork handlers keep the child off CUDA).
4. NVML system metrics never create a CUDA context: a process that samples GPU metrics
   through wisp and never touches torch.cuda leaves ``torch.cuda.is_initialized()`` false
   (and the driver sees no context of it: ``nvidia-smi`` lists no process).
5. Step time: a small CUDA training loop with wisp logging 5 scalars every step is within
   1 % of the same loop without a tracker (medians of alternated trials), and the same loop
   with wandb's habit of ``.item()`` on every value (a device sync per value) is shown
   beside it for scale.

Without CUDA (or without torch) the CUDA parts print ``skip`` with the reason and the CPU
parts still run, so CI keeps the script working (tests/test_gpu_proof.py runs it).
"""

from __future__ import annotations

import multiprocessing as mp
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

RESULTS: list[tuple[str, str, str]] = []


def report(name: str, status: str, detail: str) -> None:
    RESULTS.append((name, status, detail))
    print(f"{status:>4}  {name}: {detail}", flush=True)


def _torch() -> Any:
    try:
        import torch
    except ImportError:
        return None
    return torch


def _child(name: str, code: str, tmp: str) -> list[str] | None:
    """Run ``code`` in a fresh interpreter (``sys.argv[1]`` is ``tmp``); the words it printed,
    or None after reporting ``name`` as failed with its error."""
    out = subprocess.run(
        [sys.executable, "-c", code, tmp], capture_output=True, text=True, timeout=300
    )
    if out.returncode != 0:
        report(name, "FAIL", out.stderr.strip()[-300:])
        return None
    return out.stdout.split()


def check_init_leaves_cuda_alone(tmp: str) -> None:
    code = (
        "import torch, wisp, sys\n"
        "before = torch.cuda.is_initialized()\n"
        "run = wisp.init(project='gpu-proof', mode='offline', dir=sys.argv[1])\n"
        "wisp.log({'x': 1.0})\n"
        "run.finish()\n"
        "print(before, torch.cuda.is_initialized())\n"
    )
    words = _child("init leaves CUDA uninitialised", code, tmp)
    if words is None:
        return
    before, after = words
    ok = before == after == "False"
    report(
        "init leaves CUDA uninitialised", "ok" if ok else "FAIL", f"before={before} after={after}"
    )


def check_log_never_syncs(torch: Any, tmp: str) -> None:
    import wisp

    if not torch.cuda.is_available():
        report("log() of CUDA values never synchronises", "skip", "no CUDA device")
        return
    dev = torch.device("cuda")
    run = wisp.init(
        project="gpu-proof", mode="offline", dir=tmp, settings={"system_metrics": False}
    )
    steps = 200
    expected = []
    torch.cuda.set_sync_debug_mode("error")
    try:
        for s in range(steps):
            loss = torch.tensor(1.0 / (s + 1), device=dev) * 2
            vec = torch.arange(8, device=dev, dtype=torch.float32) + s
            expected.append(2.0 / (s + 1))
            row = {"loss": loss, "vec": vec, "hist": wisp.Histogram(torch.randn(1000, device=dev))}
            if s % 50 == 0:
                row["img"] = wisp.Image(torch.rand(3, 16, 16, device=dev))
            wisp.log(row, step=s)
    except RuntimeError as exc:
        torch.cuda.set_sync_debug_mode("default")
        run.finish()
        report("log() of CUDA values never synchronises", "FAIL", str(exc)[:300])
        return
    torch.cuda.set_sync_debug_mode("default")
    run.finish()
    data = wisp.open_run(run.dir)
    got = [row["loss"] for row in data.history(["loss"])]
    exact = [float(torch.tensor(v, dtype=torch.float32)) for v in expected]
    ok = got == exact
    report(
        "log() of CUDA values never synchronises",
        "ok" if ok else "FAIL",
        f"{steps} steps of a scalar, a vector, a histogram and images under sync_debug_mode=error;"
        f" values {'exact' if ok else 'differ'}",
    )


class _Numbers:
    """A dataset whose workers log what they load through the parent's run."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> int:
        import wisp

        wisp.log({"worker/item": float(i)})
        return i


def check_fork_workers(torch: Any, tmp: str) -> None:
    import wisp

    if not torch.cuda.is_available():
        report("fork DataLoader workers with CUDA in the parent", "skip", "no CUDA device")
        return
    torch.zeros(1, device="cuda")  # the parent holds a CUDA context
    run = wisp.init(
        project="gpu-proof", mode="offline", dir=tmp, settings={"system_metrics": False}
    )
    n = 64
    loader = torch.utils.data.DataLoader(
        _Numbers(n), batch_size=8, num_workers=4, multiprocessing_context=mp.get_context("fork")
    )
    seen = 0
    for batch in loader:
        seen += len(batch)
        wisp.log({"parent/batch": float(batch.sum())})
    run.finish()
    data = wisp.open_run(run.dir)
    items = sorted(row["worker/item"] for row in data.history(["worker/item"]))
    ok = seen == n and items == [float(i) for i in range(n)]
    report(
        "fork DataLoader workers with CUDA in the parent",
        "ok" if ok else "FAIL",
        f"{len(items)}/{n} worker values kept, {seen} items loaded",
    )


def check_nvml_no_context(tmp: str) -> None:
    try:
        import pynvml  # noqa: F401
    except ImportError:
        report("NVML system metrics create no CUDA context", "skip", "nvidia-ml-py not installed")
        return
    code = (
        "import time, torch, wisp, sys\n"
        "run = wisp.init(project='gpu-proof', mode='offline', dir=sys.argv[1],\n"
        "                settings={'system_metrics': True, 'system_interval': 0.2})\n"
        "time.sleep(1.5)\n"
        "run.finish()\n"
        "data = wisp.open_run(run.dir)\n"
        "gpu = [k for k in data.keys() if k.startswith('system/gpu')]\n"
        "print(torch.cuda.is_initialized(), len(gpu))\n"
    )
    words = _child("NVML system metrics create no CUDA context", code, tmp)
    if words is None:
        return
    initialised, keys = words
    ok = initialised == "False" and int(keys) > 0
    report(
        "NVML system metrics create no CUDA context",
        "ok" if ok else "FAIL",
        f"torch.cuda.is_initialized()={initialised}, {keys} GPU metric keys sampled",
    )


def _loop(torch: Any, dev: Any, steps: int, log: Callable[[int, dict[str, Any]], None]) -> float:
    """Seconds per step of a small MLP training loop logging 5 values a step."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(512, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 10)
    ).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(256, 512, device=dev)
    y = torch.randint(0, 10, (256,), device=dev)
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    sync()
    t0 = time.perf_counter()
    for s in range(steps):
        opt.zero_grad(set_to_none=True)
        out = model(x)
        loss = torch.nn.functional.cross_entropy(out, y)
        loss.backward()
        opt.step()
        acc = (out.argmax(1) == y).float().mean()
        log(s, {"loss": loss, "acc": acc, "lr": 0.01, "gnorm": out.abs().mean(), "step": s})
    sync()
    return (time.perf_counter() - t0) / steps


def check_step_time(torch: Any, tmp: str) -> None:
    import wisp

    cuda = torch.cuda.is_available()
    dev = torch.device("cuda" if cuda else "cpu")
    steps, trials = (2000, 5) if cuda else (10, 2)
    run = wisp.init(
        project="gpu-proof", mode="offline", dir=tmp, settings={"system_metrics": False}
    )

    def none(s: int, row: dict[str, Any]) -> None:
        pass

    step = [0]  # one run over every trial: steps go on increasing

    def with_wisp(s: int, row: dict[str, Any]) -> None:
        run.log(row, step=step[0])
        step[0] += 1

    def with_item(s: int, row: dict[str, Any]) -> None:  # wandb's habit: a sync per value
        {k: (v.item() if hasattr(v, "item") else v) for k, v in row.items()}

    times: dict[str, list[float]] = {"none": [], "wisp": [], ".item()": []}
    _loop(torch, dev, steps // 10, none)  # warm-up: kernels, allocator
    for _ in range(trials):
        for name, fn in (("none", none), ("wisp", with_wisp), (".item()", with_item)):
            times[name].append(_loop(torch, dev, steps, fn))
    run.finish()
    med = {k: statistics.median(v) for k, v in times.items()}
    ratio = med["wisp"] / med["none"]
    detail = (
        f"{dev.type}: step {med['none'] * 1e6:.0f} us without a tracker, "
        f"{med['wisp'] * 1e6:.0f} us with wisp ({(ratio - 1) * 100:+.2f} %), "
        f"{med['.item()'] * 1e6:.0f} us with .item() per value "
        f"({(med['.item()'] / med['none'] - 1) * 100:+.2f} %)"
    )
    if not cuda:
        report("step time with wisp within 1 %", "skip", detail + " (the 1 % bound is for CUDA)")
        return
    report("step time with wisp within 1 %", "ok" if ratio <= 1.01 else "FAIL", detail)


def main() -> int:
    torch = _torch()
    with tempfile.TemporaryDirectory(prefix="wisp-gpu-proof-") as tmp:
        if torch is None:
            for name in (
                "init leaves CUDA uninitialised",
                "log() of CUDA values never synchronises",
                "fork DataLoader workers with CUDA in the parent",
                "NVML system metrics create no CUDA context",
                "step time with wisp within 1 %",
            ):
                report(name, "skip", "torch is not installed")
        else:
            cuda = torch.cuda.is_available()
            where = f"available: {torch.cuda.get_device_name(0)}" if cuda else "not available"
            print(f"torch {torch.__version__}, CUDA {where}", flush=True)
            for i, check in enumerate(
                (
                    lambda d: check_init_leaves_cuda_alone(d),
                    lambda d: check_log_never_syncs(torch, d),
                    lambda d: check_fork_workers(torch, d),
                    lambda d: check_nvml_no_context(d),
                    lambda d: check_step_time(torch, d),
                )
            ):
                sub = os.path.join(tmp, str(i))
                os.makedirs(sub)
                check(sub)
    failed = [r for r in RESULTS if r[1] == "FAIL"]
    skipped = sum(r[1] == "skip" for r in RESULTS)
    ok = len(RESULTS) - len(failed) - skipped
    print(f"\ngpu proof: {ok} ok, {len(failed)} FAIL, {skipped} skip")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

"""``wisp.watch`` overhead on a training step: hooks on every submodule (issue 24).

Prints p50/p99 of one CPU training step (forward through ``model.net``, backward,
SGD step) of a small MLP of N layers, unwatched and watched with ``log_freq=1000``
(hooks fire, nothing armed), and the per-step cost of the hooks.  Needs torch.
``WISP_BENCH_STEPS`` sets the number of timed steps (default 2000).
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time

import torch

import wisp


class Wrapped(torch.nn.Module):
    def __init__(self, layers: int) -> None:
        super().__init__()
        mods: list[torch.nn.Module] = []
        for _ in range(layers):
            mods += [torch.nn.Linear(32, 32), torch.nn.ReLU()]
        self.net = torch.nn.Sequential(*mods)


def step_times(model: Wrapped, steps: int) -> list[float]:
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(16, 32)
    out = []
    for i in range(steps + 50):
        t0 = time.perf_counter()
        opt.zero_grad()
        model.net(x).pow(2).mean().backward()
        opt.step()
        if i >= 50:
            out.append(time.perf_counter() - t0)
    return out


def main() -> None:
    torch.set_num_threads(1)
    steps = int(os.environ.get("WISP_BENCH_STEPS", "2000"))
    with tempfile.TemporaryDirectory() as d:
        run = wisp.init(project="bench", dir=d, settings={"system_metrics": False})
        for layers in (4, 16):
            torch.manual_seed(0)
            model = Wrapped(layers)
            base = step_times(model, steps)
            wisp.watch(model, log="all", log_freq=1000)
            watched = step_times(model, steps)
            wisp.unwatch(model)
            b50, w50 = statistics.median(base), statistics.median(watched)
            b99 = statistics.quantiles(base, n=100)[98]
            w99 = statistics.quantiles(watched, n=100)[98]
            print(
                f"{layers * 2:3d} modules: step p50 {b50 * 1e6:7.0f} us -> watched "
                f"{w50 * 1e6:7.0f} us (+{(w50 - b50) * 1e6:5.0f} us), "
                f"p99 {b99 * 1e6:7.0f} -> {w99 * 1e6:7.0f} us"
            )
        run.finish()


if __name__ == "__main__":
    main()

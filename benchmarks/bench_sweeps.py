"""Sweeps: does bayes beat random, and what does the agent add per trial?

1. Search quality: Branin (minimum 0.397887) over x1 in [-5, 10], x2 in [0, 15]; 10 seeds x
   40 trials each for ``bayes`` (Optuna TPE) and ``random``, through the real controller and
   the local SQLite state (the objective is evaluated in this process). Prints the median over
   seeds of the best value found.
2. Agent overhead: ``wisp agent --count N`` running a small wisp program N times, against
   starting the same program N times directly (same environment). Overhead per trial =
   (agent wall time - agent start-up with nothing to run - direct runs) / N, for ``random``
   and ``bayes`` sweeps. Target: <= 100 ms per trial.

``python benchmarks/bench_sweeps.py [--quick]`` (--quick: 3 seeds x 20 trials, N = 5).
"""

from __future__ import annotations

import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SRC = str(Path(__file__).resolve().parent.parent / "src")
sys.path.insert(0, SRC)

AGENT = {"agent_id": "bench", "agent_pid": os.getpid(), "host": "bench"}
PROGRAM = """
import argparse, wisp
p = argparse.ArgumentParser(); p.add_argument("--x", type=float, default=0.5)
a = p.parse_args()
run = wisp.init(project="bench")
for i in range(10):
    wisp.log({"loss": (a.x - 0.3) ** 2 + i * 1e-3})
run.finish()
"""


def branin(x1: float, x2: float) -> float:
    b, c, t = 5.1 / (4 * math.pi**2), 5 / math.pi, 1 / (8 * math.pi)
    return (x2 - b * x1**2 + c * x1 - 6) ** 2 + 10 * (1 - t) * math.cos(x1) + 10


def best_of(method: str, seed: int, trials: int, base: str) -> float:
    from wisp.sweeps._controller import Controller, new_sweep
    from wisp.sweeps._local import LocalStore

    config = {
        "method": method,
        "metric": {"name": "branin", "goal": "minimize"},
        "parameters": {"x1": {"min": -5.0, "max": 10.0}, "x2": {"min": 0.0, "max": 15.0}},
    }
    store = LocalStore(base)
    record = new_sweep(config, None, seed=seed)
    store.create_sweep(record)
    ctl = Controller(store, record["id"])
    best = math.inf
    for k in range(trials):
        t = ctl.next_trial(f"r{k}", AGENT)
        assert t is not None
        v = branin(t["params"]["x1"], t["params"]["x2"])
        ctl.finish(t, "finished", v)
        best = min(best, v)
    store.close()
    return best


def search_quality(seeds: int, trials: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        for method in ("bayes", "random"):
            t0 = time.perf_counter()
            bests = [best_of(method, s, trials, tmp) for s in range(seeds)]
            dt = time.perf_counter() - t0
            print(
                f"branin {method:6s}: median best {statistics.median(bests):.4f} over {seeds} "
                f"seeds x {trials} trials (min {min(bests):.4f}, max {max(bests):.4f}; "
                f"{dt / (seeds * trials) * 1000:.1f} ms per claimed trial)"
            )
    print("branin global minimum: 0.3979")


def _timed(cmd: list[str], env: dict[str, str], cwd: str) -> float:
    t = time.perf_counter()
    res = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, check=False)
    if res.returncode != 0:
        raise SystemExit(f"{cmd} failed: {res.stderr}")
    return time.perf_counter() - t


def overhead(n: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        env = {k: v for k, v in os.environ.items() if not k.startswith("WISP_")}
        env.update(
            PYTHONPATH=SRC,
            WISP_DIR=tmp,
            WISP_CONFIG=os.path.join(tmp, "none.json"),
            WISP_GIT="false",
            WISP_SYSTEM_METRICS="false",
            WISP_CONSOLE="off",
        )
        Path(tmp, "train.py").write_text(PROGRAM)
        direct = [_timed([sys.executable, "train.py", f"--x={i / n}"], env, tmp) for i in range(n)]
        print(
            f"direct program start+run: p50 {statistics.median(direct) * 1000:.0f} ms, "
            f"max {max(direct) * 1000:.0f} ms"
        )
        wisp = [sys.executable, "-m", "wisp.cli"]
        for method in ("random", "bayes"):
            sweep = Path(tmp, f"{method}.yaml")
            sweep.write_text(
                f"program: train.py\nmethod: {method}\nmetric: {{name: loss}}\n"
                "parameters:\n  x: {min: 0.0, max: 1.0}\n"
            )
            mk = subprocess.run(
                [*wisp, "sweep", str(sweep)],
                env=env,
                cwd=tmp,
                capture_output=True,
                text=True,
                check=True,
            )
            idle = subprocess.run(
                [*wisp, "sweep", str(sweep)],
                env=env,
                cwd=tmp,
                capture_output=True,
                text=True,
                check=True,
            ).stdout.strip()
            subprocess.run(
                [*wisp, "sweep", "--stop", idle], env=env, cwd=tmp, check=True, capture_output=True
            )
            startup = statistics.median(_timed([*wisp, "agent", idle], env, tmp) for _ in range(3))
            total = _timed([*wisp, "agent", mk.stdout.strip(), "--count", str(n)], env, tmp)
            per = (total - startup - sum(direct)) / n
            print(
                f"agent ({method}): {n} trials in {total:.2f} s; "
                f"agent start-up {startup * 1000:.0f}"
                f" ms; overhead per trial {per * 1000:.0f} ms (target <= 100 ms)"
            )


def main() -> None:
    quick = "--quick" in sys.argv
    search_quality(3 if quick else 10, 20 if quick else 40)
    overhead(5 if quick else 20)


if __name__ == "__main__":
    main()

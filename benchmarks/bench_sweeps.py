"""Sweeps: does bayes beat random, and what does the agent add per trial?

1. Search quality: Branin (minimum 0.397887) over x1 in [-5, 10], x2 in [0, 15]; 10 seeds x
   40 trials each for ``bayes`` (Optuna TPE) and ``random``, through the real controller and
   the local SQLite state (the objective is evaluated in this process). Prints the median over
   seeds of the best value found.
2. Agent overhead: ``wisp agent`` running a small wisp program N + 1 times, against starting
   the same program N times directly. The program notes the time of its first and last
   line; per trial, overhead = (gap from one trial's last line to the next one's first) -
   (median, over direct runs, of launch -> first line + last line -> exit seen by the
   parent), for ``random`` and ``bayes`` sweeps. Target: <= 100 ms per trial.

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
import time
t0 = time.time()
import argparse, os, wisp
p = argparse.ArgumentParser(); p.add_argument("--x", type=float, default=0.5)
a = p.parse_args()
run = wisp.init(project="bench")
for i in range(10):
    wisp.log({"loss": (a.x - 0.3) ** 2 + i * 1e-3})
run.finish()
with open(os.environ["BENCH_OUT"], "a") as f:
    f.write(f"{t0} {time.time()}\\n")
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


def _times(path: Path) -> list[tuple[float, float]]:
    """(first line, last line) wall-clock times of each program run, in order."""
    pairs = (line.split() for line in path.read_text().splitlines())
    return [(float(a), float(b)) for a, b in pairs]


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(q * (len(xs) - 1)))]


def overhead(n: int) -> None:
    """Agent overhead from the programs' own clocks, so machine load hits both sides alike.

    Direct: launch -> the program's first line, plus its last line -> the parent sees it exit.
    Agent: the gap from one trial's last line to the next trial's first line, which holds the
    same process start/exit plus everything the agent does between trials.
    """
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
        out = Path(tmp, "direct.txt")
        env["BENCH_OUT"] = str(out)
        direct = []
        for i in range(n):
            launch = time.time()
            subprocess.run(
                [sys.executable, "train.py", f"--x={i / n}"], env=env, cwd=tmp, check=True
            )
            back = time.time()
            first, last = _times(out)[-1]
            direct.append((first - launch) + (back - last))
        base = statistics.median(direct)
        print(
            f"direct: process start + exit around the program p50 {base * 1000:.0f} ms, "
            f"p99 {_pct(direct, 0.99) * 1000:.0f} ms ({n} runs)"
        )
        wisp = [sys.executable, "-m", "wisp.cli"]
        for method in ("random", "bayes"):
            sweep = Path(tmp, f"{method}.yaml")
            sweep.write_text(
                f"program: train.py\nmethod: {method}\nmetric: {{name: loss}}\n"
                "parameters:\n  x: {min: 0.0, max: 1.0}\n"
            )
            sweep_id = subprocess.run(
                [*wisp, "sweep", str(sweep)],
                env=env,
                cwd=tmp,
                capture_output=True,
                text=True,
                check=True,
            ).stdout.strip()
            out = Path(tmp, f"{method}.txt")
            env["BENCH_OUT"] = str(out)
            subprocess.run(
                [*wisp, "agent", sweep_id, "--count", str(n + 1)],
                env=env,
                cwd=tmp,
                check=True,
                capture_output=True,
            )
            t = _times(out)
            gaps = [t[i + 1][0] - t[i][1] for i in range(len(t) - 1)]
            per = [g - base for g in gaps]
            print(
                f"agent ({method}): between trials p50 {statistics.median(gaps) * 1000:.0f} ms, "
                f"p99 {_pct(gaps, 0.99) * 1000:.0f} ms; overhead per trial p50 "
                f"{statistics.median(per) * 1000:.0f} ms, p99 {_pct(per, 0.99) * 1000:.0f} ms "
                "(target <= 100 ms)"
            )


def main() -> None:
    quick = "--quick" in sys.argv
    search_quality(3 if quick else 10, 20 if quick else 40)
    overhead(5 if quick else 20)


if __name__ == "__main__":
    main()

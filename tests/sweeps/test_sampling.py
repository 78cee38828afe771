"""The controller's draws: random follows the declared distributions; state survives restarts."""

from __future__ import annotations

import math
from pathlib import Path
from statistics import NormalDist

import pytest

from wisp.errors import UsageError
from wisp.sweeps._controller import Controller, new_sweep
from wisp.sweeps._local import LocalStore

AGENT = {"agent_id": "t", "agent_pid": 1, "host": "elsewhere"}


def _ks(samples: list[float], cdf) -> float:
    """Kolmogorov-Smirnov statistic of ``samples`` against ``cdf``, scaled by sqrt(n)."""
    xs = sorted(samples)
    n = len(xs)
    d = max(max((i + 1) / n - cdf(x), cdf(x) - i / n) for i, x in enumerate(xs))
    return d * math.sqrt(n)


def test_random_draws_follow_declared_distributions(tmp_path: Path) -> None:
    """600 random draws pass KS tests (alpha 0.01) per distribution and a chi-square for weights."""
    config = {
        "method": "random",
        "parameters": {
            "u": {"distribution": "uniform", "min": -1.0, "max": 3.0},
            "lv": {"distribution": "log_uniform_values", "min": 1e-4, "max": 1.0},
            "n": {"distribution": "normal", "mu": 2.0, "sigma": 0.5},
            "ln": {"distribution": "log_normal", "mu": 0.0, "sigma": 1.0},
            "i": {"distribution": "int_uniform", "min": 1, "max": 4},
            "c": {"values": ["a", "b"], "probabilities": [0.2, 0.8]},
            "q": {"distribution": "q_uniform", "min": 0, "max": 10, "q": 5},
        },
    }
    store = LocalStore(str(tmp_path))
    record = new_sweep(config, "p", seed=1234)
    store.create_sweep(record)
    ctl = Controller(store, record["id"])
    draws = [ctl.next_trial(f"r{k}", AGENT)["params"] for k in range(600)]
    norm = NormalDist(2.0, 0.5)
    limit = 1.63  # KS critical value at alpha = 0.01
    assert _ks([d["u"] for d in draws], lambda x: (x + 1) / 4) < limit
    assert (
        _ks([d["lv"] for d in draws], lambda x: (math.log(x) - math.log(1e-4)) / math.log(1e4))
        < limit
    )
    assert _ks([d["n"] for d in draws], norm.cdf) < limit
    assert _ks([math.log(d["ln"]) for d in draws], NormalDist(0, 1).cdf) < limit
    for key, cells in (
        ("i", {1: 0.25, 2: 0.25, 3: 0.25, 4: 0.25}),
        ("c", {"a": 0.2, "b": 0.8}),
        ("q", {0: 0.25, 5: 0.5, 10: 0.25}),
    ):
        counts = {v: 0 for v in cells}
        for d in draws:
            counts[d[key]] += 1  # a value outside the declared support raises KeyError
        chi2 = sum((counts[v] - 600 * p) ** 2 / (600 * p) for v, p in cells.items())
        assert chi2 < 11.34, (key, counts)  # chi-square, 3 degrees of freedom, alpha 0.01
    assert all(isinstance(d["i"], int) for d in draws)


def test_restarted_controller_loses_nothing(tmp_path: Path) -> None:
    """A new controller (a new process's) sees every trial and continues the numbering."""
    config = {
        "method": "bayes",
        "metric": {"name": "loss", "goal": "maximize"},
        "parameters": {"x": {"min": 0.0, "max": 1.0}},
    }
    store = LocalStore(str(tmp_path))
    record = new_sweep(config, None, seed=7)
    store.create_sweep(record)
    ctl = Controller(store, record["id"])
    for k in range(3):
        t = ctl.next_trial(f"r{k}", AGENT)
        ctl.finish(t, "finished", t["params"]["x"])
    store.close()
    again = Controller(LocalStore(str(tmp_path)), record["id"])
    assert [t["number"] for t in again.store.list_trials(record["id"])] == [0, 1, 2]
    study = again.study(again.store.list_trials(record["id"]))
    assert len(study.trials) == 3 and study.best_value == max(t.value for t in study.trials)
    assert again.next_trial("r3", AGENT)["number"] == 3


def test_grid_with_run_cap_and_target(tmp_path: Path) -> None:
    """run_cap and metric.target end a sweep; crashed trials do not count toward run_cap."""
    store = LocalStore(str(tmp_path))
    record = new_sweep(
        {
            "method": "grid",
            "metric": {"name": "loss", "goal": "minimize", "target": 0.5},
            "parameters": {"x": {"values": [3, 2, 1, 0]}},
            "run_cap": 3,
        },
        None,
        seed=1,
    )
    store.create_sweep(record)
    ctl = Controller(store, record["id"])
    first = ctl.next_trial("a", AGENT)
    store.update_trial(record["id"], first["number"], {"state": "crashed"})
    seen = []
    while (t := ctl.next_trial(f"r{len(seen)}", AGENT)) is not None:
        seen.append(t["params"]["x"])
        ctl.finish(t, "finished", float(t["params"]["x"]))
    assert len(seen) <= 3
    reason = ctl.done_reason(store.list_trials(record["id"]))
    assert reason is not None and ("target" in reason or "run_cap" in reason)
    if 0 in seen:
        assert seen[-1] == 0 or len(seen) == 3
    with pytest.raises(UsageError, match="no sweep"):
        Controller(store, "missing")

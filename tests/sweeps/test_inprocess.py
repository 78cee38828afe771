"""wisp.sweep() and wisp.agent(function=) in one process, spelled the wandb way."""

from __future__ import annotations

from pathlib import Path

import pytest


def test_import_wisp_as_wandb_sweep_and_agent(tmp_path: Path) -> None:
    """`wandb.sweep(config)` then `wandb.agent(id, function=, count=)` runs trials as runs."""
    import wisp as wandb
    from wisp.sweeps._local import LocalStore

    seen: list[dict] = []

    def train() -> None:
        run = wandb.init()
        seen.append(dict(wandb.config))
        for i in range(3):
            wandb.log({"acc": run.config["x"] * (i + 1)})
        # left unfinished on purpose: the agent finishes it

    sweep_id = wandb.sweep(
        {
            "method": "random",
            "metric": {"name": "acc", "goal": "maximize"},
            "parameters": {"x": {"min": 0.0, "max": 1.0}, "opt": {"value": "adam"}},
        },
        project="inproc",
    )
    assert wandb.agent(f"me/inproc/{sweep_id}", function=train, count=3) == 3  # wandb's form
    trials = LocalStore(str(tmp_path)).list_trials(sweep_id)
    assert [t["state"] for t in trials] == ["finished"] * 3
    assert [t["params"] for t in trials] == seen
    for t in trials:
        assert t["value"] == pytest.approx(t["params"]["x"] * 3)
        (run_dir,) = (tmp_path / "wisp").glob(f"run-*-{t['run_id']}")
        data = wandb.open_run(run_dir)
        assert data.metadata["sweep_id"] == sweep_id and data.project == "inproc"
        assert data.config == t["params"]
    assert wandb.run is None


def test_failing_function_is_a_failed_trial_and_the_sweep_goes_on(tmp_path: Path) -> None:
    """An exception in the function marks that trial failed; the next trial still runs."""
    import wisp
    from wisp.sweeps._local import LocalStore

    calls = []

    def train() -> None:
        wisp.init()
        calls.append(1)
        if len(calls) == 1:
            raise ValueError("boom")
        wisp.log({"loss": 1.0})

    sweep_id = wisp.sweep(
        {"method": "random", "metric": {"name": "loss"}, "parameters": {"x": {"values": [1, 2]}}}
    )
    wisp.agent(sweep_id, function=train, count=2)
    assert [t["state"] for t in LocalStore(str(tmp_path)).list_trials(sweep_id)] == [
        "failed",
        "finished",
    ]


def test_agent_arguments_are_checked(tmp_path: Path) -> None:
    """A bad count or function is a UsageError naming the argument."""
    import wisp

    sweep_id = wisp.sweep({"method": "random", "parameters": {"x": {"values": [1]}}})
    with pytest.raises(wisp.UsageError, match="count"):
        wisp.agent(sweep_id, function=lambda: None, count=0)
    with pytest.raises(wisp.UsageError, match="function"):
        wisp.agent(sweep_id, function=42)  # type: ignore[arg-type]


def test_nested_parameters_reach_config_as_nested_dicts(tmp_path: Path) -> None:
    """Nested parameter groups become nested config dicts, from a YAML file given by path."""
    import wisp

    (tmp_path / "s.yaml").write_text(
        "method: grid\n"
        "parameters:\n"
        "  optimizer:\n"
        "    parameters:\n"
        "      name: {values: [sgd, adam]}\n"
        "      momentum: {value: 0.9}\n"
        "  layers: {values: [1, 2]}\n"
    )
    seen = []

    def train() -> None:
        run = wisp.init()
        seen.append((run.config["optimizer"], run.config["layers"]))

    sweep_id = wisp.sweep(str(tmp_path / "s.yaml"))
    assert wisp.agent(sweep_id, function=train) == 4  # a grid ends by itself
    assert sorted(seen, key=repr) == sorted(
        [({"name": n, "momentum": 0.9}, k) for n in ("sgd", "adam") for k in (1, 2)], key=repr
    )

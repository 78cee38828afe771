"""Agents as real processes: grid coverage under concurrency, crashes, Ctrl-C, stop/cancel."""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests._procs import reaped
from tests.sweeps._helpers import (
    create_sweep,
    env_for,
    run_agents,
    run_cli,
    trials,
    wisp_cmd,
    write_sweep,
)

pytestmark = pytest.mark.slow


def _wait(pred, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_grid_four_concurrent_agents_cover_every_point_once(tmp_path: Path) -> None:
    """Four agent processes on one grid run each of its 12 combinations exactly once."""
    xs, ys, opts = [0.0, 0.5, 1.0], [-1.0, 1.0], ["sgd", "adam"]
    sweep_id = create_sweep(
        tmp_path,
        {
            "method": "grid",
            "metric": {"name": "loss", "goal": "minimize"},
            "parameters": {"x": {"values": xs}, "y": {"values": ys}, "opt": {"values": opts}},
        },
    )
    run_agents(sweep_id, 4, tmp_path, env_for(tmp_path))
    got = trials(tmp_path, sweep_id)
    combos = [(t["params"]["x"], t["params"]["y"], t["params"]["opt"]) for t in got]
    assert sorted(combos) == sorted(itertools.product(xs, ys, opts))
    assert {t["state"] for t in got} == {"finished"}
    assert len({t["agent_id"] for t in got}) > 1  # the agents really shared the work
    for t in got:  # each trial's program saw its parameters as args and in wisp.config
        seen = json.loads((tmp_path / f"argv-{t['run_id']}.json").read_text())
        assert f"--x={t['params']['x']}" in seen["argv"]
        assert seen["config"] == {
            "x": t["params"]["x"],
            "y": t["params"]["y"],
            "opt": t["params"]["opt"],
        }
        expected = (t["params"]["x"] - 1) ** 2 + (t["params"]["y"] + 1) ** 2 + 1 / 3
        assert t["value"] == pytest.approx(expected)
    status = run_cli("sweep", "--status", sweep_id, "--json", base=tmp_path)
    assert json.loads(status.stdout)["state"] == "finished"


def test_kill_9_agent_leaves_trial_crashed_and_next_agent_continues(tmp_path: Path) -> None:
    """An agent killed with SIGKILL leaves its trial crashed; a new agent runs the next trial."""
    sweep_id = create_sweep(
        tmp_path,
        {
            "method": "random",
            "metric": {"name": "loss", "goal": "minimize"},
            "parameters": {"x": {"min": 0.0, "max": 2.0}, "sleep": {"value": 0.0}},
            "run_cap": 2,
        },
    )
    (tmp_path / "slow").write_text("")
    slow = subprocess.Popen(
        wisp_cmd("agent", sweep_id, "--count", "1"),
        cwd=tmp_path,
        env=env_for(tmp_path),
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    with reaped(slow, group=True):
        _wait(lambda: len(trials(tmp_path, sweep_id)) == 1)
        os.killpg(slow.pid, signal.SIGKILL)  # the agent and its trial die at once, like a lost node
        slow.wait(10)
    assert trials(tmp_path, sweep_id)[0]["state"] == "running"
    (tmp_path / "slow").unlink()
    res = run_cli("agent", sweep_id, base=tmp_path)
    assert res.returncode == 0, res.stderr
    assert [t["state"] for t in trials(tmp_path, sweep_id)] == ["crashed", "finished", "finished"]


def test_ctrl_c_stops_agent_and_trial_cleanly(tmp_path: Path) -> None:
    """SIGINT to the agent's process group stops the trial (state stopped) and exits 130."""
    sweep_id = create_sweep(
        tmp_path, {"method": "random", "parameters": {"x": {"min": 0.0, "max": 2.0}}}
    )
    (tmp_path / "slow").write_text("")
    agent = subprocess.Popen(
        wisp_cmd("agent", sweep_id),
        cwd=tmp_path,
        env=env_for(tmp_path),
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    with reaped(agent, group=True):
        _wait(lambda: len(trials(tmp_path, sweep_id)) == 1)
        # the trial's wisp.init() made its run directory: it is running, on to its sleep
        _wait(lambda: any((tmp_path / "wisp").glob("run-*")))
        os.killpg(agent.pid, signal.SIGINT)  # what Ctrl-C in a terminal does
        _out, err = agent.communicate(timeout=30)
    assert agent.returncode == 130, err
    assert [t["state"] for t in trials(tmp_path, sweep_id)] == ["stopped"]


def test_stop_pause_resume_cancel(tmp_path: Path) -> None:
    """wisp sweep --stop ends a sweep for agents; --resume reopens it; --cancel stops a trial."""
    sweep_id = create_sweep(
        tmp_path, {"method": "random", "parameters": {"x": {"min": 0.0, "max": 2.0}}}
    )
    assert run_cli("sweep", "--stop", sweep_id, base=tmp_path).stdout.strip().endswith("stopped")
    res = run_cli("agent", sweep_id, base=tmp_path)
    assert res.returncode == 0 and trials(tmp_path, sweep_id) == []
    assert "is stopped" in res.stderr
    run_cli("sweep", "--resume", sweep_id, base=tmp_path)
    assert run_cli("agent", sweep_id, "--count", "1", base=tmp_path).returncode == 0
    assert [t["state"] for t in trials(tmp_path, sweep_id)] == ["finished"]
    (tmp_path / "slow").write_text("")
    agent = subprocess.Popen(
        wisp_cmd("agent", sweep_id), cwd=tmp_path, env=env_for(tmp_path), stderr=subprocess.PIPE
    )
    with reaped(agent):
        _wait(lambda: len(trials(tmp_path, sweep_id)) == 2)
        assert run_cli("sweep", "--cancel", sweep_id, base=tmp_path).returncode == 0
        agent.communicate(timeout=60)
    assert agent.returncode == 0
    assert [t["state"] for t in trials(tmp_path, sweep_id)] == ["finished", "stopped"]
    bad = run_cli("sweep", "--stop", "nosuchsweep", base=tmp_path)
    assert bad.returncode == 2 and "no sweep 'nosuchsweep'" in bad.stderr


def test_early_termination_stops_worse_trials_through_the_agent(tmp_path: Path) -> None:
    """Hyperband stops trials whose metric trails earlier ones: state stopped, never failed."""
    sweep_id = create_sweep(
        tmp_path,
        {
            "method": "grid",
            "metric": {"name": "loss", "goal": "minimize"},
            "parameters": {
                # four trials; each one's loss is worse than every earlier one's (by_start: the
                # grid's order is the sweep's random seed's, and a best-last order stops none)
                "y": {"values": [0.0, 0.1, 0.2, 0.3]},
                "by_start": {"value": 1},
                # 10 s a trial: the agent reads a trailing trial's metric (flushed every
                # second) and stops it long before its end, even on a loaded machine
                "steps": {"value": 40},
                "sleep": {"value": 0.25},
            },
            "early_terminate": {"type": "hyperband", "min_iter": 2, "eta": 2},
        },
    )
    res = run_cli("agent", sweep_id, base=tmp_path, timeout=200)
    assert res.returncode == 0, res.stderr
    got = sorted(trials(tmp_path, sweep_id), key=lambda t: t["number"])
    assert len(got) == 4 and "failed" not in {t["state"] for t in got}
    assert [t["state"] for t in got] == ["finished", "stopped", "stopped", "stopped"]
    assert all(len(t["intermediate"]) < 40 for t in got[1:])  # stopped before their end


def test_cli_refuses_unknown_field_naming_it(tmp_path: Path) -> None:
    """`wisp sweep` on a file with an unknown field exits 2 and names the field; no sweep made."""
    (tmp_path / "s.yaml").write_text(
        "method: random\nparameters:\n  lr:\n    min: 0.1\n    max: 1.0\n    distrib: uniform\n"
    )
    res = run_cli("sweep", "s.yaml", base=tmp_path)
    assert res.returncode == 2
    assert "unknown field parameters.lr.'distrib'" in res.stderr
    assert not (tmp_path / "wisp" / "sweeps").exists()
    res = run_cli("agent", "nosuch", base=tmp_path)
    assert res.returncode == 2 and "no sweep 'nosuch'" in res.stderr


def test_cli_sweep_prints_its_id_and_the_agent_command_to_run_next(tmp_path: Path) -> None:
    """`wisp sweep FILE` prints the id alone on stdout (for scripts) and the `wisp agent ID` line to run next on stderr."""
    path = write_sweep(tmp_path, {"method": "random", "parameters": {"x": {"values": [1]}}})
    res = run_cli("sweep", str(path), base=tmp_path)
    assert res.returncode == 0, res.stderr
    sweep_id = res.stdout.strip()
    assert res.stdout == f"{sweep_id}\n"
    assert f"wisp: run trials with: wisp agent {sweep_id}\n" in res.stderr


def test_paused_sweep_makes_agents_wait_until_resumed(tmp_path: Path) -> None:
    """An agent of a paused sweep starts no trial; after --resume it runs one."""
    sweep_id = create_sweep(
        tmp_path, {"method": "random", "parameters": {"x": {"min": 0.0, "max": 2.0}}}
    )
    run_cli("sweep", "--pause", sweep_id, base=tmp_path)
    agent = subprocess.Popen(
        wisp_cmd("agent", sweep_id, "--count", "1"),
        cwd=tmp_path,
        env=env_for(tmp_path),
        stderr=subprocess.PIPE,
        text=True,
    )
    with reaped(agent):
        time.sleep(3.0)
        assert agent.poll() is None and trials(tmp_path, sweep_id) == []
        run_cli("sweep", "--resume", sweep_id, base=tmp_path)
        _out, err = agent.communicate(timeout=60)
    assert agent.returncode == 0 and "paused; waiting" in err
    assert [t["state"] for t in trials(tmp_path, sweep_id)] == ["finished"]

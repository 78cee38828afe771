"""The wandb-shaped surface: ``import wisp as wandb`` for the common calls."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest

import wisp
import wisp as wandb

ROOT = Path(__file__).resolve().parents[2]


def test_init_ignores_wandb_only_arguments_with_one_warning(tmp_path: Path) -> None:
    """wandb-only init arguments are accepted with exactly one warning that lists them."""
    with pytest.warns(wisp.errors.WispWarning) as caught:
        run = wandb.init(
            project="p",
            entity="team",
            reinit=True,
            save_code=True,
            anonymous="allow",
            monitor_gym=False,
            sync_tensorboard=False,
        )
    assert len(caught) == 1
    message = str(caught[0].message)
    for name in ("save_code", "anonymous", "monitor_gym", "sync_tensorboard"):
        assert name in message
    assert "entity" not in message and "reinit" not in message  # honoured, not ignored
    assert run.entity == "team"
    assert caught[0].filename == __file__
    assert wandb.run is run


def test_init_refuses_unknown_arguments_naming_them() -> None:
    """An argument neither wisp nor wandb knows raises UsageError naming it, and no run starts."""
    with pytest.raises(wisp.UsageError, match="'projet'"):
        wandb.init(projet="typo", entity="team")
    assert wandb.run is None


def test_config_exclude_and_include_keys_are_honoured(tmp_path: Path) -> None:
    """config_exclude_keys drops keys from the config, config_include_keys keeps only those."""
    ns = argparse.Namespace(lr=0.1, token="secret", epochs=3)
    run = wandb.init(config=ns, config_exclude_keys=["token"])
    assert dict(run.config) == {"lr": 0.1, "epochs": 3}
    run = wandb.init(config={"lr": 0.1, "token": "s"}, config_include_keys=["lr"])
    assert dict(run.config) == {"lr": 0.1}
    with pytest.raises(wisp.UsageError, match="not both"):
        wandb.init(config={"a": 1}, config_exclude_keys=["a"], config_include_keys=["a"])


def test_common_calls_work_unchanged(tmp_path: Path) -> None:
    """login, init, config, log, define_metric, summary, run, Settings and finish behave as a
    wandb script expects, and the run reads back with the same values."""
    assert wandb.login() is True
    run = wandb.init(
        project="compat", config={"lr": 0.01}, settings=wandb.Settings(flush_interval=0.5)
    )
    wandb.config.update({"batch": 32})
    wandb.config.epochs = 2
    wandb.define_metric("val/acc", summary="max")
    for step in range(3):
        wandb.log({"loss": 1.0 / (step + 1), "val/acc": [0.5, 0.9, 0.7][step]})
    wandb.summary["best"] = 0.9
    assert wandb.run.id == run.id
    wandb.finish()
    assert wandb.run is None
    data = wisp.open_run(run.dir)
    assert data.config == {"lr": 0.01, "batch": 32, "epochs": 2}
    assert data.scalars("loss") == ([0, 1, 2], [1.0, 0.5, 1 / 3])
    assert data.summary["val/acc"] == 0.9 and data.summary["best"] == 0.9


def test_import_stays_stdlib_only() -> None:
    """The new wandb-shaped names load nothing until used: importing wisp imports no
    integration module."""
    code = (
        "import sys, wisp\n"
        "assert not [m for m in sys.modules if m.startswith('wisp.integrations')], sys.modules\n"
        "assert callable(wisp.watch) and callable(wisp.save) and callable(wisp.alert)\n"
        "assert 'torch' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_example_script_runs_as_wandb(tmp_path: Path) -> None:
    """examples/integrations/wandb_switch.py (written for wandb, switched with
    `import wisp as wandb`) runs and records its metrics, with no warning."""
    env = {"WISP_DIR": str(tmp_path), "WISP_GIT": "false", "PATH": "/usr/bin:/bin"}
    out = subprocess.run(
        [sys.executable, "-W", "error", str(ROOT / "examples/integrations/wandb_switch.py")],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr
    assert "Warning" not in out.stderr and "ignores" not in out.stderr, out.stderr
    (run_dir,) = (tmp_path / "wisp").iterdir()
    data = wisp.open_run(run_dir)
    assert data.state == "finished"
    steps, acc = data.scalars("val/acc")
    assert steps == list(range(5)) and len(acc) == 5
    assert data.config["lr"] == 0.01
    assert {r["name"] for r in data.records["file"]} == {"notes.txt"}

"""``wisp.tee_wandb()``: a script using the real wandb (offline) also records a wisp run,
and both record the same rows, config and summary."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

import wisp
from tests.compat._wandb_file import WandbOffline
from tests.compat.conftest import unflatten

from .integrations_support import run_result

SCRIPT = Path(__file__).resolve().parent / "wandb_scripts" / "tee.py"


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=0, abs_tol=0) or (math.isnan(a) and math.isnan(b))
    return bool(a == b)


@pytest.mark.slow
def test_tee_records_the_same_run_in_wandb_and_wisp(tmp_path: Path) -> None:
    """Every row wandb recorded is in the wisp run at the same step with the same values
    (a wandb Histogram as a wisp histogram of the same counts), and config, tags, notes and
    the user's summary value agree."""
    pytest.importorskip("wandb")
    extra = {"WANDB_DIR": str(tmp_path), "WANDB_SILENT": "true"}
    result = run_result([str(SCRIPT)], tmp_path, extra)
    theirs = WandbOffline(str(tmp_path))
    mine = wisp.open_run(result["wisp_dir"])
    assert mine.id == result["id"] and mine.project == "tee" and mine.name == "both"
    assert mine.metadata["tags"] == ["a", "b"] and mine.metadata["notes"] == "dual"
    config = {k: v for k, v in theirs.config.items() if k != "_wandb"}
    assert config == {"lr": 0.01, "arch": {"depth": 3}, "epochs": 5} == mine.config
    wisp_rows = {r["_step"]: r for r in mine.history()}
    # commit=False after a committed row goes to the next row, in both
    assert sorted(r["_step"] for r in theirs.history) == sorted(wisp_rows) == [0, 1, 2, 3, 4, 5, 7]
    for flat in theirs.history:
        row = unflatten(flat)  # wandb's file nests a histogram as hist/_type, hist/values
        got = unflatten(wisp_rows[row["_step"]])
        for key, value in row.items():
            if key.startswith("_"):
                continue
            if isinstance(value, dict) and value.get("_type") == "histogram":
                assert got[key]["counts"] == value["values"], key
                assert got[key]["bins"] == value["bins"], key
            else:
                assert _same(got[key], value), (row["_step"], key, got[key], value)
        assert {k for k in got if not k.startswith("_")} == {k for k in row if k[0] != "_"}
    assert mine.summary["best"] == theirs.summary["best"] == 0.9
    assert mine.summary["loss"] == theirs.summary["loss"] == 0.2
    assert mine.state == "finished"
    assert result["teed"] and result["restored"]  # untee_wandb() gives wandb.init back

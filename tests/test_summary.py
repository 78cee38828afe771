"""``run.summary`` (``wisp._summary``): nested reads, attribute access, arrays."""

from __future__ import annotations

import numpy as np
import pytest

import wisp
from wisp._summary import nested_get


def test_nested_get_rebuilds_flattened_keys() -> None:
    """Keys under ``k/`` read back as a nested dict; a missing key is a KeyError."""
    view = {"eval/f1": 0.6, "eval/pr/p": 0.5, "loss": 1.0}
    assert nested_get(view, "eval") == {"f1": 0.6, "pr": {"p": 0.5}}
    assert nested_get(view, "loss") == 1.0
    with pytest.raises(KeyError):
        nested_get(view, "ev")


def test_attributes_read_write_and_delete_keys() -> None:
    """summary.best = 5 sets a key that summary.best and summary["best"] read; del removes it."""
    run = wisp.init(project="s")
    run.summary.best = 5
    assert run.summary.best == 5 and run.summary["best"] == 5
    run.summary.update({"eval": {"f1": 0.6}})
    del run.summary["eval"]
    assert "eval" not in run.summary and "eval/f1" not in dict(run.summary)
    del run.summary.best
    with pytest.raises(AttributeError, match="no key 'best'"):
        _ = run.summary.best
    run.finish()


def test_summary_arrays_follow_wandb() -> None:
    """Small arrays are stored as lists, larger ones as wandb's statistics."""
    run = wisp.init(project="s")
    run.summary["small"] = np.array([1, 2])
    run.summary["big"] = np.ones(33)
    assert run.summary["small"] == [1, 2]
    assert run.summary["big"]["size"] == 33 and run.summary["big"]["var"] == 0.0
    run.finish()

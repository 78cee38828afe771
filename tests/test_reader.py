"""Reading runs back: open_run, history, states, pandas, torn tails (src/wisp/_reader.py)."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import wisp
from wisp._reader import _merge_step_runs
from wisp.errors import RunFileError


def test_one_million_points_read_back_identical() -> None:
    """1M logged points (NaN and ±inf included) read back with the same steps and values."""
    run = wisp.init()
    specials = [math.nan, math.inf, -math.inf]
    n = 200_000
    for i in range(n):
        a = specials[i % 3] if i % 997 == 0 else i * 0.5
        run.log({"a": a, "b": -i, "c": i / 3, "d": float(i), "e": 1e300 * (i % 2)}, step=i * 2)
    run.finish()
    data = wisp.open_run(run.dir)  # type: ignore[arg-type]
    count = 0
    for i, row in enumerate(data.history()):
        count += len(row) - 2
        assert row["_step"] == i * 2
        want_a = specials[i % 3] if i % 997 == 0 else i * 0.5
        assert row["a"] == want_a or (math.isnan(want_a) and math.isnan(row["a"]))
        assert row["b"] == -i and row["c"] == i / 3 and row["d"] == float(i)
        assert row["e"] == 1e300 * (i % 2)
    assert count == 1_000_000
    assert data.ignored_bytes == 0


def test_torn_tail_is_ignored_and_reported() -> None:
    """Garbage appended after the last record is ignored and its size reported."""
    run = wisp.init()
    run.log({"a": 1})
    run.finish()
    with open(run.file_path, "ab") as f:  # type: ignore[arg-type]
        f.write(b"\x05\x00\x00\x00torn")
    data = wisp.open_run(run.dir)  # type: ignore[arg-type]
    assert data.ignored_bytes == 8 and [r["a"] for r in data.history()] == [1]


def test_a_killed_process_leaves_a_crashed_readable_run(tmp_path: Path) -> None:
    """A process killed before finish leaves a run whose flushed rows read back and whose state is crashed."""
    script = (
        "import os, wisp, time\n"
        "r = wisp.init(settings={'flush_interval': 0.01})\n"
        "for i in range(100): r.log({'i': i})\n"
        "r.barrier()\n"
        "print(r.dir, flush=True)\n"
        "os.kill(os.getpid(), 9)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, env=os.environ
    )
    assert out.returncode == -9
    data = wisp.open_run(out.stdout.strip())
    assert data.state == "crashed" and data.finish is None
    assert [r["i"] for r in data.history()] == list(range(100))


def test_to_pandas_and_scalars() -> None:
    """History converts to a DataFrame, and scalars() gives one metric's steps and values."""
    run = wisp.init()
    for i in range(5):
        run.log({"x": i * 1.5})
    run.log({"y": 1})
    run.finish()
    data = wisp.open_run(run.file_path)  # type: ignore[arg-type]
    df = data.to_pandas()
    assert list(df["_step"]) == [0, 1, 2, 3, 4, 5] and df["x"].iloc[4] == 6.0
    assert data.scalars("x") == ([0, 1, 2, 3, 4], [0.0, 1.5, 3.0, 4.5, 6.0])
    assert data.keys() == ["x", "y"]


def test_missing_run_is_a_clear_error(tmp_path: Path) -> None:
    """open_run on a path that is not a run names the path."""
    with pytest.raises(RunFileError, match="not a wisp run directory"):
        wisp.open_run(tmp_path)
    with pytest.raises(RunFileError, match="no run file"):
        wisp.open_run(tmp_path / "nope")


def test_scalars_indexed_by_a_declared_step_metric() -> None:
    """scalars(key, x=...) indexes by a declared step metric instead of the row counter;
    x="defined" finds it from define_metric (exact names before globs)."""
    run = wisp.init()
    run.define_metric("trainer/global_step")
    run.define_metric("*", step_metric="trainer/global_step", step_sync=True)
    run.define_metric("epoch_acc", step_metric="epoch")
    run.log({"loss": 1.0, "trainer/global_step": 10})
    run.log({"loss": 0.5, "trainer/global_step": 20})
    run.log({"epoch_acc": 0.9, "epoch": 0})
    run.finish()
    data = wisp.open_run(run.dir)  # type: ignore[arg-type]
    assert data.scalars("loss") == ([0, 1], [1.0, 0.5])
    assert data.scalars("loss", x="trainer/global_step") == ([10, 20], [1.0, 0.5])
    assert data.scalars("loss", x="defined") == ([10, 20], [1.0, 0.5])
    assert data.step_metric("loss") == "trainer/global_step"
    assert data.step_metric("epoch_acc") == "epoch"
    assert data.step_metric("trainer/global_step") is None
    assert data.scalars("epoch_acc", x="defined") == ([0], [0.9])
    assert data.scalars("loss", x="epoch") == ([], [])


def test_a_forked_childs_rows_at_one_step_merge_as_on_the_server() -> None:
    """Consecutive rows of a child's segment at one step read as one row, later values winning; other rows pass as they are."""
    rows = [(5, 1.0, {"a": 1}), (5, 2.0, {"a": 2, "b": 3}), (6, 3.0, {"a": 4}), (5, 4.0, {"c": 5})]
    assert list(_merge_step_runs(iter(rows))) == [
        (5, 2.0, {"a": 2, "b": 3}),
        (6, 3.0, {"a": 4}),
        (5, 4.0, {"c": 5}),
    ]


def _columns_of_rows(data: wisp.RunData, keys: set[str] | None) -> dict[str, tuple[list[Any], ...]]:
    out: dict[str, tuple[list[Any], ...]] = {}
    for row in data.history():
        for k, v in row.items():
            if k[0] != "_" and (keys is None or k in keys) and type(v) in (int, float):
                col = out.setdefault(k, ([], [], []))
                col[0].append(row["_step"])
                col[1].append(row["_timestamp"])
                col[2].append(float(v))
    return out


def test_history_columns_are_the_numeric_values_of_history() -> None:
    """history_columns gives each key's numeric steps, times and values as history() has
    them (rows of different keys in one batch, text, None, booleans and NaN included), and
    only the keys asked when asked."""
    run = wisp.init()
    for i in range(3000):
        row: dict[str, Any] = {"a": i * 0.5, "n": i}
        if i % 3 == 0:
            row["b"] = math.nan if i % 9 == 0 else -i
        if i % 5 == 0:
            row["mixed"] = ["text", None, True, 2, 2.5][i % 25 // 5]
        run.log(row, step=i // 2)
    run.finish()
    data = wisp.open_run(run.dir)  # type: ignore[arg-type]
    for keys in (None, ["b", "mixed"], ["nothing"]):
        want = _columns_of_rows(data, None if keys is None else set(keys))
        got = data.history_columns(keys)
        assert set(got) == set(want)
        for k, cols in want.items():
            assert repr(got[k]) == repr(cols), k
    assert data.history_columns(["mixed"])["mixed"][2] == [2.0, 2.5] * 120

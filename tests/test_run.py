"""The Run API: log semantics, config, summary, define_metric, finish (src/wisp/_run.py)."""

from __future__ import annotations

import math
import os
import time
from pathlib import Path

import numpy as np
import pytest

import wisp
from wisp.errors import RunStateError, UsageError, WispWarning, WriterError


def _rows(run: wisp.Run) -> list[dict[str, object]]:
    return list(wisp.open_run(run.dir).history())  # type: ignore[arg-type]


def test_steps_auto_increment_and_nested_dicts_flatten() -> None:
    """Each log() without a step is a new row, and nested dicts become a/b keys."""
    run = wisp.init(project="p")
    wisp.log({"loss": 1.0})
    wisp.log({"loss": 0.5, "val": {"acc": 0.9, "top5": {"x": 1}}})
    run.finish()
    rows = _rows(run)
    assert [r["_step"] for r in rows] == [0, 1]
    assert rows[1]["val/acc"] == 0.9 and rows[1]["val/top5/x"] == 1


def test_commit_false_accumulates_into_one_row() -> None:
    """commit=False keeps the row open; the next committed log() closes it at the same step."""
    run = wisp.init()
    run.log({"a": 1}, commit=False)
    run.log({"b": 2}, commit=False)
    run.log({"c": 3})
    run.log({"d": 4})
    run.finish()
    rows = _rows(run)
    assert [(r["_step"], sorted(k for k in r if not k.startswith("_"))) for r in rows] == [
        (0, ["a", "b", "c"]),
        (1, ["d"]),
    ]


def test_explicit_steps_merge_and_a_lower_step_is_refused_with_a_warning() -> None:
    """Rows with the same explicit step merge; a step lower than the current one warns and records nothing."""
    run = wisp.init()
    run.log({"a": 1}, step=5)
    run.log({"b": 2}, step=5)
    run.log({"a": 3}, step=10)
    with pytest.warns(WispWarning, match="step 7 refused.*already at step 10"):
        run.log({"a": 99}, step=7)
    run.log({"a": 4})  # no step: joins the open row at 10 and commits it
    run.log({"a": 5})
    run.finish()
    rows = _rows(run)
    assert [(r["_step"], r.get("a"), r.get("b")) for r in rows] == [
        (5, 1, 2),
        (10, 4, None),
        (11, 5, None),
    ]


def test_bad_values_raise_naming_the_key_and_log_nothing_partial() -> None:
    """A bad value raises UsageError (a TypeError) naming key and type, before any of the call is enqueued."""
    run = wisp.init()
    run.log({"ok": 1.0})
    with pytest.raises(UsageError, match=r"'bad'.*object") as info:
        run.log({"fine": 2.0, "bad": object()})
    assert isinstance(info.value, TypeError)
    with pytest.raises(UsageError, match="keys must be strings"):
        run.log({1: 2.0})  # type: ignore[dict-item]
    with pytest.raises(UsageError, match="'_step' is reserved"):
        run.log({"_step": 3})
    with pytest.raises(UsageError, match="dict of values"):
        run.log([("a", 1)])  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="step must be an int"):
        run.log({"a": 1}, step=1.5)  # type: ignore[arg-type]
    run.log({"ok": 3.0})
    run.finish()
    rows = _rows(run)
    assert [sorted(k for k in r if not k.startswith("_")) for r in rows] == [["ok"], ["ok"]]
    assert [r["_step"] for r in rows] == [0, 1]


def test_numpy_scalars_and_one_element_arrays_log_as_numbers() -> None:
    """numpy scalars and 1-element arrays become Python numbers; complex arrays are refused naming the key."""
    run = wisp.init()
    arr = np.array([0.5], dtype=np.float32)
    run.log(
        {"f": np.float64(1.25), "i": np.int64(7), "b": np.bool_(True), "a": arr}, step=np.int32(3)
    )
    arr[0] = 9.0  # a later in-place change must not reach the logged value
    with pytest.raises(UsageError, match=r"'big'.*complex"):
        run.log({"big": np.zeros((2, 2), dtype=complex)})
    run.finish()
    (row,) = _rows(run)
    assert row == {
        "_step": 3,
        "_timestamp": row["_timestamp"],
        "f": 1.25,
        "i": 7,
        "b": True,
        "a": 0.5,
    }


def test_nan_and_inf_are_valid_values() -> None:
    """NaN and ±inf log and read back as themselves."""
    run = wisp.init()
    run.log({"n": math.nan, "p": math.inf, "m": -math.inf})
    run.finish()
    (row,) = _rows(run)
    assert math.isnan(row["n"]) and row["p"] == math.inf and row["m"] == -math.inf  # type: ignore[arg-type]


def test_config_attribute_and_item_access_is_recorded_on_change() -> None:
    """config reads as attributes and items, converts common objects, and every change lands in the run file."""
    run = wisp.init(config={"lr": 0.1, "path": Path("/tmp/x")})
    assert run.config.lr == 0.1 and run.config["path"] == "/tmp/x"
    run.config.batch = 32
    run.config.update({"opt": {"name": "adam", "betas": (0.9, 0.99)}})
    with pytest.raises(UsageError, match="'bad'"):
        run.config.bad = object()
    run.finish()
    data = wisp.open_run(run.dir)  # type: ignore[arg-type]
    assert data.config == {
        "lr": 0.1,
        "path": "/tmp/x",
        "batch": 32,
        "opt": {"name": "adam", "betas": [0.9, 0.99]},
    }


def test_summary_is_last_value_by_default_and_user_settable() -> None:
    """summary holds the last logged value per key, reads back immediately, and user values win."""
    run = wisp.init()
    for i in range(10):
        run.log({"loss": 1.0 / (i + 1), "acc": i / 10})
    assert run.summary["loss"] == 0.1
    run.summary["best"] = 42
    run.summary["acc"] = 1.0
    run.finish()
    assert wisp.open_run(run.dir).summary == {"loss": 0.1, "acc": 1.0, "best": 42}  # type: ignore[arg-type]
    assert run.summary["best"] == 42


def test_define_metric_globs_choose_the_summary() -> None:
    """define_metric with a glob picks min/max/mean/none summaries for matching keys."""
    run = wisp.init()
    run.define_metric("val/*", summary="max")
    run.define_metric("train/loss", summary="min")
    run.define_metric("lr", summary="mean")
    run.define_metric("noise", summary="none")
    for v in [3.0, 1.0, 2.0]:
        run.log({"val/acc": v, "train/loss": v, "lr": v, "noise": v, "other": v})
    with pytest.raises(UsageError, match="summary 'median' is not one of"):
        run.define_metric("x", summary="median")
    run.finish()
    s = wisp.open_run(run.dir).summary  # type: ignore[arg-type]
    assert s == {"val/acc": 3.0, "train/loss": 1.0, "lr": 2.0, "other": 2.0}
    assert wisp.open_run(run.dir).metrics[0]["name"] == "val/*"  # type: ignore[arg-type]


def test_finish_is_idempotent_and_log_after_finish_is_refused() -> None:
    """A second finish() does nothing; log() on a finished run raises RunStateError."""
    run = wisp.init()
    run.log({"a": 1})
    run.finish()
    run.finish()
    with pytest.raises(RunStateError, match="finished"):
        run.log({"a": 2})
    data = wisp.open_run(run.dir)  # type: ignore[arg-type]
    assert data.state == "finished" and data.finish is not None and data.finish["exit_code"] == 0


def test_second_init_finishes_the_previous_run() -> None:
    """Re-running init() (as a notebook cell does) finishes the current run first."""
    first = wisp.init(name="first")
    wisp.log({"a": 1})
    second = wisp.init(name="second")
    assert first.state == "finished" and wisp.run is second
    assert wisp.open_run(first.dir).state == "finished"  # type: ignore[arg-type]
    second.finish()


def test_context_manager_marks_failure_on_exception() -> None:
    """Leaving a with-block by an exception finishes the run as failed with exit code 1."""
    with pytest.raises(ZeroDivisionError), wisp.init() as run:
        run.log({"a": 1})
        _ = 1 / 0
    data = wisp.open_run(run.dir)  # type: ignore[arg-type]
    assert data.state == "failed" and data.finish["exit_code"] == 1  # type: ignore[index]


def test_disabled_mode_is_a_no_op_that_writes_nothing(tmp_path: Path) -> None:
    """mode='disabled' accepts every call and creates no files."""
    run = wisp.init(mode="disabled", config={"a": 1})
    wisp.log({"x": 1.0})
    run.define_metric("x", summary="max")
    run.finish()
    assert run.dir is None and not (tmp_path / "wisp").exists()


def test_full_queue_applies_backpressure_and_loses_nothing() -> None:
    """With a tiny queue, log() waits for room (and counts it) but every row is written."""
    run = wisp.init(settings={"queue_size": 4})
    for i in range(3000):
        run.log({"i": i})
    run.finish()
    assert run.backpressure_waits > 0
    assert [r["i"] for r in _rows(run)] == list(range(3000))


def test_writer_failure_never_raises_in_log_and_surfaces_at_finish() -> None:
    """A disk that fails under the writer (/dev/full) is counted, not raised in log(), and raised by finish()."""
    run = wisp.init(settings={"finish_timeout": 1.0})
    writer = run._writer
    assert writer is not None
    full = os.open("/dev/full", os.O_WRONLY)
    os.dup2(full, writer.fd)
    os.close(full)
    for i in range(2000):
        run.log({"i": i})
    with pytest.raises(WriterError, match=r"background writes failed.*No space"):
        run.finish()
    assert run.failures


def test_rows_are_readable_after_the_flush_interval_without_finish() -> None:
    """Logged rows reach the file within the flush interval while the run is still open."""
    run = wisp.init(settings={"flush_interval": 0.05})
    run.log({"a": 1.0})
    deadline = time.monotonic() + 10
    rows: list[dict[str, object]] = []
    while time.monotonic() < deadline and not rows:
        time.sleep(0.02)
        rows = _rows(run)
    assert rows and rows[0]["a"] == 1.0
    assert wisp.open_run(run.dir).state == "running"  # type: ignore[arg-type]
    run.finish()


def test_module_level_calls_need_a_run() -> None:
    """wisp.log() without init() raises RunStateError with a hint."""
    with pytest.raises(RunStateError, match=r"call wisp.init\(\) first"):
        wisp.log({"a": 1})


def test_run_directory_layout_and_metadata() -> None:
    """The run lives in <dir>/wisp/run-<stamp>-<id>/ with run.wisp and a run.json that tracks state."""
    run = wisp.init(project="proj", name="n1", tags=["a", "b"], group="g", notes="hi")
    assert run.dir is not None
    assert os.path.basename(run.dir).startswith("run-") and run.dir.endswith(run.id)
    run.finish()
    import json

    meta = json.loads(Path(run.dir, "run.json").read_text())
    assert meta["state"] == "finished" and meta["project"] == "proj" and meta["name"] == "n1"
    data = wisp.open_run(run.dir)
    assert data.metadata["tags"] == ["a", "b"] and data.metadata["group"] == "g"
    assert data.metadata["pid"] == os.getpid() and data.metadata["python"]


def test_run_json_says_running_once_the_writer_has_started() -> None:
    """run.json is written by the writer thread as its first work: it says "running" by the time anything logged is written."""
    run = wisp.init(project="proj", name="early", settings={"git": False})
    run.log({"a": 1.0})
    assert run.dir is not None and run.barrier(10)
    from wisp._rundir import read_meta

    meta = read_meta(run.dir)
    assert (meta["state"], meta["name"], meta["pid"]) == ("running", "early", os.getpid())
    run.finish()
    assert read_meta(run.dir)["state"] == "finished"


def test_repr_html_names_the_run() -> None:
    """Run has an HTML repr with name, id and directory for notebooks."""
    run = wisp.init(name="<shown>")
    html = run._repr_html_()
    assert "&lt;shown&gt;" in html and run.id in html and str(run.dir) in html
    run.finish()


def test_a_huge_top_level_string_is_refused_naming_the_key() -> None:
    """A plain string over max_value_bytes raises ValueLimitError naming the key, and nothing is logged."""
    from wisp.errors import ValueLimitError

    run = wisp.init(settings={"max_value_bytes": 1000})
    with pytest.raises(ValueLimitError, match=r"'s'.*over the limit of 1,000 bytes"):
        run.log({"s": "x" * 5000, "ok": 1.0})
    run.log({"s": "short"})
    run.finish()
    assert [r["s"] for r in _rows(run)] == ["short"]


def test_keys_longer_than_the_server_accepts_are_refused_on_every_path() -> None:
    """A key over MAX_KEY_LENGTH is refused at log() whether its value is a float (fast path) or not."""
    from wisp._values import MAX_KEY_LENGTH

    run = wisp.init()
    long_key = "k" * (MAX_KEY_LENGTH + 1)
    for value in (1.0, "text", {"nested": 1.0}):
        with pytest.raises(UsageError, match=f"must be 1 to {MAX_KEY_LENGTH} characters"):
            run.log({long_key: value})
    run.log({"k" * MAX_KEY_LENGTH: 1.0})
    run.finish()
    assert [len(k) for k in _rows(run)[0] if not k.startswith("_")] == [MAX_KEY_LENGTH]


def test_known_keys_still_meet_every_check_off_the_fast_path() -> None:
    """Once keys are known, log() of plain numbers takes the fast path, and anything else
    still meets the checks: a numpy value is converted, a new bad key raises, a step going
    back is refused; rows and merges come out as without the fast path."""
    run = wisp.init()
    run.log({"a": 1.0, "b": 2}, step=0)
    run.log({"a": 1.5, "b": 3}, step=1)
    run.log({"c": np.float32(0.5)})  # merges into the open row at step 1, converted
    run.log({"a": np.float64(2.0)}, step=3)
    with pytest.raises(UsageError):
        run.log({"a": 1.0, "_step": 2.0}, step=4)
    with pytest.warns(WispWarning, match="refused"):
        run.log({"a": 9.0}, step=2)
    run.log({"a": 3.0})  # closes step 3's row with it
    run.finish()
    rows = _rows(run)
    assert [(r["_step"], r.get("a"), r.get("c")) for r in rows] == [
        (0, 1.0, None),
        (1, 1.5, 0.5),
        (3, 3.0, None),
    ]
    assert type(rows[1]["c"]) is float

"""Fork and rewind offline: ``init(fork_from=...)``, ``init(resume_from=...)`` and the reader."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

import wisp
from wisp._runfile import RecordType, iter_records
from wisp.errors import NotFoundError, UsageError


def _parent(tmp_path: Path, steps: int = 100, **kw: object) -> wisp.Run:
    run = wisp.init(project="p", dir=str(tmp_path), mode="offline", config={"lr": 1, "bs": 8}, **kw)
    for i in range(steps):
        run.log({"loss": float(i), "acc": i})
    run.finish()
    return run


def _digest(run: wisp.Run) -> str:
    assert run.file_path is not None
    return hashlib.sha256(Path(run.file_path).read_bytes()).hexdigest()


def _steps(path: str | None, key: str = "loss") -> list[tuple[int, float]]:
    assert path is not None
    return [(r["_step"], r[key]) for r in wisp.open_run(path).history([key])]


def test_fork_reads_as_the_parents_history_up_to_the_step_then_its_own(tmp_path: Path) -> None:
    """A fork at 50 of a 100-step run reads as the parent's 0..50 then its own 51..60, its
    config starts as the parent's, its summary covers that view, and the parent is unchanged."""
    parent = _parent(tmp_path)
    before = _digest(parent)
    fork = wisp.init(fork_from=f"{parent.id}?_step=50", config={"lr": 0.5}, dir=str(tmp_path))
    assert fork.step == 51 and fork.project == "p" and dict(fork.config) == {"lr": 0.5, "bs": 8}
    for i in range(10):
        fork.log({"loss": -float(i)})
    fork.finish()
    got = _steps(fork.dir)
    assert got == [(s, float(s)) for s in range(51)] + [(51 + i, -float(i)) for i in range(10)]
    data = wisp.open_run(fork.dir)
    assert data.summary == {"loss": -9.0, "acc": 50}
    assert data.parent == {
        "run_id": parent.id,
        "project": "p",
        "step": 50,
        "dir": parent.dir,
        "found": True,
    }
    assert _digest(parent) == before and len(_steps(parent.dir)) == 100
    meta = json.loads(Path(fork.dir, "run.json").read_text())  # type: ignore[arg-type]
    assert meta["fork_from"] == {"run_id": parent.id, "project": "p", "step": 50}


def test_fork_records_a_lineage_record_after_its_run_record(tmp_path: Path) -> None:
    """The LINEAGE record (type 13) names the parent, the step and the parent's size then."""
    parent = _parent(tmp_path, 5)
    fork = wisp.init(fork_from=f"p/{parent.id}?_step=4", dir=str(tmp_path))
    fork.finish()
    recs = list(iter_records(fork.file_path))  # type: ignore[arg-type]
    assert recs[0].type == RecordType.RUN
    (lineage,) = [json.loads(r.payload) for r in recs if r.type == RecordType.LINEAGE]
    assert lineage["kind"] == "fork" and lineage["parent_id"] == parent.id
    assert lineage["step"] == 4 and lineage["parent_bytes"] == Path(parent.file_path).stat().st_size  # type: ignore[arg-type]
    assert Path(fork.dir, lineage["parent_dir"]).resolve() == Path(parent.dir).resolve()  # type: ignore[arg-type]


def test_a_fork_of_a_fork_reads_through_both(tmp_path: Path) -> None:
    """A fork at 55 of a fork made at 50 reads 0..50 of the first run, 51..55 of the fork,
    then its own rows."""
    parent = _parent(tmp_path)
    fork = wisp.init(fork_from=f"{parent.id}?_step=50", dir=str(tmp_path))
    for i in range(10):
        fork.log({"loss": -float(i)})
    fork.finish()
    grand = wisp.init(fork_from=f"{fork.id}?_step=55", dir=str(tmp_path))
    grand.log({"loss": 7.0})
    grand.finish()
    got = _steps(grand.dir)
    assert got[:51] == [(s, float(s)) for s in range(51)]
    assert got[51:] == [(51 + i, -float(i)) for i in range(5)] + [(56, 7.0)]
    assert wisp.open_run(grand.dir).parent["run_id"] == fork.id  # type: ignore[index]


def test_what_the_parent_does_later_never_changes_a_fork(tmp_path: Path) -> None:
    """The fork reads the parent's file as it was: rows the parent logs or rewinds after the
    fork stay out of the fork's history."""
    parent = _parent(tmp_path, 60)
    fork = wisp.init(fork_from=f"{parent.id}?_step=50", dir=str(tmp_path), reinit="create_new")
    fork.finish()
    again = wisp.init(resume_from=f"{parent.id}?_step=20", dir=str(tmp_path))
    for i in range(21, 70):
        again.log({"loss": 1000.0 + i})
    again.finish()
    assert _steps(fork.dir) == [(s, float(s)) for s in range(51)]


def test_forking_a_running_parent_reads_its_file(tmp_path: Path) -> None:
    """A parent still being written (no last_step in its run.json) is checked from its file:
    the fork may take any step written so far."""
    parent = wisp.init(project="p", dir=str(tmp_path), mode="offline", reinit="create_new")
    for i in range(30):
        parent.log({"loss": float(i)})
    parent.barrier(10)
    with pytest.raises(UsageError, match="ends at step 29"):
        wisp.init(fork_from=f"{parent.id}?_step=30", dir=str(tmp_path), reinit="create_new")
    fork = wisp.init(fork_from=f"{parent.id}?_step=29", dir=str(tmp_path), reinit="create_new")
    fork.finish()
    parent.finish()
    assert _steps(fork.dir) == [(s, float(s)) for s in range(30)]


def test_fork_arguments_are_checked_as_wandb_checks_them(tmp_path: Path) -> None:
    """Bad moments, combined arguments, the fork's own id, a step past the parent's end and a
    parent that does not exist are refused with wandb's messages and shapes."""
    parent = _parent(tmp_path, 10)
    d = str(tmp_path)
    for bad in ("nope", f"{parent.id}?step=3", f"{parent.id}?_step=x", "a/b/c/d?_step=1", 5):
        with pytest.raises(UsageError, match="Could not parse passed run moment"):
            wisp.init(fork_from=bad, dir=d)
    for bad in ("1.5", "-3", "1e400", "nan"):
        with pytest.raises(UsageError, match="whole number"):
            wisp.init(fork_from=f"{parent.id}?_step={bad}", dir=d)
    with pytest.raises(UsageError, match="must be >= 0 and < 2"):
        wisp.init(fork_from=f"{parent.id}?_step={2**64}", dir=d)
    with pytest.raises(UsageError, match="mutually exclusive"):
        wisp.init(fork_from=f"{parent.id}?_step=1", resume="allow", dir=d)
    with pytest.raises(UsageError, match="mutually exclusive"):
        wisp.init(fork_from=f"{parent.id}?_step=1", resume_from=f"{parent.id}?_step=1", dir=d)
    with pytest.raises(UsageError, match="same as the run to `fork_from`"):
        wisp.init(id=parent.id, fork_from=f"{parent.id}?_step=1", dir=d)
    with pytest.raises(UsageError, match=r"step 10 is past the last step .* ends at step 9"):
        wisp.init(fork_from=f"{parent.id}?_step=10", dir=d)
    with pytest.raises(NotFoundError, match="run 'ghost' was not found"):
        wisp.init(fork_from="ghost?_step=1", dir=d)
    with pytest.raises(NotFoundError, match="in project 'other'"):
        wisp.init(fork_from=f"other/{parent.id}?_step=1", dir=d)
    with pytest.raises(NotFoundError, match="run 'ghost' was not found"):
        wisp.init(resume_from="ghost?_step=1", dir=d)
    assert len(list((tmp_path / "wisp").iterdir())) == 1  # nothing was created


def test_rewind_sets_later_rows_aside_and_goes_on_from_the_step(tmp_path: Path) -> None:
    """Rewinding a 100-step run to 80 then logging 81..90 reads 0..80 plus the new 81..90;
    the old 81..99 are set aside (kept, listed, in history only on request); the summary
    is recomputed and config kept."""
    parent = _parent(tmp_path)
    run = wisp.init(resume_from=f"{parent.id}?_step=80", dir=str(tmp_path))
    assert run.id == parent.id and run.dir == parent.dir and run.step == 81
    assert dict(run.config) == {"lr": 1, "bs": 8}
    for i in range(81, 91):
        run.log({"loss": 1000.0 + i})
    run.finish()
    data = wisp.open_run(run.dir)  # type: ignore[arg-type]
    assert _steps(run.dir) == [(s, float(s)) for s in range(81)] + [
        (s, 1000.0 + s) for s in range(81, 91)
    ]
    assert data.summary == {"loss": 1090.0, "acc": 80}
    (aside,) = data.set_aside
    assert aside["rewind"] == 0 and aside["step"] == 80
    assert [(r[0], r[2]["loss"]) for r in aside["rows"]] == [(s, float(s)) for s in range(81, 100)]
    flagged = [r for r in data.history(["loss"], set_aside=True) if "_rewind" in r]
    assert [r["_step"] for r in flagged] == list(range(81, 100))
    assert all(r["_rewind"] == 0 for r in flagged)
    meta = json.loads(Path(run.dir, "run.json").read_text())  # type: ignore[arg-type]
    assert [r["step"] for r in meta["rewinds"]] == [80] and meta["last_step"] == 90


def test_rewind_after_a_crash_and_a_plain_resume_after_it(tmp_path: Path) -> None:
    """A run that died without a finish record rewinds the same way (its summary over the
    rows kept is written at once), and a later resume continues after the new steps."""
    run = wisp.init(project="p", id="r1", dir=str(tmp_path), reinit="create_new")
    for i in range(50):
        run.log({"loss": float(i)})
    run.abandon("crashed")
    back = wisp.init(resume_from="r1?_step=10", dir=str(tmp_path))
    back.abandon("crashed")  # nothing more logged: the SUMMARY after RESUME says step 10
    assert wisp.open_run(back.dir).summary == {"loss": 10.0}  # type: ignore[arg-type]
    again = wisp.init(id="r1", resume="must", dir=str(tmp_path))
    assert again.step == 11
    again.log({"loss": -1.0})
    again.finish()
    assert _steps(again.dir)[-3:] == [(9, 9.0), (10, 10.0), (11, -1.0)]


def test_two_rewinds_each_set_aside_their_rows(tmp_path: Path) -> None:
    """A second rewind sets aside what came after its step, including rows of the first
    rewind's segment; set_aside lists both, oldest first."""
    parent = _parent(tmp_path, 20)
    first = wisp.init(resume_from=f"{parent.id}?_step=15", dir=str(tmp_path))
    for i in range(16, 25):
        first.log({"loss": 100.0 + i})
    first.finish()
    second = wisp.init(resume_from=f"{parent.id}?_step=10", dir=str(tmp_path))
    second.log({"loss": -11.0})
    second.finish()
    data = wisp.open_run(parent.dir)  # type: ignore[arg-type]
    assert _steps(parent.dir) == [(s, float(s)) for s in range(11)] + [(11, -11.0)]
    assert [(a["step"], [r[0] for r in a["rows"]]) for a in data.set_aside] == [
        (15, list(range(16, 20))),
        (10, list(range(11, 16)) + list(range(16, 25))),
    ]


def test_rewind_refuses_a_step_past_the_end_or_before_a_forks_start(tmp_path: Path) -> None:
    """resume_from past the last step, or below the step a fork was made at, is refused."""
    parent = _parent(tmp_path, 10)
    with pytest.raises(UsageError, match="step 12 is past the last step"):
        wisp.init(resume_from=f"{parent.id}?_step=12", dir=str(tmp_path))
    fork = wisp.init(fork_from=f"{parent.id}?_step=5", dir=str(tmp_path))
    fork.log({"loss": 0.0})
    fork.finish()
    with pytest.raises(UsageError, match=r"was forked from .* at step 5"):
        wisp.init(resume_from=f"{fork.id}?_step=3", dir=str(tmp_path))


def test_a_forks_summary_follows_define_metric_over_its_whole_view(tmp_path: Path) -> None:
    """A key the parent declared with summary='min' keeps the minimum over the parent's part
    and the fork's rows; a value the user set in the fork's summary stays."""
    run = wisp.init(project="p", dir=str(tmp_path), reinit="create_new")
    run.define_metric("loss", summary="min")
    for v in (5.0, 1.0, 3.0):
        run.log({"loss": v})
    run.finish()
    fork = wisp.init(fork_from=f"{run.id}?_step=2", dir=str(tmp_path))
    fork.log({"loss": 2.0})
    fork.summary["note"] = "mine"
    fork.finish()
    assert wisp.open_run(fork.dir).summary == {"loss": 1.0, "note": "mine"}  # type: ignore[arg-type]


def test_a_fork_of_a_run_with_media_finds_them_in_the_parents_directory(tmp_path: Path) -> None:
    """Images and histograms the parent logged before the fork step read back through the
    fork; the parent's console lines stay the parent's."""
    np = pytest.importorskip("numpy")
    run = wisp.init(project="p", dir=str(tmp_path), reinit="create_new")
    for i in range(3):
        run.log({"img": wisp.Image(np.full((4, 4), i * 50, np.uint8)), "h": wisp.Histogram([i])})
    run.record(RecordType.CONSOLE, {"lines": [[1.0, "stdout", "parent says hi"]]})
    run.finish()
    fork = wisp.init(fork_from=f"{run.id}?_step=1", dir=str(tmp_path))
    fork.log({"img": wisp.Image(np.full((4, 4), 255, np.uint8))})
    fork.finish()
    data = wisp.open_run(fork.dir)  # type: ignore[arg-type]
    steps, paths = data.images("img")
    assert steps == [0, 1, 2]
    assert [Path(p[0]).parent.parent for p in paths] == [Path(run.dir)] * 2 + [Path(fork.dir)]  # type: ignore[arg-type]
    assert all(Path(p[0]).is_file() for p in paths)
    assert data.histograms("h")[0] == [0, 1] and "console" not in data.records


def test_a_fork_whose_parent_is_gone_reads_its_own_rows(tmp_path: Path) -> None:
    """Moved away from its parent, a fork still opens: its own rows, parent["found"] False."""
    import shutil

    parent = _parent(tmp_path, 5)
    fork = wisp.init(fork_from=f"{parent.id}?_step=2", dir=str(tmp_path))
    fork.log({"loss": 9.0})
    fork.finish()
    shutil.rmtree(parent.dir)  # type: ignore[arg-type]
    data = wisp.open_run(fork.dir)  # type: ignore[arg-type]
    assert _steps(fork.dir) == [(3, 9.0)] and data.parent["found"] is False  # type: ignore[index]


def test_init_says_what_it_forked_or_rewound(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """init() adds a line naming the parent and step of a fork, and what a rewind set aside."""
    parent = _parent(tmp_path, 10)
    capsys.readouterr()
    wisp.init(fork_from=f"{parent.id}?_step=4", dir=str(tmp_path)).finish()
    assert f"wisp: forked from run {parent.id} at step 4\n" in capsys.readouterr().err
    wisp.init(resume_from=f"{parent.id}?_step=6", dir=str(tmp_path)).finish()
    assert "wisp: rewound to step 6: 3 later row(s) set aside\n" in capsys.readouterr().err

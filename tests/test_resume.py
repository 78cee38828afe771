"""``wisp.init(id=..., resume=...)``: a new writer segment in the same run file."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import wisp
from wisp._runfile import RecordType, iter_records
from wisp.errors import UsageError


@pytest.fixture
def no_run() -> object:
    """Leaves no current run behind."""
    yield
    if wisp.run is not None:
        wisp.run.finish()


def test_resume_appends_a_segment_and_continues_steps(tmp_path: Path, no_run: None) -> None:
    """A resumed run reuses its directory, adds RUN + RESUME records and continues its steps."""
    run = wisp.init(project="p", id="r1", dir=str(tmp_path), config={"lr": 1}, mode="offline")
    for i in range(10):
        wisp.log({"loss": float(i)})
    run.finish()
    again = wisp.init(id="r1", resume="allow", dir=str(tmp_path), config={"bs": 4})
    assert again.dir == run.dir and again.step == 10 and again.project == "p"
    assert again.name == run.name and dict(again.config) == {"lr": 1, "bs": 4}
    wisp.log({"loss": 10.0})
    again.finish()
    recs = list(iter_records(again.file_path))  # type: ignore[arg-type]
    runs = [json.loads(r.payload) for r in recs if r.type == RecordType.RUN]
    assert len(runs) == 2 and runs[0]["writer_id"] != runs[1]["writer_id"]
    idx = [r.type for r in recs].index(RecordType.RESUME)
    assert recs[idx - 1].type in (RecordType.RUN, RecordType.CONFIG)
    resume = json.loads(recs[idx].payload)
    assert resume["last_step"] == 9 and resume["previous_writer_id"] == runs[0]["writer_id"]
    steps = [row["_step"] for row in wisp.open_run(again.dir).history()]
    assert steps == list(range(11))


def test_resume_must_fails_without_the_run(tmp_path: Path) -> None:
    """resume='must' names the missing id and where it looked."""
    with pytest.raises(UsageError, match="no run with id 'nope'"):
        wisp.init(id="nope", resume="must", dir=str(tmp_path), mode="offline")
    assert not (tmp_path / "wisp").exists() or not list((tmp_path / "wisp").iterdir())


def test_resume_never_fails_when_the_run_exists(tmp_path: Path, no_run: None) -> None:
    """resume='never' refuses an id that already has a run directory."""
    wisp.init(id="taken", dir=str(tmp_path), mode="offline").finish()
    with pytest.raises(UsageError, match="already exists"):
        wisp.init(id="taken", resume="never", dir=str(tmp_path), mode="offline")


def test_resume_cuts_a_torn_tail_first(tmp_path: Path, no_run: None) -> None:
    """A torn record left by a killed process is removed so the new segment stays readable."""
    run = wisp.init(id="torn", dir=str(tmp_path), mode="offline")
    for i in range(5):
        wisp.log({"x": i})
    run.finish()
    with open(run.file_path, "ab") as f:  # type: ignore[arg-type]
        f.write(b"\x40\x00\x00\x00garbage")
    again = wisp.init(id="torn", resume="must", dir=str(tmp_path), mode="offline")
    wisp.log({"x": 5})
    again.finish()
    data = wisp.open_run(again.dir)
    assert data.ignored_bytes == 0
    assert [row["x"] for row in data.history()] == list(range(6))
    assert os.path.getsize(again.file_path) > 0  # type: ignore[arg-type]

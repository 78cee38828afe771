"""One step counter for a run's processes once it forks (src/wisp/_shared_steps.py), without forking here."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

import wisp
from wisp import _shared_steps
from wisp._run import Run


def _run(tmp_path: Path) -> Run:
    return wisp.init(project="steps", dir=str(tmp_path), settings={"git": False})


def _steps(run: Run, key: str) -> list[int]:
    return [r["_step"] for r in wisp.open_run(run.dir).history() if key in r]


def test_before_a_fork_the_run_gets_a_ledger_at_its_next_step(tmp_path: Path) -> None:
    """The ledger starts at the parent's next free step (past an open row); a run that never forks keeps the plain class."""
    run = _run(tmp_path)
    assert type(run) is Run
    run.log({"a": 1.0})
    run.log({"a": 2.0}, step=5)  # an open row: step 5 is taken
    _shared_steps.before_fork(run)
    assert isinstance(run, _shared_steps.SharedStepRun)
    assert run._ledger.cell[0] == 6  # type: ignore[attr-defined]
    run.finish()


def test_automatic_steps_skip_what_other_processes_took(tmp_path: Path) -> None:
    """Steps taken by another process (the counter moved on) are skipped by the next automatic step; explicit steps are the caller's."""
    run = _run(tmp_path)
    for i in range(3):
        run.log({"a": float(i)})
    _shared_steps.before_fork(run)
    ledger = run._ledger  # type: ignore[attr-defined]
    ledger.cell[0] = 10  # children logged steps 3..9
    run.log({"a": 3.0})
    assert run.step == 11 and ledger.cell[0] == 11
    run.log({"b": 1.0}, step=11)  # explicit, not back: allowed
    run.log({"b": 2.0}, step=20, commit=True)
    assert ledger.cell[0] == 21
    run.finish()
    assert _steps(run, "a") == [0, 1, 2, 10]
    assert _steps(run, "b") == [11, 20]


def test_without_shared_memory_the_run_keeps_its_own_steps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """When no ledger can be made (no /dev/shm) the run stays as it was and says so once."""

    def refuse(_: int) -> None:
        raise OSError(38, "no semaphores here")

    monkeypatch.setattr(_shared_steps, "StepLedger", refuse)
    run = _run(tmp_path)
    with caplog.at_level(logging.WARNING, logger="wisp"):
        _shared_steps.before_fork(run)
        _shared_steps.before_fork(run)
    assert type(run) is Run
    assert [r.message for r in caplog.records].count(caplog.records[0].message) == 1
    assert "no shared step counter" in caplog.records[0].message
    run.finish()

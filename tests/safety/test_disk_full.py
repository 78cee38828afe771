"""A full disk (ENOSPC) under a run: log() stays prompt, the file stays whole, writing resumes (src/wisp/_writer.py)."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import wisp
from wisp.errors import WriterError

from ._proc import tmpfs

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 4 MiB tmpfs mounted for this test (needs root, as CI has)."""
    with tmpfs(tmp_path / "small", "4m") as mnt:
        yield mnt


def test_a_full_disk_drops_counted_rows_keeps_the_file_whole_and_resumes(
    small_disk: Path,
) -> None:
    """Rows past a full disk and the memory budget are counted as lost, never block log() or reads, and writing resumes once space is freed."""
    filler = small_disk / "filler"
    filler.write_bytes(b"\0" * (3840 * 1024))
    run = wisp.init(
        project="full",
        dir=str(small_disk),
        settings={
            "git": False,
            "queue_size": 1000,
            "flush_interval": 0.05,
            "finish_timeout": 4,
            "disk_full_memory": 64 * 1024,
        },
    )
    w = run.writer
    assert w is not None
    deadline = time.monotonic() + 60
    i = 0
    while w.stalled is None and time.monotonic() < deadline:
        run.log({"a": float(i), "b": 1.0, "c": 2.0})
        i += 1
    assert w.stalled is not None, "the disk never filled"
    for _ in range(20_000):  # past the budget: rows are dropped and counted, log() never waits
        run.log({"a": float(i), "b": 1.0, "c": 2.0})
        i += 1
    assert len(w.queue) <= 1000 and w.rows_dropped > 0
    assert w.held_peak <= 64 * 1024 + 256 * 64  # the budget, plus one slice of rows
    t0 = time.monotonic()
    assert run.summary["b"] == 1.0  # reading does not wait for the stalled writer
    assert time.monotonic() - t0 < 1.0
    # the file ends on a whole record while the disk is full
    assert wisp.open_run(run.dir).ignored_bytes == 0

    filler.unlink()  # space returns: writing resumes by itself
    deadline = time.monotonic() + 20
    while w.stalled is not None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert w.stalled is None, "writing did not resume after space was freed"
    for k in range(100):
        run.log({"after": float(k)})
    assert run.barrier(10)
    with pytest.raises(WriterError, match=r"rows lost to a full disk .*No space left"):
        run.finish()
    data = wisp.open_run(run.dir)
    rows = list(data.history())
    assert data.ignored_bytes == 0
    assert [r["after"] for r in rows if "after" in r] == [float(k) for k in range(100)]
    assert len(rows) + w.rows_lost == i + 100
    assert os.path.getsize(run.file_path) > 0

"""wisp.save(): files copied into the run with FILE records."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

import wisp


def test_save_copies_matching_files_and_records_them(tmp_path: Path) -> None:
    """A glob's files are copied under files/ keeping paths relative to the glob's directory,
    each with a FILE record holding size and sha256; a later change to the source does not
    reach the copy."""
    src = tmp_path / "src"
    (src / "sub").mkdir(parents=True)
    (src / "a.txt").write_text("alpha")
    (src / "sub" / "b.txt").write_text("beta")
    (src / "c.bin").write_bytes(b"x")
    run = wisp.init(project="files")
    stored = wisp.save(str(src / "**" / "*.txt"))
    assert stored == ["files/a.txt", "files/sub/b.txt"]
    wisp.save(src / "c.bin", base_path=tmp_path, policy="end")
    wisp.finish()
    (src / "a.txt").write_text("changed")
    data = wisp.open_run(run.dir)
    records = {r["name"]: r for r in data.records["file"]}
    assert set(records) == {"a.txt", "sub/b.txt", "src/c.bin"}
    assert (Path(run.dir) / "files" / "a.txt").read_text() == "alpha"
    assert (Path(run.dir) / "files" / "sub" / "b.txt").read_text() == "beta"
    rec = records["a.txt"]
    assert rec["size"] == 5 and rec["sha256"] == hashlib.sha256(b"alpha").hexdigest()
    assert rec["path"] == "files/a.txt" and rec["kind"] == "file"
    assert records["src/c.bin"]["policy"] == "end"


def test_save_refuses_missing_files_bad_policy_and_paths_outside(tmp_path: Path) -> None:
    """A missing file, an unknown policy and a file outside base_path raise UsageError."""
    (tmp_path / "f.txt").write_text("x")
    wisp.init(project="files")
    with pytest.raises(wisp.UsageError, match="no file"):
        wisp.save(tmp_path / "missing.txt")
    with pytest.raises(wisp.UsageError, match="policy"):
        wisp.save(tmp_path / "f.txt", policy="sometimes")
    with pytest.raises(wisp.UsageError, match="not under base_path"):
        wisp.save(tmp_path / "f.txt", base_path=tmp_path / "elsewhere")
    assert wisp.save(tmp_path / "*.none") == []


def test_save_needs_a_run(tmp_path: Path) -> None:
    """save() without a current run raises RunStateError."""
    with pytest.raises(wisp.RunStateError):
        wisp.save(tmp_path / "x")


def test_failed_copy_is_counted_not_raised(tmp_path: Path) -> None:
    """A file that vanishes before the writer copies it is counted under 'save' in the run's
    failures and reported by finish(), never raised into the caller's save()."""
    from wisp.integrations._files import save_file

    f = tmp_path / "gone.txt"
    f.write_text("x")
    run = wisp.init(project="files")
    run.barrier(5)
    # hold the writer so the copy runs after the file is gone
    import threading

    gate = threading.Event()
    run.on_writer(lambda: gate.wait(5) and None)
    save_file(run, f)
    os.remove(f)
    gate.set()
    with pytest.raises(wisp.errors.WriterError, match="save"):
        wisp.finish()
    assert run.failures == {"save": 1}

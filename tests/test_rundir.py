"""The run directory owner: names, discovery, run.json, the upload cursor and "fully synced" (src/wisp/_rundir.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from wisp import _rundir as R
from wisp._protocol import RecordType
from wisp._runfile import HEADER, encode_record

SERVER = "http://server.test"


def _write_run(run_dir: Path, types: list[int]) -> int:
    """A run file holding records of ``types`` (small JSON payloads); returns its size."""
    run_dir.mkdir(parents=True, exist_ok=True)
    data = HEADER + b"".join(
        encode_record(t, json.dumps({"run_id": "r1", "state": "finished"}).encode()) for t in types
    )
    (run_dir / R.RUN_FILE).write_bytes(data)
    return len(data)


def _cursor(run_dir: Path, offset: int, *, done: bool = True, server: str = SERVER) -> None:
    R.Cursor(server, offset, 3, "w1", done).save(str(run_dir))


FINISHED = [RecordType.RUN, RecordType.HISTORY, RecordType.SUMMARY, RecordType.FINISH]


def test_a_finished_run_whose_cursor_covers_the_file_is_fully_synced(tmp_path: Path) -> None:
    """done + offset == size + a finish record ending the last segment: fully synced, for any or that server."""
    size = _write_run(tmp_path, FINISHED)
    _cursor(tmp_path, size)
    assert R.sync_status(str(tmp_path)) == (True, "fully synced")
    assert R.sync_status(str(tmp_path), SERVER) == (True, "fully synced")


@pytest.mark.parametrize(
    ("types", "offset_delta", "done", "why"),
    [
        (FINISHED, -1, True, "synced"),  # the last byte is not acknowledged
        (FINISHED, +9, True, "synced"),  # the file is shorter than the cursor says
        (FINISHED, 0, False, "not marked done"),  # the uploader never saw the end
        (FINISHED[:-1], 0, True, "no finish record"),  # crashed, or still running
        # resumed: the first segment finished, the second has not (yet)
        ([*FINISHED, RecordType.RUN, RecordType.RESUME], 0, True, "no finish record"),
    ],
)
def test_edge_cases_are_not_fully_synced(
    tmp_path: Path, types: list[int], offset_delta: int, done: bool, why: str
) -> None:
    """Each way a run can be short of fully synced is reported as such, with its reason."""
    size = _write_run(tmp_path, types)
    _cursor(tmp_path, size + offset_delta, done=done)
    ok, reason = R.sync_status(str(tmp_path))
    assert not ok and why in reason


def test_a_resumed_run_that_finished_again_is_fully_synced(tmp_path: Path) -> None:
    """A second segment with its own finish record makes the run fully synced again."""
    size = _write_run(tmp_path, [*FINISHED, RecordType.RUN, RecordType.RESUME, RecordType.FINISH])
    _cursor(tmp_path, size)
    assert R.sync_status(str(tmp_path))[0]


def test_cursor_problems_are_reasons(tmp_path: Path) -> None:
    """No cursor, a damaged one, one for another server, or no run file: never fully synced."""
    size = _write_run(tmp_path, FINISHED)
    assert R.sync_status(str(tmp_path)) == (False, "never synced")
    (tmp_path / R.CURSOR_FILE).write_text("{not json")
    assert "unreadable" in R.sync_status(str(tmp_path))[1]
    (tmp_path / R.CURSOR_FILE).write_text(json.dumps({"server": SERVER, "offset": "x"}))
    assert "unreadable" in R.sync_status(str(tmp_path))[1]
    _cursor(tmp_path, size, server="http://other.test")
    assert R.sync_status(str(tmp_path), SERVER) == (
        False,
        "synced to another server (http://other.test)",
    )
    assert R.sync_status(str(tmp_path))[0]  # gc: any server will do
    os.remove(tmp_path / R.RUN_FILE)
    assert R.sync_status(str(tmp_path)) == (False, "no run file")


def test_sync_and_gc_share_the_definition(tmp_path: Path) -> None:
    """`wisp gc` (cli._runs.sync_state) and `wisp sync` decide with the same function."""
    from wisp._upload import _sync
    from wisp.cli._runs import sync_state

    assert _sync.sync_status is R.sync_status
    for i, types in enumerate([FINISHED, FINISHED[:-1], [*FINISHED, RecordType.RUN]]):
        d = tmp_path / f"run-{i}"
        _cursor(d, _write_run(d, types))
        assert sync_state(str(d)) == R.sync_status(str(d))


def test_cursor_round_trip_and_load_rules(tmp_path: Path) -> None:
    """A saved cursor loads back for its server; another server or a damaged file gives a fresh one."""
    R.Cursor(SERVER, 100, 7, "w", True).save(str(tmp_path))
    c = R.Cursor.load(str(tmp_path), SERVER)
    assert (c.offset, c.acked_seq, c.writer_id, c.done) == (100, 7, "w", True)
    fresh = R.Cursor.load(str(tmp_path), "http://other.test")
    assert (fresh.offset, fresh.acked_seq, fresh.done) == (len(HEADER), -1, False)
    R.mark_not_done(str(tmp_path))
    assert R.Cursor.load(str(tmp_path), SERVER).done is False
    (tmp_path / R.CURSOR_FILE).write_text("[1, 2]")
    assert R.Cursor.load(str(tmp_path), SERVER).offset == len(HEADER)
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]


def test_a_first_cursor_is_written_in_place_and_an_existing_one_replaced(tmp_path: Path) -> None:
    """save_first writes a cursor that loads back; over another server's cursor it replaces
    it like save; an empty (cut short) first cursor loads as a fresh one."""
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    R.Cursor(SERVER, 100, 7, "w", True).save_first(str(a))
    c = R.Cursor.load(str(a), SERVER)
    assert (c.offset, c.acked_seq, c.writer_id, c.done) == (100, 7, "w", True)
    R.Cursor(SERVER, 120, 8, "w", True).save_first(str(a))
    assert R.Cursor.load(str(a), SERVER).offset == 120
    assert os.listdir(a) == [R.CURSOR_FILE]
    (b / R.CURSOR_FILE).write_bytes(b"")
    assert R.Cursor.load(str(b), SERVER).offset == len(HEADER)


def test_upload_lock_is_exclusive(tmp_path: Path) -> None:
    """A second lock on the same run's uploads is refused until the first is released."""
    fd = R.lock_uploads(str(tmp_path))
    assert fd is not None
    assert R.lock_uploads(str(tmp_path)) is None
    R.unlock_uploads(fd)
    again = R.lock_uploads(str(tmp_path))
    assert again is not None
    R.unlock_uploads(again)


def test_meta_round_trip_and_damage(tmp_path: Path) -> None:
    """write_meta replaces run.json atomically; read_meta gives {} for missing or non-object files."""
    assert R.read_meta(str(tmp_path)) == {}
    R.write_meta(str(tmp_path), {"id": "a", "state": "running"})
    assert R.read_meta(str(tmp_path)) == {"id": "a", "state": "running"}
    (tmp_path / R.META_FILE).write_text("[1]")
    assert R.read_meta(str(tmp_path)) == {}


def test_discovery(tmp_path: Path) -> None:
    """Run dirs are found by id, under a folder (or its wisp/), from a run file, and by rank files."""
    runs = tmp_path / R.RUNS_DIR
    a = runs / R.dir_name("20240101_000000", "abc")
    b = runs / R.dir_name("20240102_000000", "abc")
    claimed = runs / R.dir_name("20240103_000000", "abc")
    for d in (a, b):
        _write_run(d, FINISHED)
    claimed.mkdir()
    assert R.find_by_id(str(tmp_path), "abc") == [str(a), str(b)]
    assert R.find_by_id(str(tmp_path), "abc", with_file=False)[-1] == str(claimed)
    assert R.run_dirs_in(str(runs)) == [str(a), str(b)]
    assert R.run_dirs_under([tmp_path]) == [str(a), str(b)]
    assert R.run_dirs_under([a / R.RUN_FILE, a]) == [str(a)]
    with pytest.raises(ValueError, match="not a run directory"):
        R.run_dirs_under([tmp_path / "nope"])
    assert R.rank_file_names(0) == (R.RUN_FILE, R.META_FILE)
    name, meta = R.rank_file_names(3)
    (a / name).write_bytes(HEADER)
    assert R.rank_files(str(a)) == {3: str(a / name)} and meta.endswith(".json")


def test_user_files_skip_what_wisp_writes(tmp_path: Path) -> None:
    """user_files() lists the user's files in a run directory, never wisp's own."""
    from wisp._rundir import user_files

    for name in ("run.wisp", "run.json", "run.rank1.wisp", "upload.json", "x.tmp123"):
        (tmp_path / name).write_text("w")
    for d in ("media", "files"):
        (tmp_path / d).mkdir()
        (tmp_path / d / "a").write_text("w")
    (tmp_path / "model.pt").write_text("u")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "media").write_text("u")
    assert user_files(str(tmp_path)) == ["model.pt", "sub/media"]


def test_the_run_id_is_read_from_a_run_directory_name() -> None:
    """id_of_dir() gives the id in run-<stamp>-<id> (ids may hold dashes), else the folder's name."""
    assert R.id_of_dir(f"/x/{R.dir_name('20240101_000000', 'my-run-1')}/") == "my-run-1"
    assert R.id_of_dir("/x/elsewhere") == "elsewhere"

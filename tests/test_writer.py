"""The writer thread: rows and records into the run file, summary, failures, backpressure (src/wisp/_writer.py)."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

import pytest

from wisp._deferred import Deferred
from wisp._protocol import RecordType
from wisp._rundir import write_meta
from wisp._runfile import decode_history, iter_records
from wisp._writer import CALL, METRIC, RECORD, ROW, ROW_DEFERRED, SUMMARY_SET, Writer
from wisp.errors import RunStateError


def _writer(tmp_path: Path, **kw: Any) -> Writer:
    opts: dict[str, Any] = {"flush_interval": 0.05, "fsync": "never", "queue_size": 100}
    opts.update(kw)
    w = Writer(str(tmp_path), "run.wisp", **opts)
    w.start()
    return w


def _records(tmp_path: Path) -> list[tuple[int, Any]]:
    data = (tmp_path / "run.wisp").read_bytes()
    out = []
    for rec in iter_records(data):
        if rec.type == RecordType.HISTORY:
            out.append((rec.type, decode_history(rec.payload)))
        else:
            out.append((rec.type, json.loads(rec.payload)))
    return out


def test_rows_and_records_reach_the_file_in_order(tmp_path: Path) -> None:
    """Rows become history records and other records keep their place between them."""
    w = _writer(tmp_path)
    w.put((ROW, 0, 1.0, {"a": 1.0}))
    w.put((ROW, 1, 2.0, {"a": 2.0, "b": 3}))
    w.put((RECORD, RecordType.ALERT, {"title": "t"}))
    w.put((ROW, 2, 3.0, {"a": 4.0}))
    assert w.close(5)
    recs = _records(tmp_path)
    # close() ends with the summary the rows produced
    assert [t for t, _ in recs] == [
        RecordType.HISTORY,
        RecordType.ALERT,
        RecordType.HISTORY,
        RecordType.SUMMARY,
    ]
    assert recs[3][1] == {"summary": {"a": 4.0, "b": 3}}
    assert recs[0][1] == [[0, 1.0, {"a": 1.0}], [1, 2.0, {"a": 2.0, "b": 3}]]
    assert recs[2][1] == [[2, 3.0, {"a": 4.0}]]
    assert (w.rows_written, w.last_step, w.failures) == (3, 2, {})


def test_barrier_makes_everything_so_far_readable(tmp_path: Path) -> None:
    """After barrier() the file holds every row queued before it, without close()."""
    w = _writer(tmp_path, flush_interval=3600.0)
    for i in range(600):  # more than one slice
        w.put((ROW, i, float(i), {"x": i}))
    assert w.barrier(5)
    rows = [r for t, p in _records(tmp_path) if t == RecordType.HISTORY for r in p]
    assert [r[0] for r in rows] == list(range(600))
    assert w.close(5)


def test_summary_follows_metrics_and_user_values(tmp_path: Path) -> None:
    """The summary is last value by default, min for a define_metric glob, and user values override."""
    w = _writer(tmp_path)
    w.put((METRIC, {"name": "loss*", "step_metric": None, "summary": "min", "hidden": False}))
    for i, v in enumerate([3.0, 1.0, 2.0]):
        w.put((ROW, i, 0.0, {"loss": v, "acc": v}))
    w.put((SUMMARY_SET, {"best": 7}, ()))
    w.put((CALL, w.write_summary))
    assert w.barrier(5)
    assert w.summary_view() == {"loss": 1.0, "acc": 2.0, "best": 7}
    w.put((SUMMARY_SET, {}, ("best",)))
    assert w.barrier(5)
    assert "best" not in w.summary_view()
    assert w.close(5)
    summaries = [p for t, p in _records(tmp_path) if t == RecordType.SUMMARY]
    assert summaries[0]["summary"] == {"loss": 1.0, "acc": 2.0, "best": 7}


class _Broken(Deferred):
    def resolve(self, ctx: Any) -> Any:
        raise OSError("disk on fire")


class _Media(Deferred):
    def resolve(self, ctx: Any) -> Any:
        return {"_type": "blob", "path": ctx.save_media(b"same bytes", ".bin")}


def test_a_failing_value_is_counted_and_its_row_kept(tmp_path: Path) -> None:
    """A Deferred that raises is counted under its key; the rest of the row is written."""
    w = _writer(tmp_path)
    w.put((ROW_DEFERRED, 0, 0.0, {"ok": 1, "bad": _Broken()}))
    assert w.close(5)
    rows = [r for t, p in _records(tmp_path) if t == RecordType.HISTORY for r in p]
    assert rows == [[0, 0.0, {"ok": 1}]]
    assert w.failures == {"value 'bad'": 1} and isinstance(w.first_error, OSError)


def test_count_failure_counts_without_failing_the_run(tmp_path: Path) -> None:
    """count_failure() adds to failures but leaves first_error (what finish() raises) alone."""
    w = _writer(tmp_path)
    assert [w.count_failure("alert") for _ in range(3)] == [1, 2, 3]
    assert w.failures == {"alert": 3} and w.first_error is None
    assert w.close(5)


def test_media_is_stored_once_by_content(tmp_path: Path) -> None:
    """Two values with the same bytes share one media file named by its sha256."""
    w = _writer(tmp_path)
    w.put((ROW_DEFERRED, 0, 0.0, {"m": _Media()}))
    w.put((ROW_DEFERRED, 1, 0.0, {"m": _Media()}))
    assert w.close(5)
    rows = [r for t, p in _records(tmp_path) if t == RecordType.HISTORY for r in p]
    paths = {r[2]["m"]["path"] for r in rows}
    assert len(paths) == 1
    (path,) = paths
    assert path.startswith("media/") and len(os.path.basename(path)) == 64 + len(".bin")
    assert os.listdir(tmp_path / "media") == [os.path.basename(path)]


def test_a_full_queue_makes_the_caller_wait_and_is_counted(tmp_path: Path) -> None:
    """wait_for_space() blocks while the queue is full and counts each wait."""
    w = _writer(tmp_path, queue_size=4)
    gate = threading.Event()
    w.put((CALL, lambda: gate.wait(5) and None))  # hold the writer
    for i in range(4):
        w.queue.append((ROW, i, 0.0, {"x": i}))
    waiter = threading.Thread(target=w.wait_for_space)
    waiter.start()
    waiter.join(0.2)
    assert waiter.is_alive()  # blocked: the writer is held
    gate.set()
    waiter.join(5)
    assert not waiter.is_alive() and w.backpressure_waits == 1
    assert w.close(5)


def test_append_is_the_writer_threads_record_api(tmp_path: Path) -> None:
    """A call queued on the writer appends a JSON record with append(), in order with rows."""
    w = _writer(tmp_path)
    w.put((ROW, 0, 0.0, {"a": 1}))
    w.put((CALL, lambda: w.append(RecordType.FILE, {"path": "files/x", "size": 1})))
    assert w.close(5)
    recs = _records(tmp_path)
    assert [t for t, _ in recs][:2] == [RecordType.HISTORY, RecordType.FILE]
    assert recs[1][1] == {"path": "files/x", "size": 1}


def test_an_existing_file_is_appended_to(tmp_path: Path) -> None:
    """A second writer on the same file appends after the first one's records (one header)."""
    w = _writer(tmp_path)
    w.put((RECORD, RecordType.RUN, {"run_id": "a"}))
    assert w.close(5)
    w2 = _writer(tmp_path)
    w2.put((RECORD, RecordType.RUN, {"run_id": "a", "segment": 1}))
    assert w2.close(5)
    assert [p for _, p in _records(tmp_path)] == [{"run_id": "a"}, {"run_id": "a", "segment": 1}]


def test_one_unencodable_row_keeps_every_good_row_of_its_batch(tmp_path: Path) -> None:
    """A batch holding a lone-surrogate key, a 5000-digit integer and a step past int64 loses only those."""
    w = _writer(tmp_path, flush_interval=3600.0)
    with w.busy:  # hold the writer so all rows land in one slice
        for i in range(100):
            w.put((ROW, i, 1.0, {"a": float(i)}))
        w.put((ROW, 100, 1.0, {"\ud800": 1.0, "a": 100.0}))
        w.put((ROW, 101, 1.0, {"big": 10**5000, "a": 101.0}))
        w.put((ROW, 2**63, 1.0, {"a": -1.0}))
        for i in range(102, 202):
            w.put((ROW, i, 1.0, {"a": float(i)}))
    assert w.close(5)
    recs = _records(tmp_path)
    rows = [r for t, p in recs if t == RecordType.HISTORY for r in p]
    assert [r[0] for r in rows] == list(range(202))
    assert [r[2]["a"] for r in rows] == [float(i) for i in range(202)]
    warns = [p for t, p in recs if t == RecordType.WARNING]
    assert [w_["count"] for w_ in warns] == [1, 2, 3]
    assert "'big' at step 101" in warns[1]["where"] and "step" in warns[2]["reason"]
    assert w.failures == {"value": 3} and w.first_error is None


def test_a_record_with_one_bad_piece_is_written_without_it(tmp_path: Path) -> None:
    """A config with a lone surrogate and an unconvertible integer keeps its other keys; the string is sanitised."""
    w = _writer(tmp_path)
    w.put((RECORD, RecordType.CONFIG, {"config": {"lr": 0.1, "s": "x\udcff", "n": 10**5000}}))
    w.put(
        (RECORD, RecordType.CONSOLE, {"lines": [[1.0, "stdout", "ok"], [1.0, "stdout", "\ud800"]]})
    )
    assert w.close(5)
    recs = dict(_records(tmp_path))
    assert recs[RecordType.CONFIG] == {"config": {"lr": 0.1, "s": "x\ufffd"}}
    assert recs[RecordType.CONSOLE]["lines"] == [[1.0, "stdout", "ok"], [1.0, "stdout", "\ufffd"]]
    assert recs[RecordType.WARNING]["where"] == "config.config.n"
    assert w.failures == {"value": 1}


def test_a_run_file_has_one_writer_at_a_time(tmp_path: Path) -> None:
    """A second writer of the same run file is refused (flock) naming the process in run.json; once the first closes, it may open."""
    first = _writer(tmp_path)
    write_meta(str(tmp_path), {"id": "r1", "pid": 4242, "host": "box"})
    with pytest.raises(RunStateError, match=r"being written by process 4242 on box"):
        _writer(tmp_path)
    assert first.close(5)
    second = _writer(tmp_path)
    assert second.close(5)


def test_an_inline_writer_writes_before_put_returns(tmp_path: Path) -> None:
    """inline=True (a forked child's segment): no thread; each put() is encoded and on disk when it returns."""
    w = Writer(
        str(tmp_path), "run.wisp", flush_interval=1, fsync="never", queue_size=100, inline=True
    )
    w.put((ROW, 0, 1.0, {"a": 1.0}))
    assert _records(tmp_path) == [(RecordType.HISTORY, [[0, 1.0, {"a": 1.0}]])]
    assert not w.thread.is_alive() and w.barrier(0) and w.close(0)


def test_a_slice_of_rows_and_calls_keeps_order_and_a_failing_call_loses_nothing(
    tmp_path: Path,
) -> None:
    """Rows drained in bulk keep their place around records, and a call that raises is
    counted while the rows queued behind it in the same slice are still written."""
    w = Writer(str(tmp_path), "run.wisp", flush_interval=0.05, fsync="never", queue_size=1000)

    def boom() -> None:
        raise RuntimeError("boom")

    for i in range(3):
        w.queue.append((ROW, i, 0.0, {"a": float(i)}))
    w.queue.append((CALL, boom))
    for i in range(3, 6):
        w.queue.append((ROW, i, 0.0, {"a": float(i), "b": i}))
    w.queue.append((RECORD, RecordType.ALERT, {"title": "t"}))
    w.queue.append((ROW, 6, 0.0, {"a": 6.0}))
    w.start()  # one slice holds all of it
    assert w.close(5)
    recs = _records(tmp_path)
    steps = [r[0] for t, p in recs if t == RecordType.HISTORY for r in p]
    assert steps == list(range(7))
    kinds = [t for t, _ in recs]
    assert kinds.index(RecordType.ALERT) == len(kinds) - 3  # before the last row, the summary
    assert w.failures == {"write": 1} and w.rows_written == 7


def test_every_runs_a_job_on_the_writer_thread_on_its_clock_until_cancelled(tmp_path: Path) -> None:
    """A job given to every() runs on the writer thread first `first` seconds on, then once per interval of the writer's clock, and never after cancel() returns."""
    import time

    now = [100.0]
    w = _writer(tmp_path, get_time=lambda: now[0])
    calls: list[tuple[float, bool]] = []
    cancel = w.every(
        7.0, lambda: calls.append((now[0], threading.current_thread() is w.thread)), 5.0
    )

    def settle(n: int) -> None:  # until the job ran n times (the writer polls at least every 0.1 s)
        deadline = time.monotonic() + 30
        while len(calls) < n:
            assert time.monotonic() < deadline, calls
            time.sleep(0.005)
        assert w.barrier(30)

    assert w.barrier(30) and calls == []  # not due before `first`
    now[0] = 105.0
    settle(1)
    now[0] = 111.9
    assert w.barrier(30) and len(calls) == 1  # an interval after it ran, not before
    now[0] = 112.0
    settle(2)
    cancel()
    now[0] = 200.0
    assert w.barrier(30) and w.close(30)
    assert calls == [(105.0, True), (112.0, True)]


class _LateWriter(Writer):
    """A writer whose thread is alive but drains nothing until ``go`` is set."""

    go: threading.Event

    def _main(self) -> None:
        self.go.wait(30)
        super()._main()


def _late_writer(path: Path, *items: tuple[Any, ...]) -> _LateWriter:
    path.mkdir()
    w = _LateWriter(str(path), "run.wisp", flush_interval=1, fsync="finish", queue_size=100)
    w.go = threading.Event()
    w.start()
    for item in items:
        w.put(item)
    return w


def test_close_finishes_on_the_calling_thread_unless_a_queued_item_could_block(
    tmp_path: Path,
) -> None:
    """close() writes rows and wisp's own calls itself (no hand-off to the writer thread), but leaves a deferred value or another call to the thread, which writes them before it closes."""
    from wisp._writer import OWN_CALL

    ran_on: dict[str, threading.Thread] = {}

    def note(name: str) -> Any:
        return lambda: ran_on.__setitem__(name, threading.current_thread())

    row = (ROW, 0, 1.0, {"a": 1.0})
    quick = _late_writer(tmp_path / "a", row, (OWN_CALL, note("own")))
    assert quick.close(30)
    assert ran_on["own"] is threading.current_thread()
    assert (RecordType.HISTORY, [[0, 1.0, {"a": 1.0}]]) in _records(tmp_path / "a")
    quick.go.set()

    slow = _late_writer(tmp_path / "b", row, (CALL, note("user")))
    threading.Timer(0.2, slow.go.set).start()  # the thread starts draining while close() waits
    assert slow.close(30)
    assert ran_on["user"] is slow.thread
    assert (RecordType.HISTORY, [[0, 1.0, {"a": 1.0}]]) in _records(tmp_path / "b")

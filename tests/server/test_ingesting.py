"""Ingest processes (wisp.server.ingesting): record batches applied apart from the reads."""

from __future__ import annotations

import asyncio
import gzip
import json
import os
import pickle
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from wisp._protocol import RecordType
from wisp.server.http.problem import Problem
from wisp.server.ingesting import INGEST_NICE, IngestPool
from wisp.testing import Server, send_json


def _children(pid: int) -> list[int]:
    """The processes ``pid`` spawned with multiprocessing (Linux /proc; not its resource
    tracker)."""
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
                cmd = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid and b"spawn_main" in cmd:
                out.append(int(entry))
    return out


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _post(srv: Server, path: str, body: Any, method: str = "POST") -> tuple[int, Any]:
    return srv.send(method, path, body)


def _post_gzip(srv: Server, path: str, data: bytes) -> tuple[int, Any]:
    """POST ``data`` (gzip bytes, sent as they are) to ``/api/v1<path>``: status and answer."""
    return send_json(srv.url, srv.key, "POST", path, data, gzip=True)


def _rows(first: int, n: int) -> dict[str, Any]:
    rows = [[s, 1.7e9 + s, {"loss": s * 0.5}] for s in range(first, first + n)]
    return {"type": RecordType.HISTORY, "data": {"rows": rows}}


def _batch(first_seq: int, records: list[dict[str, Any]]) -> dict[str, Any]:
    return {"writer_id": "w1", "first_seq": first_seq, "records": records}


def _wait_for(cond: Any, what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def test_problem_survives_pickling() -> None:
    """A Problem raised in an ingest process reaches the server with its status, code,
    message, field and extra members."""
    p = pickle.loads(pickle.dumps(Problem(409, "seq_gap", "gap", "first_seq", {"acked_seq": 3})))
    assert (p.status, p.code, p.message, p.field, p.extra) == (
        409,
        "seq_gap",
        "gap",
        "first_seq",
        {"acked_seq": 3},
    )


def test_a_postgresql_server_ingests_in_its_own_lower_priority_processes(
    pg_url: str, tmp_path: Path
) -> None:
    """`wisp server` on PostgreSQL applies batches in 2 child processes at nice +5, each in a
    session of its own (its own autogroup, at the same nice, where Linux has them): their
    points arrive, a sequence gap comes back as the usual 409, and they end with the server."""
    srv = Server(tmp_path / "srv", db=pg_url)
    with srv:
        assert srv.proc is not None
        pid = srv.proc.pid
        status, _ = _post(srv, "/runs/ing1", {"project": "ingp"}, method="PUT")
        assert status == 200
        assert _post(srv, "/runs/ing1/records", _batch(0, [_rows(0, 100)])) == (
            200,
            {"acked_seq": 0},
        )
        assert _post(srv, "/runs/ing1/records", _batch(1, [_rows(100, 50)]))[0] == 200
        status, body = _post(srv, "/runs/ing1/records", _batch(5, [_rows(150, 1)]))
        assert status == 409
        assert body["error"]["code"] == "seq_gap" and body["acked_seq"] == 1
        assert srv.points("ing1", "loss") == [(s, s * 0.5) for s in range(150)]
        kids = _children(pid)
        assert len(kids) == 2
        own = os.getpriority(os.PRIO_PROCESS, pid)
        assert all(os.getpriority(os.PRIO_PROCESS, k) == own + INGEST_NICE for k in kids)
        assert all(os.getsid(k) == k != os.getsid(pid) for k in kids)
        for k in kids:
            group = Path(f"/proc/{k}/autogroup")
            if group.exists():  # Linux built with autogroup scheduling
                assert group.read_text().split()[-1] == str(INGEST_NICE)
    _wait_for(lambda: not any(_alive(k) for k in kids), "ingest processes outlived the server")


def test_gzip_batches_are_decoded_in_the_ingest_processes(pg_url: str, tmp_path: Path) -> None:
    """On PostgreSQL gzip batches go to the ingest processes as sent (they decode them): the
    points arrive, and a bomb is refused with 413 and a corrupt stream with 400, the answers
    of a server decoding them itself."""
    with Server(tmp_path / "srv", db=pg_url) as srv:
        assert srv.send("PUT", "/runs/gz1", {"project": "ingp"})[0] == 200
        body = json.dumps(_batch(0, [_rows(0, 200)])).encode()
        assert _post_gzip(srv, "/runs/gz1/records", gzip.compress(body)) == (200, {"acked_seq": 0})
        assert srv.points("gz1", "loss") == [(s, s * 0.5) for s in range(200)]
        bomb = gzip.compress(b" " * (65 << 20))  # past the default 64 MiB body limit
        status, doc = _post_gzip(srv, "/runs/gz1/records", bomb)
        assert (status, doc["error"]["code"]) == (413, "too_large")
        status, doc = _post_gzip(srv, "/runs/gz1/records", gzip.compress(body)[:-8])
        assert (status, doc["error"]["code"]) == (400, "bad_gzip")


def test_ingest_processes_end_when_their_server_is_killed(pg_url: str, tmp_path: Path) -> None:
    """A server killed outright (SIGKILL: no shutdown) leaves no ingest process behind."""
    srv = Server(tmp_path / "srv", db=pg_url)
    with srv:
        assert srv.proc is not None
        proc = srv.proc
        _wait_for(lambda: len(_children(proc.pid)) == 2, "no ingest processes")
        kids = _children(proc.pid)
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    _wait_for(lambda: not any(_alive(k) for k in kids), "an ingest process was orphaned")


def test_a_sqlite_server_ingests_in_its_own_process_unless_asked(tmp_path: Path) -> None:
    """On SQLite `wisp server` applies batches on its own threads (no child process); with
    --ingest-processes 1 in one child, and the points arrive either way."""
    db = f"sqlite:///{tmp_path / 'wisp.db'}"
    for run_id, args, n in (("s0", [], 0), ("s1", ["--ingest-processes", "1"], 1)):
        with Server(tmp_path / "srv", db=db, args=args) as srv:
            assert srv.proc is not None
            assert _post(srv, f"/runs/{run_id}", {"project": "p"}, method="PUT")[0] == 200
            assert _post(srv, f"/runs/{run_id}/records", _batch(0, [_rows(0, 10)]))[0] == 200
            assert srv.points(run_id, "loss") == [(s, s * 0.5) for s in range(10)]
            assert len(_children(srv.proc.pid)) == n


def test_a_dead_ingest_process_fails_its_batch_with_503_and_the_pool_starts_anew(
    pg_url: str,
) -> None:
    """When an ingest process dies the batch waiting on it is answered 503 (its uploader
    sends it again) and the next batch is applied by a new process."""
    from wisp.server.store.db import make_engine, migrate

    engine = make_engine(pg_url)
    migrate(engine)
    engine.dispose()
    pool = IngestPool(pg_url, 1)
    body = json.dumps(_batch(0, [_rows(0, 5)])).encode()

    before = set(_children(os.getpid()))

    async def go() -> None:
        with pytest.raises(Problem) as got:  # no such run: the 404 comes back as one
            await pool.apply("nosuchrun", body, None)
        assert got.value.status == 404
        (child,) = set(_children(os.getpid())) - before
        os.kill(child, signal.SIGKILL)
        with pytest.raises(Problem) as broken:
            await pool.apply("nosuchrun", body, None)
        assert broken.value.status == 503 and broken.value.code == "ingest_unavailable"
        with pytest.raises(Problem) as again:
            await pool.apply("nosuchrun", body, None)
        assert again.value.status == 404

    try:
        asyncio.run(go())
    finally:
        pool.close()


def test_a_batch_is_applied_while_reads_never_end(pg_url: str) -> None:
    """An ingest process gives way to the server's reads for a bounded time only: with a
    read in flight throughout, its batch is still applied."""
    from wisp.server.readfirst import ReadFirst
    from wisp.server.store.facade import open_store

    store = open_store(pg_url)
    store.put_run("endless", {"project": "p"}, False)
    reads = ReadFirst(max_wait=0.2)
    reads.active = 1  # a read that never ends
    pool = IngestPool(pg_url, 1, reads=reads)
    body = json.dumps(_batch(0, [_rows(0, 20), _rows(20, 20)])).encode()
    try:
        assert asyncio.run(pool.apply("endless", body, None)) == 1
    finally:
        pool.close()
    assert store.acked_seq("endless", "w1") == 1
    store.close()

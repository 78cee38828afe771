"""``wisp.sync()`` against a real server process: crashes, re-syncs, live runs, resume, media."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest
from _sync_helpers import start_training
from tests._procs import stop

import wisp
from wisp._runfile import HEADER, HEADER_SIZE
from wisp._upload._sync import writer_gone
from wisp._values import Deferred
from wisp.testing import Server

pytestmark = pytest.mark.timeout(120)


def _file_points(run_dir: str, key: str) -> list[tuple[int, Any]]:
    data = wisp.open_run(run_dir)
    return [(row["_step"], row[key]) for row in data.history() if key in row]


def _wait_for(pred: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.05)


def _run_dir(tmp_path: Path, run_id: str) -> Path | None:
    found = list((tmp_path / "wisp").glob(f"run-*-{run_id}"))
    return found[0] if found else None


def test_kill_9_mid_run_then_sync_uploads_everything_flushed(
    server: Server, tmp_path: Path
) -> None:
    """After kill -9 of an online training process, sync() uploads every flushed point."""
    proc = start_training(
        tmp_path,
        "killed9",
        10**6,
        0.01,
        {"WISP_SERVER_URL": server.url, "WISP_API_KEY": server.key},
    )
    try:
        _wait_for(lambda: _run_dir(tmp_path, "killed9") is not None, 30, "the run directory")
        run_dir = _run_dir(tmp_path, "killed9")
        assert run_dir is not None
        _wait_for(lambda: len(_file_points(str(run_dir), "loss")) > 3000, 60, "3000 rows on disk")
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        stop(proc)
    on_disk = _file_points(str(run_dir), "loss")
    (res,) = wisp.sync([run_dir], server_url=server.url, api_key=server.key)
    assert res.done and res.error is None
    assert server.points("killed9", "loss") == on_disk
    assert server.get("/runs/killed9")["state"] == "crashed"


def test_offline_run_synced_twice_gives_identical_server_state(
    server: Server, tmp_path: Path, no_run: None
) -> None:
    """A second sync sends nothing; even without its cursor it changes nothing on the server."""
    run = wisp.init(project="off", config={"a": 1}, dir=str(tmp_path), mode="offline")
    for i in range(2000):
        wisp.log({"loss": 1.0 / (i + 1), "acc": i / 2000})
    run.summary["best"] = 7
    run.finish()

    def state() -> Any:
        doc = server.get(f"/runs/{run.id}")
        return doc, server.points(run.id, "loss"), server.points(run.id, "acc")

    old = os.getcwd()
    os.chdir(tmp_path)
    try:
        (first,) = wisp.sync(
            server_url=server.url, api_key=server.key
        )  # default: every run under ./wisp
    finally:
        os.chdir(old)
    assert first.done and first.records > 0
    before = state()
    assert before[1] == _file_points(run.dir, "loss") and len(before[1]) == 2000
    assert before[0]["config"] == {"a": 1} and before[0]["summary"]["best"] == 7
    (second,) = wisp.sync([run.dir], server_url=server.url, api_key=server.key)
    assert second.skipped == "up to date" and second.records == 0
    assert state() == before
    os.remove(os.path.join(run.dir, "upload.json"))
    (third,) = wisp.sync(
        [run.dir], server_url=server.url, api_key=server.key
    )  # everything resent, nothing applied
    assert third.done and third.records == first.records
    assert state() == before


def test_sync_follows_a_run_that_is_still_logging(server: Server, tmp_path: Path) -> None:
    """sync() of a run still being written keeps uploading until the run finishes."""
    proc = start_training(tmp_path, "liverun", 3000, 0.1, {})
    try:

        def started() -> bool:  # header and meta written: the run is live (a loaded machine)
            found = _run_dir(tmp_path, "liverun")
            run_file = None if found is None else found / "run.wisp"
            return (
                run_file is not None
                and run_file.is_file()
                and run_file.stat().st_size >= HEADER_SIZE
                and not writer_gone(str(found))
            )

        _wait_for(started, 30, "the run file")
        run_dir = _run_dir(tmp_path, "liverun")
        (res,) = wisp.sync([run_dir], server_url=server.url, api_key=server.key)  # type: ignore[list-item]
        assert proc.wait(30) == 0
    finally:
        stop(proc)
    assert res.done
    assert server.points("liverun", "loss") == [(i, i * 0.25) for i in range(3000)]
    assert server.get("/runs/liverun")["state"] == "finished"


def test_resumed_run_continues_on_the_server(server: Server, tmp_path: Path, no_run: None) -> None:
    """An online run resumed with the same id continues its steps on the server."""
    settings = {
        "server_url": server.url,
        "api_key": server.key,
        "dir": str(tmp_path),
        "flush_interval": 0.05,
    }
    run = wisp.init(project="res", id="resume-me", settings=settings)
    for i in range(100):
        wisp.log({"loss": float(i)})
    run.finish()
    again = wisp.init(id="resume-me", resume="must", settings=settings)
    assert again.step == 100 and again.dir == run.dir
    for i in range(100, 150):
        wisp.log({"loss": float(i)})
    again.finish()
    assert server.points("resume-me", "loss") == [(i, float(i)) for i in range(150)]
    assert server.get("/runs/resume-me")["state"] == "finished"


class _Blob(Deferred):
    __slots__ = ("data",)

    def __init__(self, data: bytes) -> None:
        self.data = data

    def resolve(self, ctx: Any) -> Any:
        return {"_type": "file", "path": ctx.save_media(self.data, ".bin")}


def test_media_uploaded_by_hash_once(server: Server, tmp_path: Path, no_run: None) -> None:
    """Media files go up by sha256, and a second run with the same bytes uploads none."""
    import hashlib

    blob = os.urandom(5000)
    sha = hashlib.sha256(blob).hexdigest()
    dirs = []
    for _ in range(2):
        run = wisp.init(project="media", dir=str(tmp_path), mode="offline")
        wisp.log({"weights": _Blob(blob), "loss": 1.0})
        run.finish()
        dirs.append(run.dir)
    first, second = wisp.sync(dirs, server_url=server.url, api_key=server.key)
    assert (first.media, second.media) == (1, 0)
    import urllib.request

    with urllib.request.urlopen(f"{server.url}/api/v1/media/{sha}", timeout=10) as resp:
        assert resp.read() == blob


def test_table_images_are_uploaded_with_the_table(
    server: Server, tmp_path: Path, no_run: None
) -> None:
    """The images inside a logged wisp.Table reach the server, fetchable by their file's sha256."""
    import json
    import urllib.request

    import numpy as np

    run = wisp.init(project="media", dir=str(tmp_path), mode="offline")
    table = wisp.Table(columns=["id", "image"])
    for i in range(3):
        table.add_data(i, wisp.Image(np.full((2, 3), i * 40, dtype=np.uint8)))
    wisp.log({"preds": table})
    run.finish()
    (res,) = wisp.sync([run.dir], server_url=server.url, api_key=server.key)
    assert res.media == 4  # the table file and its three images
    doc = json.loads(
        (Path(run.dir) / next(wisp.open_run(run.dir).history())["preds"]["path"]).read_text()
    )
    for _, cell in doc["data"]:
        sha = Path(cell["path"]).name.split(".")[0]
        with urllib.request.urlopen(f"{server.url}/api/v1/media/{sha}", timeout=10) as resp:
            assert resp.read() == (Path(run.dir) / cell["path"]).read_bytes()


def test_sync_with_nothing_listening_tries_later_runs_once(tmp_path: Path) -> None:
    """Once the server has not answered one run at all, the runs after it get one attempt each
    (not a give_up_after wait each) and the error still names every run."""
    import socket

    from wisp._upload._transport import HttpTransport
    from wisp.errors import ApiError

    for rid in ("a1", "b2", "c3"):
        run = wisp.init(project="p", id=rid, mode="offline", dir=str(tmp_path))
        run.log({"x": 1.0})
        run.finish()
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{s.getsockname()[1]}"
    paths: list[str] = []

    class Counting(HttpTransport):
        def request(self, method: str, path: str, *args: Any) -> Any:
            paths.append(path)
            return super().request(method, path, *args)

    with pytest.raises(ApiError) as err:
        wisp.sync(str(tmp_path), server_url=url, give_up_after=1.5, transport=Counting(url))
    assert all(rid in str(err.value) for rid in ("a1", "b2", "c3"))
    tries = {rid: sum(rid in p for p in paths) for rid in ("a1", "b2", "c3")}
    assert tries["a1"] >= 2 and tries["b2"] == 1 and tries["c3"] == 1, (tries, paths)


def test_a_server_that_lost_the_run_gets_it_again(tmp_path: Path, no_run: None) -> None:
    """After the server's database is started anew at the same address, a plain sync trusts
    the cursor (nothing asked), ``recheck=True`` asks and sends the whole run again, and a
    later sync of a grown cursor is checked at registration without being asked."""
    from wisp.testing import free_port

    run = wisp.init(project="lost", dir=str(tmp_path / "runs"), mode="offline")
    for i in range(500):
        wisp.log({"loss": float(i)})
    run.finish()
    port = free_port()
    with Server(tmp_path / "a", port=port) as first:
        (r,) = wisp.sync([run.dir], server_url=first.url, api_key=first.key)
        assert r.done and len(first.points(run.id, "loss")) == 500
    with Server(tmp_path / "b", port=port) as fresh:  # the same URL, an empty database
        (r,) = wisp.sync([run.dir], server_url=fresh.url, api_key=fresh.key)
        assert r.skipped == "up to date"
        (r,) = wisp.sync([run.dir], server_url=fresh.url, api_key=fresh.key, recheck=True)
        assert r.done and r.records > 0
        assert fresh.points(run.id, "loss") == [(i, float(i)) for i in range(500)]
        (r,) = wisp.sync([run.dir], server_url=fresh.url, api_key=fresh.key, recheck=True)
        assert r.done and r.records == 0  # it holds everything now: nothing sent again


@pytest.mark.parametrize("content", [b"", HEADER], ids=["empty", "header"])
def test_sync_of_a_run_without_its_run_record_yet_skips_it(
    server: Server, tmp_path: Path, content: bytes
) -> None:
    """A run directory whose run file holds no RUN record and no run.json yet (the instant
    after wisp.init made it) is skipped with a reason by sync(follow=False), never an assert."""
    run_dir = tmp_path / "wisp" / "run-20260101_000000-fresh"
    run_dir.mkdir(parents=True)
    (run_dir / "run.wisp").write_bytes(content)
    (res,) = wisp.sync([str(run_dir)], server_url=server.url, api_key=server.key, follow=False)
    assert not res.done and res.error is None
    assert res.skipped is not None and "no run record yet" in res.skipped


def test_sync_right_after_a_child_process_started_its_run(server: Server, tmp_path: Path) -> None:
    """sync() of a run whose child process has only just created its run file waits for it
    to start and uploads it whole (run.json missing for a moment is not a finished run)."""
    proc = start_training(tmp_path, "newborn", 200, 0.0, {})
    try:
        _wait_for(lambda: _run_dir(tmp_path, "newborn") is not None, 30, "the run dir")
        run_dir = _run_dir(tmp_path, "newborn")
        _wait_for(lambda: (run_dir / "run.wisp").is_file(), 30, "the run file")  # type: ignore[operator]
        (res,) = wisp.sync([run_dir], server_url=server.url, api_key=server.key)  # type: ignore[list-item]
        assert proc.wait(30) == 0
    finally:
        stop(proc)
    assert res.done and res.error is None
    assert server.points("newborn", "loss") == [(i, i * 0.25) for i in range(200)]
    assert server.get("/runs/newborn")["state"] == "finished"

"""Finishing artifacts later: wisp sync after offline runs and after kill -9; concurrent writers."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import wisp
from tests._procs import stop
from wisp.artifacts._client import ArtifactClient
from wisp.artifacts._upload import sync_run_dir

SRC = str(Path(__file__).parents[2] / "src")

SLOW_CHILD = """
import sys, time, wisp
from wisp.artifacts import _client
orig = _client.ArtifactClient.put_file
def slow(self, digest, path, size):
    orig(self, digest, path, size)
    print("sent", flush=True)
    time.sleep(0.5)
_client.ArtifactClient.put_file = slow
run = wisp.init(project="p")
art = wisp.Artifact("big", type="dataset")
art.add_dir(sys.argv[1])
run.log_artifact(art)
print("logged", run.dir, flush=True)
time.sleep(600)
"""

RACE_CHILD = """
import os, sys, time, wisp
run = wisp.init(project="p")
art = wisp.Artifact("ds", type="dataset")
with art.new_file("who.txt", mode="w") as f:
    f.write(sys.argv[1])
while not os.path.exists(sys.argv[2]):
    time.sleep(0.005)
run.log_artifact(art, aliases=[sys.argv[1]]).wait(60)
run.finish()
"""


def _env(server: Any, tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("WISP_")}
    env.update(
        PYTHONPATH=SRC,
        WISP_DIR=str(tmp_path),
        WISP_CACHE_DIR=os.environ["WISP_CACHE_DIR"],
        WISP_SERVER_URL=server.url,
        WISP_API_KEY=server.key,
        WISP_MODE="online",
        WISP_CONFIG=str(tmp_path / "none.json"),
        WISP_GIT="false",
        WISP_SYSTEM_METRICS="false",
        WISP_CONSOLE="off",
        **extra,
    )
    return env


def test_offline_run_published_by_wisp_sync(server: Any, data: Path) -> None:
    """An artifact logged offline is published with its lineage by wisp.sync()."""
    run = wisp.init(project="p", mode="offline")
    art = wisp.Artifact("ds", type="dataset")
    art.add_dir(str(data))
    run.log_artifact(art, aliases=["best"])
    run.finish()
    assert art.state == "local"
    wisp.sync([run.dir], server_url=server.url, api_key=server.key, progress=False)
    v = server.get("/projects/p/artifacts/ds/versions/best")
    assert v["version"] == "v0" and v["digest"] == art.digest
    assert v["lineage"]["produced_by"] == [run.id]
    wisp.sync([run.dir], server_url=server.url, api_key=server.key, progress=False)  # idempotent
    assert len(server.get("/projects/p/artifacts/ds/versions")["versions"]) == 1


def test_kill_during_upload_then_sync_skips_sent_files(server: Any, tmp_path: Path) -> None:
    """kill -9 in the middle of an upload; sync then sends only the files not yet on the server
    and publishes the version."""
    src = tmp_path / "many"
    src.mkdir()
    for i in range(40):
        (src / f"{i:02d}.bin").write_bytes(os.urandom(2000) + bytes([i]))
    child = subprocess.Popen(
        [sys.executable, "-c", SLOW_CHILD, str(src)],
        env=_env(server, tmp_path),
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        sent = 0
        run_dir = None
        deadline = time.monotonic() + 60
        while sent < 6 and time.monotonic() < deadline:
            line = child.stdout.readline()
            if line.startswith("logged"):
                run_dir = line.split()[1]
            sent += line.startswith("sent")
        assert sent >= 6 and run_dir is not None
    finally:
        stop(child)
    assert server.get("/projects/p/artifacts")["artifacts"] == []  # not published
    client = ArtifactClient(server.url, server.key)
    try:
        got = sync_run_dir(run_dir, client)
    finally:
        client.close()
    assert got["errors"] == []
    assert got["files_skipped"] >= sent
    assert got["files_uploaded"] + got["files_skipped"] == 40
    assert got["files_uploaded"] <= 40 - sent
    v = server.get("/projects/p/artifacts/big/versions/latest")
    assert v["file_count"] == 40


def test_concurrent_writers_get_distinct_versions(server: Any, tmp_path: Path) -> None:
    """Two processes logging the same name at once get v0 and v1, and both aliases survive."""
    go = tmp_path / "go"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", RACE_CHILD, who, str(go)], env=_env(server, tmp_path / who)
        )
        for who in ("alpha", "beta")
    ]
    try:
        time.sleep(1.5)  # both imported and waiting
        go.write_text("")
        assert [p.wait(120) for p in procs] == [0, 0]
    finally:
        for p in procs:
            stop(p)
    vs = server.get("/projects/p/artifacts/ds/versions")["versions"]
    assert sorted(v["version"] for v in vs) == ["v0", "v1"]
    aliases = {a: v["version"] for v in vs for a in v["aliases"]}
    assert set(aliases) == {"alpha", "beta", "latest"}
    assert aliases["latest"] == "v1" and aliases["alpha"] != aliases["beta"]

"""Artifacts with no server: the run directory and the shared cache hold everything."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

import wisp
from wisp.artifacts._cache import Cache
from wisp.errors import ArtifactError


def test_log_then_use_offline_from_cache(data: Path, tmp_path: Path) -> None:
    """An offline run logs a version that a later offline run resolves by alias from the
    cache and downloads identical bytes, even after the source folder is deleted."""
    run = wisp.init(project="p", mode="offline")
    art = wisp.Artifact("ds", type="dataset", metadata={"k": 1})
    art.add_dir(str(data))
    run.log_artifact(art, aliases=["best"])
    import shutil

    shutil.rmtree(data)  # what Transformers does to its checkpoint folder right away
    run.finish()
    assert art.state == "local" and art.digest

    run2 = wisp.init(project="p", mode="offline")
    got = run2.use_artifact("ds:best")
    assert got.digest == art.digest and got.metadata == {"k": 1}
    out = Path(got.download(str(tmp_path / "out")))
    assert (out / "sub" / "g9.bin").read_bytes() == bytes([9]) * 1009
    assert got.last_download == {
        "files": len(got.files()),
        "from_cache": len(got.files()),
        "fetched": 0,
    }
    run2.finish()


def test_unchanged_dir_relogged_by_stat(data: Path) -> None:
    """Once hashed, an unchanged folder is added again without staging a single file."""
    old = time.time() - 60
    for p in data.rglob("*"):
        os.utime(p, (old, old))  # older than the racy-clean window of the stat index
    run = wisp.init(project="p", mode="offline")
    a = wisp.Artifact("ds", type="dataset")
    a.add_dir(str(data))
    run.log_artifact(a).wait(30)
    b = wisp.Artifact("ds", type="dataset")
    b.add_dir(str(data))
    assert all("src" not in e for e in b.manifest["entries"].values())
    assert b.manifest == a.manifest
    run.log_artifact(b).wait(30)
    assert b.digest == a.digest
    run.finish()


def test_corrupted_cache_caught_by_verify(data: Path, cache: Path) -> None:
    """Flipping one byte of a cached file makes verify() fail naming that entry."""
    run = wisp.init(project="p", mode="offline")
    art = wisp.Artifact("ds", type="dataset")
    art.add_dir(str(data))
    run.log_artifact(art).wait(30)
    art.verify()  # intact
    digest = art.get_entry("sub/g2.bin").digest
    path = Cache().path(digest)
    with open(path, "r+b") as f:
        f.write(b"X")
    with pytest.raises(ArtifactError, match=r"sub/g2\.bin"):
        art.verify()
    run.finish()


def test_deleted_file_with_immutable_policy_reported(data: Path) -> None:
    """policy='immutable' does not secure files: deleting one before upload is reported by name
    and the artifact is not stored."""
    run = wisp.init(project="p", mode="offline")
    art = wisp.Artifact("ds", type="dataset")
    art.add_dir(str(data), policy="immutable")
    os.unlink(data / "f5.txt")
    run.log_artifact(art)
    with pytest.raises(ArtifactError, match=r"f5\.txt.*deleted"):
        art.wait(30)
    run.finish()
    assert Cache().resolve("p", "ds", "latest") is None


def test_bad_input_is_named() -> None:
    """Bad names, aliases and paths raise UsageError naming what is wrong."""
    with pytest.raises(wisp.UsageError, match="artifact name"):
        wisp.Artifact("bad name!", type="dataset")
    art = wisp.Artifact("ok", type="dataset")
    with pytest.raises(wisp.UsageError, match="not a file"):
        art.add_file("/no/such/file")
    run = wisp.init(project="p", mode="offline")
    with art.new_file("a.txt", mode="w") as f:
        f.write("x")
    with pytest.raises(wisp.UsageError, match="version number"):
        run.log_artifact(art, aliases=["v3"])
    run.finish()


def test_add_image_stores_json_and_pixels(tmp_path: Path) -> None:
    """add(wisp.Image) stores the typed JSON under name.image.json and the PNG next to it, and
    both come back from a download."""
    import numpy as np

    run = wisp.init(project="p", mode="offline")
    art = wisp.Artifact("imgs", type="media")
    art.add(wisp.Image(np.zeros((4, 5, 3), dtype=np.uint8)), "sample")
    run.log_artifact(art).wait(30)
    run.finish()
    paths = [e.path for e in art.files()]
    assert "sample.image.json" in paths
    png = next(p for p in paths if p.endswith(".png"))
    out = Path(art.download(str(tmp_path / "out")))
    assert (out / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert png in (out / "sample.image.json").read_text()


def test_add_table_stores_the_table_once(tmp_path: Path) -> None:
    """add(wisp.Table) stores the table itself as name.table.json (as wandb does), with no extra media/<sha>.table.json copy."""
    import json

    run = wisp.init(project="p", mode="offline")
    art = wisp.Artifact("tables", type="media")
    art.add(wisp.Table(columns=["x", "y"], data=[[1, "a"], [2, "b"]]), "tbl")
    run.log_artifact(art).wait(30)
    run.finish()
    assert [e.path for e in art.files()] == ["tbl.table.json"]
    out = Path(art.download(str(tmp_path / "out")))
    doc = json.loads((out / "tbl.table.json").read_text())
    assert doc["columns"] == ["x", "y"] and doc["data"] == [[1, "a"], [2, "b"]]


def test_use_right_after_log_in_the_same_run(data: Path, tmp_path: Path) -> None:
    """``use_artifact("name:latest")`` right after ``log_artifact`` in the same offline run
    waits for that version and resolves it (it was "not found in the cache")."""
    run = wisp.init(project="p", mode="offline")
    art = wisp.Artifact("ds", type="dataset")
    art.add_dir(str(data))
    run.log_artifact(art, aliases=["raw"])
    got = run.use_artifact("ds:raw")
    assert art.state == "local" and got.digest == art.digest and "latest" in got.aliases
    out = Path(got.download(str(tmp_path / "out")))
    assert (out / "sub" / "g3.bin").read_bytes() == bytes([3]) * 1003
    run.finish()


def test_pending_artifact_is_stored_by_the_exit_hook(data: Path, tmp_path: Path) -> None:
    """A script that ends without ``finish()`` right after ``log_artifact`` still stores the
    version: the exit hook hashes on threads that interpreter shutdown does not refuse."""
    import json
    import subprocess
    import sys

    script = (
        "import wisp\n"
        "run = wisp.init(project='p', mode='offline')\n"
        "art = wisp.Artifact('ds', type='dataset')\n"
        f"art.add_dir({str(data)!r})\n"
        "run.log_artifact(art)\n"
    )
    env = {**os.environ, "WISP_DIR": str(tmp_path)}
    res = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120
    )
    assert res.returncode == 0 and "not logged" not in res.stderr, res.stderr
    (job,) = (tmp_path / "wisp").glob("run-*/artifacts/*.json")
    assert json.loads(job.read_text())["state"] == "local"

"""Artifacts against a real server on SQLite and PostgreSQL."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

import wisp
from wisp.errors import ArtifactError


def _files(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_round_trip_every_entry_kind(online: Any, data: Path, tmp_path: Path) -> None:
    """Files, a directory, a new file, a Table and a file:// reference come back identical
    from the server into an empty cache, with metadata and aliases."""
    ref = tmp_path / "ref.csv"
    ref.write_text("a,b\n1,2\n")
    run = wisp.init(project="p")
    art = wisp.Artifact("ds", type="dataset", description="d", metadata={"rows": 2})
    art.add_dir(str(data), name="data")
    art.add_file(str(data / "f1.txt"), name="single.txt")
    with art.new_file("notes.txt", mode="w") as f:
        f.write("hello")
    art.add(wisp.Table(columns=["x"], data=[[1], [2]]), "tbl")
    art.add_reference(ref.as_uri(), name="ref.csv")
    run.log_artifact(art, aliases=["best"])
    art.wait(60)
    assert art.version == "v0"
    producer = run.id
    run.finish()

    os.environ["WISP_CACHE_DIR"] = str(tmp_path / "fresh-cache")  # nothing cached: fetch all
    run2 = wisp.init(project="p")
    got = run2.use_artifact("ds:best")
    assert got.version == "v0" and got.metadata == {"rows": 2} and "best" in got.aliases
    out = Path(got.download(str(tmp_path / "out")))
    assert got.last_download["fetched"] == got.last_download["files"] > 0
    files = _files(out)
    assert {k[5:]: v for k, v in files.items() if k.startswith("data/")} == _files(data)
    assert files["single.txt"] == (data / "f1.txt").read_bytes()
    assert files["notes.txt"] == b"hello"
    assert files["ref.csv"] == b"a,b\n1,2\n"
    assert got.get_entry("ref.csv").ref == ref.as_uri()
    assert json.loads(files["tbl.table.json"])["columns"] == ["x"]  # the table itself
    got.verify(str(out))
    consumer = run2.id
    run2.finish()
    lineage = online.get("/runs/" + consumer + "/artifacts")
    assert [v["name"] for v in lineage["consumed"]] == ["ds"]
    assert [v["version"] for v in online.get(f"/runs/{producer}/artifacts")["produced"]] == ["v0"]
    v0 = online.get("/projects/p/artifacts/ds/versions/v0")
    assert v0["lineage"] == {"produced_by": [producer], "consumed_by": [consumer]}


def test_versions_dedup_and_alias_moves(online: Any, data: Path) -> None:
    """Identical content is the same version; a change makes v1 and moves latest; a user alias
    moves to where it is logged last; unchanged files are not sent again."""
    run = wisp.init(project="p")
    a = wisp.Artifact("ds", type="dataset")
    a.add_dir(str(data))
    run.log_artifact(a, aliases=["prod"]).wait(60)
    b = wisp.Artifact("ds", type="dataset")
    b.add_dir(str(data))
    run.log_artifact(b).wait(60)
    assert (a.version, b.version) == ("v0", "v0")
    (data / "f0.txt").write_text("changed")
    c = wisp.Artifact("ds", type="dataset")
    c.add_dir(str(data))
    run.log_artifact(c, aliases=["prod"]).wait(60)
    assert c.version == "v1"
    other = wisp.Artifact("copy", type="dataset")  # a second artifact, same bytes
    other.add_dir(str(data))
    run.log_artifact(other).wait(60)
    run.finish()
    vs = online.get("/projects/p/artifacts/ds/versions")["versions"]
    assert [(v["version"], v["aliases"]) for v in vs] == [("v1", ["latest", "prod"]), ("v0", [])]
    blobs = [p for p in Path(online.media_dir).rglob("*") if p.is_file()]
    assert len(blobs) == len(
        {p.read_bytes() for p in data.rglob("*") if p.is_file()} | {b"file 0\n"}
    )


def test_modified_file_reported_and_not_published(online: Any, data: Path, tmp_path: Path) -> None:
    """A file edited in place after it was added is named in the error and no version exists."""
    from wisp.artifacts._cache import clone

    if clone(str(data / "f0.txt"), str(tmp_path / "probe")):
        pytest.skip("reflinks here: an edit after add_file cannot reach the secured copy")
    run = wisp.init(project="p")
    art = wisp.Artifact("ds", type="dataset")
    art.add_dir(str(data))
    with open(data / "f3.txt", "a") as f:
        f.write("more")
    run.log_artifact(art)
    with pytest.raises(ArtifactError, match=r"f3\.txt.*changed"):
        art.wait(60)
    run.finish()
    assert online.get("/projects/p/artifacts")["artifacts"] == []

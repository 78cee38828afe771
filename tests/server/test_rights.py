"""The allow/deny matrix of a shared server, on SQLite and PostgreSQL (docs/server.md).

Three teams; a private user project, a team project, a private team project and a
public-read project; every read endpoint called by the run's owner, a team member, a team
viewer, an outsider and anonymously; writes to someone else's run, id collisions and a
writer-id hijack refused; blobs; sweeps before their project; workspaces by role; a site
admin through an admin, a write and a read key.
"""

from __future__ import annotations

import hashlib
from typing import Any

import pytest
from starlette.testclient import TestClient

from tests.server.conftest import blob_namings, history

PNG = b"\x89PNG\r\n\x1a\n" + b"team-image"
SHA = hashlib.sha256(PNG).hexdigest()
WHO = ("owner", "mate", "viewer", "outsider", "anon")


class World:
    """The people, their keys and clients, and the projects they made."""

    def __init__(self, app: Any, store: Any) -> None:
        self.app, self.store = app, store
        u = store.users
        ids = {n: u.add_user(n) for n in ("alice", "bob", "carol", "dave", "tina", "eve")}
        self.ids = ids
        for team in ("team-a", "team-b", "team-c"):
            u.add_team(team)
        u.set_member("team-a", "alice", "member")
        u.set_member("team-a", "bob", "member")
        u.set_member("team-a", "carol", "viewer")
        u.set_member("team-a", "tina", "admin")
        u.set_member("team-b", "dave", "member")
        u.set_member("team-c", "eve", "admin")
        self.keys = {n: store.create_key("write", n, ids[n])[1] for n in ids}
        self.read_keys = {n: store.create_key("read", n, ids[n])[1] for n in ids}
        store.access.set_project("teamp", ("team", u.need_team("team-a")), "team")
        store.access.set_project("tpriv", ("team", u.need_team("team-a")), "private")
        store.access.set_project("pub", ("team", u.need_team("team-c")), "public-read")
        self.people = {"owner": "alice", "mate": "bob", "viewer": "carol", "outsider": "dave"}

    def client(self, who: str, read_only: bool = False) -> TestClient:
        c = TestClient(self.app)
        name = self.people.get(who, who)
        if who != "anon":
            key = (self.read_keys if read_only else self.keys)[name]
            c.headers["Authorization"] = f"Bearer {key}"
        return c


@pytest.fixture
def world(app: Any, store: Any) -> World:
    w = World(app, store)
    alice = w.client("owner")
    for run_id, project in (("a1", "teamp"), ("a2", "priv"), ("a3", "tpriv")):
        batch = {
            "writer_id": "wa",
            "first_seq": 0,
            "records": [
                {"type": 1, "data": {"project": project, "name": run_id}},
                history([(0, 1.0, {"loss": 0.5, "img": {"_type": "image", "sha256": SHA}})]),
                {"type": 7, "data": {"lines": [[1.0, "stdout", "hello"]]}},
            ],
        }
        assert alice.post(f"/api/v1/runs/{run_id}/records", json=batch).status_code == 200
    assert alice.put(f"/api/v1/media/{SHA}.png", content=PNG).status_code == 201
    eve = w.client("eve")
    assert eve.put("/api/v1/runs/c1", json={"project": "pub"}).status_code == 200
    return w


def _reads(run_id: str, project: str) -> list[str]:
    return [
        f"/api/v1/runs/{run_id}",
        f"/api/v1/runs/{run_id}/history?format=csv",
        f"/api/v1/runs/{run_id}/media",
        f"/api/v1/runs/{run_id}/console",
        f"/api/v1/runs/{run_id}/writers/wa",
        f"/api/v1/series?runs={run_id}&keys=loss",
        f"/api/v1/projects/{project}/runs",
    ]


# who may read each project: owner (alice), mate (bob, member), viewer (carol), outsider
# (dave, another team), anonymous
READ_MATRIX = {
    ("a1", "teamp"): (200, 200, 200, 403, 401),  # team project, team visibility
    ("a2", "priv"): (200, 403, 403, 403, 401),  # alice's own private project
    ("a3", "tpriv"): (200, 200, 403, 403, 401),  # private team project: not for viewers
    ("c1", "pub"): (200, 200, 200, 200, 200),  # public-read
}


@pytest.mark.parametrize(("run_id", "project"), list(READ_MATRIX))
def test_read_matrix(world: World, run_id: str, project: str) -> None:
    """Every read endpoint of a run answers exactly as the visibility matrix says."""
    for who, want in zip(WHO, READ_MATRIX[(run_id, project)], strict=True):
        c = world.client(who)
        for url in _reads(run_id, project):
            got = c.get(url)
            assert got.status_code == want, (who, url, got.status_code, want)
        if want == 200 and run_id != "c1":  # what they read is the run's data
            assert c.get(f"/api/v1/runs/{run_id}/console").json()["lines"][0]["text"] == "hello"


def test_media_follows_the_runs_that_reference_it(world: World) -> None:
    """An image is readable by whoever may read a run that shows it, and by no one else (a
    signed-in caller's HEAD on one it may not read is a 404: its uploader sends the bytes)."""
    for who, want in zip(WHO, (200, 200, 200, 403, 401), strict=True):
        c = world.client(who)
        assert c.get(f"/api/v1/media/{SHA}.png").status_code == want, who
        assert c.head(f"/api/v1/media/{SHA}").status_code == (404 if want == 403 else want)


def test_knowing_a_media_sha_is_not_a_right_to_it(world: World) -> None:
    """A PUT of a stored blob makes the caller one of its uploaders only with its very bytes."""
    dave = world.client("outsider")
    assert dave.put(f"/api/v1/media/{SHA}.png", content=b"").status_code == 422
    assert dave.put(f"/api/v1/media/{SHA}.png", content=b"not it").status_code == 422
    assert dave.get(f"/api/v1/media/{SHA}.png").status_code == 403
    r = dave.put(f"/api/v1/media/{SHA}.png", content=PNG)
    assert r.status_code == 200 and r.json()["stored"] is False
    assert dave.get(f"/api/v1/media/{SHA}.png").content == PNG


def test_artifact_file_bytes_follow_the_versions_that_name_them(world: World) -> None:
    """Artifact file bytes are readable by whoever may read a version naming them, or proved
    holding them by uploading them; a digest alone gives nothing, and commits need the bytes."""
    data = b"weights of a team model"
    sha = hashlib.sha256(data).hexdigest()
    alice, dave = world.client("owner"), world.client("outsider")
    assert alice.put(f"/api/v1/artifact-files/{sha}", content=data).status_code == 201
    manifest = {"version": 1, "entries": {"w.bin": {"digest": sha, "size": len(data)}}}
    body = {"type": "model", "manifest": manifest}
    r = alice.post("/api/v1/projects/teamp/artifacts/net/versions", json=body)
    assert r.status_code == 201, r.text
    for who, want in zip(WHO, (200, 200, 200, 403, 401), strict=True):
        got = world.client(who).get(f"/api/v1/artifact-files/{sha}")
        assert got.status_code == want, (who, got.status_code)
        if want == 200:
            assert got.content == data
    assert dave.head(f"/api/v1/artifact-files/{sha}").status_code == 404
    # the digest alone does not let dave publish the file in his project, then read it
    missing = dave.post("/api/v1/artifact-files/missing", json={"sha256": [sha]}).json()
    assert missing == {"missing": [sha]}
    r = dave.post("/api/v1/projects/daves/artifacts/stolen/versions", json=body)
    assert r.status_code == 409 and r.json()["error"]["code"] == "missing_files"
    assert dave.put(f"/api/v1/artifact-files/{sha}", content=b"guess").status_code == 422
    assert dave.get(f"/api/v1/artifact-files/{sha}").status_code == 403
    # with the bytes he holds the file too
    assert dave.put(f"/api/v1/artifact-files/{sha}", content=data).status_code == 200
    assert dave.post("/api/v1/artifact-files/missing", json={"sha256": [sha]}).json() == {
        "missing": []
    }
    r = dave.post("/api/v1/projects/daves/artifacts/own/versions", json=body)
    assert r.status_code == 201, r.text
    assert dave.get(f"/api/v1/artifact-files/{sha}").content == data


def test_listing_shows_only_readable_projects(world: World) -> None:
    """GET /projects lists exactly the projects the caller may read."""
    want = {
        "owner": {"teamp", "priv", "tpriv", "pub"},
        "mate": {"teamp", "tpriv", "pub"},
        "viewer": {"teamp", "pub"},
        "outsider": {"pub"},
    }
    for who, names in want.items():
        got = world.client(who, read_only=True).get("/api/v1/projects").json()["projects"]
        assert {p["name"] for p in got} == names, who
    assert world.client("anon").get("/api/v1/projects").status_code == 401


def test_only_the_owner_writes_to_a_run(world: World) -> None:
    """A teammate cannot append, heartbeat, finish or rename a run they do not own (409)."""
    bob = world.client("mate")
    batch = {"writer_id": "wb", "first_seq": 0, "records": [history([(5, 2.0, {"loss": 9.0})])]}
    r = bob.post("/api/v1/runs/a1/records", json=batch)
    assert r.status_code == 409 and r.json()["error"]["code"] == "run_owned", r.text
    assert "belongs to another user" in r.json()["error"]["message"]
    assert bob.post("/api/v1/runs/a1/heartbeat").status_code == 409
    assert bob.put("/api/v1/runs/a1", json={"name": "mine"}).status_code == 409
    assert bob.put("/api/v1/runs/a1", json={"state": "killed"}).status_code == 409
    run = world.client("owner").get("/api/v1/runs/a1").json()
    assert run["name"] == "a1" and run["state"] == "running"
    assert world.client("owner").get("/api/v1/runs/a1/writers/wb").json()["acked_seq"] == -1


def test_project_admin_edits_metadata_only(world: World) -> None:
    """The team's admin may rename and tag a member's run, but not move or finish it."""
    tina = world.client("tina")
    assert tina.put("/api/v1/runs/a1", json={"name": "renamed", "tags": ["x"]}).status_code == 200
    assert tina.put("/api/v1/runs/a1", json={"project": "tinas"}).status_code == 409
    assert tina.put("/api/v1/runs/a1", json={"state": "finished"}).status_code == 409
    run = world.client("owner").get("/api/v1/runs/a1").json()
    assert (run["name"], run["tags"], run["project"]) == ("renamed", ["x"], "teamp")


def test_creating_runs_needs_write_rights_on_the_project(world: World) -> None:
    """Members create runs in a team project; viewers, outsiders, read keys and anonymous cannot."""
    body = {"project": "teamp"}
    assert world.client("mate").put("/api/v1/runs/b1", json=body).status_code == 200
    assert world.client("viewer").put("/api/v1/runs/v1", json=body).status_code == 403
    assert world.client("outsider").put("/api/v1/runs/d1", json=body).status_code == 403
    assert world.client("anon").put("/api/v1/runs/n1", json=body).status_code == 401
    assert (
        world.client("owner", read_only=True).put("/api/v1/runs/r9", json=body).status_code == 403
    )
    assert (
        world.client("outsider").put("/api/v1/runs/d2", json={"project": "priv"}).status_code == 403
    )
    assert world.client("owner").get("/api/v1/runs/b1").json()["project"] == "teamp"


def test_id_collision_is_an_error_not_a_merge(world: World) -> None:
    """Reusing another user's run id is a 409 for every write path; their run is untouched."""
    dave = world.client("outsider")
    r = dave.put("/api/v1/runs/a2", json={"project": "daves", "name": "exp"})
    assert r.status_code == 409 and r.json()["error"]["code"] == "run_id_taken"
    batch = {
        "writer_id": "wd",
        "first_seq": 0,
        "records": [{"type": 1, "data": {"project": "daves"}}, history([(0, 1.0, {"loss": 7.0})])],
    }
    assert dave.post("/api/v1/runs/a2/records", json=batch).status_code == 409
    run = world.client("owner").get("/api/v1/runs/a2").json()
    assert run["project"] == "priv" and run["name"] == "a2"
    assert "daves" not in {
        p["name"] for p in world.client("tina").get("/api/v1/projects").json()["projects"]
    }


def test_run_ids_are_unique_per_project(world: World) -> None:
    """Two users' runs with one id in two projects are two runs (each addressed by its key);
    within one project the id stays its owner's (409), and a run never moves project."""
    alice, dave = world.client("owner"), world.client("outsider")
    by_project = {"project": "daves", "name": "daves-exp", "by_project": True}
    r = dave.put("/api/v1/runs/a2", json=by_project)
    assert r.status_code == 200, r.text
    mine = r.json()["run"]
    assert mine["id"] == "a2" and mine["key"] != "a2" and mine["project"] == "daves"
    again = dave.put("/api/v1/runs/a2", json=by_project).json()["run"]
    assert again["key"] == mine["key"]  # the same run: idempotent
    batch = {
        "writer_id": "wa",  # alice's writer id on her a2: another run, another writer
        "first_seq": 0,
        "records": [{"type": 1, "data": {"project": "daves"}}, history([(0, 1.0, {"loss": 7.0})])],
    }
    assert dave.post(f"/api/v1/runs/{mine['key']}/records", json=batch).json() == {"acked_seq": 1}
    got = dave.get("/api/v1/projects/daves/runs/a2").json()
    assert (got["key"], got["name"], got["metric_keys"]) == (mine["key"], "daves-exp", ["loss"])
    hers = alice.get("/api/v1/projects/priv/runs/a2").json()
    assert (hers["key"], hers["name"], hers["project"]) == ("a2", "a2", "priv")
    assert alice.get("/api/v1/runs/a2/writers/wa").json()["acked_seq"] == 2
    series = alice.get("/api/v1/series?runs=a2&keys=loss").json()["series"][0]
    assert series["y"] == [0.5]  # dave's 7.0 went to his run only
    assert dave.get("/api/v1/projects/priv/runs/a2").status_code == 403
    assert alice.get("/api/v1/projects/priv/runs/nope").status_code == 404
    rows = dave.get("/api/v1/projects/daves/runs?filter=id = 'a2'").json()["runs"]
    assert [(x["id"], x["key"]) for x in rows] == [("a2", mine["key"])]
    # in one project an id is one run: bob may not take alice's a1 in teamp
    r = world.client("mate").put("/api/v1/runs/a1", json={"project": "teamp", "by_project": True})
    assert r.status_code == 409 and r.json()["error"]["code"] == "run_owned"
    # a client addressing runs by key cannot reach dave's a2: refused, not forked or merged
    r = dave.put("/api/v1/runs/a2", json={"project": "daves"})
    assert r.status_code == 409, r.text
    # the owner cannot move a run to another project by naming one
    r = alice.put("/api/v1/runs/a2", json={"project": "elsewhere"})
    assert r.status_code == 409 and r.json()["error"]["code"] == "run_in_other_project"
    assert alice.get("/api/v1/runs/a2").json()["project"] == "priv"


def test_writer_id_is_bound_to_its_user(world: World, store: Any) -> None:
    """Another user cannot continue a writer id; the owner's other key can (key rotation)."""
    batch = {"writer_id": "wa", "first_seq": 3, "records": [history([(9, 2.0, {"loss": 0.1})])]}
    r = world.client("tina").post("/api/v1/runs/a1/records", json=batch)
    assert r.status_code == 409 and r.json()["error"]["code"] == "writer_owned", r.text
    second = store.create_key("write", "rotated", world.ids["alice"])[1]
    c = TestClient(world.app, headers={"Authorization": f"Bearer {second}"})
    assert c.post("/api/v1/runs/a1/records", json=batch).json() == {"acked_seq": 3}


def test_disabled_user_and_expired_key_are_refused(world: World, store: Any) -> None:
    """Disabling a user stops their keys at once; an expired key is refused."""
    bob = world.client("mate")
    assert bob.get("/api/v1/runs/a1").status_code == 200
    store.users.set_disabled("bob", True)
    assert bob.get("/api/v1/runs/a1").status_code == 401
    _, old = store.create_key("read", "old", world.ids["carol"], store.clock() - 1)
    c = TestClient(world.app, headers={"Authorization": f"Bearer {old}"})
    assert c.get("/api/v1/runs/a1").status_code == 401


def test_admin_api_rights(world: World) -> None:
    """Only site admins add users or read the audit log; team admins manage their members."""
    alice = world.client("owner")
    assert alice.post("/api/v1/users", json={"name": "zed"}).status_code == 403
    assert alice.get("/api/v1/audit").status_code == 403
    assert (
        alice.put("/api/v1/teams/team-a/members/dave", json={"role": "member"}).status_code == 403
    )
    tina = world.client("tina")
    assert tina.put("/api/v1/teams/team-a/members/dave", json={"role": "viewer"}).status_code == 200
    assert world.client("outsider").get("/api/v1/runs/a1").status_code == 200  # now a viewer
    assert world.client("outsider").get("/api/v1/runs/a3").status_code == 403  # not private ones
    made = alice.post("/api/v1/keys", json={"name": "ci", "scope": "read"}).json()
    assert made["scope"] == "read" and made["key"].startswith("wisp_r_")
    assert alice.post("/api/v1/keys", json={"scope": "admin"}).status_code == 403
    bad = alice.post("/api/v1/keys", json={"name": "ci\u0000"})  # PostgreSQL refuses NUL: 422
    assert bad.status_code == 422 and bad.json()["error"]["field"] == "name"
    listed = alice.get("/api/v1/keys").json()["keys"]
    assert {k["user"] for k in listed} == {"alice"}
    assert world.client("mate").delete(f"/api/v1/keys/{made['id']}").status_code == 404
    assert alice.delete(f"/api/v1/keys/{made['id']}").status_code == 200


def test_audit_log_records_writes_and_admin_actions(world: World, store: Any) -> None:
    """A site admin sees who created runs, changed members and made keys, newest first."""
    admin_id = store.users.add_user("root", admin=True)
    key = store.create_key("admin", "root", admin_id)[1]
    world.client("tina").put("/api/v1/teams/team-a/members/dave", json={"role": "viewer"})
    world.client("outsider").put("/api/v1/runs/a2", json={"project": "x"})
    world.client("viewer", read_only=True).put("/api/v1/runs/v9", json={"project": "teamp"})
    c = TestClient(world.app, headers={"Authorization": f"Bearer {key}"})
    rows = c.get("/api/v1/audit?limit=50").json()["audit"]
    seen = {(r["actor"], r["action"], r["status"]) for r in rows}
    assert ("tina", "team.member", 200) in seen
    assert ("eve", "run.put", 200) in seen
    assert ("dave", "run.put", 409) in seen
    assert ("carol", "run.put", 403) in seen  # refused by the middleware (a read key)
    assert rows == sorted(rows, key=lambda r: -r["id"])


def test_run_edits_exports_and_sweeps_follow_project_rights(world: World) -> None:
    """Editing/deleting a run needs its owner or a project admin; export and sweeps follow
    the project's read/write rights."""
    grid = {"method": "grid", "metric": {"name": "loss"}, "parameters": {"lr": {"values": [1]}}}
    mate, tina, dave = world.client("mate"), world.client("tina"), world.client("outsider")
    assert mate.patch("/api/v1/runs/a1", json={"name": "x"}).status_code == 403
    assert dave.delete("/api/v1/runs/a1").status_code == 403
    assert tina.patch("/api/v1/runs/a1", json={"name": "by-admin"}).status_code == 200
    assert world.client("owner").patch("/api/v1/runs/a1", json={"tags": ["t"]}).status_code == 200
    export = {"runs": ["a1"], "format": "jsonl"}
    assert mate.post("/api/v1/export/histories", json=export).status_code == 200
    assert dave.post("/api/v1/export/histories", json=export).status_code == 403
    sweep = {"id": "sw1", "project": "teamp", "config": grid, "created_at": 1.0}
    sweeps = "/api/v1/projects/teamp/sweeps"
    assert dave.post(sweeps, json=sweep).status_code == 403
    assert mate.post(sweeps, json=sweep).status_code == 201
    assert mate.get(f"{sweeps}/sw1").status_code == 200
    assert world.client("viewer").get(f"{sweeps}/sw1/trials").status_code == 200
    assert (
        world.client("viewer").patch(f"{sweeps}/sw1", json={"state": "paused"}).status_code == 403
    )
    assert dave.get(f"{sweeps}/sw1").status_code == 403
    assert dave.get(f"{sweeps}/nosuch").status_code == 403  # not a 404: names disclose nothing
    assert [x["id"] for x in mate.get("/api/v1/sweeps").json()["sweeps"]] == ["sw1"]
    assert dave.get("/api/v1/sweeps").json()["sweeps"] == []
    assert world.client("anon").get(f"{sweeps}/sw1").status_code == 401
    assert mate.patch(f"{sweeps}/sw1", json={"state": "paused"}).status_code == 200


# -- blobs: possession, not knowledge (docs/server.md, "Blobs") ---------------------------------

PRIV = b"\x89PNG\r\n\x1a\n" + b"alice-private"
PRIV_SHA = hashlib.sha256(PRIV).hexdigest()


def _blob_reads(sha: str) -> list[tuple[str, str]]:
    """Every way to read a media blob's bytes (an object store redirects the same callers:
    tests/server/test_blobs_s3.py; artifact files: the test above)."""
    return [
        ("GET", f"/api/v1/media/{sha}"),
        ("GET", f"/api/v1/media/{sha}.png"),
        ("HEAD", f"/api/v1/media/{sha}"),
    ]


def test_blob_matrix(world: World) -> None:
    """Who reads a blob's bytes, through every read path: alice's private image only alice
    (and site admins); the team image its project's readers.  Dave naming either sha256 in
    every media type of his own public-read project, or completing an upload he never sent,
    changes no answer; sending the bytes makes them his (and his project's readers')."""
    alice, dave = world.client("owner"), world.client("outsider")
    assert alice.put(f"/api/v1/media/{PRIV_SHA}.png", content=PRIV).status_code == 201
    batch = {
        "writer_id": "wp",
        "first_seq": 0,
        "records": [
            {"type": 1, "data": {"project": "priv", "name": "p1"}},
            history([(0, 1.0, {"img": {"_type": "image", "sha256": PRIV_SHA}})]),
        ],
    }
    assert alice.post("/api/v1/runs/p1/records", json=batch).status_code == 200
    for sha in (SHA, PRIV_SHA):
        for kind in ("media", "artifact"):
            done = {"kind": kind, "size": 10, "upload_id": "x"}
            assert dave.post(f"/api/v1/uploads/{sha}/complete", json=done).status_code == 409
        rows = [(i, 1.0, {"v": v}) for i, v in enumerate(blob_namings(sha))]
        records = [{"type": 1, "data": {"project": "daves"}}, history(rows)]
        batch = {"writer_id": "wd", "first_seq": 0, "records": records}
        assert dave.post(f"/api/v1/runs/d-{sha[:8]}/records", json=batch).status_code == 200
    assert dave.put("/api/v1/projects/daves", json={"visibility": "public-read"}).status_code == 200
    matrix = {
        SHA: (200, 200, 200, 403, 401),  # in alice's team projects and her private one
        PRIV_SHA: (200, 403, 403, 403, 401),  # in her private project only
    }
    for sha, wants in matrix.items():
        for who, want in zip(WHO, wants, strict=True):
            c = world.client(who)
            for method, url in _blob_reads(sha):
                want_here = 404 if method == "HEAD" and want == 403 else want
                got = c.request(method, url).status_code
                assert got == want_here, (who, method, url, got, want_here)
    # the bytes themselves are the proof: then dave, and his public project's readers, read it
    assert dave.put(f"/api/v1/media/{PRIV_SHA}.png", content=PRIV).status_code == 200
    assert dave.get(f"/api/v1/media/{PRIV_SHA}").content == PRIV
    assert world.client("anon").get(f"/api/v1/media/{PRIV_SHA}").status_code == 200


# -- objects made before their project -----------------------------------------------------------


def test_sweep_before_its_project_has_the_projects_rights(world: World) -> None:
    """A sweep made in a project with no run yet creates the project (its maker must be allowed
    to): from the first moment only its readers read it and only its writers change it; no one
    makes a sweep under another user's name."""
    grid = {"method": "grid", "metric": {"name": "loss"}, "parameters": {"lr": {"values": [1]}}}
    alice, bob = world.client("owner"), world.client("mate")
    sweep = {"id": "early", "config": grid, "created_at": 1.0}
    mine, theirs = "/api/v1/entities/alice/projects/fresh", "/api/v1/entities/team-a/projects/fresh"
    assert bob.post(f"{mine}/sweeps", json=sweep).status_code == 403  # not bob's to create
    assert alice.post(f"{mine}/sweeps", json=sweep).status_code == 201
    team = {**sweep, "id": "early-team"}
    assert world.client("outsider").post(f"{theirs}/sweeps", json=team).status_code == 403
    assert bob.post(f"{theirs}/sweeps", json=team).status_code == 201
    trial = {"number": 0, "run_id": "t0", "internal": {}, "params": {}, "state": "running"}
    trial |= {"created_at": 2.0}
    for sweep_id, reads, writes in (
        ("early", (200, 403, 403, 403, 401), (True, False, False, False, False)),
        ("early-team", (200, 200, 200, 403, 401), (True, True, False, False, False)),
    ):
        at = f"{mine if sweep_id == 'early' else theirs}/sweeps/{sweep_id}"
        for who, want, may_write in zip(WHO, reads, writes, strict=True):
            c = world.client(who)
            for path in ("", "/trials", "/runs"):
                got = c.get(f"{at}{path}").status_code
                assert got == want, (sweep_id, who, path, got)
            listed = c.get(
                "/api/v1/sweeps?project="
                + ("alice/fresh" if sweep_id == "early" else "team-a/fresh")
            )
            if listed.status_code == 200:
                ids = [s["id"] for s in listed.json()["sweeps"]]
                assert (sweep_id in ids) == (want == 200), (sweep_id, who, ids)
            got = c.patch(at, json={"state": "running"}).status_code
            assert (got == 200) == may_write, (sweep_id, who, got)
            got = c.post(f"{at}/trials", json={**trial, "number": WHO.index(who)}).status_code
            assert (got == 201) == may_write, (sweep_id, who, got)


def test_an_older_servers_sweep_without_its_project_row_is_closed(world: World) -> None:
    """A sweep an older server made in a project that has no row yet is not open to every
    signed-in user: a plain-named one is read and changed by site admins only (anyone could
    create that project), an ``entity/name`` one by whoever may create that project; once the
    project exists the sweep has its rights."""
    from wisp.server.store.sweeps import SweepTables

    grid = {"method": "grid", "metric": {"name": "loss"}, "parameters": {"lr": {"values": [1]}}}
    tables = SweepTables(world.store)
    for project in ("oldplain", "alice/oldent"):
        row = {"id": "old", "project": project, "name": None, "config": grid}
        assert tables.create(row | {"state": "running", "seed": 0, "created_at": 1.0})
    trial = {"number": 0, "run_id": "t0", "internal": {}, "params": {}, "state": "running"}
    trial |= {"created_at": 2.0}
    root = _root(world)["write"]
    plain, ent = "/api/v1/projects/oldplain/sweeps/old", "/api/v1/entities/alice/projects/oldent"
    ent += "/sweeps/old"
    for at, ok in ((plain, ()), (ent, ("owner",))):
        for who in WHO:
            c = world.client(who)
            want = 200 if who in ok else 401 if who == "anon" else 403
            for path in ("", "/trials", "/runs"):
                assert c.get(f"{at}{path}").status_code == want, (at, who, path)
            assert c.patch(at, json={"state": "paused"}).status_code == want, (at, who)
            got = c.post(f"{at}/trials", json={**trial, "number": WHO.index(who)}).status_code
            assert got == (201 if want == 200 else want), (at, who)
        assert root.get(at).status_code == 200
    assert world.store.access.project("oldplain") is None  # refusals created no project
    bob = world.client("mate")
    assert bob.put("/api/v1/runs/b1", json={"project": "oldplain"}).status_code == 200
    assert bob.get(plain).status_code == 200  # bob's project now: the sweep has its rights
    assert world.client("owner").get(plain).status_code == 403


def test_run_files_download_follows_the_run(world: World) -> None:
    """A run's file list, the way to its downloads, answers as the run's project reads."""
    for run_id, project in READ_MATRIX:
        for who, want in zip(WHO, READ_MATRIX[(run_id, project)], strict=True):
            got = world.client(who).get(f"/api/v1/runs/{run_id}/files").status_code
            assert got == want, (run_id, who, got)


def test_anonymous_callers_read_what_public_read_allows(world: World) -> None:
    """Anonymous callers export, list the sweeps of and read the settings of a public-read
    project (and nothing else: a project they may not read is a 404 like a missing one)."""
    grid = {"method": "grid", "metric": {"name": "loss"}, "parameters": {"lr": {"values": [1]}}}
    sweep = {"id": "pub-sweep", "project": "pub", "config": grid, "created_at": 1.0}
    assert world.client("eve").post("/api/v1/projects/pub/sweeps", json=sweep).status_code == 201
    anon = world.client("anon")
    got = anon.post("/api/v1/export/histories", json={"runs": ["c1"], "format": "jsonl"})
    assert got.status_code == 200
    got = anon.post("/api/v1/export/histories", json={"runs": ["a1"], "format": "jsonl"})
    assert got.status_code == 401
    assert [s["id"] for s in anon.get("/api/v1/sweeps?project=pub").json()["sweeps"]] == [
        "pub-sweep"
    ]
    assert anon.get("/api/v1/sweeps?project=teamp").json()["sweeps"] == []
    assert anon.get("/api/v1/projects/pub").json()["visibility"] == "public-read"
    team_c = world.store.users.need_team("team-c")
    world.store.access.set_project("team-c/open", ("team", team_c), "public-read")
    got = anon.get("/api/v1/entities/team-c/projects/open")
    assert got.status_code == 200 and got.json()["visibility"] == "public-read"
    assert anon.get("/api/v1/entities/alice/projects/nope").status_code == 404
    assert anon.get("/api/v1/projects/priv").status_code == 404
    for listing in ("/api/v1/users", "/api/v1/teams"):  # names: signed-in callers only
        assert anon.get(listing).status_code == 401
        assert world.client("outsider", read_only=True).get(listing).status_code == 200
    assert world.client("outsider").get("/api/v1/projects/priv").status_code == 404


# -- the roles and cases the tests above leave out (docs/server.md, "The matrix") ---------------

ROOT = ("admin", "write", "read")  # the site admin root, through a key of each scope


def _root(world: World) -> dict[str, TestClient]:
    """Clients of the site admin ``root``, one per key scope."""
    uid = world.store.users.add_user("root", admin=True)
    out = {}
    for scope in ROOT:
        key = world.store.create_key(scope, f"root {scope}", uid)[1]
        out[scope] = TestClient(world.app, headers={"Authorization": f"Bearer {key}"})
    return out


def test_site_admin_powers_follow_the_key_scope(world: World) -> None:
    """A site admin reads and writes every project within the key's scope, but acts on other
    people's accounts (users, their keys, teams it does not administer, the audit log) only
    with an admin key: a site admin's write or read key administers no one."""
    root = _root(world)
    alice_keys = [world.store.create_key("read", f"k{i}", world.ids["alice"])[0] for i in ROOT]
    for i, scope in enumerate(ROOT):
        c = root[scope]
        want = {"admin": 0, "write": 1, "read": 2}[scope]

        def pick(admin: int, write: int, read: int) -> int:
            return (admin, write, read)[want]  # noqa: B023

        cases = [
            (c.post("/api/v1/users", json={"name": f"zed{i}"}), pick(201, 403, 403)),
            (c.post("/api/v1/users/eve/disable") if scope != "admin" else None, 403),
            (c.get("/api/v1/audit"), pick(200, 403, 403)),
            (c.delete(f"/api/v1/keys/{alice_keys[i]}"), pick(200, 404, 403)),
            (
                c.put("/api/v1/teams/team-b/members/carol", json={"role": "viewer"}),
                pick(200, 403, 403),
            ),
            (c.post("/api/v1/keys", json={"name": "x", "scope": "admin"}), pick(201, 403, 403)),
            (c.get("/api/v1/runs/a2"), 200),  # alice's private run: site admins read all
            (c.get(f"/api/v1/media/{SHA}"), 200),
            (c.put(f"/api/v1/runs/root-{scope}", json={"project": "priv"}), pick(200, 200, 403)),
            (
                c.put("/api/v1/runs/a2", json={"project": "priv", "name": f"by {scope}"}),
                pick(200, 200, 403),
            ),  # another user's run's metadata: project admins
            (c.put("/api/v1/runs/a2", json={"state": "finished"}), pick(409, 409, 403)),
            (c.patch("/api/v1/runs/a3", json={"tags": [scope]}), pick(200, 200, 403)),
            (c.put("/api/v1/projects/tpriv", json={"visibility": "private"}), pick(200, 200, 403)),
        ]
        for n, (got, status) in enumerate(cases):
            if got is not None:
                assert got.status_code == status, (scope, n, got.status_code, got.text)
        listed = {k["user"] for k in c.get("/api/v1/keys?all=1").json()["keys"]}
        assert listed == (
            {"root", "alice", "bob", "carol", "dave", "tina", "eve"}
            if scope == "admin"
            else {"root"}
        ), scope
    run = world.client("owner").get("/api/v1/runs/a2").json()
    assert (run["name"], run["state"]) == ("by write", "running")  # the owner's state stays
    assert root["admin"].post("/api/v1/users/eve/disable").status_code == 200


WS = "/api/v1/projects/{}/workspaces"
# who: the five roles of WHO, the team admin tina, and root's admin, write and read keys
WS_WHO = (*WHO, "tina", *(f"root-{s}" for s in ROOT))
# (project, shared) -> per caller in WS_WHO: (GET one, PUT, DELETE of another's workspace)
WS_MATRIX = {
    ("teamp", False): (
        (200, 200, 200),  # owner
        (404, 404, 404),  # mate: a private view is its owner's; others cannot tell it exists
        (404, 404, 404),  # viewer
        (403, 403, 403),  # outsider: the project is not theirs to read
        (401, 401, 401),  # anonymous
        (404, 404, 404),  # team admin
        (200, 403, 403),  # site admin: reads every view, changes no one's private one
        (200, 403, 403),
        (200, 403, 403),
    ),
    ("teamp", True): (
        (200, 200, 200),
        (200, 200, 200),  # members write to the project: they change its shared views
        (200, 403, 403),  # viewers read them
        (403, 403, 403),
        (401, 401, 401),
        (200, 200, 200),
        (200, 200, 200),
        (200, 200, 200),
        (200, 403, 403),  # a read key changes nothing
    ),
    ("pub", False): (
        (404, 404, 404),  # alice is nobody special in eve's public project
        (404, 404, 404),
        (404, 404, 404),
        (404, 404, 404),
        (404, 401, 401),  # anonymous: a private view is a 404 even where reads are public
        (404, 404, 404),
        (200, 403, 403),
        (200, 403, 403),
        (200, 403, 403),
    ),
    ("pub", True): (
        (200, 403, 403),
        (200, 403, 403),
        (200, 403, 403),
        (200, 403, 403),
        (200, 401, 401),
        (200, 403, 403),
        (200, 200, 200),
        (200, 200, 200),
        (200, 403, 403),
    ),
}


def test_workspace_matrix(world: World) -> None:
    """Every role reads, changes and deletes another user's private and shared workspaces
    exactly as the matrix says, in a team project and in a public-read one."""
    root = _root(world)

    def client(who: str) -> TestClient:
        return root[who[5:]] if who.startswith("root-") else world.client(who)

    owners = {"teamp": world.client("owner"), "pub": world.client("eve")}
    body = {"name": "v", "spec": {"panels": []}}
    for (project, shared), rows in WS_MATRIX.items():
        for who, (get_want, put_want, del_want) in zip(WS_WHO, rows, strict=True):
            who_client = client(who)  # "owner" is alice: in "pub", eve's project, nobody special
            made = owners[project].post(WS.format(project), json={**body, "shared": shared})
            assert made.status_code == 201, made.text
            at = f"{WS.format(project)}/{made.json()['id']}"
            got = who_client.get(at).status_code
            put = who_client.put(at, json={**body, "shared": shared}).status_code
            dele = who_client.delete(at).status_code
            assert (got, put, dele) == (get_want, put_want, del_want), (project, shared, who)


# per caller in OBJ_WHO (a team project: alice and bob members, carol viewer, tina its admin)
OBJ_WHO = (*WHO, "tina", "root-write", "root-read")
OBJ_MATRIX = {
    "read": (1, 1, 1, 403, 401, 1, 1, 1),  # artifacts, reports, automations: project readers
    "write": (1, 1, 403, 403, 401, 1, 1, 403),  # save a report: project writers
    "admin": (403, 403, 403, 403, 401, 1, 1, 403),  # automations, settings: project admins
    "run_admin": (1, 403, 403, 403, 401, 1, 1, 403),  # stop alice's run: its owner, admins
}


def test_project_objects_by_role(world: World) -> None:
    """Artifacts, reports, automations, project settings and stopping a run answer each role
    as the matrix says (1: done, 200/201; a number: refused with that status)."""
    root = _root(world)
    base = "/api/v1/projects/teamp"
    report = "---\ntitle: t\nproject: teamp\n---\n\n# t\n"
    hook = "https://hooks.example.com/x"
    for i, who in enumerate(OBJ_WHO):
        c = root[who[5:]] if who.startswith("root-") else world.client(who)
        calls = {
            "read": [
                c.get(f"{base}/artifacts"),
                c.get(f"{base}/reports"),
                c.get(f"{base}/automations"),
            ],
            "write": [c.put(f"{base}/reports/r{i}", json={"markdown": report})],
            "admin": [
                c.post(f"{base}/automations", json={"when": "state = 'crashed'", "webhook": hook}),
                c.put(base, json={"visibility": "team"}),
            ],
            "run_admin": [c.post("/api/v1/runs/a1/stop")],
        }
        for kind, answers in calls.items():
            want = OBJ_MATRIX[kind][i]
            for got in answers:
                if want == 1:
                    assert got.status_code in (200, 201), (who, kind, got.text)
                else:
                    assert got.status_code == want, (who, kind, got.status_code, got.text)

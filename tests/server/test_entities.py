"""Projects owned by name, ``entity/project``, on SQLite and PostgreSQL (docs/server.md).

Two teams each have a project called ``detector``; who may create a project under a user or
team, what each caller reads there, the ``/entities/{entity}/projects/{project}`` paths of
every project operation, and a project's name pinning its owner.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.server.conftest import history
from tests.server.test_rights import World


@pytest.fixture
def world(app: Any, store: Any) -> World:
    w = World(app, store)
    w.store.users.set_member("team-b", "alice", "viewer")  # alice only views team-b
    return w


def _record(project: str, value: float) -> dict[str, Any]:
    return {
        "writer_id": "w1",
        "first_seq": 0,
        "records": [
            {"type": 1, "data": {"project": project, "name": "r"}},
            history([(0, 1.0, {"loss": value})]),
        ],
    }


def test_two_teams_each_have_their_own_project_of_one_name(world: World) -> None:
    """team-a/detector and team-b/detector are two projects with their own runs (the same run
    id in both), owners and readers: neither team sees the other's."""
    alice, dave = world.client("owner"), world.client("outsider")
    got = alice.post("/api/v1/runs/exp1/records", json=_record("team-a/detector", 0.5))
    assert got.status_code == 200, got.text
    got = dave.post("/api/v1/runs/exp1b/records", json=_record("team-b/detector", 0.7))
    assert got.status_code == 200, got.text
    a = alice.get("/api/v1/entities/team-a/projects/detector").json()
    b = dave.get("/api/v1/entities/team-b/projects/detector").json()
    assert (a["name"], a["owner"], a["owner_kind"], a["visibility"]) == (
        "team-a/detector",
        "team-a",
        "team",
        "team",
    )
    assert (b["name"], b["owner"]) == ("team-b/detector", "team-b")
    runs_a = alice.get("/api/v1/entities/team-a/projects/detector/runs").json()["runs"]
    runs_b = dave.get("/api/v1/entities/team-b/projects/detector/runs").json()["runs"]
    assert [r["id"] for r in runs_a] == ["exp1"] and [r["id"] for r in runs_b] == ["exp1b"]
    # bob (team-a) reads team-a's; dave (team-b only) reads neither team-a's project nor its run
    bob = world.client("mate")
    assert bob.get("/api/v1/entities/team-a/projects/detector/runs").status_code == 200
    assert dave.get("/api/v1/entities/team-a/projects/detector/runs").status_code == 403
    assert dave.get("/api/v1/runs/exp1").status_code == 403
    anon = world.client("anon")
    assert anon.get("/api/v1/entities/team-b/projects/detector/runs").status_code == 401
    # a project list shows each caller the projects they may read, by full name
    names_a = {p["name"] for p in alice.get("/api/v1/projects").json()["projects"]}
    names_d = {p["name"] for p in dave.get("/api/v1/projects").json()["projects"]}
    assert {"team-a/detector", "team-b/detector"} <= names_a  # alice views team-b too
    assert "team-a/detector" not in names_d and "team-b/detector" in names_d


def test_the_same_run_id_in_two_teams_projects_is_two_runs(world: World) -> None:
    """A run id used in team-a/detector and team-b/detector names two runs, each in its own
    project (the second gets its own server key), never one merged run."""
    alice, dave = world.client("owner"), world.client("outsider")
    body = {"project": "team-a/detector", "by_project": True}
    assert alice.put("/api/v1/runs/same", json=body).status_code == 200
    got = dave.put("/api/v1/runs/same", json={**body, "project": "team-b/detector"})
    assert got.status_code == 200, got.text
    key = got.json()["run"]["key"]
    assert key != "same"
    a = alice.get("/api/v1/entities/team-a/projects/detector/runs/same").json()
    b = dave.get("/api/v1/entities/team-b/projects/detector/runs/same").json()
    assert (a["project"], a["key"]) == ("team-a/detector", "same")
    assert (b["project"], b["key"]) == ("team-b/detector", key)


@pytest.mark.parametrize(
    ("who", "project", "status"),
    [
        ("owner", "alice/mine", 200),  # a user's own entity
        ("owner", "team-a/new", 200),  # a member of the team
        ("tina", "team-a/new", 200),  # the team's admin
        ("viewer", "team-a/new", 403),  # a viewer of the team creates nothing there
        ("owner", "team-b/new", 403),  # alice only views team-b
        ("outsider", "team-a/new", 403),  # dave is not in team-a
        ("outsider", "alice/new", 403),  # nor is he alice
        ("owner", "nobody/new", 404),  # no such user or team
    ],
)
def test_who_may_create_a_project_under_an_entity(
    world: World, who: str, project: str, status: int
) -> None:
    """Creating a run in a new ``entity/project`` creates the project for that user or team,
    only for that user or the team's members and admins; anything else is refused by name."""
    c = world.client(who)
    got = c.put("/api/v1/runs/r-new", json={"project": project})
    assert got.status_code == status, got.text
    entity, name = project.split("/")
    if status == 200:
        info = c.get(f"/api/v1/entities/{entity}/projects/{name}").json()
        assert info["owner"] == entity
    else:
        assert got.json()["error"]["field"] == "project"
        assert entity in got.json()["error"]["message"]
        assert world.store.access.project(project) is None  # nothing was created


def test_an_artifact_is_not_published_under_someone_elses_entity(world: World) -> None:
    """Publishing an artifact to a project not yet created checks the entity it names."""
    dave = world.client("outsider")
    body = {"type": "model", "digest": "d" * 64, "files": [], "aliases": []}
    got = dave.post("/api/v1/entities/team-a/projects/fresh/artifacts/m/versions", json=body)
    assert got.status_code == 403, got.text
    assert "team-a" in got.json()["error"]["message"]


def test_a_project_named_after_an_entity_stays_with_it(world: World) -> None:
    """PUT on an entity project creates it for that entity; giving it to another owner is a
    422 (the name says who owns it); its admins change its visibility."""
    alice = world.client("owner")
    got = alice.put("/api/v1/entities/team-a/projects/viz", json={"visibility": "private"})
    assert got.status_code == 200, got.text
    assert (got.json()["owner"], got.json()["visibility"]) == ("team-a", "private")
    tina = world.client("tina")  # team-a's admin
    got = tina.put("/api/v1/entities/team-a/projects/viz", json={"owner": "tina"})
    assert got.status_code == 422 and got.json()["error"]["field"] == "owner"
    got = tina.put("/api/v1/entities/team-a/projects/viz", json={"visibility": "team"})
    assert got.status_code == 200 and got.json()["visibility"] == "team"
    # alice is a member, not an admin: she created it, but administering it is the team's
    got = alice.put("/api/v1/entities/team-a/projects/viz", json={"visibility": "public-read"})
    assert got.status_code == 403


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/entities/Team-A/projects/x/runs",  # entity names are lower case
        "/api/v1/entities/team-a/projects/%20/runs",  # a blank project name
    ],
)
def test_a_malformed_entity_path_is_a_4xx(world: World, path: str) -> None:
    """An entity path naming an impossible project is refused with a 4xx, never a 500."""
    got = world.client("owner").get(path)
    assert 400 <= got.status_code < 500, got.text


def test_run_bodies_refuse_a_malformed_entity(world: World) -> None:
    """A run whose project names an invalid entity is a 422 naming the project field."""
    got = world.client("owner").put("/api/v1/runs/bad", json={"project": "Team-A/x"})
    assert got.status_code == 422
    assert got.json()["error"]["field"] == "project"
    assert "owner before '/'" in got.json()["error"]["message"]


def test_openapi_lists_each_project_operation_under_entities_too(app: Any) -> None:
    """Every /projects/{project}... operation has its /entities/{entity}/projects/... twin in
    the OpenAPI document, with an ``entity`` path parameter."""
    from wisp.server.http.openapi import openapi_document

    paths = openapi_document()["paths"]
    plain = [p for p in paths if p.startswith("/api/v1/projects/{project}")]
    assert len(plain) >= 10
    for p in plain:
        twin = p.replace("/api/v1/projects/", "/api/v1/entities/{entity}/projects/", 1)
        assert set(paths[twin]) == set(paths[p])
        for op in paths[twin].values():
            assert op["parameters"][0]["name"] == "entity"


def test_a_site_admin_names_projects_freely(world: World) -> None:
    """A site admin (as ``wisp ui``'s importer is) creates ``entity/name`` for an entity that
    is no user or team: the project is the admin's; a known team's stays the team's."""
    root = world.store.users.add_user("root", admin=True)
    key = world.store.create_key("write", "root", root)[1]
    c = world.client("anon")
    c.headers["Authorization"] = f"Bearer {key}"
    assert c.put("/api/v1/runs/r1", json={"project": "nobody/x"}).status_code == 200
    assert c.put("/api/v1/runs/r2", json={"project": "team-b/y"}).status_code == 200
    x = c.get("/api/v1/entities/nobody/projects/x").json()
    y = c.get("/api/v1/entities/team-b/projects/y").json()
    assert (x["owner"], x["owner_kind"]) == ("root", "user")
    assert (y["owner"], y["owner_kind"]) == ("team-b", "team")


def test_settings_of_an_admins_project_under_an_unknown_name_can_change(world: World) -> None:
    """A project a site admin made under a name that is no user or team keeps its owner and
    takes visibility changes (no owner is derived from its name again)."""
    root = world.store.users.add_user("root", admin=True)
    key = world.store.create_key("write", "root", root)[1]
    c = world.client("anon")
    c.headers["Authorization"] = f"Bearer {key}"
    assert c.put("/api/v1/runs/r1", json={"project": "nobody/x"}).status_code == 200
    world.store.access.set_project("nobody/x", None, "public-read")
    got = world.client("outsider").get("/api/v1/entities/nobody/projects/x").json()
    assert (got["owner"], got["visibility"]) == ("root", "public-read")

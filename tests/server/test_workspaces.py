"""Workspaces: saved per project and per user, with read/write rights checked."""

from __future__ import annotations

from typing import Any

import pytest
from starlette.testclient import TestClient

SPEC = {
    "panels": [
        {"id": "p1", "keys": ["loss"], "smooth": 0.5, "log_y": True, "y_min": 0.1, "w": 2},
        {"id": "p2", "keys": ["acc", "val/acc"], "x": "epoch", "h": 400},
    ],
    "filter": "config.lr < 0.1",
    "group_by": ["config.lr"],
    "band": "std",
}


class People:
    def __init__(self, app: Any, store: Any) -> None:
        u = store.users
        self.ids = {n: u.add_user(n) for n in ("alice", "bob", "carol", "dave")}
        u.add_team("team-a")
        u.set_member("team-a", "alice", "member")
        u.set_member("team-a", "bob", "member")
        u.set_member("team-a", "carol", "viewer")
        store.access.set_project("teamp", ("team", u.need_team("team-a")), "team")
        self.keys = {n: store.create_key("write", n, i)[1] for n, i in self.ids.items()}
        self.read_keys = {n: store.create_key("read", n, i)[1] for n, i in self.ids.items()}
        self.app = app

    def __call__(self, who: str, read_only: bool = False) -> TestClient:
        c = TestClient(self.app)
        if who != "anon":
            key = (self.read_keys if read_only else self.keys)[who]
            c.headers["Authorization"] = f"Bearer {key}"
        return c


@pytest.fixture
def people(app: Any, store: Any) -> People:
    return People(app, store)


URL = "/api/v1/projects/teamp/workspaces"


def _ids(c: TestClient) -> set[str]:
    res = c.get(URL)
    assert res.status_code == 200, res.text
    return {w["id"] for w in res.json()["workspaces"]}


def test_save_restore_update_delete(people: People) -> None:
    """A saved workspace comes back as saved (defaults filled in), then changes and goes."""
    alice = people("alice")
    res = alice.post(URL, json={"name": "lr sweep", "shared": True, "spec": SPEC})
    assert res.status_code == 201, res.text
    w = res.json()
    assert w["owner"] == "alice" and w["shared"] and w["can_edit"]
    got = alice.get(f"{URL}/{w['id']}").json()
    assert got["spec"]["panels"][0] == {
        **SPEC["panels"][0],  # type: ignore[dict-item]
        "kind": "line",
        "title": "",
        "x": "step",
        "smooth_mode": "ema",
        "y_max": None,
        "h": 240,
    }
    assert got["spec"]["group_by"] == ["config.lr"] and got["spec"]["agg"] == "mean"
    spec2 = {**SPEC, "panels": SPEC["panels"][::-1]}  # type: ignore[index]
    res = alice.put(f"{URL}/{w['id']}", json={"name": "renamed", "shared": True, "spec": spec2})
    assert res.status_code == 200, res.text
    got = alice.get(f"{URL}/{w['id']}").json()
    assert got["name"] == "renamed" and [p["id"] for p in got["spec"]["panels"]] == ["p2", "p1"]
    assert got["updated_at"] >= got["created_at"]
    assert alice.delete(f"{URL}/{w['id']}").status_code == 200
    assert alice.get(f"{URL}/{w['id']}").status_code == 404


def test_rights(people: People) -> None:
    """Shared: every project reader sees it, writers change it; private: the owner only."""
    alice, bob, carol, dave = (people(n) for n in ("alice", "bob", "carol", "dave"))
    shared = alice.post(URL, json={"name": "s", "shared": True, "spec": SPEC}).json()["id"]
    private = alice.post(URL, json={"name": "p", "spec": SPEC}).json()["id"]
    assert _ids(alice) == {shared, private}
    assert _ids(bob) == _ids(carol) == {shared}
    assert carol.get(f"{URL}/{private}").status_code == 404
    assert bob.get(f"{URL}/{shared}").json()["can_edit"] is True
    assert carol.get(f"{URL}/{shared}").json()["can_edit"] is False
    body = {"name": "by bob", "shared": True, "spec": SPEC}
    assert bob.put(f"{URL}/{shared}", json=body).status_code == 200
    assert bob.put(f"{URL}/{private}", json=body).status_code == 404
    assert carol.put(f"{URL}/{shared}", json=body).status_code == 403
    assert carol.delete(f"{URL}/{shared}").status_code == 403
    # a viewer keeps private views, but cannot share one with the project
    assert carol.post(URL, json={"name": "mine", "spec": SPEC}).status_code == 201
    assert carol.post(URL, json={**body, "shared": True}).status_code == 403
    # outsiders, anonymous callers and read keys
    assert dave.get(URL).status_code == 403
    assert dave.get(f"{URL}/{shared}").status_code == 403
    assert dave.post(URL, json=body).status_code == 403
    assert people("anon").get(URL).status_code == 401
    assert people("anon").post(URL, json=body).status_code == 401
    assert people("alice", read_only=True).post(URL, json=body).status_code == 403
    assert people("alice", read_only=True).get(f"{URL}/{shared}").json()["can_edit"] is False


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"panels": [{"id": "a", "keys": []}]}, "spec.panels[0].keys"),
        ({"panels": [{"id": "a b", "keys": ["x"]}]}, "spec.panels[0].id"),
        ({"panels": [{"id": "a", "keys": ["x"], "smooth": 2}]}, "spec.panels[0].smooth"),
        ({"panels": [{"id": "a", "keys": ["x"], "w": 9}]}, "spec.panels[0].w"),
        ({"panels": [{"id": "a", "keys": ["x"]}, {"id": "a", "keys": ["y"]}]}, "spec.panels"),
        ({"panels": [], "color": "red"}, "spec.color"),
        ({"band": "iqr"}, "spec.band"),
        ({"group_by": ["\u0000"]}, "spec.group_by[0]"),
        ({"group_by": ["bogus"]}, "spec.group_by"),
    ],
)
def test_malformed_specs_name_the_field(people: People, spec: Any, field: str) -> None:
    """A malformed workspace is a 422 naming the offending member."""
    res = people("alice").post(URL, json={"name": "x", "spec": spec})
    assert res.status_code == 422, res.text
    assert res.json()["error"]["field"] == field


def test_local_no_auth_server_saves_views(settings: Any, store: Any) -> None:
    """On a loopback --no-auth server (wisp ui) the local caller saves and reads its views."""
    import dataclasses

    from wisp.server import create_app

    local = TestClient(create_app(dataclasses.replace(settings, no_auth=True), store=store))
    res = local.post(URL, json={"name": "local", "spec": SPEC})
    assert res.status_code == 201, res.text
    assert res.json()["can_edit"] and res.json()["owner"] is None
    assert _ids(local) == {res.json()["id"]}


def test_a_workspace_is_stored_as_a_report_without_prose(people: People, store: Any) -> None:
    """The saved row holds the report's panel model (line panels of one run set, checked by
    wisp.reports), and the API gives back the workspace as it was saved."""
    from sqlalchemy import select

    from wisp.reports._panels import Panel
    from wisp.server.store import schema as S

    alice = people("alice")
    res = alice.post(URL, json={"name": "as report", "spec": SPEC})
    assert res.status_code == 201, res.text
    got = alice.get(f"{URL}/{res.json()['id']}").json()["spec"]
    for want, have in zip(SPEC["panels"], got["panels"], strict=True):
        assert {k: have[k] for k in want} == want  # type: ignore[union-attr]
    assert got["group_by"] == ["config.lr"] and got["band"] == "std" and got["agg"] == "mean"
    assert got["filter"] == "config.lr < 0.1" and got["runs"] is None
    with store.engine.connect() as conn:
        stored = conn.execute(select(S.workspaces.c.spec)).scalar_one()
    assert stored["report"] == 1
    assert stored["runsets"] == {"workspace": {"filter": "config.lr < 0.1", "group": "config.lr"}}
    panels = [Panel.from_yaml({k: v for k, v in p.items()}, "stored") for p in stored["panels"]]
    assert [(p.type, p.runset, p.options["y"], p.options["band"]) for p in panels] == [
        ("line", "workspace", ["loss"], "std"),
        ("line", "workspace", ["acc", "val/acc"], "std"),
    ]
    bad = {"panels": [{"id": "a", "keys": ["x"]}], "filter": "config.lr <"}
    res = alice.post(URL, json={"name": "bad", "spec": bad})
    assert res.status_code == 422 and res.json()["error"]["field"] == "spec"

"""Reports on the server: versions, diff, revert, rights, and panels drawn from the store."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from starlette.testclient import TestClient

from wisp.server.store.ingest import prepare_records

URL = "/api/v1/projects/teamp/reports"
REPORT = """---
title: LR sweep
project: teamp
runsets:
  fast: {filter: "config.lr >= 0.01"}
  picked: {runs: [run2]}
---
Fast runs only.

```wisp-panel
type: line
runset: fast
y: [loss]
```
"""


class People:
    """alice and bob write to team project ``teamp``, carol reads it, dave is an outsider."""

    def __init__(self, app: Any, store: Any) -> None:
        u = store.users
        ids = {n: u.add_user(n) for n in ("alice", "bob", "carol", "dave")}
        u.add_team("team-a")
        for name, role in (("alice", "member"), ("bob", "member"), ("carol", "viewer")):
            u.set_member("team-a", name, role)
        store.access.set_project("teamp", ("team", u.need_team("team-a")), "team")
        self.keys = {n: store.create_key("write", n, i)[1] for n, i in ids.items()}
        self.app = app

    def __call__(self, who: str) -> TestClient:
        c = TestClient(self.app)
        c.headers["Authorization"] = f"Bearer {self.keys[who]}"
        return c


@pytest.fixture
def people(app: Any, store: Any) -> People:
    return People(app, store)


def _log(store: Any, rid: str, lr: float, steps: int = 30) -> None:
    store.put_run(rid, {"project": "teamp", "created_at": 1.0})
    rows = [[s, 1.0 + s, {"loss": lr * 100 / (s + 1)}] for s in range(steps)]
    recs = [{"type": 2, "data": {"config": {"lr": lr}}}, {"type": 3, "data": {"rows": rows}}]
    store.ingest(rid, "w", 0, prepare_records(recs))


def test_two_pushes_keep_two_versions_with_diff_and_revert(people: People) -> None:
    """Each changed text is a new version (same text: none); diff and revert work; base checks."""
    alice, bob = people("alice"), people("bob")
    res = alice.put(f"{URL}/r1", json={"markdown": REPORT})
    assert res.status_code == 200, res.text
    assert res.json()["version"] == 1 and res.json()["created"]
    assert alice.put(f"{URL}/r1", json={"markdown": REPORT}).json()["created"] is False
    changed = REPORT.replace("Fast runs only.", "Only the fast runs.")
    res = bob.put(f"{URL}/r1", json={"markdown": changed, "base": 1})
    assert res.json()["version"] == 2 and res.json()["author"] == "bob"
    res = alice.put(f"{URL}/r1", json={"markdown": REPORT + "\nmore\n", "base": 1})
    assert res.status_code == 409 and res.json()["error"]["field"] == "base"
    versions = alice.get(f"{URL}/r1/versions").json()["versions"]
    assert [(v["version"], v["author"]) for v in versions] == [(1, "alice"), (2, "bob")]
    diff = alice.get(f"{URL}/r1/diff", params={"a": 1, "b": 2}).json()["diff"]
    assert "-Fast runs only.\n+Only the fast runs.\n" in diff
    res = alice.post(f"{URL}/r1/revert", json={"version": 1})
    assert res.json()["version"] == 3 and res.json()["markdown"] == REPORT
    assert alice.get(f"{URL}/r1", params={"version": 2}).json()["markdown"] == changed
    rows = alice.get(URL).json()["reports"]
    assert [(r["id"], r["version"], r["title"]) for r in rows] == [("r1", 3, "LR sweep")]


def test_rights_follow_the_projects(people: People) -> None:
    """A reader of the project reads reports but cannot save; an outsider gets 403."""
    assert people("alice").put(f"{URL}/r1", json={"markdown": REPORT}).status_code == 200
    carol, dave = people("carol"), people("dave")
    assert carol.get(f"{URL}/r1").json()["markdown"] == REPORT
    assert carol.get(f"{URL}/r1/html").status_code == 200
    assert carol.put(f"{URL}/r1", json={"markdown": REPORT + "x"}).status_code == 403
    assert carol.post(f"{URL}/r1/revert", json={"version": 1}).status_code == 403
    for path in ("", "/r1", "/r1/versions", "/r1/html", "/r1/data"):
        assert dave.get(URL + path).status_code == 403, path
    assert dave.put(f"{URL}/r2", json={"markdown": REPORT}).status_code == 403
    assert TestClient(people.app).get(f"{URL}/r1").status_code == 401


@pytest.mark.parametrize(
    ("body", "field", "message"),
    [
        ({"markdown": "no front matter"}, "markdown", "starts with a '---' line"),
        ({"markdown": REPORT.replace("y: [loss]", "y: [loss]\nz: 1")}, "markdown", "z: unknown"),
        ({"markdown": REPORT.replace("teamp", "other")}, "markdown", "is not this project"),
        ({"markdown": REPORT, "base": 0}, "base", ""),
        ({"text": REPORT}, "text", ""),
    ],
)
def test_bad_reports_are_422_naming_the_field(
    people: People, body: dict[str, Any], field: str, message: str
) -> None:
    """A report the format refuses, or a malformed body, is a 422 naming the field."""
    res = people("alice").put(f"{URL}/r1", json=body)
    assert res.status_code == 422, res.text
    assert res.json()["error"]["field"] == field and message in res.json()["error"]["message"]


def test_panels_draw_the_runs_their_run_sets_select_and_freeze_pins_them(
    people: People, store: Any
) -> None:
    """The data holds exactly the selected runs; after freeze a new matching run is left out."""
    for rid, lr in (("run1", 0.1), ("run2", 0.001), ("run3", 0.01)):
        _log(store, rid, lr)
    alice = people("alice")
    alice.put(f"{URL}/r1", json={"markdown": REPORT})
    data = alice.get(f"{URL}/r1/data").json()
    assert sorted(data["runsets"]["fast"]["selected"]) == ["run1", "run3"]
    assert data["runsets"]["picked"]["selected"] == ["run2"]
    lines = data["panels"][0]["lines"]
    assert sorted(ln["run"] for ln in lines) == ["run1", "run3"]
    assert lines[0]["x"] == list(range(30))
    res = alice.post(f"{URL}/r1/freeze")
    assert res.status_code == 200 and res.json()["version"] == 2
    assert "max_step: 29" in res.json()["markdown"]
    _log(store, "run4", 0.5, steps=50)
    assert (
        "run4"
        in alice.get(f"{URL}/r1/data", params={"version": 1}).json()["runsets"]["fast"]["selected"]
    )
    frozen = alice.get(f"{URL}/r1/data").json()
    assert sorted(frozen["runsets"]["fast"]["selected"]) == ["run1", "run3"]
    page = alice.get(f"{URL}/r1/html").text
    blob = re.search(r'id="wisp-report-data">(.*?)</script>', page, re.S)
    assert blob is not None and json.loads(blob.group(1)) == frozen
    first = alice.get(f"{URL}/r1/html", params={"panels": 1}).text  # the page's first screen
    assert first.count('class="panel"') == 1 and "more panels" not in first
    two = REPORT + "\n```wisp-panel\ntype: runs\nrunset: picked\n```\n"
    alice.put(f"{URL}/r2", json={"markdown": two})
    first = alice.get(f"{URL}/r2/data", params={"panels": 1}).json()
    assert len(first["panels"]) == 1 and list(first["runsets"]) == ["fast"]
    assert "1 more panels" in alice.get(f"{URL}/r2/html", params={"panels": 1}).text
    by_id = REPORT.replace(
        '{filter: "config.lr >= 0.01"}', '{filter: "config.lr >= 0.01", group: id}'
    )
    preview = alice.post("/api/v1/projects/teamp/report-preview", json={"markdown": by_id})
    assert preview.status_code == 200 and preview.text.count('class="line"') == 3
    preview = alice.post("/api/v1/projects/teamp/report-preview", json={"markdown": REPORT})
    assert preview.status_code == 200 and preview.text.count('class="line"') == 3


def test_wisp_ui_local_caller_pushes_and_reads_reports(settings: Any, store: Any) -> None:
    """On the loopback --no-auth server of `wisp ui` the local caller saves and draws reports."""
    import dataclasses

    from wisp.server import create_app

    _log(store, "run1", 0.1)
    local = TestClient(create_app(dataclasses.replace(settings, no_auth=True), store=store))
    text = REPORT.replace("project: teamp", "project: local-p").replace("runs: [run2]", "runs: []")
    res = local.put("/api/v1/projects/local-p/reports/r1", json={"markdown": text})
    assert res.status_code == 200, res.text
    assert local.get("/api/v1/projects/local-p/reports/r1/html").status_code == 200
    assert [r["id"] for r in local.get("/api/v1/projects/local-p/reports").json()["reports"]] == [
        "r1"
    ]

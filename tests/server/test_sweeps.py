"""The sweep endpoints answer with their declared shapes on real data, on both databases."""

from __future__ import annotations

from typing import Any

import msgspec

from wisp.server.schemas import sweeps as ST

GRID = {"method": "grid", "metric": {"name": "loss"}, "parameters": {"lr": {"values": [1, 2]}}}


def _as(resp: Any, status: int, typ: type) -> Any:
    assert resp.status_code == status, resp.text
    return msgspec.convert(resp.json(), typ, strict=True)


def test_sweep_answers_decode_as_their_declared_types(api: Any, store: Any) -> None:
    """Create, list, read, patch, trials, runs and importance answers match their Structs."""
    sweep = {"id": "sw1", "project": "p", "config": GRID, "created_at": 1.0}
    created = _as(api.post("/api/v1/projects/p/sweeps", json=sweep), 201, ST.SweepCreated)
    assert (created.sweep.state, created.sweep.seed) == ("running", 0)
    store.put_run("r0", {"project": "p", "meta": {"sweep_id": "sw1"}})
    base = "/api/v1/projects/p/sweeps/sw1"
    for n in range(2):
        trial = {"number": n, "run_id": f"r{n}", "internal": {"lr": n + 1}, "params": {"lr": n + 1}}
        trial |= {"state": "running", "created_at": 2.0, "agent_pid": 7}
        got = _as(api.post(base + "/trials", json=trial), 201, ST.TrialCreated)
        assert (got.trial.number, got.trial.value, got.trial.intermediate) == (n, None, {})
    assert api.post(base + "/trials", json=trial).status_code == 409
    done = {"state": "finished", "value": 0.5, "finished_at": 3.0}
    assert _as(api.patch(base + "/trials/0", json=done), 200, ST.TrialUpdated).updated
    again = api.patch(base + "/trials/0?only_running=true", json={"value": 1.0})
    assert not _as(again, 200, ST.TrialUpdated).updated
    listed = _as(api.get("/api/v1/sweeps?project=p"), 200, ST.SweepList)
    assert [(s.id, s.trial_count) for s in listed.sweeps] == [("sw1", 2)]
    assert _as(api.get(base), 200, ST.SweepRow).config == GRID
    assert _as(api.patch(base, json={"state": "paused"}), 200, ST.SweepRow).state == "paused"
    trials = _as(api.get(base + "/trials"), 200, ST.TrialList).trials
    assert [(t.number, t.state, t.value) for t in trials] == [
        (0, "finished", 0.5),
        (1, "running", None),
    ]
    runs = _as(api.get(base + "/runs"), 200, ST.SweepRunList).runs
    assert [(r.id, r.trial and r.trial.number) for r in runs] == [("r0", 0)]
    imp = _as(api.get(base + "/importance"), 200, ST.SweepImportance)
    assert imp.importance is None and imp.reason


def test_malformed_sweep_requests_are_422_naming_the_field(api: Any) -> None:
    """Bodies and parameters the types refuse are 422 with the field, never 500."""
    sweep = {"id": "sw1", "config": GRID, "created_at": 1.0}
    new = "/api/v1/projects/p/sweeps"
    assert api.post(new, json=sweep).status_code == 201
    cases = [
        ("post", new, {**sweep, "id": "sw2", "created_at": None}, "created_at"),
        ("post", new, {**sweep, "id": "sw2", "state": None}, "state"),
        ("post", new, {**sweep, "id": "sw2", "name": "a\x00b"}, "name"),
        ("post", new, {**sweep, "id": "sw2", "project": "other"}, "project"),
        ("post", "/api/v1/projects/%20/sweeps", {**sweep, "id": "sw2"}, "project"),
        ("patch", f"{new}/sw1/trials/0", {"created_at": None}, "created_at"),
        ("patch", f"{new}/sw1/trials/0", {"number": 3}, "number"),
        ("patch", f"{new}/sw1/trials/0?only_running=maybe", {}, "only_running"),
    ]
    for method, url, body, field in cases:
        resp = getattr(api, method)(url, json=body)
        assert (resp.status_code, resp.json()["error"].get("field")) == (422, field), (url, body)


def test_sweep_ids_are_unique_per_project(api: Any, store: Any) -> None:
    """Two projects each have a sweep ``same``: each path reads its own sweep, trials and
    runs; the list tells them apart; in one project the id is taken (409)."""
    for project, lr in (("pa", 1), ("e1/pb", 2)):
        grid = {**GRID, "parameters": {"lr": {"values": [lr]}}}
        sweep = {"id": "same", "config": grid, "created_at": float(lr)}
        got = api.post(f"{_base(project)}", json=sweep)
        assert got.status_code == 201, got.text
        assert got.json()["sweep"]["project"] == project
        trial = {"number": 0, "run_id": f"r{lr}", "internal": {}, "params": {"lr": lr}}
        trial |= {"state": "running", "created_at": 2.0}
        assert api.post(f"{_base(project)}/same/trials", json=trial).status_code == 201
        store.put_run(f"r{lr}", {"project": project, "meta": {"sweep_id": "same"}})
    again = api.post(_base("pa"), json={"id": "same", "config": GRID, "created_at": 3.0})
    assert again.status_code == 409 and again.json()["error"]["code"] == "sweep_exists"
    assert api.patch(f"{_base('pa')}/same", json={"state": "paused"}).status_code == 200
    for project, lr, state in (("pa", 1, "paused"), ("e1/pb", 2, "running")):
        one = api.get(f"{_base(project)}/same").json()
        assert (one["project"], one["config"]["parameters"]["lr"], one["state"]) == (
            project,
            {"values": [lr]},
            state,
        )
        trials = api.get(f"{_base(project)}/same/trials").json()["trials"]
        assert [t["params"] for t in trials] == [{"lr": lr}]
        runs = api.get(f"{_base(project)}/same/runs").json()["runs"]
        assert [(r["id"], r["project"]) for r in runs] == [(f"r{lr}", project)]
    listed = api.get("/api/v1/sweeps?id=same").json()["sweeps"]
    assert sorted(s["project"] for s in listed) == ["e1/pb", "pa"]
    assert api.get(f"{_base('nope')}/same").status_code == 404


def _base(project: str) -> str:
    from wisp._protocol import project_path

    return f"/api/v1{project_path(project)}/sweeps"


_FIRST_OPEN = """
import json, sys, tempfile, urllib.error, urllib.request
from wisp._ui import _LocalServer, _free_port

HEAVY = ("optuna", "sklearn")
with tempfile.TemporaryDirectory() as d:
    srv = _LocalServer(f"sqlite:///{d}/w.db", f"{d}/media", "127.0.0.1", _free_port("127.0.0.1"))

    def call(method, path, body=None):
        req = urllib.request.Request(
            srv.url + "/api/v1" + path, method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={"Authorization": "Bearer " + srv.write_key,
                     "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                return json.load(r)
        except urllib.error.HTTPError as e:
            sys.exit(f"{method} {path}: HTTP {e.code} {e.read().decode()}")

    grid = {"method": "grid", "metric": {"name": "loss"},
            "parameters": {"lr": {"values": [1, 2, 3]}, "wd": {"values": [0, 1]}}}
    call("POST", "/projects/p/sweeps", {"id": "sw", "config": grid, "created_at": 1.0})
    for n, (lr, wd) in enumerate([(1, 0), (2, 1), (3, 0), (1, 1)]):
        params, internal = {"lr": lr, "wd": wd}, {"lr": lr - 1, "wd": wd}  # choice indexes
        call("POST", "/projects/p/sweeps/sw/trials", {
            "number": n, "run_id": f"r{n}", "internal": internal, "params": params,
            "state": "finished", "value": lr + 0.1 * wd, "created_at": 2.0, "finished_at": 3.0})
    for path in ("/sweeps?project=p", "/projects/p/sweeps/sw", "/projects/p/sweeps/sw/trials",
                 "/projects/p/sweeps/sw/runs"):
        call("GET", path)  # what the dashboard's sweep pages ask for, importance aside
    shown = [m for m in HEAVY if m in sys.modules]
    imp = call("GET", "/projects/p/sweeps/sw/importance")
    after = [m for m in HEAVY if m in sys.modules]
    srv.stop()
print(json.dumps({"shown": shown, "importance": imp["importance"], "after": after}))
"""


def test_a_sweep_page_is_served_without_importing_optuna(tmp_path: Any) -> None:
    """A fresh server answers the sweep list, a sweep, its trials and its runs without
    importing Optuna or scikit-learn (seconds on first use); only ``/importance`` does."""
    import json
    import subprocess
    import sys
    from importlib.util import find_spec

    res = subprocess.run(
        [sys.executable, "-c", _FIRST_OPEN],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert res.returncode == 0, res.stderr
    got = json.loads(res.stdout.splitlines()[-1])
    assert got["shown"] == []
    if find_spec("optuna") is not None:  # the check above would see the import
        assert set(got["importance"]) == {"lr", "wd"} and "optuna" in got["after"]


def test_importance_over_trials_outside_the_sweeps_space_is_a_reason_not_a_500(api: Any) -> None:
    """Finished trials whose internal values the sweep's space cannot hold (a client's bug)
    make ``/importance`` answer null with the reason, not fail."""
    import pytest

    pytest.importorskip("optuna")
    sweep = {"id": "sw1", "config": GRID, "created_at": 1.0}
    assert api.post(_base("p"), json=sweep).status_code == 201
    for n in range(3):
        trial = {"number": n, "run_id": f"r{n}", "internal": {"lr": 5}, "params": {"lr": 7}}
        trial |= {"state": "finished", "value": float(n), "created_at": 2.0}
        assert api.post(f"{_base('p')}/sw1/trials", json=trial).status_code == 201
    got = _as(api.get(f"{_base('p')}/sw1/importance"), 200, ST.SweepImportance)
    assert got.importance is None and got.reason

"""Sweeps with a server: state in the server's database, and offline sweeps synced later."""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.sweeps._helpers import (
    Server,
    at,
    create_sweep,
    env_for,
    run_agents,
    run_cli,
    trials,
)

pytestmark = pytest.mark.slow
PG_HOST = "postgresql://postgres@127.0.0.1:5432"


@pytest.fixture(params=["sqlite", "postgresql"])
def server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Server]:
    """A real server on SQLite, or on a fresh PostgreSQL database."""
    db_url = None
    if request.param == "postgresql":
        import psycopg

        name = f"wisp_sweeps_{uuid.uuid4().hex[:10]}"
        with psycopg.connect(f"{PG_HOST}/postgres", autocommit=True) as admin:
            admin.execute(f'CREATE DATABASE "{name}"')
        db_url = f"{PG_HOST}/{name}"
    srv = Server(tmp_path, db_url)
    yield srv
    srv.stop()
    if db_url is not None:
        import psycopg

        with psycopg.connect(f"{PG_HOST}/postgres", autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{db_url.rsplit("/", 1)[1]}" WITH (FORCE)')


GRID = {
    "method": "grid",
    "metric": {"name": "loss", "goal": "minimize"},
    "parameters": {"x": {"values": [0.0, 1.0, 2.0]}, "y": {"values": [-1.0, 0.0]}},
}


def test_online_sweep_lives_in_the_server_and_agents_share_it(
    tmp_path: Path, server: Server
) -> None:
    """Two agents against a server run each grid point once; the server lists the runs."""
    sweep_id = create_sweep(tmp_path, GRID, project="online", env=server.env())
    assert sweep_id.startswith("online/")  # ids are unique per project: the name says which
    assert not (tmp_path / "wisp" / "sweeps").exists()  # nothing local when online
    run_agents(sweep_id, 2, tmp_path, env_for(tmp_path, server.env()))
    got = server.get(f"{at(sweep_id)}/trials")["trials"]
    pairs = sorted((t["params"]["x"], t["params"]["y"]) for t in got)
    assert pairs == sorted(itertools.product([0.0, 1.0, 2.0], [-1.0, 0.0]))
    assert server.get(at(sweep_id))["state"] == "finished"
    runs = server.get(f"{at(sweep_id)}/runs")["runs"]
    assert sorted(r["id"] for r in runs) == sorted(t["run_id"] for t in got)
    for r in runs:
        assert r["project"] == "online" and r["trial"]["state"] == "finished"
        assert r["config"] == r["trial"]["params"]
    listed = server.get("/sweeps?project=online")["sweeps"]
    assert [(s["id"], s["trial_count"]) for s in listed] == [(sweep_id.split("/")[-1], 6)]
    imp = server.get(f"{at(sweep_id)}/importance")
    assert set(imp["importance"]) == {"x", "y"} and imp["trials"] == 6
    assert sum(imp["importance"].values()) == pytest.approx(1.0)


def test_offline_sweep_then_sync_shows_it_on_the_server(tmp_path: Path, server: Server) -> None:
    """A sweep run with no server, then `wisp sync --all`, appears with its runs on the server."""
    sweep_id = create_sweep(tmp_path, GRID, project="offline")
    res = run_cli("agent", sweep_id, base=tmp_path)
    assert res.returncode == 0, res.stderr
    local = trials(tmp_path, sweep_id)
    assert len(local) == 6
    res = run_cli("sync", "--all", "--server", server.url, "--key", server.key, base=tmp_path)
    assert res.returncode == 0, res.stderr
    assert "synced 1 sweep(s)" in res.stdout
    runs = server.get(f"{at('offline/' + sweep_id)}/runs")["runs"]
    assert sorted(r["id"] for r in runs) == sorted(t["run_id"] for t in local)
    assert {r["state"] for r in runs} == {"finished"}
    remote = server.get(f"{at('offline/' + sweep_id)}/trials")["trials"]
    assert [(t["number"], t["state"], t["value"]) for t in remote] == [
        (t["number"], t["state"], t["value"]) for t in local
    ]
    again = run_cli("sync", "--all", "--server", server.url, "--key", server.key, base=tmp_path)
    assert again.returncode == 0, again.stderr  # a second sync changes nothing and succeeds


def test_bad_requests_are_answered_4xx(tmp_path: Path, server: Server) -> None:
    """Unknown fields, bad configs, bad states and duplicate trial numbers are 4xx, never 500."""
    ok = {"id": "sw1", "config": GRID, "state": "running", "seed": 1, "created_at": 1.0}
    new = "/projects/p/sweeps"
    assert server.send("POST", new, ok)[0] == 201
    assert server.send("POST", new, ok)[0] == 409
    status, doc = server.send("POST", new, {**ok, "id": "sw2", "config": {**GRID, "x": 1}})
    assert status == 422 and "unknown field 'x'" in doc["error"]["message"]
    status, doc = server.send("POST", new, {**ok, "id": "sw3", "colour": 1})
    assert status == 422 and doc["error"]["field"] == "colour"
    assert server.send("PATCH", f"{new}/sw1", {"state": "exploded"})[0] == 422
    assert server.send("PATCH", f"{new}/nosuch", {"state": "paused"})[0] == 404
    trial = {
        "number": 0,
        "run_id": "r0",
        "internal": {},
        "params": {},
        "state": "running",
        "created_at": 1.0,
    }
    assert server.send("POST", f"{new}/sw1/trials", trial)[0] == 201
    assert server.send("POST", f"{new}/sw1/trials", trial)[0] == 409
    assert server.send("POST", f"{new}/sw1/trials", {**trial, "number": -1})[0] == 422
    assert server.send("POST", f"{new}/sw1/trials", {**trial, "number": 2**40})[0] == 422
    assert server.send("POST", f"{new}/sw1/trials", {**trial, "agent_pid": 2**70})[0] == 422
    assert server.send("POST", f"{new}/sw1/trials", {**trial, "number": 1, "value": "x"})[0] == 422
    assert server.send("PATCH", f"{new}/sw1/trials/0", {"state": "bogus"})[0] == 422
    assert server.send("PATCH", f"{new}/sw1/trials/abc", {"state": "stopped"})[0] == 422
    status, doc = server.send(
        "PATCH", f"{new}/sw1/trials/0?only_running=true", {"state": "stopped"}
    )
    assert status == 200 and doc == {"updated": True}
    status, doc = server.send(
        "PATCH", f"{new}/sw1/trials/0?only_running=true", {"state": "crashed"}
    )
    assert status == 200 and doc == {"updated": False}  # no longer running


def test_wisp_ui_shows_an_offline_sweep_live(tmp_path: Path) -> None:
    """`wisp ui` pushes the offline sweeps under its directory, and again as they change."""
    import json
    import time
    import urllib.request

    from tests.browser.conftest import start_dashboard

    sweep_id = create_sweep(tmp_path, {**GRID, "run_cap": 2}, project="ui")
    assert run_cli("agent", sweep_id, "--count", "1", base=tmp_path).returncode == 0
    assert trials(tmp_path, sweep_id)[0]["state"] == "finished"
    dash = start_dashboard(tmp_path, tmp_path / "ui-data")
    try:

        def get(path: str) -> dict:
            with urllib.request.urlopen(f"{dash.url}/api/v1{path}", timeout=30) as resp:
                return json.loads(resp.read())

        def wait_for(pred) -> None:
            deadline = time.monotonic() + 30
            while not pred():
                assert time.monotonic() < deadline, "timed out"
                time.sleep(0.2)

        wait_for(lambda: len(get("/sweeps")["sweeps"]) == 1)
        wait_for(lambda: len(get(f"{at('ui/' + sweep_id)}/runs")["runs"]) == 1)
        # the second and last trial: an agent that stops at --count still finishes the sweep
        assert run_cli("agent", sweep_id, "--count", "1", base=tmp_path).returncode == 0
        wait_for(
            lambda: (
                [t["state"] for t in get(f"{at('ui/' + sweep_id)}/trials")["trials"]]
                == ["finished", "finished"]
            )
        )
        wait_for(lambda: len(get(f"{at('ui/' + sweep_id)}/runs")["runs"]) == 2)
        assert get(at("ui/" + sweep_id))["state"] == "finished"
    finally:
        dash.stop.set()
        dash.thread.join(30)


def test_one_sweep_id_in_two_projects_is_two_sweeps(
    tmp_path: Path, server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The SDK reaches each of two sweeps ``same`` by ``project/id``; a bare id that is in
    two projects is a UsageError naming them, and one in a single project is found."""
    import wisp.sweeps
    from wisp.errors import UsageError

    for project, lr in (("pa", 1.0), ("team/pb", 2.0)):
        grid = {**GRID, "parameters": {"x": {"values": [lr]}}}
        body = {"id": "same", "config": grid, "created_at": lr}
        assert server.send("POST", f"{at(project + '/x')[:-2]}", body)[0] == 201
    body = {"id": "alone", "config": GRID, "created_at": 3.0}
    assert server.send("POST", "/projects/pa/sweeps", body)[0] == 201
    for name, value in server.env().items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(tmp_path)
    assert wisp.sweeps.sweep_status("pa/same")["config"]["parameters"]["x"] == {"values": [1.0]}
    got = wisp.sweeps.sweep_status("team/pb/same")
    assert (got["project"], got["config"]["parameters"]["x"]) == ("team/pb", {"values": [2.0]})
    with pytest.raises(UsageError, match="pa, team/pb"):
        wisp.sweeps.sweep_status("same")
    assert wisp.sweeps.sweep_status("alone")["project"] == "pa"
    assert wisp.sweeps.set_state("team/pb/same", "pause") == "paused"
    assert server.get(at("pa/same"))["state"] == "running"
    store, _f, _b, bare = wisp.sweeps._open("same", None, "pa")  # wisp.agent(id, project=)
    assert (bare, store.get_sweep(bare)["project"]) == ("same", "pa")
    store.close()  # type: ignore[attr-defined]
    made = wisp.sweep(GRID, project="pc", entity="team")
    assert made.startswith("team/pc/") and wisp.sweeps.sweep_status(made)["project"] == "team/pc"
    assert wisp.sweep(GRID).startswith("uncategorized/")  # where a run with no project goes

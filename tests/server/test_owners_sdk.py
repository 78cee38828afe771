"""Run ownership through the real SDK and a real server process: two people, one run id."""

from __future__ import annotations

from pathlib import Path

import pytest

import wisp
from wisp.errors import ApiError
from wisp.server import keys_create, users_add
from wisp.server.store.facade import open_store
from wisp.testing import Server


def _log(d: Path, project: str, run_id: str, value: float) -> None:
    run = wisp.init(project=project, id=run_id, dir=str(d), mode="offline")
    for step in range(5):
        wisp.log({"loss": value}, step=step)
    run.finish()


def test_one_run_id_in_two_projects_is_two_runs(tmp_path: Path) -> None:
    """Alice's and Bob's ``init(id="exp1")`` in their own projects sync as two runs, each
    found by ``project/exp1``; in one shared project Bob's second exp1 is a clear error."""
    with Server(tmp_path / "srv") as srv:
        for name in ("alice", "bob"):
            users_add(name, db=srv.db_url)
        alice = keys_create("write", "a", db=srv.db_url, user="alice")[1]
        bob = keys_create("write", "b", db=srv.db_url, user="bob")[1]
        for who, key, project, value in (("alice", alice, "pa", 1.0), ("bob", bob, "pb", 9.0)):
            _log(tmp_path / who, project, "exp1", value)
            wisp.sync([str(tmp_path / who)], server_url=srv.url, api_key=key, follow=False)
        srv.key = alice
        got = srv.get("/runs/exp1")
        assert (got["project"], got["key"], got["state"]) == ("pa", "exp1", "finished")
        assert srv.points("exp1", "loss") == [(s, 1.0) for s in range(5)]
        srv.key = bob
        with pytest.raises(Exception, match="403"):
            srv.get("/runs/exp1")
        hers = srv.get("/projects/pb/runs/exp1")
        assert hers["id"] == "exp1" and hers["key"] != "exp1" and hers["state"] == "finished"
        assert srv.points(hers["key"], "loss") == [(s, 9.0) for s in range(5)]
        api = wisp.Api(server_url=srv.url, api_key=bob)
        run = api.run("bob/pb/exp1")
        assert (run.id, run.key, run.project) == ("exp1", hers["key"], "pb")
        assert [row["loss"] for row in run.scan_history(keys=["loss"])] == [9.0] * 5
        api.close()
        # one project shared by both: the id is Alice's run there, and stays hers
        store = open_store(srv.db_url)
        uid = store.users.add_team("lab")
        store.users.set_member("lab", "alice", "member")
        store.users.set_member("lab", "bob", "member")
        store.access.set_project("shared", ("team", uid), "team")
        store.close()
        _log(tmp_path / "a2", "shared", "exp2", 1.0)
        wisp.sync([str(tmp_path / "a2")], server_url=srv.url, api_key=alice, follow=False)
        _log(tmp_path / "b2", "shared", "exp2", 9.0)
        with pytest.raises(ApiError, match=r"run 'exp2' in project 'shared' belongs to another"):
            wisp.sync([str(tmp_path / "b2")], server_url=srv.url, api_key=bob, follow=False)
        assert srv.points("exp2", "loss") == [(s, 1.0) for s in range(5)]


def test_entity_projects_through_the_sdk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``init(entity="vision")`` files an online run under the team's ``vision/detector``:
    ``run.path`` finds it again through ``wisp.Api``, ``WISP_ENTITY`` does the same, histories
    name it by id, and someone outside the team is refused at ``init()`` naming the team."""
    from wisp.errors import FatalApiError
    from wisp.server import teams_add, teams_member

    with Server(tmp_path / "srv") as srv:
        for name in ("alice", "dave"):
            users_add(name, db=srv.db_url)
        teams_add("vision", db=srv.db_url)
        teams_member("vision", "alice", "member", db=srv.db_url)
        alice = keys_create("write", "a", db=srv.db_url, user="alice")[1]
        dave = keys_create("write", "d", db=srv.db_url, user="dave")[1]
        settings = {"server_url": srv.url, "api_key": alice}
        run = wisp.init(
            project="detector", entity="vision", dir=str(tmp_path / "a"), settings=settings
        )
        assert (run.project, run.entity, run.project_path) == (
            "detector",
            "vision",
            "vision/detector",
        )
        assert run.path == f"vision/detector/{run.id}"
        assert run.url is not None and "#/p/vision%2Fdetector/r/" in run.url
        for step in range(4):
            wisp.log({"loss": float(step)}, step=step)
        run.finish()
        monkeypatch.setenv("WISP_ENTITY", "vision")
        run2 = wisp.init(project="detector", dir=str(tmp_path / "a2"), settings=settings)
        wisp.log({"loss": 9.0}, step=0)
        run2.finish()
        monkeypatch.delenv("WISP_ENTITY")

        api = wisp.Api(server_url=srv.url, api_key=alice)
        got = api.run(run.path)
        assert (got.id, got.entity, got.project, got.project_path) == (
            run.id,
            "vision",
            "detector",
            "vision/detector",
        )
        assert [r["loss"] for r in got.scan_history(keys=["loss"])] == [0.0, 1.0, 2.0, 3.0]
        runs = api.runs("vision/detector")
        assert sorted(r.id for r in runs) == sorted([run.id, run2.id])
        frame = runs.histories(keys=["loss"])
        assert set(frame["run_id"]) == {run.id, run2.id}
        api.close()

        refused = {
            "detector": r"'dave' may not create runs in project 'vision/detector'",
            "fresh": r"'dave' may not create projects under 'vision'",
        }
        for project, why in refused.items():
            with pytest.raises(FatalApiError, match=why) as refused_by:
                wisp.init(
                    project=project,
                    entity="vision",
                    dir=str(tmp_path / "d"),
                    settings={"server_url": srv.url, "api_key": dave},
                )
            assert "check init(project=..., entity=...)" in str(refused_by.value)
            assert "check the API key" not in str(refused_by.value)  # the key is fine
        srv.key = dave
        with pytest.raises(Exception, match="403"):
            srv.get(f"/entities/vision/projects/detector/runs/{run.id}")

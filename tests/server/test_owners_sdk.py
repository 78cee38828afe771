"""Run ownership through the real SDK and a real server process: two people, one run id."""

from __future__ import annotations

from pathlib import Path

import pytest

import wisp
from wisp.errors import ApiError
from wisp.server import keys_create, users_add
from wisp.testing import Server


def test_two_people_one_run_id_never_merge(tmp_path: Path) -> None:
    """Bob's offline run with Alice's id fails to sync with a clear error; Alice's run is intact."""
    with Server(tmp_path / "srv") as srv:
        for name in ("alice", "bob"):
            users_add(name, db=srv.db_url)
        alice = keys_create("write", "a", db=srv.db_url, user="alice")[1]
        bob = keys_create("write", "b", db=srv.db_url, user="bob")[1]
        for who, key, project, value in (("alice", alice, "pa", 1.0), ("bob", bob, "pb", 9.0)):
            d = tmp_path / who
            run = wisp.init(project=project, id="exp1", dir=str(d), mode="offline")
            for step in range(5):
                wisp.log({"loss": value}, step=step)
            run.finish()
            if who == "alice":
                wisp.sync([str(d)], server_url=srv.url, api_key=key, follow=False)
            else:
                with pytest.raises(ApiError, match=r"run id 'exp1' is taken on this server"):
                    wisp.sync([str(d)], server_url=srv.url, api_key=key, follow=False)
        srv.key = alice
        got = srv.get("/runs/exp1")
        assert got["project"] == "pa" and got["state"] == "finished"
        assert srv.points("exp1", "loss") == [(s, 1.0) for s in range(5)]
        srv.key = bob
        with pytest.raises(Exception, match="403"):
            srv.get("/runs/exp1")
        assert srv.get("/projects") == {"projects": []}

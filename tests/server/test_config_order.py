"""A run's config reads back with its keys in the order they were logged, on both databases
(PostgreSQL's JSONB stores keys sorted by length: ``runs.config_json`` keeps the order)."""

from __future__ import annotations

from typing import Any

import pytest

# shortest keys last and nested keys out of order: JSONB would give lr, zeta, batch_size
CONFIG = {"batch_size": 64, "zeta": 1.0, "lr": 0.1, "model": {"width": 8, "n": 2, "act": "gelu"}}
LATER = {"zeta": 2.0, "optimizer": "adam", "lr": 0.01, "batch_size": 32}


def _order(cfg: Any) -> list[Any]:
    """The keys of a config and of its nested objects, in order."""
    return [(k, _order(v)) if isinstance(v, dict) else k for k, v in cfg.items()]


def test_config_keys_keep_their_logged_order_in_every_reader(api: Any) -> None:
    """PUT, a config record and PATCH each set a config that the run, the runs page, the
    sweep's runs and a filter on a config key all return in the order it was logged."""
    put = {"project": "p", "config": CONFIG, "metadata": {"sweep_id": "sw"}}
    assert api.put("/api/v1/runs/r1", json=put).status_code == 200
    got = api.get("/api/v1/runs/r1").json()["config"]
    assert _order(got) == _order(CONFIG) and got == CONFIG
    page = api.get("/api/v1/projects/p/runs", params={"filter": "config.lr > 0.05"}).json()
    assert [_order(r["config"]) for r in page["runs"]] == [_order(CONFIG)]  # JSONB filters
    grid = {"method": "grid", "parameters": {"lr": {"values": [0.1]}}}
    sweep = {"id": "sw", "config": grid, "created_at": 1.0}
    assert api.post("/api/v1/projects/p/sweeps", json=sweep).status_code == 201
    swept = api.get("/api/v1/projects/p/sweeps/sw/runs").json()["runs"]
    assert [_order(r["config"]) for r in swept] == [_order(CONFIG)]

    rec = {"type": 2, "data": {"config": LATER}}
    body = {"writer_id": "w", "first_seq": 0, "records": [rec]}
    assert api.post("/api/v1/runs/r1/records", json=body).status_code == 200
    assert _order(api.get("/api/v1/runs/r1").json()["config"]) == _order(LATER)
    page = api.get("/api/v1/projects/p/runs", params={"filter": "config.optimizer = 'adam'"})
    assert [_order(r["config"]) for r in page.json()["runs"]] == [_order(LATER)]

    edited = {"y": 1, "x": {"b": 2, "a": 1}, "epochs": 3}
    res = api.patch("/api/v1/runs/r1", json={"config": edited})
    assert res.status_code == 200 and _order(res.json()["run"]["config"]) == _order(edited)
    assert _order(api.get("/api/v1/runs/r1").json()["config"]) == _order(edited)


# JSONB would give acc, loss, best/val, epoch_time
SUMMARY = {"epoch_time": 3.5, "loss": 0.2, "acc": 0.9, "best/val": {"step": 7, "at": 1.0}}


def test_summary_keys_keep_their_logged_order_in_every_reader(api: Any) -> None:
    """A summary record and PATCH each set a summary that the run, the runs page and a filter
    on a summary key return in the order it was logged (wandb gives insertion order)."""
    assert api.put("/api/v1/runs/s1", json={"project": "p"}).status_code == 200
    rec = {"type": 4, "data": {"summary": SUMMARY}}
    body = {"writer_id": "w", "first_seq": 0, "records": [rec]}
    assert api.post("/api/v1/runs/s1/records", json=body).status_code == 200
    got = api.get("/api/v1/runs/s1").json()["summary"]
    assert _order(got) == _order(SUMMARY) and got == SUMMARY
    page = api.get("/api/v1/projects/p/runs", params={"filter": "summary.acc > 0.5"}).json()
    assert [_order(r["summary"]) for r in page["runs"]] == [_order(SUMMARY)]  # JSONB filters

    edited = {"zz": 1, "a": {"y": 2, "b": 1}}
    res = api.patch("/api/v1/runs/s1", json={"summary": edited})
    assert res.status_code == 200 and _order(res.json()["run"]["summary"]) == _order(edited)
    assert _order(api.get("/api/v1/runs/s1").json()["summary"]) == _order(edited)


@pytest.mark.parametrize("column", ["config", "summary"])
def test_a_run_stored_before_the_order_was_kept_still_reads(store: Any, column: str) -> None:
    """A run written before ``config_json``/``summary_json`` existed (NULL there) reads its
    JSON config and summary."""
    from sqlalchemy import update

    from wisp.server.store import schema as S

    value = CONFIG if column == "config" else SUMMARY
    store.put_run("old", {"project": "p", column: value})
    with store.db.tx() as conn:
        conn.execute(update(S.runs).where(S.runs.c.id == "old").values({f"{column}_json": None}))
    assert store.get_run("old")[column] == value

"""Store.write_batch (wisp.server.store.batch): many runs' PUT + records in one transaction,
the same result as the two requests, a refused run undone alone."""

from __future__ import annotations

from typing import Any

import pytest

from tests.server.conftest import Api, history
from wisp._protocol import RecordType
from wisp.server.http.auth import key_principal
from wisp.server.http.problem import Problem
from wisp.server.store.batch import prepare_run_write


def _bodies(run_id: str, first_seq: int = 0) -> tuple[dict[str, Any], dict[str, Any]]:
    put = {
        "project": "p",
        "name": f"n-{run_id}",
        "tags": ["x"],
        "config": {"lr": 0.1},
        "metadata": {"host": "h"},
        "state": "running",
        "created_at": 1.7e9,
        "by_project": True,
    }
    run_rec = {
        "type": RecordType.RUN,
        "data": {"run_id": run_id, "writer_id": "w1", "project": "p"},
    }
    records = [
        run_rec,
        history([(0, 1.7e9, {"loss": 1.0, "s": "a"}), (1, 1.7e9 + 1, {"loss": 2.0})]),
        {"type": RecordType.SUMMARY, "data": {"summary": {"loss": 0.5}}},
        {"type": RecordType.FINISH, "data": {"state": "finished", "finished_at": 1.7e9 + 2}},
    ]
    return put, {"writer_id": "w1", "first_seq": first_seq, "records": records}


def _view(store: Any, key: str) -> dict[str, Any]:
    run = store.get_run(key)
    assert run is not None
    for volatile in ("id", "key", "name", "heartbeat_at", "duration"):
        run.pop(volatile)
    assert run["metadata"].pop("run_id") == key  # the RUN record's, as sent
    return {**run, "acked": store.acked_seq(key, "w1")}


def test_a_batch_writes_what_put_and_post_records_write(
    store: Any, api: Api, keys: dict[str, str]
) -> None:
    """A run written through a write batch reads back as one sent by PUT /runs/{id} and
    POST /runs/{key}/records with the same bodies (state, summary, config, points, writer)."""
    put, recs = _bodies("viahttp")
    assert api.put("/api/v1/runs/viahttp", json=put).status_code == 200
    assert api.post("/api/v1/runs/viahttp/records", json=recs).json()["acked_seq"] == 3

    actor = key_principal(store, keys["write"])
    with store.write_batch(actor, "testclient") as batch:
        key, acked = batch.apply(prepare_run_write("viabatch", *_bodies("viabatch")))
    assert (key, acked) == ("viabatch", 3)
    assert _view(store, "viabatch") == _view(store, "viahttp")
    assert _view(store, "viabatch")["state"] == "finished"


def test_a_run_refused_inside_a_batch_is_undone_alone(store: Any, keys: dict[str, str]) -> None:
    """A run whose records the store refuses after its PUT (a gap in its sequence) leaves
    nothing behind; the runs before and after it in the batch are written."""
    actor = key_principal(store, keys["write"])
    refused: list[int] = []
    with store.write_batch(actor) as batch:
        for rid, seq in (("a", 0), ("b", 5), ("c", 0)):
            try:
                batch.apply(prepare_run_write(rid, *_bodies(rid, seq)))
            except Problem as p:
                refused.append(p.status)
    assert refused == [409]
    assert store.runs.key_of("p", "b") is None
    assert [store.acked_seq(k, "w1") for k in ("a", "c")] == [3, 3]
    assert sorted(r["name"] for r in (store.get_run("a"), store.get_run("c"))) == ["n-a", "n-c"]


def test_bodies_are_validated_as_the_endpoints_do() -> None:
    """prepare_run_write refuses what PUT /runs/{id} and POST .../records refuse, naming the
    field: a bad run id, a bad state, a record batch without a writer."""
    put, recs = _bodies("ok")
    with pytest.raises(Problem) as e:
        prepare_run_write("bad id", put, recs)
    assert e.value.status == 422 and e.value.field == "run_id"
    with pytest.raises(Problem) as e:
        prepare_run_write("ok", {**put, "state": "sleeping"}, recs)
    assert e.value.status == 422
    with pytest.raises(Problem) as e:
        prepare_run_write("ok", put, {k: v for k, v in recs.items() if k != "writer_id"})
    assert e.value.status == 422

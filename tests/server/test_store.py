"""Exactly-once ingestion: random duplicated and reordered batches equal a clean upload."""

from __future__ import annotations

import math
import random
from typing import Any

from wisp.server.http.problem import Problem
from wisp.server.series.history import export_history
from wisp.server.store.ingest import prepare_records


def _records(rng: random.Random, n: int) -> list[dict[str, Any]]:
    recs: list[dict[str, Any]] = [{"type": 1, "data": {"project": "p", "host": "h"}}]
    step = 0
    for _ in range(n):
        rows = []
        for _ in range(rng.randint(1, 20)):
            v = rng.choice([rng.uniform(-1, 1), math.nan, math.inf, rng.randint(0, 9), "s"])
            rows.append([step, 1000.0 + step, {"a": rng.random(), "b": v}])
            step += 1
        recs.append({"type": 3, "data": {"rows": rows}})
        if rng.random() < 0.1:
            recs.append({"type": 4, "data": {"summary": {"step": step}}})
    recs.append({"type": 6, "data": {"state": "finished", "exit_code": 0}})
    return recs


def _export(store: Any, run: str) -> str:
    return "".join(export_history(store, run, "jsonl", None))


def test_duplicated_reordered_batches_apply_exactly_once(store: Any) -> None:
    """Batches delivered in random order, repeated and overlapping leave the clean result."""
    rng = random.Random(1234)
    recs = _records(rng, 120)
    store.ingest("clean", "w", 0, prepare_records(recs))
    cuts = sorted(rng.sample(range(1, len(recs)), 25))
    batches = [(a, recs[a:b]) for a, b in zip([0, *cuts], [*cuts, len(recs)], strict=True)]
    acked = -1
    deliveries = 0
    while acked < len(recs) - 1:
        first, part = rng.choice(batches)
        if rng.random() < 0.3:  # an overlapping retry that starts inside an acked batch
            first = rng.randint(0, max(0, acked))
            part = recs[first : first + rng.randint(1, 15)]
        try:
            acked = max(acked, store.ingest("messy", "w", first, prepare_records(part)))
        except Problem as p:
            assert p.status == 409 and p.extra["acked_seq"] == acked
        deliveries += 1
    assert deliveries > len(batches)
    assert store.acked_seq("messy", "w") == len(recs) - 1
    assert _export(store, "messy") == _export(store, "clean")
    assert _export(store, "clean").count("\n") == sum(
        len(r["data"]["rows"]) for r in recs if r["type"] == 3
    )
    assert store.get_run("messy")["state"] == "finished"


def test_failed_batch_changes_nothing(store: Any) -> None:
    """A batch refused mid-way (gap) leaves neither data nor acknowledgement behind."""
    store.put_run("r", {"project": "p"})
    recs = prepare_records([{"type": 3, "data": {"rows": [[0, 1.0, {"x": 1.0}]]}}])
    try:
        store.ingest("r", "w", 3, recs)
    except Problem as p:
        assert p.status == 409
    assert store.acked_seq("r", "w") == -1
    assert _export(store, "r") == ""


def test_a_run_deleted_by_another_process_is_logged_again_from_scratch(db_url: str) -> None:
    """Two stores on one database (two server processes): a run one of them deleted and the
    other logs again under the same key gets fresh metric-key ids, not cached stale ones."""
    from wisp.server import open_store
    from wisp.server.store.edit import delete_run

    a, b = open_store(db_url), open_store(db_url)
    try:
        run = [{"type": 1, "data": {"project": "p"}}]
        a.ingest(
            "r",
            "w1",
            0,
            prepare_records([*run, {"type": 3, "data": {"rows": [[0, 1.0, {"x": 1.0}]]}}]),
        )
        assert delete_run(b, "r")
        a.ingest(
            "r",
            "w2",
            0,
            prepare_records([*run, {"type": 3, "data": {"rows": [[5, 2.0, {"x": 7.0}]]}}]),
        )
        got = b.get_run("r")
        assert got is not None and got["metric_keys"] == ["x"]
        assert _export(b, "r") == '{"_step": 5, "_timestamp": 2.0, "x": 7.0}\n'
    finally:
        a.close()
        b.close()

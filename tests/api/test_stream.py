"""Streaming a history larger than a memory budget, retries, and the dict filter translation."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from wisp.api._filters import from_mongo, parse
from wisp.api._http import HttpApi
from wisp.errors import FatalApiError, UsageError
from wisp.testing import Server

KEYS = ["a", "b", "c", "d"]
STEPS = 400_000  # 1.6M points: ~130 MB as Python row dicts, ~13 MB as float columns


def _seed(db_url: str) -> None:
    """One big run through the server's own ingestion code (as the HTTP API would)."""
    from wisp.server import open_store
    from wisp.server.store.ingest import prepare_records

    store = open_store(db_url)
    try:
        store.put_run("big", {"project": "big"})
        for seq, lo in enumerate(range(0, STEPS, 20_000)):
            rows = [
                [s, 1.0, {k: s * 0.5 + i for i, k in enumerate(KEYS)}]
                for s in range(lo, lo + 20_000)
            ]
            store.ingest("big", "w", seq, prepare_records([{"type": 3, "data": {"rows": rows}}]))
    finally:
        store.close()


def _hwm_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM")


CLIENT = textwrap.dedent(
    """
    import json, resource, sys
    import wisp
    api = wisp.Api(sys.argv[1], sys.argv[2])
    run = api.run("big/big")
    first = next(iter(run.scan_history(keys=["a"], max_step=10)))  # imports and warm-up
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    n = points = 0
    last = -1
    for row in run.scan_history(page_size=5000):
        assert row["_step"] == last + 1 and row["d"] == row["_step"] * 0.5 + 3
        last = row["_step"]
        n += 1
        points += len(row) - 1
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    api.close()
    print(json.dumps({"rows": n, "points": points, "growth_kb": peak - base}))
    """
)


@pytest.mark.slow
def test_scan_history_streams_within_a_memory_budget(tmp_path: Path) -> None:
    """1.6M points stream through scan_history with client and server memory growth < 60 MB."""
    db = f"sqlite:///{tmp_path / 'big.db'}"
    _seed(db)
    budget_kb = 60 * 1024
    with Server(tmp_path, db=db) as srv:
        assert srv.proc is not None
        import wisp

        with wisp.Api(srv.url, srv.key) as api:  # the server imports pyarrow on first export
            assert len(list(api.run("big").scan_history(keys=["a"], max_step=99))) == 100
        before = _hwm_kb(srv.proc.pid)
        out = subprocess.run(
            [sys.executable, "-c", CLIENT, srv.url, srv.key],
            capture_output=True,
            text=True,
            timeout=300,
            check=True,
        )
        server_growth = _hwm_kb(srv.proc.pid) - before
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["rows"] == STEPS and got["points"] == STEPS * len(KEYS)
    assert got["growth_kb"] < budget_kb, got
    assert server_growth < budget_kb, server_growth


class _Flaky:
    """A transport answering 503 (then 429 with Retry-After) before a good answer."""

    def __init__(self, answers: list[Any]) -> None:
        self.answers = answers
        self.calls = 0

    def request(self, method: str, path: str, body: Any, headers: Any, timeout: float) -> Any:
        from wisp._upload._transport import Response

        self.calls += 1
        status, hdrs, payload = self.answers.pop(0)
        return Response(status, hdrs, payload)

    def close(self) -> None:
        pass


def test_json_calls_retry_with_backoff_on_429_and_5xx() -> None:
    """503 and 429 are retried with growing, Retry-After-honouring sleeps; then the answer."""
    t = _Flaky(
        [
            (503, {}, b""),
            (429, {"retry-after": "3"}, b""),
            (200, {}, json.dumps({"projects": [{"name": "p"}]}).encode()),
        ]
    )
    slept: list[float] = []
    http = HttpApi("http://127.0.0.1:9", None, transport=t, sleep=slept.append, rand=lambda: 1.0)
    assert http.json("GET", "/projects") == {"projects": [{"name": "p"}]}
    assert t.calls == 3 and slept == [0.25, 3.0]


def test_retries_give_up_and_4xx_is_not_retried() -> None:
    """After ``retries`` failures the last error is raised; a 404 is raised at once."""
    t = _Flaky([(500, {}, b"")] * 3)
    http = HttpApi("http://127.0.0.1:9", None, transport=t, sleep=lambda s: None, retries=2)
    with pytest.raises(Exception, match="500"):
        http.json("GET", "/projects")
    assert t.calls == 3
    t404 = _Flaky([(404, {}, b'{"error": {"code": "x", "message": "no run"}}')])
    http = HttpApi("http://127.0.0.1:9", None, transport=t404, sleep=lambda s: None)
    with pytest.raises(FatalApiError, match="no run"):
        http.json("GET", "/runs/x")
    assert t404.calls == 1


@pytest.mark.parametrize(
    ("doc", "text"),
    [
        ({"config.lr": {"$lt": 0.01}}, "config.lr < 0.01"),
        ({"state": "finished", "tags": "x"}, '(state = "finished" and tags contains "x")'),
        ({"$or": [{"config.a": 1}, {"config.b": None}]}, "(config.a = 1 or config.b = null)"),
        ({"config.opt": {"$in": ["a", "b"]}}, '(config.opt = "a" or config.opt = "b")'),
        ({"config.lr.value": {"$gte": 1e-5}}, "config.lr >= 1e-05"),
        ({"summary_metrics.acc": {"$exists": True}}, "summary.acc exists"),
        ({"config.a.b": {"$ne": True}}, "config.a.b != true"),
        ({"config.has.dot": 'q"uote'}, 'config.has.dot = "q\\"uote"'),
    ],
)
def test_mongo_dicts_translate_to_the_filter_language(doc: dict[str, Any], text: str) -> None:
    """A MongoDB-style dict becomes filter-language text the one grammar parses."""
    assert from_mongo(doc) == text
    assert parse(text) is not None


@pytest.mark.parametrize(
    "doc",
    [
        {"config.lr": {"$regex": "x"}},
        {"$where": "this.a > 1"},
        {"config.lr": float("nan")},
        {"config.lr": {"$in": []}},
        {"config.lr": [1, 2]},
    ],
)
def test_unsupported_dicts_are_refused_not_evaluated(doc: dict[str, Any]) -> None:
    """Operators the language lacks (and code) are a UsageError naming what was wrong."""
    with pytest.raises(UsageError, match="filter"):
        from_mongo(doc)


def test_time_is_not_spent_in_import() -> None:
    """``import wisp`` does not load the API package; ``wisp.Api`` does, on first use."""
    code = "import sys, wisp; a = 'wisp.api' in sys.modules; wisp.Api; print(a, 'wisp.api' in sys.modules)"
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True"], (
        out.stdout,
        out.stderr,
        time.perf_counter() - t0,
    )

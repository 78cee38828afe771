"""The agent tools over a local folder: exact histories across pages, differing config keys,
partial ids, bounded results, alerts polled once, and tag edits that keep other tags."""

from __future__ import annotations

from pathlib import Path

import pytest

from wisp.api import Api
from wisp.errors import NotFoundError, UsageError
from wisp.mcp import Tools
from wisp.mcp._tools import build_filter


def _tools(folder: Path, max_bytes: int = 4096) -> Tools:
    return Tools(Api(dir=folder), max_bytes=max_bytes)


def _by_lr(t: Tools) -> dict[float, str]:
    return {r["summary"]["lr"]: r["id"] for r in t.list_runs("agents", summary_keys=["lr"])["runs"]}


def test_history_pages_return_every_point_exactly(runs_dir: Path) -> None:
    """Paging get_metric_history with its cursor yields each logged point once, in order,
    and no page passes the byte bound."""
    t = _tools(runs_dir, max_bytes=2048)
    rid = _by_lr(t)[0.1]
    got, cursor, pages = [], None, 0
    while True:
        page = t.get_metric_history(rid, "train/loss", "agents", cursor=cursor)
        assert len(str(page)) < 2048 + 512
        got += page["points"]
        pages += 1
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert pages > 3
    assert [p[0] for p in got] == list(range(300))
    assert [p[1] for p in got] == [1 / (s + 1) + 0.1 for s in range(300)]


def test_history_step_window_and_buckets(runs_dir: Path) -> None:
    """A step window is inclusive at both ends; buckets keep each bucket's extremes."""
    t = _tools(runs_dir, max_bytes=1 << 20)
    rid = _by_lr(t)[0.01]
    pts = t.get_metric_history(rid, "val/loss", "agents", min_step=10, max_step=19)["points"]
    assert [p[0] for p in pts] == list(range(10, 20))
    b = t.get_metric_history(rid, "val/loss", "agents", buckets=10)["buckets"]
    assert 1 <= len(b) <= 10
    val = [1 / (s + 1) + 0.03 + (0.5 if s > 200 else 0.0) for s in range(300)]
    assert max(x["max"] for x in b) == pytest.approx(max(val))
    assert min(x["min"] for x in b) == pytest.approx(min(val))


def test_non_finite_values_travel_as_strings(runs_dir: Path) -> None:
    """A NaN reaches the agent as "nan" (strict JSON), and diagnose_run reports it."""
    t = _tools(runs_dir)
    rid = _by_lr(t)[0.1]
    assert t.get_metric_history(rid, "bad", "agents")["points"] == [[300, "nan"]]
    kinds = {(f["kind"], f["key"]) for f in t.diagnose_run(rid, "agents")["findings"]}
    assert ("non_finite", "bad") in kinds
    assert ("overfitting", "train/loss") in kinds


def test_compare_runs_finds_exactly_the_differing_keys(runs_dir: Path) -> None:
    """compare_runs lists lr (differs) and not seed or opt.name (the same in both)."""
    t = _tools(runs_dir)
    ids = list(_by_lr(t).values())
    out = t.compare_runs(ids, "agents")
    assert set(out["config_differs"]) == {"lr"}
    assert out["config_same_count"] == 2
    assert set(out["summary"]["train/loss"]) == {f"agents/{i}" for i in ids}


def test_best_run_and_partial_ids(runs_dir: Path) -> None:
    """best_run picks the lower loss; a unique id prefix finds the run, an unknown one is a
    clear error."""
    t = _tools(runs_dir)
    lr = _by_lr(t)
    assert t.best_run("train/loss", "agents")["id"] == lr[0.01]
    assert t.best_run("train/loss", "agents", mode="max")["id"] == lr[0.1]
    rid = lr[0.01]
    assert t.get_run(rid[:5], "agents")["config"]["lr"] == 0.01
    with pytest.raises(NotFoundError, match="id starting"):
        t.get_run("zzzzzzzz9", "agents")


def test_list_runs_filters_and_cursor(runs_dir: Path) -> None:
    """Structured filters compile to the filter language; a limit of 1 pages with a cursor."""
    t = _tools(runs_dir)
    one = t.list_runs("agents", config={"lr": 0.1})
    assert one["total"] == 1 and one["filter"] == "config.lr = 0.1"
    first = t.list_runs("agents", limit=1)
    second = t.list_runs("agents", limit=1, cursor=first["next_cursor"])
    assert {first["runs"][0]["id"], second["runs"][0]["id"]} == set(_by_lr(t).values())
    assert second["next_cursor"] is None
    assert t.list_runs("agents", created_after="2000-01-01")["total"] == 2
    assert t.list_runs("agents", created_before="2000-01-01T00:00:00Z")["total"] == 0
    with pytest.raises(UsageError, match="cursor"):
        t.list_runs("agents", cursor="!!")


def test_build_filter_quotes_keys_and_values() -> None:
    """Odd config keys and text values are quoted so they cannot change the expression."""
    expr = build_filter(config={"a-b": 'x" or 1=1'}, tags=["t"], state=["running", "crashed"])
    assert expr == (
        '(state = "running" or state = "crashed") and tags contains "t" and '
        'config."a-b" = "x\\" or 1=1"'
    )


def test_alerts_are_polled_once_with_the_cursor(runs_dir: Path) -> None:
    """get_alerts returns the run's alert, and polling with its cursor returns nothing new."""
    t = _tools(runs_dir)
    first = t.get_alerts("agents")
    assert [a["title"] for a in first["alerts"]] == ["loss high"]
    assert first["alerts"][0]["level"] == "WARN"
    again = t.get_alerts("agents", cursor=first["next_cursor"])
    assert again["alerts"] == []
    assert t.get_alerts("agents", since="2000-01-01")["alerts"][0]["title"] == "loss high"


def test_console_tail_and_grep(runs_dir: Path) -> None:
    """get_console shows the captured output, filtered by grep."""
    t = _tools(runs_dir)
    rid = _by_lr(t)[0.01]
    assert t.get_console(rid, "agents", grep="lr=")["lines"] == [f"run {rid} lr=0.01"]


def test_a_too_small_byte_bound_is_refused(runs_dir: Path) -> None:
    """max_bytes below 1 KiB is a usage error, not an empty result."""
    with pytest.raises(UsageError, match="max_bytes"):
        _tools(runs_dir, max_bytes=10)

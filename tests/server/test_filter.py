"""The filter language's one definition: its expression tree and the endpoint that serves it."""

from __future__ import annotations

from typing import Any

import pytest

from tests.server.conftest import Api
from wisp.server.http.problem import Problem
from wisp.server.query.filter import MAX_DEPTH, TREE_VERSION, parse


def test_tree_shape() -> None:
    """Precedence, quoted key paths, `==` and number texts come out as the documented tree."""
    tree = parse("not config.\"a.b\".c == 1e16 or tags contains 'x' and summary.acc exists")
    assert tree == {
        "or": [
            {
                "not": {
                    "cmp": "=",
                    "field": {"name": 'config."a.b".c', "path": ["config", "a.b", "c"]},
                    "value": {"num": "1e+16"},
                }
            },
            {
                "and": [
                    {"contains": {"name": "tags", "path": ["tags"]}, "value": "x"},
                    {"exists": {"name": "summary.acc", "path": ["summary", "acc"]}},
                ]
            },
        ]
    }
    assert parse("  ") is None
    assert parse("state != null and config.f = TRUE and name < run")["and"][1]["value"] is True  # type: ignore[index]
    assert parse("config.n > -007")["value"] == {"num": "-7"}  # type: ignore[index]
    assert parse("config.n > 1e400")["value"] == {"num": "inf"}  # type: ignore[index]


@pytest.mark.parametrize(
    "expr",
    ["config.lr <", "bogus = 1", "(state = x", "state = x )", "(" * (MAX_DEPTH + 1) + "id = a"],
)
def test_syntax_errors_are_422(expr: str) -> None:
    """Malformed or too deeply nested input is a 422 naming the filter, never a crash."""
    with pytest.raises(Problem) as e:
        parse(expr)
    assert e.value.status == 422 and e.value.field == "filter"


def _parse(api: Api, expr: str) -> Any:
    return api.get("/api/v1/filter/parse", params={"filter": expr})


def test_endpoint_returns_the_tree(api: Api) -> None:
    """The endpoint answers the same tree as the parser, with its format version."""
    expr = 'config.lr < 0.01 and tags contains "sweep"'
    r = _parse(api, expr)
    assert r.status_code == 200
    assert r.json() == {"filter": expr, "version": TREE_VERSION, "tree": parse(expr)}
    assert _parse(api, "").json()["tree"] is None


@pytest.mark.parametrize(
    "expr", ["config.lr <<< nonsense (", "created_at = 'x'", "tags = x", "(" * 400 + "id = a"]
)
def test_endpoint_refuses_what_the_runs_query_refuses(api: Api, expr: str) -> None:
    """An expression the runs query would refuse (also for its types) is the same 422 here."""
    r = _parse(api, expr)
    runs = api.get("/api/v1/projects/p/runs", params={"filter": expr})
    assert r.status_code == runs.status_code == 422
    assert r.json()["error"] == runs.json()["error"]
    assert r.json()["error"]["field"] == "filter"


def test_durations_nonfinite_words_and_in_lists() -> None:
    """``30m`` is 1800 s, ``nan``/``inf`` are the stored texts of non-finite values, and
    ``x in (a, b)`` is the tree of ``x = a or x = b`` (tree version 1 unchanged)."""
    assert parse("stalled > 30m")["value"] == {"num": "1800.0"}  # type: ignore[index]
    assert parse("summary.loss = NaN")["value"] == "NaN"  # type: ignore[index]
    assert parse("summary.loss = inf")["value"] == "Infinity"  # type: ignore[index]
    state = {"name": "state", "path": ["state"]}
    assert parse("state in (failed, crashed)") == {
        "or": [
            {"cmp": "=", "field": state, "value": "failed"},
            {"cmp": "=", "field": state, "value": "crashed"},
        ]
    }
    for bad in ("state in failed", "state in (a b)", "state in (a,"):
        with pytest.raises(Problem):
            parse(bad)


def test_stalled_and_stored_crashed_state_in_the_runs_query(store: Any) -> None:
    """``stalled`` counts from the last step of a running run; a run marked crashed by the
    automations worker reads crashed and is running again after a heartbeat."""
    from wisp.server.query.runs import list_runs
    from wisp.server.store.automations import AutomationStore

    now = [1000.0]
    store.clock = lambda: now[0]
    store.put_run("r1", {"project": "p"})
    now[0] += 120
    assert list_runs(store, "p", filter_expr="stalled > 1m")["total"] == 1
    assert list_runs(store, "p", filter_expr="stalled > 3m")["total"] == 0
    now[0] += store.heartbeat_timeout + 1
    assert AutomationStore(store).mark_crashed() == [("r1", "p")]
    assert list_runs(store, "p", filter_expr="state = crashed")["total"] == 1
    assert list_runs(store, "p", filter_expr="stalled exists")["total"] == 0
    store.heartbeat("r1")
    assert list_runs(store, "p", filter_expr="state = running")["total"] == 1

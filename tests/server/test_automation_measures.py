"""``change(summary.x, N steps)``, ``zscore(summary.x)`` and artifact-event triggers on real servers
(SQLite and PostgreSQL): each fires once, signed, for the run or artifact change it describes,
across a restart too; runs filters refuse them."""

from __future__ import annotations

import time
import urllib.error
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.server.test_automations import Receiver, add, call, put_run, records, summary, wait_for
from wisp._protocol import RecordType
from wisp.server.query.filter import parse
from wisp.testing import Server


@pytest.fixture
def rx() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.close()


@pytest.fixture
def srv(db_url: str, tmp_path: Path) -> Iterator[Server]:
    with Server(tmp_path / "srv", db=db_url, key_scope="admin") as s:
        yield s


def history(srv: Server, run: str, seq: int, rows: list[tuple[int, float]]) -> None:
    """History rows ``(step, loss)`` as one record."""
    data = {"rows": [[step, 1000.0 + step, {"loss": v}] for step, v in rows]}
    records(srv, run, seq, RecordType.HISTORY, data)


def test_the_grammar_parses_measures_and_names_bad_ones() -> None:
    """Measures parse to fields with ``measure`` (and the window) in triggers, malformed ones
    are 422s that say what is expected, and runs filters refuse measures and event fields."""
    tree = parse("change(summary.loss, 100 steps) > 0.5", triggers=True)
    assert tree is not None and tree["field"]["measure"] == "change"
    assert tree["field"]["steps"] == 100
    z = parse("zscore(config.lr) <= -3", triggers=True)
    assert z is not None and z["field"]["path"] == ["config", "lr"]
    for trigger_only in ("zscore(summary.a) > 1", "artifact.alias = prod", "alert.level = ERROR"):
        with pytest.raises(Exception, match="automation triggers only"):
            parse(trigger_only)  # a runs filter (the runs list, the local Api, reports)
    for src, says in [
        ("change(summary.loss) > 1", "takes a window"),
        ("change(config.lr, 3) > 1", "takes summary.<key>"),
        ("change(summary.loss, 1.5 steps) > 1", "whole number of steps"),
        ("zscore(state) > 1", "summary.<key> or config.<key>"),
        ('zscore(summary.a) = "x"', "compares with a number"),
    ]:
        with pytest.raises(Exception, match="filter:") as e:
            parse(src, triggers=True)
        assert says in str(e.value)


def test_change_over_a_window_fires_once_for_the_run_that_rose(srv: Server, rx: Receiver) -> None:
    """``change(summary.loss, 10 steps) > 0.5`` stays quiet while the loss creeps up and fires
    once, signed, when it jumps; a flat run never fires; the runs list refuses the measure."""
    auto = add(srv, "change(summary.loss, 10 steps) > 0.5", rx.url)
    put_run(srv, "up")
    put_run(srv, "flat")
    history(srv, "up", 0, [(s, 0.01 * s) for s in range(20)])
    history(srv, "flat", 0, [(s, 1.0) for s in range(40)])
    time.sleep(2.5)
    assert not rx.got
    history(srv, "up", 1, [(s, 1.0 + 0.01 * s) for s in range(20, 30)])
    wait_for(lambda: rx.got)
    history(srv, "up", 2, [(s, 2.0) for s in range(30, 32)])  # still true: no second event
    time.sleep(2.5)
    (event,) = rx.events()
    assert (event["automation"]["id"], event["run"]["id"]) == (auto["id"], "up")
    with pytest.raises(urllib.error.HTTPError) as refused:
        call(srv, "GET", "/projects/p/runs?filter=change(summary.loss%2C%2010%20steps)%20%3E%201")
    assert refused.value.code == 422
    assert "automation triggers only" in str(refused.value.__notes__)


def test_zscore_over_the_projects_runs_fires_for_the_outlier(srv: Server, rx: Receiver) -> None:
    """``zscore(summary.acc) > 1.5`` over five runs fires once, for the one far above the rest."""
    add(srv, "zscore(summary.acc) > 1.5", rx.url)
    for i, acc in enumerate([0.5, 0.51, 0.49, 0.5]):
        put_run(srv, f"r{i}")
        summary(srv, f"r{i}", {"acc": acc}, 0)
    time.sleep(2.5)
    assert not rx.got
    put_run(srv, "best")
    summary(srv, "best", {"acc": 0.9}, 0)
    wait_for(lambda: rx.got)
    time.sleep(2.5)
    (event,) = rx.events()
    assert event["run"]["id"] == "best"


def publish(srv: Server, name: str, n: int, aliases: list[str]) -> dict[str, object]:
    """Publish version content ``n`` of artifact ``name`` (a reference entry: no upload)."""
    manifest = {"version": 1, "entries": {"w.bin": {"ref": f"https://example.com/{n}"}}}
    body = {"type": "model", "manifest": manifest, "aliases": aliases}
    got: dict[str, object] = call(srv, "POST", f"/projects/p/artifacts/{name}/versions", body)
    return got


def test_artifact_new_version_and_alias_moves_fire_once_each(srv: Server, rx: Receiver) -> None:
    """``artifact.event = version and artifact.name = model`` fires once per new version;
    ``artifact.alias = production`` fires when the alias is added and each time it moves,
    not when it is set again to the version it names; both signed, with the artifact in the
    payload; a trigger naming run and artifact fields is refused."""
    new = add(srv, "artifact.event = version and artifact.name = model", rx.url)
    prod = add(srv, "artifact.alias = production", rx.url)
    publish(srv, "model", 0, [])
    publish(srv, "other", 0, [])
    publish(srv, "model", 0, ["production"])  # the same content: no version, alias added
    publish(srv, "model", 1, [])
    alias = "/projects/p/artifacts/model/aliases/production"
    call(srv, "PUT", alias, {"version": "v1"})  # moved
    call(srv, "PUT", alias, {"version": "v1"})  # names it already: no event
    wait_for(lambda: len(rx.got) >= 4)
    time.sleep(2.5)
    events = rx.events()
    got = sorted(
        (e["automation"]["id"], e["artifact"]["version"], e["artifact"]["alias"]) for e in events
    )
    want = [(new["id"], "v0", None), (new["id"], "v1", None)]
    want += [(prod["id"], "v0", "production"), (prod["id"], "v1", "production")]
    assert got == sorted(want)
    assert all(e["event"] == "artifact" and e["run"] is None and e["text"] for e in events)
    assert {h["x-wisp-event"] for h, _ in rx.got} == {"artifact"}
    with pytest.raises(urllib.error.HTTPError) as mixed:
        add(srv, "artifact.alias = production and summary.loss > 1", rx.url)
    assert mixed.value.code == 422


def test_an_artifact_event_detected_before_a_kill_is_delivered_once_after(
    db_url: str, tmp_path: Path, rx: Receiver
) -> None:
    """A process that queued an artifact event but sends nothing (``--no-deliver``) is killed;
    the next process on the database sends it, once."""
    import signal

    s = Server(tmp_path / "srv", db=db_url, key_scope="admin", args=["--no-deliver"]).start()
    auto = add(s, "artifact.alias = production", rx.url)
    publish(s, "model", 0, ["production"])
    path = f"/projects/p/automations/{auto['id']}/deliveries"
    wait_for(lambda: call(s, "GET", path)["deliveries"])
    assert s.proc is not None
    s.proc.send_signal(signal.SIGKILL)
    s.proc.wait()
    s.stop()
    s.args = []
    with s.start():
        wait_for(lambda: rx.got)
        time.sleep(3)
        (event,) = rx.events()
        assert (event["artifact"]["alias"], event["artifact"]["version"]) == ("production", "v0")

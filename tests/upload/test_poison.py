"""The poison suite: one bad input per run, 100 good rows before and after, against real servers.

Every bad input from issue 14 is either refused at the call (a UsageError naming the key or
field and the rule), sanitised (NUL and lone surrogates in string values), left out by the
writer and reported, or set aside by the uploader after the server's 422; in every case each
good point reaches the local file and the server, and the run ends ``finished``.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import wisp
from wisp._protocol import MAX_STRING_LENGTH, RecordType
from wisp._writer import ROW
from wisp.errors import UsageError, WispWarning
from wisp.testing import Server

pytestmark = pytest.mark.timeout(300)


def _nested(depth: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for _ in range(depth):
        out = {"a": out}
    return out


# (name, the bad call, what it must raise) -- refused at the call, nothing recorded
REFUSED: list[tuple[str, Callable[[Any], Any], str]] = [
    ("NUL in a log key", lambda r: r.log({"a\x00b": 1.0}), "NUL"),
    ("lone surrogate key", lambda r: r.log({"\ud800": 1.0}), "lone surrogate"),
    ("string over the cap", lambda r: r.log({"s": "x" * (MAX_STRING_LENGTH + 1)}), "limit"),
    ("10**5000 as a new key", lambda r: r.log({"huge": 10**5000}), "2\\*\\*64"),
    ("step 2**62", lambda r: r.log({"loss": 0.0}, step=2**62), "2\\*\\*62"),
    ("numpy step 2**62", lambda r: r.log({"loss": 0.0}, step=np.int64(2**62)), "2\\*\\*62"),
    ("NUL in a config key", lambda r: r.config.update({"k\x00": 1}), "NUL"),
    ("config 2M string", lambda r: r.config.update({"big": "x" * 2_000_000}), "limit"),
    ("config nested 100", lambda r: r.config.update({"deep": _nested(100)}), "nested deeper"),
    ("config 10**5000", lambda r: r.config.update({"n": [10**5000]}), "out of range"),
    ("NUL in a summary key", lambda r: r.summary.update({"k\x00": 1}), "NUL"),
    ("NUL in a metric name", lambda r: r.define_metric("m\x00"), "NUL"),
]

# (name, the call, {where: expected}) -- accepted with NUL / lone surrogates replaced
SANITISED: list[tuple[str, Callable[[Any], Any], dict[str, Any]]] = [
    ("NUL in a string", lambda r: r.log({"text": "a\x00b"}), {"summary.text": "a\ufffdb"}),
    ("lone surrogate string", lambda r: r.log({"text": "\udcff"}), {"summary.text": "\ufffd"}),
    ("NUL in a list item", lambda r: r.log({"lst": ["x\x00"]}), {"summary.lst": ["x\ufffd"]}),
    ("NUL in a config value", lambda r: r.config.update({"c": "v\x00"}), {"config.c": "v\ufffd"}),
    ("surrogate in config", lambda r: r.config.update({"c": ["\ud800"]}), {"config.c": ["\ufffd"]}),
    (
        "NUL summary value",
        lambda r: r.summary.update({"note": "n\x00"}),
        {"summary.note": "n\ufffd"},
    ),
    # an alert's title and text: sanitised, and the server stores the record (no set-aside)
    ("NUL in alert text", lambda r: wisp.alert(title="t\x00", text="x\udcff"), {}),
]


def _settings(server: Server, tmp_path: Path) -> dict[str, Any]:
    return {
        "server_url": server.url,
        "api_key": server.key,
        "dir": str(tmp_path),
        "flush_interval": 0.05,
        "git": False,
    }


def _good(run: Any, start: int) -> None:
    for i in range(start, start + 100):
        run.log({"loss": i * 0.5})


def _check_good_points(server: Server, run: Any) -> None:
    local = [r["loss"] for r in wisp.open_run(run.dir).history() if "loss" in r]
    assert local == [i * 0.5 for i in range(200)]
    assert [v for _, v in server.points(run.id, "loss")] == [i * 0.5 for i in range(200)]
    doc = server.get(f"/runs/{run.id}")
    assert doc["state"] == "finished", doc["state"]
    assert doc.get("rejected", 0) == 0


def test_inputs_refused_at_the_call_cost_nothing_else(
    server: Server, tmp_path: Path, no_run: None
) -> None:
    """Each refused input raises a UsageError naming the rule; the 200 good points around it all arrive."""
    for name, call, rule in REFUSED:
        run = wisp.init(project="poison", name=name[:40], settings=_settings(server, tmp_path))
        _good(run, 0)
        with pytest.raises(UsageError, match=rule):
            call(run)
        _good(run, 100)
        run.finish()
        _check_good_points(server, run)
        assert not (Path(run.dir) / "rejected.jsonl").exists(), name


def test_sanitised_inputs_arrive_with_nul_and_surrogates_replaced(
    server: Server, tmp_path: Path, no_run: None
) -> None:
    """NUL and lone surrogates in string values become U+FFFD, locally and on the server alike."""
    for name, call, expected in SANITISED:
        run = wisp.init(project="poison", name=name[:40], settings=_settings(server, tmp_path))
        _good(run, 0)
        call(run)
        _good(run, 100)
        run.finish()
        _check_good_points(server, run)
        doc = server.get(f"/runs/{run.id}")
        local = wisp.open_run(run.dir)
        for where, value in expected.items():
            part, key = where.split(".")
            assert doc[part][key] == value, (name, doc[part])
            assert getattr(local, part)[key] == value, name


def test_a_value_the_writer_cannot_encode_is_left_out_and_reported(
    server: Server, tmp_path: Path, no_run: None
) -> None:
    """10**5000 under a key already logged (log()'s fast path) is left out alone: counted, warned at finish()."""
    run = wisp.init(project="poison", settings=_settings(server, tmp_path))
    for i in range(100):
        run.log({"loss": i * 0.5, "n": i})
    run.log({"n": 10**5000})  # a known key: the fast path does not look at ints
    for i in range(100, 200):
        run.log({"loss": i * 0.5})
    with pytest.warns(WispWarning, match="1 logged value"):
        run.finish()
    _check_good_points(server, run)
    assert run.failures == {"value": 1}
    warns = wisp.open_run(run.dir).records["warning"]
    assert len(warns) == 1 and "'n' at step 100" in warns[0]["where"]


def _inject(run: Any, rtype: int, payload: Any) -> None:
    """Append a record as an SDK without today's checks would have (the writer's own API)."""
    run.on_writer(lambda: run.writer.append(rtype, payload))


@pytest.mark.parametrize(
    ("rtype", "payload"),
    [
        (RecordType.CONFIG, {"config": {"bad": "x\x00"}}),
        (RecordType.CONSOLE, {"lines": [[1.0, "stdout", "line\x00"]]}),
        (RecordType.ALERT, {"title": "t\x00", "text": "x", "level": "INFO"}),
        (RecordType.SUMMARY, {"summary": {"k": "v" * (MAX_STRING_LENGTH + 1)}}),
    ],
    ids=["config", "console", "alert", "summary"],
)
def test_a_record_the_server_refuses_is_set_aside_and_the_rest_uploaded(
    server: Server, tmp_path: Path, no_run: None, rtype: int, payload: Any
) -> None:
    """A 422 for one record: it lands in rejected.jsonl with the reason, every other point arrives, the run page counts it."""
    run = wisp.init(project="poison", settings=_settings(server, tmp_path))
    _good(run, 0)
    _inject(run, rtype, payload)
    _good(run, 100)
    with pytest.warns(WispWarning, match="refused 1 record"):
        run.finish()
    local = [r["loss"] for r in wisp.open_run(run.dir).history() if "loss" in r]
    assert local == [i * 0.5 for i in range(200)]
    assert [v for _, v in server.points(run.id, "loss")] == [i * 0.5 for i in range(200)]
    doc = server.get(f"/runs/{run.id}")
    assert doc["state"] == "finished" and doc["rejected"] == 1
    (entry,) = [
        json.loads(ln) for ln in (Path(run.dir) / "rejected.jsonl").read_text().splitlines()
    ]
    assert entry["type"] == rtype and entry["status"] == 422
    assert "NUL" in entry["reason"] or "limit" in entry["reason"]
    assert entry["data"] == json.loads(json.dumps(payload))

    # wisp sync skips the run (fully synced) and --retry-rejected keeps what is still refused
    (res,) = wisp.sync([run.dir], server_url=server.url, api_key=server.key, retry_rejected=True)
    assert res.rejected == 1 and res.error is None
    assert server.get(f"/runs/{run.id}")["rejected"] == 1

    # after an "upgrade" (here: the set-aside record fixed by hand) a retry delivers it
    fixed = {**entry, "data": json.loads(json.dumps(payload).replace("\\u0000", "."))}
    if rtype == RecordType.SUMMARY:
        fixed["data"] = {"summary": {"k": "short", "loss": 99.5}}
    (Path(run.dir) / "rejected.jsonl").write_text(json.dumps(fixed) + "\n")
    (res,) = wisp.sync([run.dir], server_url=server.url, api_key=server.key, retry_rejected=True)
    assert res.rejected == 0 and not (Path(run.dir) / "rejected.jsonl").exists()
    assert server.get(f"/runs/{run.id}")["rejected"] == 0


def test_sync_sets_aside_a_refused_history_record_of_an_offline_run(
    server: Server, tmp_path: Path, no_run: None
) -> None:
    """An offline run file with a history batch at step 2**62 uploads everything else; the batch is set aside."""
    run = wisp.init(project="poison", mode="offline", settings={"dir": str(tmp_path)})
    _good(run, 0)

    def bad_rows() -> None:
        # what an SDK without the step check wrote: a valid int64 step the server refuses
        run.writer.put((ROW, 2**62, 1.0, {"loss": -1.0}))

    bad_rows()
    _good(run, 100)
    run.finish()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (res,) = wisp.sync([run.dir], server_url=server.url, api_key=server.key)
    assert res.done and res.rejected == 1
    assert [s for s, _ in server.points(run.id, "loss")] == list(range(200))
    doc = server.get(f"/runs/{run.id}")
    assert doc["state"] == "finished" and doc["rejected"] == 1
    (entry,) = [
        json.loads(ln) for ln in (Path(run.dir) / "rejected.jsonl").read_text().splitlines()
    ]
    assert entry["type"] == RecordType.HISTORY and "2**62" in entry["reason"]
    assert entry["data"]["rows"][0][0] == 2**62 and len(entry["data"]["rows"]) == 1


@pytest.mark.parametrize("key", ["wrong-key", "read"], ids=["401", "403"])
def test_init_against_a_server_that_refuses_the_run_raises_at_once(
    server: Server, tmp_path: Path, no_run: None, key: str
) -> None:
    """A refused create (bad key, read-only key) makes init() raise at once (not after init_timeout) with the server's reason, leaving no run behind."""
    import time

    from wisp.errors import FatalApiError

    api_key = server.create_key(scope="read") if key == "read" else key
    settings = {**_settings(server, tmp_path), "api_key": api_key, "init_timeout": 30}
    t0 = time.monotonic()
    with pytest.raises(FatalApiError, match=r"refused run .*HTTP 40[13]: .*check the API key") as e:
        wisp.init(project="poison", settings=settings)
    assert time.monotonic() - t0 < 10  # at once, not after retries for init_timeout (30 s)
    assert e.value.status == (401 if key == "wrong-key" else 403)
    assert wisp.run is None
    assert list((tmp_path / "wisp").iterdir()) == []  # the run never started: nothing to sync


def test_forked_childrens_segments_reach_the_server(
    server: Server, tmp_path: Path, no_run: None
) -> None:
    """Values logged by 5 forked children (each leaving by os._exit after wisp.flush()) are uploaded with the run."""
    import os

    run = wisp.init(project="forks", settings=_settings(server, tmp_path))
    _good(run, 0)
    pids = []
    for c in range(5):
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child
            wisp.log({f"child{c}": float(c)})
            wisp.flush()
            os._exit(0)
        pids.append(pid)
    for pid in pids:
        assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0
    _good(run, 100)
    run.finish()
    _check_good_points(server, run)
    for c in range(5):
        assert [v for _, v in server.points(run.id, f"child{c}")] == [float(c)]

"""HTTP API v1 behaviour, on SQLite and PostgreSQL (see conftest)."""

from __future__ import annotations

import gzip
import hashlib
import json
import math
from typing import Any

from tests.server.conftest import Api


def _run(api: Any, run_id: str = "r1", **body: Any) -> Any:
    return api.put(f"/api/v1/runs/{run_id}", json={"project": "p", **body})


def _post(api: Any, records: list[dict[str, Any]], first: int = 0, run: str = "r1") -> Any:
    return api.post(
        f"/api/v1/runs/{run}/records",
        json={"writer_id": "w1", "first_seq": first, "records": records},
    )


def _rows(n: int, start: int = 0) -> dict[str, Any]:
    return {
        "type": 3,
        "data": {"rows": [[i, 100.0 + i, {"loss": i * 0.5}] for i in range(start, n)]},
    }


def test_put_run_is_idempotent_upsert(api: Api) -> None:
    """PUT creates a run, a repeat changes nothing and a later PUT updates given fields only."""
    a = _run(api, name="first", tags=["x"], config={"lr": 0.1})
    assert a.status_code == 200
    assert _run(api, name="first", tags=["x"], config={"lr": 0.1}).json()["run"]["name"] == "first"
    b = api.put("/api/v1/runs/r1", json={"notes": "hello"}).json()["run"]
    assert (b["name"], b["notes"], b["config"], b["tags"]) == ("first", "hello", {"lr": 0.1}, ["x"])


def test_batch_is_applied_once_and_acks(api: Api) -> None:
    """A retried batch is acknowledged without being applied twice; a gap answers 409."""
    _run(api)
    assert _post(api, [_rows(10)]).json() == {"acked_seq": 0}
    assert _post(api, [_rows(10)]).json() == {"acked_seq": 0}
    assert _post(api, [_rows(10), _rows(20, 10)]).json() == {"acked_seq": 1}
    gap = _post(api, [_rows(30, 20)], first=5)
    assert gap.status_code == 409 and gap.json()["acked_seq"] == 1
    assert api.get("/api/v1/runs/r1/writers/w1").json() == {"acked_seq": 1}
    assert api.get("/api/v1/runs/r1/writers/other").json() == {"acked_seq": -1}
    s = api.get("/api/v1/series", params={"runs": "r1", "keys": "loss"}).json()["series"][0]
    assert s["count"] == 20 and s["raw"] is True and s["y"] == [i * 0.5 for i in range(20)]


def test_gzip_body_is_accepted(api: Api) -> None:
    """A gzip-encoded record batch is decoded and applied."""
    _run(api)
    body = json.dumps({"writer_id": "w", "first_seq": 0, "records": [_rows(5)]}).encode()
    r = api.post(
        "/api/v1/runs/r1/records",
        content=gzip.compress(body),
        headers={"Content-Encoding": "gzip", "Content-Type": "application/json"},
    )
    assert r.status_code == 200 and r.json() == {"acked_seq": 0}


def test_body_limit_answers_413(api: Api) -> None:
    """Bodies over the limit, plain or after gzip decoding, are refused with 413."""
    _run(api)
    big = b'{"pad": "' + b"a" * (3 * 1024 * 1024) + b'"}'
    assert api.post("/api/v1/runs/r1/records", content=big).status_code == 413
    bomb = gzip.compress(big)
    r = api.post("/api/v1/runs/r1/records", content=bomb, headers={"Content-Encoding": "gzip"})
    assert r.status_code == 413 and r.json()["error"]["code"] == "too_large"


def test_validation_names_the_field(api: Api) -> None:
    """Malformed input gets 4xx with the offending field, never a 500."""
    _run(api)
    bad = [
        ({"writer_id": "w", "first_seq": -1, "records": []}, "first_seq"),
        ({"writer_id": "w w", "first_seq": 0, "records": []}, "writer_id"),
        (
            {"writer_id": "w", "first_seq": 0, "records": [{"type": 3, "data": {"rows": [[1]]}}]},
            "records[0].data.rows[0]",
        ),
        (
            {"writer_id": "w", "first_seq": 0, "records": [{"type": "x", "data": {}}]},
            "records[0].type",
        ),
        (
            {
                "writer_id": "w",
                "first_seq": 0,
                "records": [{"type": 3, "data": {"rows": [[-1, 0.0, {}]]}}],
            },
            "records[0].data.rows[0][0]",
        ),
        (
            {
                "writer_id": "w",
                "first_seq": 0,
                "records": [{"type": 2, "data": {"config": {"a": "\u0000"}}}],
            },
            "records[0].data.config.a",
        ),
    ]
    for body, field in bad:
        r = api.post("/api/v1/runs/r1/records", json=body)
        assert r.status_code == 422, (body, r.text)
        assert r.json()["error"]["field"] == field
    assert api.post("/api/v1/runs/r1/records", content=b"{nope").status_code == 400
    assert api.post("/api/v1/runs/r1/records", content=b"[" * 100000).status_code == 400
    assert api.put("/api/v1/runs/r1", json={"bogus": 1}).json()["error"]["field"] == "bogus"
    assert api.put("/api/v1/runs/bad%20id", json={"project": "p"}).status_code == 422
    assert (
        api.get("/api/v1/series", params={"runs": "r1", "keys": "a", "buckets": "0"}).status_code
        == 422
    )


def test_unknown_record_types_are_stored_not_fatal(api: Api) -> None:
    """Record types the server does not interpret are acknowledged and kept."""
    _run(api)
    r = _post(api, [{"type": 200, "data": {"x": 1}}, {"type": 8, "data": {"cpu": 3.5}}])
    assert r.status_code == 200 and r.json()["acked_seq"] == 1


def test_records_for_unknown_run_need_a_run_record(api: Api) -> None:
    """Records for a missing run are 404 unless the batch opens with a run record."""
    assert _post(api, [_rows(3)], run="ghost").status_code == 404
    run_rec = {"type": 1, "data": {"run_id": "ghost", "project": "q", "host": "h", "pid": 1}}
    assert _post(api, [run_rec, _rows(3)], run="ghost").json() == {"acked_seq": 1}
    run = api.get("/api/v1/runs/ghost").json()
    assert run["project"] == "q" and run["metadata"]["host"] == "h"


def test_nonfinite_values_round_trip(api: Api) -> None:
    """NaN and +/-inf are stored faithfully: null plus a count in series, tokens in export."""
    _run(api)
    vals = [1.0, math.nan, math.inf, -math.inf, 2.0]
    rows = {"type": 3, "data": {"rows": [[i, 10.0 + i, {"v": v}] for i, v in enumerate(vals)]}}
    body = json.dumps({"writer_id": "w", "first_seq": 0, "records": [rows]})
    assert api.post("/api/v1/runs/r1/records", content=body).status_code == 200
    s = api.get("/api/v1/series", params={"runs": "r1", "keys": "v"}).json()["series"][0]
    assert s["y"] == [1.0, None, None, None, 2.0] and s["nonfinite"] == 3
    lines = api.get("/api/v1/runs/r1/history", params={"format": "jsonl"}).text.splitlines()
    got = [json.loads(ln)["v"] for ln in lines]
    assert got[0] == 1.0 and math.isnan(got[1]) and got[2:] == [math.inf, -math.inf, 2.0]
    csv_text = api.get("/api/v1/runs/r1/history", params={"format": "csv"}).text
    assert csv_text.splitlines()[1:5] == ["0,10.0,1.0", "1,11.0,nan", "2,12.0,inf", "3,13.0,-inf"]


def test_run_view_summary_metrics_console_media(api: Api) -> None:
    """One run shows config, summary, metric keys, metric specs, console lines and media."""
    _run(api, config={"lr": 0.1})
    img = {"_type": "image", "sha256": "ab" * 32, "width": 2, "height": 2}
    recs = [
        {"type": 3, "data": {"rows": [[0, 1.0, {"loss": 1.0, "img": img, "tag": "x"}]]}},
        {"type": 4, "data": {"summary": {"loss": 1.0}}},
        {
            "type": 5,
            "data": {"name": "loss", "step_metric": None, "summary": "min", "hidden": False},
        },
        {"type": 7, "data": {"lines": [{"ts": 1.0, "stream": "stderr", "text": "warn"}]}},
        {"type": 6, "data": {"state": "failed", "exit_code": 3, "finished_at": 2e9}},
    ]
    assert _post(api, recs).status_code == 200
    run = api.get("/api/v1/runs/r1").json()
    assert run["state"] == "failed" and run["exit_code"] == 3 and run["summary"] == {"loss": 1.0}
    assert run["metric_keys"] == ["img", "loss"] and run["metrics"][0]["summary"] == "min"
    assert run["media_keys"] == {"img": "image"}
    media = api.get("/api/v1/runs/r1/media", params={"key": "img"}).json()["media"]
    assert media == [{**img, "key": "img", "step": 0, "type": "image"}]
    lines = api.get("/api/v1/runs/r1/console").json()["lines"]
    assert [(x["stream"], x["text"]) for x in lines] == [("stderr", "warn")]
    assert api.get("/api/v1/runs/r1/console", params={"after": lines[0]["id"]}).json() == {
        "lines": []
    }


def test_heartbeat_timeout_reports_crashed(app: Any, api: Api, store: Any) -> None:
    """A running run with no heartbeat for the timeout is reported as crashed."""
    _run(api)
    assert api.post("/api/v1/runs/r1/heartbeat").status_code == 200
    assert api.get("/api/v1/runs/r1").json()["state"] == "running"
    base = store.clock
    store.clock = lambda: base() + store.heartbeat_timeout + 5
    assert api.get("/api/v1/runs/r1").json()["state"] == "crashed"
    listed = api.get("/api/v1/projects/p/runs", params={"filter": "state = crashed"}).json()
    assert listed["total"] == 1
    assert api.post("/api/v1/runs/r1/heartbeat").status_code == 200
    assert api.get("/api/v1/runs/r1").json()["state"] == "running"
    assert api.post("/api/v1/runs/nope/heartbeat").status_code == 404


def test_media_upload_by_hash(api: Api) -> None:
    """Media is stored by verified sha256, HEAD tells if it exists, GET returns the bytes."""
    data = b"\x89PNG fake image bytes"
    sha = hashlib.sha256(data).hexdigest()
    assert api.head(f"/api/v1/media/{sha}").status_code == 404
    assert api.put(f"/api/v1/media/{sha}.png", content=b"other").status_code == 422
    assert api.put(f"/api/v1/media/{sha}.png", content=data).status_code == 201
    assert api.put(f"/api/v1/media/{sha}.png", content=data).status_code == 200
    assert api.head(f"/api/v1/media/{sha}").status_code == 200
    got = api.get(f"/api/v1/media/{sha}")
    assert got.content == data and got.headers["content-type"] == "image/png"
    for bad in ("../../etc/passwd", "%2e%2e%2fsecret", "AB" * 32, "ab" * 31):
        assert api.get(f"/api/v1/media/{bad}").status_code in (404, 422)
    big = b"x" * (1024 * 1024 + 1)
    assert (
        api.put(f"/api/v1/media/{hashlib.sha256(big).hexdigest()}", content=big).status_code == 413
    )


def test_auth_scopes(app: Any, keys: dict[str, str]) -> None:
    """Writes need a write key, reads need any key, and bad or missing keys get 401."""
    read, write = Api(app, keys["read"]), Api(app, keys["write"])
    anon = Api(app, "")
    assert anon.get("/api/v1/projects").status_code == 401
    assert Api(app, "wisp_w_bogus").get("/api/v1/projects").status_code == 401
    assert read.get("/api/v1/projects").status_code == 200
    assert read.put("/api/v1/runs/r1", json={"project": "p"}).status_code == 403
    assert write.put("/api/v1/runs/r1", json={"project": "p"}).status_code == 200
    assert anon.get("/api/openapi.json").status_code == 200


def test_revoked_key_is_refused(app: Any, store: Any) -> None:
    """A revoked key stops working at once."""
    kid, secret = store.create_key("read")
    client = Api(app, secret)
    assert client.get("/api/v1/projects").status_code == 200
    assert store.revoke_key(kid) is True
    assert client.get("/api/v1/projects").status_code == 401


def test_no_auth_allows_reads_only(settings: Any, store: Any) -> None:
    """With no_auth, reads need no key but writes still do."""
    from wisp.server import create_app

    settings.no_auth = True
    anon = Api(create_app(settings, store=store), "")
    assert anon.get("/api/v1/projects").status_code == 200
    assert anon.put("/api/v1/runs/r1", json={"project": "p"}).status_code == 401


def test_projects_and_history_keys(api: Api) -> None:
    """Projects list counts runs; history export can be limited to some keys."""
    _run(api, "a")
    _run(api, "b")
    api.put("/api/v1/runs/c", json={"project": "other"})
    rows = {"type": 3, "data": {"rows": [[0, 1.0, {"x": 1, "y": 2, "s": "t"}]]}}
    _post(api, [rows], run="a")
    projects = {p["name"]: p["run_count"] for p in api.get("/api/v1/projects").json()["projects"]}
    assert projects == {"p": 2, "other": 1}
    text = api.get("/api/v1/runs/a/history", params={"format": "csv", "keys": "y,s"}).text
    assert text.splitlines() == ["_step,_timestamp,s,y", "0,1.0,t,2.0"]
    assert api.get("/api/v1/runs/zz/history").status_code == 404


def test_run_file_console_lines_are_accepted(api: Api) -> None:
    """Console records in the run file's [ts, stream, text] form are stored as lines."""
    _run(api)
    rec = {"type": 7, "data": {"lines": [[1.0, "stdout", "hello"], [2.0, "stderr", "oops"]]}}
    assert _post(api, [rec]).status_code == 200
    lines = api.get("/api/v1/runs/r1/console").json()["lines"]
    assert [(x["ts"], x["stream"], x["text"]) for x in lines] == [
        (1.0, "stdout", "hello"),
        (2.0, "stderr", "oops"),
    ]
    bad = {"type": 7, "data": {"lines": [[1.0, "stdout"]]}}
    r = _post(api, [bad], first=1)
    assert r.status_code == 422 and r.json()["error"]["field"] == "records[0].data.lines[0]"


def test_system_samples_become_time_series(api: Api) -> None:
    """System samples are stored as points of their system/* keys, charted by time."""
    _run(api)
    recs = [
        {"type": 8, "data": {"ts": 1000.0 + i, "values": {"system/cpu_percent": 10.0 * i}}}
        for i in range(3)
    ]
    assert _post(api, recs).status_code == 200
    assert "system/cpu_percent" in api.get("/api/v1/runs/r1").json()["metric_keys"]
    params = {"runs": "r1", "keys": "system/cpu_percent", "x": "time"}
    s = api.get("/api/v1/series", params=params).json()["series"][0]
    assert (s["x"], s["y"]) == ([1000.0, 1001.0, 1002.0], [0.0, 10.0, 20.0])
    bad = {"type": 8, "data": {"ts": "soon", "values": {"system/cpu_percent": 1.0}}}
    r = _post(api, [bad], first=3)
    assert r.status_code == 422 and r.json()["error"]["field"] == "records[0].data.ts"

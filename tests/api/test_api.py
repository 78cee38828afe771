"""wisp.Api over real servers (SQLite, PostgreSQL) and over the SDK's local folder."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

import wisp
from tests.api.conftest import CONFIGS, TAGS, World
from wisp.errors import FatalApiError, NotFoundError, UsageError

_OPEN: list[Any] = []


@pytest.fixture(autouse=True)
def _close_apis() -> Any:
    """Close every Api a test opened (no socket left to a ResourceWarning)."""
    yield
    while _OPEN:
        _OPEN.pop().close()


def _api(*args: Any, **kw: Any) -> Any:
    api = wisp.Api(*args, **kw)
    _OPEN.append(api)
    return api


def _apis(world: World) -> list[Any]:
    return [_api(world.server.url, world.server.key), _api(dir=world.local_dir)]


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a):
        return math.isnan(b)
    return bool(a == b)


def _rows_equal(got: list[dict[str, Any]], want: dict[int, dict[str, float]]) -> None:
    assert [r["_step"] for r in got] == sorted(want)
    for row in got:
        exp = want[row["_step"]]
        assert set(row) - {"_step"} == set(exp), row
        for k, v in exp.items():
            assert _same(row[k], v), (row["_step"], k, row[k], v)


def test_runs_carry_what_was_logged(world: World) -> None:
    """Both backends list the project's runs with the logged config (keys in their order),
    tags, notes and summary."""
    for api in _apis(world):
        runs = api.runs("sweep", order="+created_at")
        assert len(runs) == 4
        got = list(runs)
        assert [r.id for r in got] == world.ids
        for i, r in enumerate(got):
            assert r.config == CONFIGS[i]
            assert list(r.config) == list(CONFIGS[i])  # in the order logged (JSONB sorts keys)
            assert r.tags == TAGS[i]
            assert r.notes == f"note {i}"
            assert r.name == f"run-{i}"
            assert r.state == "finished"
            assert r.summary["best"] == float(i)
            assert r.created_at > 0
        assert {p.name: p.run_count for p in api.projects()} == {"sweep": 4, "other": 1}
        by_lr = [r.config["lr"] for r in api.runs("sweep", order="config.lr")]
        assert by_lr == sorted(c["lr"] for c in CONFIGS)
        by_best = [r.id for r in api.runs("sweep", order="-summary_metrics.best", per_page=3)]
        assert by_best == world.ids[::-1]
        one = api.run(f"sweep/{world.ids[2]}")
        assert one.id == world.ids[2] and one.config == CONFIGS[2]


def test_scan_history_returns_every_point_exactly(world: World) -> None:
    """scan_history streams every logged point, NaN and ±inf included, with step bounds
    (max_step exclusive, as in wandb)."""
    for api in _apis(world):
        for rid in world.ids:
            run = api.run(rid)
            _rows_equal(list(run.scan_history(page_size=17)), world.logged[rid])
            part = list(run.scan_history(keys=["loss"], min_step=5, max_step=9))
            want = {s: {"loss": v["loss"]} for s, v in world.logged[rid].items() if 5 <= s < 9}
            _rows_equal(part, want)


def test_histories_one_long_table(world: World) -> None:
    """runs.histories() is one table (run_id, step, keys) holding every point of every run."""
    for api in _apis(world):
        table = api.runs("sweep").histories(format="arrow")
        assert table.column_names[:2] == ["run_id", "step"]
        assert sorted(table.column_names[2:]) == ["acc", "loss", "sparse"]
        rows = table.to_pylist()
        assert len(rows) == 4 * 300
        for rid in world.ids:
            mine = [
                {
                    "_step": r["step"],
                    **{k: v for k, v in r.items() if k not in ("run_id", "step") and v is not None},
                }
                for r in rows
                if r["run_id"] == rid
            ]
            _rows_equal(sorted(mine, key=lambda r: r["_step"]), world.logged[rid])
        df = api.runs("sweep", filters="config.lr < 0.05").histories(keys=["loss"])
        assert list(df.columns) == ["run_id", "step", "loss"]
        assert len(df) == 3 * 300 and set(df["run_id"]) == set(world.ids[1:])


def test_history_downsamples_and_keeps_extremes(world: World) -> None:
    """history(samples=n) has at most n rows per key and keeps each key's min and max."""
    for api in _apis(world):
        rid = world.ids[1]
        df = api.run(rid).history(keys=["acc"], samples=20)
        assert 0 < len(df) <= 20
        finite = [v["acc"] for v in world.logged[rid].values() if math.isfinite(v["acc"])]
        assert df["acc:max"].max() == max(finite)
        assert df["acc:min"].min() == min(finite)
        exact = api.run(rid).history(keys=["loss"], samples=1000, pandas=False)
        assert len(exact) == 300
        assert math.isnan(exact[5]["loss"]) and exact[6]["loss"] == math.inf


FILTERS = [
    ("config.lr < 0.05", {"config.lr": {"$lt": 0.05}}),
    (
        'config.opt = "adam" and config.layers >= 4',
        {"config.opt": "adam", "config.layers": {"$gte": 4}},
    ),
    ('tags contains "a"', {"tags": "a"}),
    ('tags contains "a" or tags contains "b"', {"tags": {"$in": ["a", "b"]}}),
    ("not config.flag exists", {"config.flag": {"$exists": False}}),
    ("config.flag = true", {"config.flag": True}),
    ("config.nested.depth > 2", {"config.nested.depth": {"$gt": 2}}),
    ('config.opt != "sgd"', {"config.opt": {"$ne": "sgd"}}),
    (
        "summary.best >= 2 and state = finished",
        {"$and": [{"summary.best": {"$gte": 2}}, {"state": "finished"}]},
    ),
    (
        'name = "run-0" or config.lr = 0.001',
        {"$or": [{"display_name": "run-0"}, {"config.lr": 0.001}]},
    ),
    ('not (config.opt contains "sgd")', {"$nor": [{"config.opt": {"$contains": "sgd"}}]}),
    ("config.lr < 0.05 and config.lr > 0.0005", {"config.lr": {"$lt": 0.05, "$gt": 0.0005}}),
]


@pytest.mark.parametrize(("text", "doc"), FILTERS, ids=[f[0] for f in FILTERS])
def test_filters_agree_in_both_syntaxes_and_backends(
    world: World, text: str, doc: dict[str, Any]
) -> None:
    """A filter selects the same runs as text or as a dict, on the server and locally."""
    server, local = _apis(world)
    picked = [
        sorted(r.id for r in api.runs("sweep", filters=f))
        for api in (server, local)
        for f in (text, doc)
    ]
    assert picked[0] == picked[1] == picked[2] == picked[3], picked
    assert 0 < len(picked[0]) < 4  # each filter is selective


def test_unknown_names_give_clear_errors(world: World) -> None:
    """An unknown run, project, metric or file raises NotFoundError naming it."""
    for api in _apis(world):
        with pytest.raises(NotFoundError, match="nosuchrun"):
            api.run("sweep/nosuchrun")
        with pytest.raises(NotFoundError, match="nosuchproject"):
            len(api.runs("nosuchproject"))
        run = api.run(world.ids[0])
        with pytest.raises(NotFoundError, match="nosuchkey"):
            list(run.scan_history(keys=["loss", "nosuchkey"]))
        with pytest.raises(NotFoundError, match="nosuchkey"):
            run.history(keys="nosuchkey")
        with pytest.raises(NotFoundError, match="nosuchfile"):
            run.file("nosuchfile")
        with pytest.raises(UsageError, match="unknown field"):
            len(api.runs("sweep", filters="bogus > 1"))


def test_edits_are_saved_and_seen_by_the_dashboard_endpoints(world: World, tmp_path: Any) -> None:
    """name, tags, notes, group, job type, config and summary edits save; the dashboard's
    endpoints and filters see them."""
    srv = world.server
    run = wisp.init(
        project="edits",
        dir=str(tmp_path),
        settings={"server_url": srv.url, "api_key": srv.key, "system_metrics": False},
    )
    run.log({"x": 1.0})
    run.summary["acc"] = 0.5
    run.finish()
    api = _api(srv.url, srv.key)
    r = api.run(f"edits/{run.id}")
    r.name = "renamed"
    r.tags.append("golden")
    r.notes = "best so far"
    r.summary["acc"] = 0.75
    r.summary["extra"] = math.inf
    r.config["lr"] = 0.5
    r.group, r.job_type = "g1", "eval"
    r.update()
    doc = srv.get(f"/runs/{run.id}")
    assert doc["name"] == "renamed" and doc["tags"] == ["golden"] and doc["notes"] == "best so far"
    assert doc["config"] == {"lr": 0.5} and (doc["group"], doc["job_type"]) == ("g1", "eval")
    assert doc["summary"]["acc"] == 0.75 and doc["summary"]["extra"] == "Infinity"
    listed = srv.get(
        "/projects/edits/runs?filter=" + quote('tags contains "golden" and summary.acc > 0.7')
    )
    assert [x["id"] for x in listed["runs"]] == [run.id]
    assert api.run(run.id).name == "renamed"
    api.run(run.id).delete()
    with pytest.raises(NotFoundError):
        api.run(run.id)
    assert srv.get("/projects/edits/runs")["total"] == 0


def test_read_key_can_read_but_not_edit(world: World) -> None:
    """With a read key every read works and every edit is refused with 403."""
    srv = world.server
    api = _api(srv.url, srv.create_key("read", "reader"))
    run = api.run(world.ids[0])
    assert len(list(run.scan_history(keys=["loss"]))) == 300
    run.notes = "nope"
    with pytest.raises(FatalApiError, match="403") as err:
        run.update()
    assert err.value.status == 403
    with pytest.raises(FatalApiError, match="403"):
        run.delete()
    assert _api(srv.url, srv.key).run(world.ids[0]).notes == "note 0"


def test_files_list_and_download(world: World, tmp_path: Any) -> None:
    """A wisp.save() file is listed by both backends and downloads byte for byte from each
    (the uploader sends saved files' bytes with the run)."""
    server, local = _apis(world)
    for api in (server, local):
        run = api.run(world.ids[0])
        assert [f.name for f in run.files()] == ["notes.txt"]
        assert api.run(world.ids[1]).files() == []
    path = local.run(world.ids[0]).file("notes.txt").download(root=str(tmp_path))
    assert Path(path).read_bytes() == b"hello \x00 world"
    with pytest.raises(UsageError, match="exists"):
        local.run(world.ids[0]).file("notes.txt").download(root=str(tmp_path))
    path = server.run(world.ids[0]).file("notes.txt").download(root=str(tmp_path / "s"))
    assert Path(path).read_bytes() == b"hello \x00 world"


def test_local_folder_saves_config_and_summary_and_refuses_the_rest(
    world: World, tmp_path: Any
) -> None:
    """Over a local folder config and summary edits are appended to the run file (open_run
    reads them, the run stays finished and fully readable); a notes edit is a UsageError
    that says to edit it on a server, and writes nothing."""
    run = wisp.init(project="local-edits", dir=str(tmp_path), settings={"system_metrics": False})
    run.log({"x": 1.0})
    run.finish()
    api = _api(dir=tmp_path)
    r = api.run(f"local-edits/{run.id}")
    r.config["lr"] = 0.25
    r.summary.update({"best": 3.0})
    r.update()
    data = wisp.open_run(run.dir)
    assert data.config == {"lr": 0.25} and data.summary["best"] == 3.0 and data.summary["x"] == 1.0
    assert data.state == "finished" and data.ignored_bytes == 0
    size = Path(data.path).stat().st_size
    r.notes = "x"
    with pytest.raises(UsageError, match="server"):
        r.update()
    assert Path(data.path).stat().st_size == size
    world_run = _api(dir=world.local_dir).run(world.ids[0])
    world_run.tags.append("t")
    with pytest.raises(UsageError, match="tags"):
        world_run.update()

"""wandb's public-API scripts from its docs run unchanged (``import wandb`` is wisp's
compatibility module) against a local folder and a real server holding the same runs, and
both give the same, expected values."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import wisp
from tests.integrations.integrations_support import WANDB_COMPAT_PATH, run_result

SCRIPTS = Path(__file__).resolve().parent / "wandb_scripts"


class Docs:
    """A server and a local folder with the same runs (logged online into the folder)."""

    def __init__(self, base: Path, server: Any) -> None:
        self.base = base
        self.server = server
        self.local = base / "local"
        self.cache = base / "cache"
        self.ids: dict[str, str] = {}


def _fill(docs: Docs) -> None:
    srv = docs.server
    settings = {"server_url": srv.url, "api_key": srv.key, "console": "off", "git": False}

    def start(name: str, config: dict[str, Any], system: bool = False) -> Any:
        extra = {"system_metrics": True, "system_interval": 0.05} if system else {}
        run = wisp.init(
            project="docs",
            name=name,
            config=config,
            dir=str(docs.local),
            settings={**settings, "system_metrics": False, **extra},
        )
        docs.ids[name] = run.id
        return run

    run = start("v1-alpha", {"lr": 0.01, "opt": "adam"}, system=True)
    run.define_metric("loss", summary="min,max")
    for step in range(10):
        row = {"loss": 1.0 / (step + 1)}
        if step % 2 == 0:
            row["acc"] = step / 10
        run.log(row, step=step)
    run.summary.update({"eval": {"f1": 0.6, "p": 0.5}})
    notes = docs.base / "notes.txt"
    notes.write_bytes(b"hello \x00 docs")
    run.save(str(notes), base_path=str(docs.base))
    time.sleep(0.3)  # a few system samples
    for content, aliases in ((b"v0", None), (b"v1", ["best"])):
        weights = docs.base / "weights.bin"
        weights.write_bytes(content)
        art = wisp.Artifact("model", type="model")
        art.add_file(str(weights))
        run.log_artifact(art, aliases=aliases).wait()
    run.finish()
    run = start("v2-beta", {"lr": 0.1, "opt": "sgd"})
    run.use_artifact("model:best")
    run.log({"loss": 0.5, "acc": 0.2})
    run.finish()
    run = start("x-gamma", {"lr": 0.001, "opt": "adam"})
    run.log({"loss": 0.25, "acc": 0.9})
    run.finish()


@pytest.fixture(scope="module")
def docs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Docs]:
    from wisp.testing import Server

    base = tmp_path_factory.mktemp("wandb-docs")
    old = os.environ.get("WISP_CACHE_DIR")
    with Server(base / "server") as srv:
        d = Docs(base, srv)
        os.environ["WISP_CACHE_DIR"] = str(d.cache)
        try:
            _fill(d)
        finally:
            if old is None:
                os.environ.pop("WISP_CACHE_DIR", None)
            else:
                os.environ["WISP_CACHE_DIR"] = old
        yield d


def _run(docs: Docs, script: str, backend: str, **env: str) -> dict[str, Any]:
    """Run ``wandb_scripts/<script>.py`` against ``backend`` ("local" or "server")."""
    cwd = docs.base / f"{script}-{backend}"
    cwd.mkdir(exist_ok=True)
    extra = {
        "PYTHONPATH": WANDB_COMPAT_PATH,
        "WISP_CACHE_DIR": str(docs.cache),
        "ENTITY": "team",
        "PROJECT": "docs",
        **env,
    }
    if backend == "server":
        extra.update(WANDB_BASE_URL=docs.server.url, WANDB_API_KEY=docs.server.key)
    else:
        extra["WISP_DIR"] = str(docs.local)
    result = run_result([str(SCRIPTS / f"{script}.py")], cwd, extra, timeout=300)
    del result["_stderr"]
    return result


def _both(docs: Docs, script: str, **env: str) -> dict[str, Any]:
    local, server = (_run(docs, script, b, **env) for b in ("local", "server"))
    return {"local": local, "server": server}


def test_export_loop(docs: Docs) -> None:
    """The docs' export loop (summary._json_dict, config, name into a DataFrame) works, and
    run attributes (path as a list, display_name, metadata, lastHistoryStep, nested summary
    reads) are the same on both backends."""
    got = _both(docs, "export_project")
    for backend, seen in got.items():
        rows = {r["name"]: r for r in seen["rows"]}
        assert set(rows) == {"v1-alpha", "v2-beta", "x-gamma"}, backend
        a = rows["v1-alpha"]
        assert a["config"] == {"lr": 0.01, "opt": "adam"}
        assert a["summary"]["eval"] == {"f1": 0.6, "p": 0.5}  # wandb's nested _json_dict
        assert a["summary"]["loss"] == {"min": 0.1, "max": 1.0} and a["summary"]["acc"] == 0.8
        assert not [k for k in a["summary"] if k.startswith("_")]  # no _step, _runtime
        assert seen["csv_rows"] == 3 and seen["project"] == "docs" and "docs" in seen["projects"]
        attrs = seen["attrs"]
        assert attrs["path_is_list"] and attrs["has_metadata"] and attrs["user"] == ""
        assert attrs["eval_f1"] == 0.6 and attrs["loss_min"] == 0.1 and attrs["last_step"] == 9
        assert attrs["display_name"] == "v1-alpha"
    local, server = got["local"], got["server"]
    assert local["rows"] == server["rows"]
    drop = ("url",)
    same = {k: v for k, v in local["attrs"].items() if k not in drop}
    assert same == {k: v for k, v in server["attrs"].items() if k not in drop}
    assert local["attrs"]["url"] is None and server["attrs"]["url"].startswith(docs.server.url)


def test_filter_and_edit(docs: Docs) -> None:
    """$regex and ISO createdAt filters select the same runs on both backends; config and
    summary edits are saved on both; a tag edit is saved on a server and refused, with a
    wisp error, on a local folder."""
    got = _both(docs, "filter_and_edit", RUN_ID=docs.ids["x-gamma"])
    for seen in got.values():
        assert seen["regex_and_date"] == ["v1-alpha", "v2-beta"]
        assert seen["future"] == 0
        assert seen["by_config"] == ["v1-alpha", "x-gamma"]
        assert seen["config_lr"] == 0.5
        assert seen["summary"] == {"new_key": 1.5, "accuracy": 0.9, "acc": None}
    assert got["server"]["tags_error"] is None and got["server"]["tags"] == ["golden"]
    assert got["local"]["tags_error"] == "UsageError" and got["local"]["tags"] == []


def test_read_history(docs: Docs) -> None:
    """scan_history(keys=) yields rows holding every key, max_step is exclusive, history
    keeps system metrics out of the main stream and in stream="system"."""
    got = _both(docs, "read_history", RUN_ID=docs.ids["v1-alpha"])
    assert got["local"] == got["server"]
    seen = got["local"]
    assert seen["losses"] == [1.0 / (s + 1) for s in range(10)]
    assert seen["both"] == [0, 2, 4, 6, 8]
    assert seen["window"] == [2, 3, 4]
    assert seen["every_steps"] == list(range(10))
    assert seen["sampled_steps"] == [0, 2, 4, 6, 8]
    assert seen["default_columns"] == ["_step", "acc", "loss"]
    assert seen["default_max_step"] == 9 and seen["last_step"] == 9
    assert seen["system_rows"] and seen["system_keys"] and seen["system_metrics"]
    assert seen["system_columns"] == ["_runtime", "_timestamp"]


def test_download_files(docs: Docs) -> None:
    """Every file downloads byte for byte; exist_ok keeps existing files, and without it or
    replace an existing file is a ValueError, as in wandb."""
    got = _both(docs, "download_files", RUN_ID=docs.ids["v1-alpha"])
    assert got["local"] == got["server"]
    assert got["local"]["names"] == ["notes.txt"]
    assert bytes.fromhex(got["local"]["bytes"]["notes.txt"]) == b"hello \x00 docs"
    assert got["local"]["refused_existing"] is True


@pytest.mark.slow
def test_artifacts(docs: Docs) -> None:
    """api.artifact, api.artifacts, artifact_collections, run.logged_artifacts and
    run.used_artifacts, and Lightning's WandbLogger.download_artifact, agree on both."""
    pytest.importorskip("lightning")
    got = _both(docs, "artifacts", PRODUCER=docs.ids["v1-alpha"], CONSUMER=docs.ids["v2-beta"])
    assert got["local"] == got["server"]
    seen = got["local"]
    assert seen["best_version"] == "v1"
    assert {k: bytes.fromhex(v) for k, v in seen["files"].items()} == {"weights.bin": b"v1"}
    assert seen["versions"] == ["v0", "v1"] and seen["logged"] == ["v0", "v1"]
    assert seen["collections"] == [["model", "model"]] and seen["used"] == ["v1"]
    assert seen["lightning_files"] == ["weights.bin"]


def test_histories_leave_system_metrics_out(docs: Docs) -> None:
    """runs.histories() and to_parquet() hold the logged metrics only: system metrics (kept
    by the server as points at step = time in ms) are Run.history(stream="system")."""
    for api in (wisp.Api(docs.server.url, docs.server.key), wisp.Api(dir=docs.local)):
        with api:
            runs = api.runs("docs", filters={"display_name": "v1-alpha"})
            table = runs.histories(format="arrow")
            assert table.column_names == ["run_id", "step", "acc", "loss"]
            assert table.column("step").to_pylist() == list(range(10))
            frame = runs.histories()
            assert list(frame.columns) == ["run_id", "step", "acc", "loss"] and len(frame) == 10
            assert runs.to_parquet(str(docs.base / "h.parquet")) == 10


def test_api_settings_projects_and_entity(docs: Docs, monkeypatch: pytest.MonkeyPatch) -> None:
    """wisp.Api() finds the server through WANDB_BASE_URL/WANDB_API_KEY (never wandb's own
    cloud), takes wandb's overrides, and lists projects by entity."""
    monkeypatch.setenv("WANDB_BASE_URL", docs.server.url)
    monkeypatch.setenv("WANDB_API_KEY", docs.server.key)
    with wisp.Api() as api:
        assert api.server_url == docs.server.url
        assert [p.name for p in api.projects()] == ["docs"]
        assert api.projects(entity="nobody") == []
        assert api.project("docs").run_count == 3 and len(api.project("docs").runs()) == 3
    monkeypatch.setenv("WANDB_BASE_URL", "https://api.wandb.ai")
    monkeypatch.setenv("WANDB_ENTITY", "team")
    with wisp.Api({"project": "docs"}) as api:
        assert api.server_url is None and api.default_entity == "team"
        assert api.settings == {"project": "docs"}
    monkeypatch.setenv("WISP_CACHE_DIR", str(docs.cache))
    with wisp.Api(dir=docs.local, overrides={"entity": "me", "project": "docs"}) as api:
        assert api.default_entity == "me"
        assert api.artifact("model:v0").version == "v0"  # in the overrides' project

"""import_mlflow on runs written by the real mlflow package: its file store and `mlflow server`
on SQLite, every value compared with what MlflowClient reads back."""

from __future__ import annotations

import json
import math
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import wisp
from tests._procs import stop
from wisp._runfile import RecordType, iter_records
from wisp.integrations.importers import import_mlflow

from ..integrations_support import require

require("mlflow")

pytestmark = pytest.mark.timeout(300)

# Logs runs with mlflow, then dumps what MlflowClient reads back (the reference).
WRITE = r"""
import json, math, os, sys, tempfile
import mlflow
from mlflow.tracking import MlflowClient

uri, out = sys.argv[1], sys.argv[2]
mlflow.set_tracking_uri(uri)
client = MlflowClient(uri)
ids = []
mlflow.set_experiment("vision/resnet")
with mlflow.start_run(run_name="good") as r:
    ids.append(r.info.run_id)
    mlflow.log_params({"lr": 0.001, "opt/beta": "0.9", "layers": 50})
    mlflow.set_tags({"team": "cv", "mlflow.note.content": "the baseline"})
    for step in range(0, 300, 3):
        v = {"loss": math.exp(-step / 100), "acc/top1": step / 300}
        if step == 30:
            v["loss"] = float("nan")
        if step == 60:
            v["acc/top1"] = float("inf")
        mlflow.log_metrics(v, step=step)
    for i in range(4):  # no step: all at step 0
        mlflow.log_metric("lr_now", 0.1 / (i + 1))
    d = tempfile.mkdtemp()
    with open(os.path.join(d, "model.txt"), "w") as f:
        f.write("weights")
    mlflow.log_artifact(os.path.join(d, "model.txt"), "ckpt")
    mlflow.log_text("hello", "notes/readme.md")
mlflow.set_experiment("nlp")
with mlflow.start_run(run_name="broken") as r:
    ids.append(r.info.run_id)
    mlflow.log_metric("loss", 2.0, step=1)
    mlflow.log_metric("loss", 1.0, step=2)
client.set_terminated(ids[-1], "FAILED")
with mlflow.start_run(run_name="gone") as r:
    mlflow.log_metric("loss", 1.0, step=0)
client.delete_run(r.info.run_id)

truth = []
for run_id in ids:
    run = client.get_run(run_id)
    exp = client.get_experiment(run.info.experiment_id)
    metrics = {
        key: [[m.timestamp, m.value, m.step] for m in client.get_metric_history(run_id, key)]
        for key in run.data.metrics
    }
    files = {}
    def walk(path=None):
        for a in client.list_artifacts(run_id, path):
            if a.is_dir:
                walk(a.path)
            else:
                local = client.download_artifacts(run_id, a.path, tempfile.mkdtemp())
                with open(local) as f:
                    files[a.path] = f.read()
    walk()
    truth.append({
        "run_id": run_id, "experiment": exp.name, "name": run.info.run_name,
        "status": run.info.status, "start": run.info.start_time, "end": run.info.end_time,
        "params": run.data.params, "tags": run.data.tags, "metrics": metrics, "files": files,
    })
with open(out, "w") as f:
    json.dump(truth, f)
"""


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "WISP_"))}
    env["MLFLOW_ALLOW_FILE_STORE"] = "true"  # mlflow 3 refuses file stores unless asked
    env["PYTHONWARNINGS"] = "ignore"
    env["HOME"] = str(tmp_path)
    return env


def write_runs(tmp_path: Path, uri: str) -> list[dict[str, Any]]:
    script = tmp_path / "write_mlflow.py"
    script.write_text(WRITE)
    out = tmp_path / "truth.json"
    subprocess.run(
        [sys.executable, str(script), uri, str(out)],
        check=True,
        timeout=240,
        env=_env(tmp_path),
        cwd=tmp_path,
        capture_output=True,
    )
    truth: list[dict[str, Any]] = json.loads(out.read_text())
    return truth


def same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or a == b


def files_of(run_dir: str) -> dict[str, str]:
    out = {}
    for rec in iter_records(os.path.join(run_dir, "run.wisp")):
        if rec.type == RecordType.FILE:
            info = json.loads(rec.payload)
            out[info["name"]] = Path(run_dir, info["path"]).read_text()
    return out


def check_round_trip(truth: list[dict[str, Any]], dest: Path) -> None:
    """Every run, param, tag, metric point and artifact equals what MlflowClient returned."""
    by_id = {t["run_id"]: t for t in truth}
    report_dirs = sorted((dest / "wisp").iterdir())
    assert len(report_dirs) == len(truth)
    for run_dir in report_dirs:
        run = wisp.open_run(run_dir)
        t = by_id[run.id]
        meta = run.metadata
        assert run.project == t["experiment"].replace("/", "_")
        assert run.name == t["name"]
        assert run.config == t["params"]
        assert meta["imported_from"]["tags"] == t["tags"]
        assert meta["imported_from"]["status"] == t["status"]
        assert meta["notes"] == t["tags"].get("mlflow.note.content")
        assert meta["created_at"] == t["start"] / 1000
        assert run.state == {"FINISHED": "finished", "FAILED": "failed"}[t["status"]]
        renumbered = meta["imported_from"]["renumbered"]
        rows = list(run.history())
        for key, points in t["metrics"].items():
            steps, values = run.scalars(key)
            assert len(values) == len(points), key
            if key in renumbered:  # logged without step: every point, in logged order
                assert steps == list(range(len(points)))
                ordered = sorted(points, key=lambda p: p[0])
                assert all(same(v, p[1]) for v, p in zip(values, ordered, strict=True))
                continue
            assert steps == [p[2] for p in points], key
            assert all(same(v, p[1]) for v, p in zip(values, points, strict=True)), key
            stamps = {r["_step"]: r["_timestamp"] for r in rows if key in r}
            assert [stamps[p[2]] for p in points] == [p[0] / 1000 for p in points], key
        assert files_of(str(run_dir)) == t["files"]


def test_file_store_round_trip_and_idempotent(tmp_path: Path) -> None:
    """A file store imports with every value equal to MlflowClient's; a deleted run is
    skipped with its reason; importing again changes no byte; a changed run is re-imported."""
    truth = write_runs(tmp_path, (tmp_path / "mlruns").as_uri())
    dest = tmp_path / "out"
    report = import_mlflow(tmp_path / "mlruns", dest)
    assert not report.failed and len(report.runs) == 2
    assert report.skipped == {"deleted in MLflow": 1}
    assert report.points == sum(len(p) for t in truth for p in t["metrics"].values())
    check_round_trip(truth, dest)

    before = {p: p.read_bytes() for p in dest.rglob("*") if p.is_file()}
    again = import_mlflow(tmp_path / "mlruns", dest)
    assert again.runs == [] and len(again.unchanged) == 2
    assert {p: p.read_bytes() for p in dest.rglob("*") if p.is_file()} == before

    # the run grows in MLflow: only it is imported again
    good = next(t for t in truth if t["name"] == "good")
    exp_dir = next(p.parent for p in (tmp_path / "mlruns").glob(f"*/{good['run_id']}"))
    with open(exp_dir / good["run_id"] / "metrics" / "loss", "a") as f:
        f.write(f"{good['end'] + 5} 0.25 300\n")
    third = import_mlflow(tmp_path / "mlruns", dest)
    assert len(third.runs) == 1 and third.updated == 1 and len(third.unchanged) == 1
    steps, values = wisp.open_run(third.runs[0]).scalars("loss")
    assert steps[-1] == 300 and values[-1] == 0.25
    assert len(list((dest / "wisp").iterdir())) == 2


def test_interrupted_import_resumes(tmp_path: Path) -> None:
    """A run directory left without its import.json (an import cut short) is redone."""
    truth = write_runs(tmp_path, (tmp_path / "mlruns").as_uri())
    dest = tmp_path / "out"
    first = import_mlflow(tmp_path / "mlruns", dest)
    cut = Path(first.runs[0])
    (cut / "import.json").unlink()
    with open(cut / "run.wisp", "r+b") as f:
        f.truncate(200)  # torn in the middle
    again = import_mlflow(tmp_path / "mlruns", dest)
    assert len(again.runs) == 1 and len(again.unchanged) == 1
    check_round_trip(truth, dest)


def test_cli_prints_a_summary(tmp_path: Path) -> None:
    """`wisp import mlflow` prints what it imported and skipped and exits 0."""
    write_runs(tmp_path, (tmp_path / "mlruns").as_uri())
    env = {**_env(tmp_path), "PYTHONPATH": str(Path(wisp.__file__).parents[1])}
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "wisp.cli",
            "import",
            "mlflow",
            str(tmp_path / "mlruns"),
            "--dir",
            str(tmp_path / "out"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    assert "mlflow: imported 2 run(s)" in out.stdout
    assert "1 skipped: deleted in MLflow" in out.stdout


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def mlflow_server(tmp_path: Path) -> Iterator[str]:
    """A real `mlflow server` on SQLite, on loopback."""
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    log = open(tmp_path / "mlflow-server.log", "wb")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mlflow",
            "server",
            "--backend-store-uri",
            f"sqlite:///{tmp_path / 'mlflow.db'}",
            "--artifacts-destination",
            str(tmp_path / "mlartifacts"),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--workers",
            "1",
        ],
        env=_env(tmp_path),
        cwd=tmp_path,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(url + "/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError((tmp_path / "mlflow-server.log").read_text()[-2000:])
            time.sleep(0.5)
        yield url
    finally:
        try:
            os.killpg(proc.pid, 15)
            stop(proc, 30, group=True)
        finally:
            log.close()


def test_tracking_server_round_trip(tmp_path: Path, mlflow_server: str) -> None:
    """Runs on `mlflow server` (SQLite) import over its REST API with every value equal to
    MlflowClient's, artifacts downloaded; a second import finds them all unchanged."""
    truth = write_runs(tmp_path, mlflow_server)
    dest = tmp_path / "out"
    report = import_mlflow(mlflow_server, dest)
    assert not report.failed and len(report.runs) == 2, report.summary()
    assert report.skipped == {"deleted in MLflow": 1}
    check_round_trip(truth, dest)
    again = import_mlflow(mlflow_server, dest)
    assert again.runs == [] and len(again.unchanged) == 2

"""import_neptune on parquet files in neptune-exporter's layout and schema (model.py SCHEMA),
every imported value compared with what pyarrow reads from those files."""

from __future__ import annotations

import datetime as dt
import json
import math
import os
from decimal import Decimal
from pathlib import Path
from typing import Any

import wisp
from wisp._runfile import RecordType, iter_records
from wisp.integrations.importers import import_neptune

from ..integrations_support import require

pa = require("pyarrow")
pq = require("pyarrow.parquet")

# neptune_exporter/model.py SCHEMA, as the exporter writes it
SCHEMA = pa.schema(
    [
        ("project_id", pa.string()),
        ("run_id", pa.string()),
        ("attribute_path", pa.string()),
        ("attribute_type", pa.string()),
        ("step", pa.decimal128(18, 6)),
        ("timestamp", pa.timestamp("ms", tz="UTC")),
        ("int_value", pa.int64()),
        ("float_value", pa.float64()),
        ("string_value", pa.string()),
        ("bool_value", pa.bool_()),
        ("datetime_value", pa.timestamp("ms", tz="UTC")),
        ("string_set_value", pa.list_(pa.string())),
        ("file_value", pa.struct([("path", pa.string())])),
        (
            "histogram_value",
            pa.struct(
                [
                    ("type", pa.string()),
                    ("edges", pa.list_(pa.float64())),
                    ("values", pa.list_(pa.float64())),
                ]
            ),
        ),
    ]
)
T0 = dt.datetime(2025, 6, 1, 12, 0, tzinfo=dt.timezone.utc)


def row(run: str, path: str, kind: str, **values: Any) -> dict[str, Any]:
    base = {name: None for name in SCHEMA.names}
    base.update(project_id="ws/vision", run_id=run, attribute_path=path, attribute_type=kind)
    base.update(values)
    return base


def export(tmp_path: Path) -> Path:
    """An export of two runs (integer and half steps) plus one whose export never finished."""
    data, files = tmp_path / "exports" / "data" / "ws_vision_ab12", tmp_path / "exports" / "files"
    data.mkdir(parents=True)
    (files / "ws_vision_ab12" / "RUN-1").mkdir(parents=True)
    (files / "ws_vision_ab12" / "RUN-1" / "model.bin").write_bytes(b"\x00weights")
    (files / "ws_vision_ab12" / "RUN-1" / "pred_3.png").write_bytes(b"png-bytes")
    rows = [
        row("RUN-1", "sys/name", "string", string_value="baseline"),
        row("RUN-1", "sys/creation_time", "datetime", datetime_value=T0),
        row(
            "RUN-1", "sys/modification_time", "datetime", datetime_value=T0 + dt.timedelta(hours=1)
        ),
        row("RUN-1", "sys/tags", "string_set", string_set_value=["resnet", "cv"]),
        row("RUN-1", "sys/description", "string", string_value="first try"),
        row("RUN-1", "sys/failed", "bool", bool_value=False),
        row("RUN-1", "params/lr", "float", float_value=0.001),
        row("RUN-1", "params/epochs", "int", int_value=10),
        row("RUN-1", "params/aug", "bool", bool_value=True),
        row("RUN-1", "params/opt", "string", string_value="adam"),
        row("RUN-1", "params/started", "datetime", datetime_value=T0),
        row("RUN-1", "params/sets", "string_set", string_set_value=["b", "a"]),
        row("RUN-1", "model", "file", file_value={"path": "ws_vision_ab12/RUN-1/model.bin"}),
        row(
            "RUN-1",
            "preds",
            "file_series",
            step=Decimal(3),
            file_value={"path": "ws_vision_ab12/RUN-1/pred_3.png"},
        ),
    ]
    for s in range(50):
        ts = T0 + dt.timedelta(seconds=s)
        loss = float("nan") if s == 7 else math.exp(-s / 10)
        rows.append(
            row(
                "RUN-1",
                "train/loss",
                "float_series",
                step=Decimal(s),
                timestamp=ts,
                float_value=loss,
            )
        )
        if s % 2 == 0:
            rows.append(
                row(
                    "RUN-1",
                    "eval/acc",
                    "float_series",
                    step=Decimal(s),
                    timestamp=ts,
                    float_value=s / 50,
                )
            )
        if s % 10 == 0:
            rows.append(
                row(
                    "RUN-1",
                    "logs/msg",
                    "string_series",
                    step=Decimal(s),
                    timestamp=ts,
                    string_value=f"epoch {s}",
                )
            )
            rows.append(
                row(
                    "RUN-1",
                    "weights",
                    "histogram_series",
                    step=Decimal(s),
                    timestamp=ts,
                    histogram_value={
                        "type": "COUNTING",
                        "edges": [0.0, 1.0, 2.0],
                        "values": [float(s), 3.0],
                    },
                )
            )
    half = [
        row("RUN-2", "sys/name", "string", string_value="halves"),
        row("RUN-2", "sys/failed", "bool", bool_value=True),
    ] + [
        row(
            "RUN-2",
            "loss",
            "float_series",
            step=Decimal(s) / 2,
            timestamp=T0 + dt.timedelta(seconds=s),
            float_value=float(s),
        )
        for s in range(10)
    ]
    pq.write_table(pa.Table.from_pylist(rows[:40], schema=SCHEMA), data / "RUN-1_part_0.parquet")
    pq.write_table(pa.Table.from_pylist(rows[40:], schema=SCHEMA), data / "RUN-1_part_1.parquet")
    pq.write_table(pa.Table.from_pylist(half, schema=SCHEMA), data / "RUN-2_part_0.parquet")
    # an export cut short: only part_1, never renamed part_0
    pq.write_table(pa.Table.from_pylist(half, schema=SCHEMA), data / "RUN-3_part_1.parquet")
    return tmp_path / "exports"


def same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or a == b


def by_name(dest: Path) -> dict[str, Any]:
    return {wisp.open_run(d).name: d for d in (dest / "wisp").iterdir()}


def file_records(run_dir: Path) -> dict[str, bytes]:
    out = {}
    for rec in iter_records(run_dir / "run.wisp"):
        if rec.type == RecordType.FILE:
            info = json.loads(rec.payload)
            out[info["name"]] = (run_dir / info["path"]).read_bytes()
    return out


def test_round_trip_against_pyarrow(tmp_path: Path) -> None:
    """Every parameter, series point (NaN kept, half steps scaled), histogram, string series,
    file and run attribute equals what pyarrow reads from the export; an unfinished run is
    not imported."""
    root = export(tmp_path)
    dest = tmp_path / "out"
    report = import_neptune(root, dest)
    assert not report.failed and len(report.runs) == 2, report.summary()
    runs = by_name(dest)
    table = pa.concat_tables(
        pq.read_table(p) for p in sorted((root / "data" / "ws_vision_ab12").glob("RUN-[12]_*"))
    ).to_pylist()

    first = wisp.open_run(runs["baseline"])
    rows1 = [r for r in table if r["run_id"] == "RUN-1"]
    params = {
        r["attribute_path"]: r
        for r in rows1
        if r["attribute_type"] in ("float", "int", "string", "bool", "datetime", "string_set")
    }
    assert first.config == {
        "params/lr": params["params/lr"]["float_value"],
        "params/epochs": params["params/epochs"]["int_value"],
        "params/aug": params["params/aug"]["bool_value"],
        "params/opt": params["params/opt"]["string_value"],
        "params/started": params["params/started"]["datetime_value"].isoformat(),
        "params/sets": sorted(params["params/sets"]["string_set_value"]),
    }
    meta = first.metadata
    assert meta["tags"] == sorted(params["sys/tags"]["string_set_value"])
    assert meta["notes"] == params["sys/description"]["string_value"]
    assert meta["created_at"] == params["sys/creation_time"]["datetime_value"].timestamp()
    assert first.project == "vision" and first.state == "finished"
    assert meta["imported_from"]["step_multiplier"] == 1
    for key in ("train/loss", "eval/acc"):
        pts = [r for r in rows1 if r["attribute_path"] == key]
        steps, values = first.scalars(key)
        assert steps == [int(r["step"]) for r in pts]
        assert all(same(v, r["float_value"]) for v, r in zip(values, pts, strict=True))
    stamps = {r["_step"]: r["_timestamp"] for r in first.history()}
    loss_pts = [r for r in rows1 if r["attribute_path"] == "train/loss"]
    assert [stamps[int(r["step"])] for r in loss_pts] == [
        r["timestamp"].timestamp() for r in loss_pts
    ]
    hists = [r for r in rows1 if r["attribute_type"] == "histogram_series"]
    h_steps, h_values = first.histograms("weights")
    assert h_steps == [int(r["step"]) for r in hists]
    for h, r in zip(h_values, hists, strict=True):
        assert h.edges.tolist() == r["histogram_value"]["edges"]
        assert h.counts.astype(float).tolist() == r["histogram_value"]["values"]
    files = file_records(Path(runs["baseline"]))
    assert files["model/model.bin"] == b"\x00weights"
    assert files["preds/step_3/pred_3.png"] == b"png-bytes"
    text = files["logs/msg.series.txt"].decode().splitlines()
    msgs = [r for r in rows1 if r["attribute_type"] == "string_series"]
    assert [line.split("\t")[2] for line in text] == [r["string_value"] for r in msgs]

    second = wisp.open_run(runs["halves"])
    pts = [r for r in table if r["run_id"] == "RUN-2" and r["attribute_path"] == "loss"]
    assert second.metadata["imported_from"]["step_multiplier"] == 10
    assert second.scalars("loss") == (
        [int(r["step"] * 10) for r in pts],
        [r["float_value"] for r in pts],
    )
    assert second.state == "failed"


def test_reimport_changes_nothing_and_picks_up_a_finished_export(tmp_path: Path) -> None:
    """Importing the same export again leaves every file as it was; once the cut-short run's
    part_0 lands, only that run is imported."""
    root = export(tmp_path)
    dest = tmp_path / "out"
    import_neptune(root, dest)
    before = {p: p.read_bytes() for p in dest.rglob("*") if p.is_file()}
    again = import_neptune(root, dest)
    assert again.runs == [] and len(again.unchanged) == 2
    assert {p: p.read_bytes() for p in dest.rglob("*") if p.is_file()} == before
    folder = root / "data" / "ws_vision_ab12"
    os.replace(folder / "RUN-3_part_1.parquet", folder / "RUN-3_part_0.parquet")
    third = import_neptune(root, dest)
    assert len(third.runs) == 1 and len(third.unchanged) == 2


def test_cli_prints_a_summary(tmp_path: Path) -> None:
    """`wisp import neptune EXPORT` imports the finished runs, says so and exits 0; a second
    run reports them unchanged."""
    import subprocess
    import sys

    root = export(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(Path(wisp.__file__).parents[1])}
    cmd = [
        sys.executable,
        "-m",
        "wisp.cli",
        "import",
        "neptune",
        str(root),
        "--dir",
        str(tmp_path / "out"),
    ]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env, check=False)
    assert out.returncode == 0, out.stderr
    assert "neptune: imported 2 run(s)" in out.stdout and "3 files" in out.stdout
    again = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env, check=False)
    assert "imported 0 run(s)" in again.stdout and "2 unchanged" in again.stdout

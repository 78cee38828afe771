"""Importer benchmarks: ``wisp ui`` over many local runs, and MLflow file-store import.

- ``wisp ui`` cold / warm: N small runs (100 steps x 5 metrics, as the SDK writes them;
  one real run is written with the SDK and copied N times with fresh run ids), imported
  by the ui's importer (``LocalImporter`` on the real server, batch importer, in-process
  transport, stat index) exactly as ``wisp ui`` drives it: cold = empty database until
  every run is on the server (and time until the dashboard is ready, i.e. after the first
  slice);
  warm = a restart on the same database with nothing new; warm+1% = a restart after 1%
  of the runs grew by one record.  Targets (issue 22): 10,000 runs, cold <= 30 s,
  warm <= 2 s.
- MLflow import: R runs x 5 metrics x S steps written in MLflow's file-store layout
  (the files mlflow's FileStore writes), then ``import_mlflow``; points/s (target:
  1,000 x 5 x 1,000 at >= 200k points/s).

Sizes: WISP_BENCH_UI_RUNS (default 10000), WISP_BENCH_MLFLOW_RUNS (default 1000),
WISP_BENCH_MLFLOW_STEPS (default 1000).  Usage: python benchmarks/bench_importers.py
"""

from __future__ import annotations

import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

SETTINGS = {"system_metrics": False, "console": "off", "git": False}


def make_local_runs(root: Path, n: int) -> None:
    """``n`` copies of one SDK run (100 steps x 5 metrics), each with its own run id."""
    import wisp
    from wisp._runfile import HEADER, RecordType, encode_record, iter_records

    template = root / "template"
    run = wisp.init(project="bench", name="t", dir=str(template), settings=SETTINGS)
    for s in range(100):
        wisp.log({f"m{j}": s * 0.01 + j for j in range(5)}, step=s)
    run.finish()
    (src,) = (template / "wisp").iterdir()
    recs = list(iter_records(src / "run.wisp"))
    meta = json.loads((src / "run.json").read_text())
    first = json.loads(recs[0].payload)
    rest = b"".join(encode_record(r.type, r.payload) for r in recs[1:])
    out = root / "work" / "wisp"
    out.mkdir(parents=True)
    for i in range(n):
        rid = f"b{i:07d}"
        d = out / f"run-20260101_000000-{rid}"
        d.mkdir()
        rec = dict(first, run_id=rid, name=f"run-{i}", writer_id=f"w{i:015d}")
        (d / "run.wisp").write_bytes(
            HEADER + encode_record(RecordType.RUN, json.dumps(rec).encode()) + rest
        )
        (d / "run.json").write_text(json.dumps(dict(meta, id=rid, name=f"run-{i}")))


def bench_ui(n: int) -> None:
    from wisp._runfile import RecordType, encode_record
    from wisp._ui import LocalImporter, _free_port, _LocalServer
    from wisp._ui_local import INDEX_FILE, InProcessTransport, StatIndex
    from wisp._upload._transport import ApiClient

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        t = time.perf_counter()
        make_local_runs(root, n)
        print(f"wrote {n} runs in {time.perf_counter() - t:.1f} s", flush=True)
        data = root / "data"
        data.mkdir()
        server = _LocalServer(
            f"sqlite:///{data / 'wisp.db'}",
            str(data / "media"),
            "127.0.0.1",
            _free_port("127.0.0.1"),
        )
        transport = InProcessTransport(server.app, server.url)

        def start() -> tuple[LocalImporter, float, float]:
            imp = LocalImporter(
                [str(root / "work")],
                lambda: ApiClient(server.url, server.write_key, transport=transport),
                index=StatIndex(str(data / INDEX_FILE)),
                batch=server.batch_importer(),
            )
            t0 = time.perf_counter()
            imp.poll(budget=2.0)  # what `wisp ui` does before it prints the URL
            ready = time.perf_counter() - t0
            while imp.busy or imp.pending:
                imp.poll(budget=1.0)
            imp.close()  # every upload.json written too
            total = time.perf_counter() - t0
            return imp, ready, total

        try:
            imp, ready, cold = start()
            assert imp.imported == n, (imp.imported, n)
            _, _, warm = start()
            grown = random.Random(0).sample(sorted((root / "work" / "wisp").iterdir()), n // 100)
            for d in grown:
                with open(d / "run.wisp", "ab") as f:
                    f.write(encode_record(RecordType.SUMMARY, b'{"summary":{"late":1}}'))
            imp2, _, warm_grown = start()
            assert imp2.opened == len(grown)
        finally:
            transport.shutdown()
            server.stop()
    print(f"wisp ui, {n} runs x 100 steps x 5 metrics:")
    print(
        f"  cold (empty db):      {cold:7.2f} s  ({cold / n * 1e3:.2f} ms/run; target <= 30 s "
        f"at 10,000), dashboard ready after {ready:.2f} s"
    )
    print(f"  warm (nothing new):   {warm:7.3f} s  (target <= 2 s)")
    print(f"  warm, {len(grown)} grown:     {warm_grown:7.3f} s")


def make_mlruns(root: Path, runs: int, steps: int, metrics: int = 5) -> int:
    """An MLflow file store as mlflow's FileStore lays it out; returns the point count."""
    exp = root / "mlruns" / "1"
    exp.mkdir(parents=True)
    (root / "mlruns" / "1" / "meta.yaml").write_text(
        "artifact_location: file:///x\nexperiment_id: '1'\nlifecycle_stage: active\nname: bench\n"
    )
    t0 = 1_700_000_000_000
    for r in range(runs):
        rid = f"{r:032x}"
        d = exp / rid
        (d / "metrics").mkdir(parents=True)
        (d / "params").mkdir()
        (d / "tags").mkdir()
        (d / "meta.yaml").write_text(
            f"artifact_uri: file://{d}/artifacts\nend_time: {t0 + steps * 1000}\n"
            f"entry_point_name: ''\nexperiment_id: '1'\nlifecycle_stage: active\n"
            f"run_id: {rid}\nrun_name: run-{r}\nsource_type: 4\nstart_time: {t0}\n"
            f"status: 3\ntags: []\nuser_id: bench\n"
        )
        (d / "params" / "lr").write_text("0.001")
        (d / "tags" / "mlflow.runName").write_text(f"run-{r}")
        for m in range(metrics):
            lines = [f"{t0 + s * 1000} {1.0 / (s + 1) + m} {s}" for s in range(steps)]
            (d / "metrics" / f"metric{m}").write_text("\n".join(lines) + "\n")
    return runs * steps * metrics


def bench_mlflow(runs: int, steps: int) -> None:
    from wisp.integrations.importers import import_mlflow

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        points = make_mlruns(root, runs, steps)
        t = time.perf_counter()
        report = import_mlflow(root / "mlruns", root / "out", stream=open(os.devnull, "w"))  # noqa: SIM115
        dt = time.perf_counter() - t
        assert report.points == points and len(report.runs) == runs, report.summary()
        t = time.perf_counter()
        again = import_mlflow(root / "mlruns", root / "out", stream=open(os.devnull, "w"))  # noqa: SIM115
        dt2 = time.perf_counter() - t
        assert len(again.unchanged) == runs
    print(f"MLflow file store, {runs} runs x 5 metrics x {steps} steps ({points:,} points):")
    print(f"  import:   {dt:7.2f} s  {points / dt:,.0f} points/s (target >= 200,000)")
    print(f"  re-import (all unchanged): {dt2:.2f} s")


def main() -> None:
    n = int(os.environ.get("WISP_BENCH_UI_RUNS", "10000"))
    runs = int(os.environ.get("WISP_BENCH_MLFLOW_RUNS", "1000"))
    steps = int(os.environ.get("WISP_BENCH_MLFLOW_STEPS", "1000"))
    bench_mlflow(runs, steps)
    bench_ui(n)


if __name__ == "__main__":
    main()

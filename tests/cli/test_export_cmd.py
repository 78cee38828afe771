"""``wisp export --project P --format parquet`` against a real server and a local folder."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq

import wisp
from wisp.testing import Server


def _cli(*args: str, env_dir: Path, key: str | None = None) -> subprocess.CompletedProcess[str]:
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith("WISP_")}
    if key is not None:
        env["WISP_API_KEY"] = key
    env["WISP_CONFIG"] = str(env_dir / "no-config.toml")
    env["PYTHONPATH"] = str(Path(wisp.__file__).parents[1])
    return subprocess.run(
        [sys.executable, "-m", "wisp.cli", "export", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


def test_export_project_writes_every_point_of_every_run(tmp_path: Path) -> None:
    """The Parquet file holds run_id, step and every key of every run, NaN kept, from both sources."""
    with Server(tmp_path) as srv:
        ids = []
        for i in range(3):
            run = wisp.init(
                project="proj",
                dir=str(tmp_path),
                settings={"server_url": srv.url, "api_key": srv.key, "system_metrics": False},
            )
            for s in range(50):
                run.log({"loss": math.nan if s == 3 else s + i, **({"lr": 0.1} if i == 0 else {})})
            run.finish()
            ids.append(run.id)
        out = tmp_path / "p.parquet"
        res = _cli(
            "--project",
            "proj",
            "--format",
            "parquet",
            "-o",
            str(out),
            "--server",
            srv.url,
            env_dir=tmp_path,
        )
        assert res.returncode == 2 and "API key" in res.stderr  # no key: refused, clearly
        res = _cli(
            "--project", "proj", "--format", "parquet", "-o", str(out), "--server", srv.url,
            env_dir=tmp_path, key=srv.key,
        )  # fmt: skip
        assert res.returncode == 0, res.stderr
    local_out = tmp_path / "local.parquet"
    res2 = _cli(
        "--project",
        "proj",
        "-o",
        str(local_out),
        "--format",
        "parquet",
        "--dir",
        str(tmp_path),
        env_dir=tmp_path,
    )
    assert res2.returncode == 0, res2.stderr
    for path in (out, local_out):
        t = pq.read_table(path)
        assert t.column_names == ["run_id", "step", "loss", "lr"]
        assert t.num_rows == 150 and set(t.column("run_id").to_pylist()) == set(ids)
        rows = [r for r in t.to_pylist() if r["run_id"] == ids[1]]
        assert [r["step"] for r in sorted(rows, key=lambda r: r["step"])] == list(range(50))
        assert math.isnan(next(r["loss"] for r in rows if r["step"] == 3))
        assert all(r["lr"] is None for r in rows)


def test_export_project_unknown_project_names_it(tmp_path: Path) -> None:
    """An unknown project is exit code 2 with the project's name in the message."""
    (tmp_path / "wisp").mkdir()
    res = _cli("--project", "nope", "--format", "parquet", "--dir", str(tmp_path), env_dir=tmp_path)
    assert res.returncode == 2 and "nope" in res.stderr

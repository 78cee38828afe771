"""`wisp ls`, `show`, `export` and `gc` (src/wisp/cli/_runs.py)."""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

import pytest

from tests.cli._helpers import make_run, wisp_cli

LOOP = """
for i in range(20):
    wisp.log({"loss": 1.0 / (i + 1), "acc": i / 20, "text": f"é{i}"})
wisp.log({"loss": float("nan")})
"""


@pytest.fixture
def two_runs(tmp_path: Path) -> tuple[Path, Path]:
    a = make_run(tmp_path, LOOP, name="alpha", config={"lr": 0.1, "opt": {"name": "adam"}})
    b = make_run(tmp_path, "wisp.log({'loss': 5})", name="beta", project="other")
    return a, b


def test_ls_table_and_json(tmp_path: Path, two_runs: tuple[Path, Path]) -> None:
    """ls prints a table with state, name and summary keys, filters by project, and --json is parseable."""
    res = wisp_cli("ls", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    header, *rows = res.stdout.splitlines()
    assert header.split()[:3] == ["STATE", "PROJECT", "NAME"] and "loss" in header
    assert "\x1b[" not in res.stdout  # no colours when not a TTY
    assert len(rows) == 2 and rows[0].startswith("finished") and "alpha" in rows[0]
    res = wisp_cli("ls", "--json", "--project", "proj", cwd=tmp_path)
    runs = json.loads(res.stdout)["runs"]
    assert [r["name"] for r in runs] == ["alpha"]
    assert runs[0]["state"] == "finished" and runs[0]["summary"]["loss"] is None  # NaN -> null
    assert runs[0]["summary"]["acc"] == pytest.approx(0.95)


def test_ls_empty_and_other_dir(tmp_path: Path, two_runs: tuple[Path, Path]) -> None:
    """ls says when there are no runs, and --dir points it elsewhere."""
    empty = tmp_path / "empty"
    empty.mkdir()
    res = wisp_cli("ls", cwd=empty)
    assert res.returncode == 0 and res.stdout.startswith("no runs under")
    res = wisp_cli("ls", "--dir", str(tmp_path), cwd=empty)
    assert "alpha" in res.stdout and "beta" in res.stdout


def test_show_by_id_prefix_name_and_json(tmp_path: Path, two_runs: tuple[Path, Path]) -> None:
    """show finds a run by id prefix or name and prints config, summary and files."""
    a, _ = two_runs
    run_id = a.name.rsplit("-", 1)[-1]
    res = wisp_cli("show", run_id[:5], cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert "proj/alpha" in res.stdout and "opt.name = adam" in res.stdout
    assert "run.wisp" in res.stdout
    data = json.loads(wisp_cli("show", "alpha", "--json", cwd=tmp_path).stdout)
    assert data["id"] == run_id and data["config"] == {"lr": 0.1, "opt": {"name": "adam"}}
    assert data["keys"] == ["loss", "acc", "text"]
    assert {f["path"] for f in data["files"]} >= {"run.wisp", "run.json"}


def test_show_unknown_run_is_one_line_error(tmp_path: Path, two_runs: tuple[Path, Path]) -> None:
    """An unknown run gives exit code 2, one error line plus a hint, and no traceback."""
    res = wisp_cli("show", "zzz", cwd=tmp_path)
    assert res.returncode == 2
    lines = res.stderr.splitlines()
    assert lines[0] == f"wisp: error: no run 'zzz' under {tmp_path / 'wisp'}"
    assert lines[1].startswith("hint: ") and len(lines) == 2


def test_export_csv_and_jsonl(tmp_path: Path, two_runs: tuple[Path, Path]) -> None:
    """export writes every history row as CSV and JSON lines, unicode and NaN included."""
    res = wisp_cli("export", "alpha", "--format", "csv", "-o", "out.csv", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    with open(tmp_path / "out.csv", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 21
    assert list(rows[0]) == ["_step", "_timestamp", "loss", "acc", "text"]
    assert rows[3]["text"] == "é3" and float(rows[3]["loss"]) == 0.25 and rows[20]["loss"] == "nan"
    res = wisp_cli(
        "export", "alpha", "--format", "jsonl", "-o", "-", "--keys", "loss", cwd=tmp_path
    )
    lines = [json.loads(x) for x in res.stdout.splitlines()]
    assert len(lines) == 21 and set(lines[0]) == {"_step", "_timestamp", "loss"}
    assert lines[-1]["loss"] is None


def test_export_parquet(tmp_path: Path, two_runs: tuple[Path, Path]) -> None:
    """export --format parquet writes a table pyarrow reads back (pyarrow from test-cli)."""
    pq = pytest.importorskip("pyarrow.parquet") if not os.environ.get("CI") else None
    if pq is None:
        import pyarrow.parquet as pq
    res = wisp_cli("export", "alpha", "--format", "parquet", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    table = pq.read_table(tmp_path / "alpha.parquet")
    assert table.num_rows == 21 and table.column("acc").to_pylist()[2] == 0.1


def _cursor(run: Path, offset: int) -> None:
    (run / "upload.json").write_text(
        json.dumps(
            {"server": "http://x", "offset": offset, "acked_seq": 3, "writer_id": "w", "done": True}
        )
    )


def test_gc_deletes_only_fully_synced(tmp_path: Path, two_runs: tuple[Path, Path]) -> None:
    """gc --dry-run lists, gc deletes runs whose cursor covers the whole finished file, and keeps others."""
    a, b = two_runs
    c = make_run(tmp_path, "wisp.log({'x': 1})", name="gamma")
    _cursor(a, (a / "run.wisp").stat().st_size)
    _cursor(b, (b / "run.wisp").stat().st_size - 1)  # not fully acked
    res = wisp_cli("gc", "--dry-run", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert f"would delete {a.name}" in res.stdout and b.name not in res.stdout
    assert a.exists()
    res = wisp_cli("gc", "-v", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert not a.exists() and b.exists() and c.exists()
    assert "never synced" in res.stdout and "1 fully synced run(s)" in res.stdout


def test_gc_keeps_unfinished_run(tmp_path: Path) -> None:
    """A run without a finish record is kept even when its cursor matches the file size."""
    run = make_run(tmp_path, "wisp.log({'x': 1})")
    data = (run / "run.wisp").read_bytes()
    # drop the finish record (the last one) to look like a run still being written
    from wisp._runfile import RecordType, iter_records

    recs = list(iter_records(data))
    assert recs[-1].type == RecordType.FINISH
    cut = len(data) - (9 + len(recs[-1].payload))
    (run / "run.wisp").write_bytes(data[:cut])
    _cursor(run, cut)
    res = wisp_cli("gc", "-v", cwd=tmp_path)
    assert res.returncode == 0 and run.exists()
    assert "no finish record" in res.stdout


def test_ls_says_which_runs_are_synced(
    tmp_path: Path, two_runs: tuple[Path, Path], server: tuple[str, str]
) -> None:
    """ls has a SYNCED column: `no` for runs never sent to a server, `yes` once `wisp sync` sent one whole; --json says it too, with the reason."""
    url, key = server
    alpha, _beta = two_runs
    env = {"WISP_SERVER_URL": url, "WISP_API_KEY": key}
    assert wisp_cli("sync", str(alpha), cwd=tmp_path, env=env).returncode == 0
    res = wisp_cli("ls", cwd=tmp_path)
    header, *rows = res.stdout.splitlines()
    col = header.split().index("SYNCED") + 1  # CREATED holds a date and a time
    assert {r.split()[2]: r.split()[col] for r in rows} == {"alpha": "yes", "beta": "no"}
    runs = json.loads(wisp_cli("ls", "--json", cwd=tmp_path).stdout)["runs"]
    got = {r["name"]: (r["synced"], r["sync_status"]) for r in runs}
    assert got == {"alpha": (True, "fully synced"), "beta": (False, "never synced")}

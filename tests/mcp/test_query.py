"""`wisp query --sql` over a folder's runs: real DuckDB over Arrow tables, read-only."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli._helpers import wisp_cli

pytest.importorskip("duckdb")
pytest.importorskip("pyarrow")


def _query(folder: Path, sql: str) -> dict:
    res = wisp_cli(
        "query", "--dir", str(folder), "--project", "agents", "--json", "--sql", sql, cwd=folder
    )
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def test_runs_history_and_points_tables(runs_dir: Path) -> None:
    """runs has flattened config and summary columns; history and points hold every point."""
    got = _query(runs_dir, 'select "config.lr", "config.opt.name" from runs order by 1')
    assert got["rows"] == [[0.01, "adam"], [0.1, "adam"]]
    got = _query(runs_dir, 'select count(*), max(step) from history where "train/loss" is not null')
    assert got["rows"] == [[600, 299]]
    got = _query(
        runs_dir,
        'select r."config.lr", min(p.value) from points p join runs r on r.id = p.run_id '
        "where p.key = 'val/loss' group by 1 order by 1",
    )
    assert [r[0] for r in got["rows"]] == [0.01, 0.1]
    assert got["rows"][0][1] == pytest.approx(1 / 201 + 0.03)


def test_files_are_out_of_reach(runs_dir: Path, tmp_path: Path) -> None:
    """A query cannot read or write files: DuckDB's external access is off and locked."""
    secret = tmp_path / "secret.csv"
    secret.write_text("a\n1\n")
    for sql in (f"select * from read_csv('{secret}')", "set enable_external_access = true"):
        res = wisp_cli(
            "query", "--dir", str(runs_dir), "--project", "agents", "--sql", sql, cwd=tmp_path
        )
        assert res.returncode == 2
        assert "--sql:" in res.stderr

"""``wisp report`` lint, freeze, export and import on local runs (src/wisp/cli/_report_cmd.py)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli._helpers import wisp_cli
from tests.reports.conftest import log_run, report_text
from tests.reports.test_wandb import VIEW


def test_lint_exits_1_on_errors_and_0_on_a_clean_report(tmp_path: Path) -> None:
    """A misspelt key fails lint with the panel's line and a suggestion; the fixed file passes."""
    ids = [log_run(lr, ["sweep"]) for lr in (1e-3, 1e-4, 3e-4, 2e-4)]
    bad = tmp_path / "bad.md"
    bad.write_text(report_text(ids).replace("y: [val/loss]", "y: [val/lss]"))
    out = wisp_cli("report", "lint", str(bad), "--dir", str(tmp_path), cwd=tmp_path)
    assert out.returncode == 1, out.stderr
    assert "panel 1 (line, line 10): no selected run logs 'val/lss'" in out.stdout
    good = tmp_path / "good.md"
    good.write_text(report_text(ids))
    out = wisp_cli("report", "lint", str(good), "--json", "--dir", str(tmp_path), cwd=tmp_path)
    assert out.returncode == 0 and json.loads(out.stdout) == []


def test_freeze_rewrites_the_file_and_export_writes_html(tmp_path: Path) -> None:
    """freeze pins run ids into the file; export writes the page for the frozen runs."""
    ids = [log_run(lr, ["sweep"]) for lr in (1e-3, 1e-4, 3e-4, 2e-4)]
    path = tmp_path / "r.md"
    path.write_text(report_text(ids))
    out = wisp_cli("report", "freeze", str(path), cwd=tmp_path, env={"WISP_DIR": str(tmp_path)})
    assert out.returncode == 0, out.stderr
    assert "sweep: 4 runs, steps <= 49" in out.stdout
    assert "max_step: 49" in path.read_text() and all(i in path.read_text() for i in ids)
    html = tmp_path / "r.html"
    out = wisp_cli("report", "export", str(path), "--html", str(html), "--dir", str(tmp_path),
                   cwd=tmp_path)  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert all(i in html.read_text() for i in ids)


def test_import_writes_a_report_and_lists_what_did_not_map(tmp_path: Path) -> None:
    """import converts a wandb spec to a file and prints each unmapped part on stderr."""
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps(VIEW))
    out = wisp_cli("report", "import", str(spec), "-o", str(tmp_path / "w.md"), cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "w.md: 4 panels, 1 run sets" in out.stdout
    assert out.stderr.count("not imported:") == 3
    assert (tmp_path / "w.md").read_text().startswith("---\nwisp-report: 1\n")


def test_a_broken_file_is_a_usage_error(tmp_path: Path) -> None:
    """A report with an unknown panel field exits 2 naming the file, line and field."""
    path = tmp_path / "r.md"
    path.write_text(
        "---\nproject: p\nrunsets: {a: {}}\n---\n```wisp-panel\ntype: line\ny: x\nz: 1\n```\n"
    )
    out = wisp_cli("report", "lint", str(path), cwd=tmp_path)
    assert out.returncode == 2
    assert "line 5: panel 1: z: unknown field for a line panel" in out.stderr

"""The HTML export (src/wisp/reports/_html.py, _markdown.py): one file, nothing fetched."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.reports.conftest import report_text
from wisp.reports import Report
from wisp.reports._html import colors
from wisp.reports._markdown import to_html


def test_export_inlines_every_runs_data_and_refers_to_nothing_outside(
    runs: list[str], tmp_path: Path
) -> None:
    """The file holds the panel data of each selected run and no http(s) src/href/url()."""
    out = Report.from_markdown(report_text(runs)).export_html(tmp_path / "r.html", tmp_path)
    page = Path(out).read_text()
    blob = re.search(r'id="wisp-report-data">(.*?)</script>', page, re.S)
    assert blob is not None
    data = json.loads(blob.group(1))
    drawn = {r for ln in data["panels"][0]["lines"] for r in ln["runs"]}
    assert drawn == set(runs[:3])
    assert re.findall(r'(?:src|href)="(?!data:|#)', page) == []
    assert "url(" not in page and "<link" not in page
    assert page.count('class="line"') == 2 and page.count('class="bar"') == 2
    assert "default-src 'none'" in page  # the CSP forbids any fetch a viewer might add


def test_markdown_is_escaped_and_links_are_checked() -> None:
    """Raw HTML shows as text, javascript: links lose their target, tables and lists render."""
    got = to_html(
        "# T\n\n<script>x()</script> [a](javascript:alert(1)) [b](https://e.org)\n\n"
        "| h |\n|---|\n| **c** |\n\n- one\n- two `<i>`\n\n```\n<b>\n```"
    )
    assert "<script>" not in got and "&lt;script&gt;" in got
    assert 'href="javascript' not in got and '<a href="https://e.org">b</a>' in got
    assert "<th>h</th>" in got and "<td><strong>c</strong></td>" in got
    assert "<li>two <code>&lt;i&gt;</code></li>" in got and "<pre><code>&lt;b&gt;" in got


def test_run_colours_follow_the_dashboards_rule() -> None:
    """FNV-1a of the id picks the palette colour (web/src/colors.ts); clashes move on."""
    got = colors(["a", "b", "a"])
    assert got == {"a": "#0072b2", "b": "#967869"}  # what colors.ts gives (node)
    assert len(set(colors([f"r{i}" for i in range(20)]).values())) == 20

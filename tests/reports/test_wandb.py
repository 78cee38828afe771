"""Importing a wandb report spec (src/wisp/reports/_wandb.py): what maps, and what is listed."""

from __future__ import annotations

import json

from wisp.reports import Report
from wisp.reports._wandb import from_wandb

T = {"text": ""}
VIEW = {
    "displayName": "Sweep results",
    "description": "from wandb",
    "project": {"name": "spiral", "entityName": "team"},
    "spec": json.dumps({"version": 5, "width": "readable", "blocks": [
        {"type": "heading", "level": 2, "children": [{"text": "Results"}]},
        {"type": "paragraph", "children": [
            {"text": "See "}, {"type": "link", "url": "https://x.org", "children": [{"text": "x"}]},
            {"text": "code", "inlineCode": True}]},
        {"type": "list", "children": [
            {"type": "list-item", "children": [{"text": "one"}]},
            {"type": "list-item", "children": [{"text": "two"}], "checked": True}]},
        {"type": "code-block", "language": "python", "children": [
            {"type": "code-line", "children": [{"text": "print(1)"}]}]},
        {"type": "panel-grid", "children": [T], "metadata": {
            "runSets": [{"name": "Sweep runs", "enabled": True, "search": {"query": ""},
                         "filters": {"op": "OR", "filters": [{"op": "AND", "filters": [
                             {"op": ">", "key": {"section": "config", "name": "lr.value"},
                              "value": 0.0001},
                             {"op": "IN", "key": {"section": "run", "name": "tags"},
                              "value": ["sweep"]}]}]},
                         "grouping": [{"section": "config", "name": "lr"}]}],
            "panelBankSectionConfig": {"panels": [
                {"viewType": "Run History Line Plot", "config": {
                    "metrics": ["val/loss"], "xAxis": "_step", "yLogScale": True,
                    "smoothingWeight": 0.8, "groupArea": "stddev", "chartTitle": "Loss",
                    "expressions": ["x*2"]}},
                {"viewType": "Scatter Plot", "config": {"xAxis": "c::lr", "yAxis": "best"}},
                {"viewType": "Parallel Coordinates Plot", "config": {"columns": [
                    {"accessor": "c::lr"}, {"accessor": "summary:best"}]}},
                {"viewType": "Vega2", "config": {}},
                {"viewType": "Markdown Panel", "config": {"value": "**note**"}}]}}},
        {"type": "twitter", "html": "<blockquote/>", "children": [T]},
    ]}),
}  # fmt: skip


def test_a_wandb_report_maps_to_text_run_sets_and_panels() -> None:
    """Blocks become Markdown, the panel grid a run set and panels; the file reads back."""
    report, _ = from_wandb(VIEW)
    assert report.title == "Sweep results" and report.project == "spiral"
    text = report.markdown
    assert "## Results" in text and "See [x](https://x.org)`code`" in text
    assert "- one\n- [x] two" in text and "```python\nprint(1)\n```" in text
    rs = report.runsets["sweep-runs"]
    assert rs.filter == 'config.lr > 0.0001 and (tags contains "sweep")'
    assert rs.group == ["config.lr"]
    line, scatter, parallel, note = report.panels
    assert line.to_yaml() == {"type": "line", "title": "Loss", "runset": "sweep-runs",
                              "y": ["val/loss"], "x": "step", "log_y": True, "smooth": 0.8,
                              "band": "std"}  # fmt: skip
    assert (scatter.options["x"], scatter.options["y"]) == ("config.lr", "best")
    assert parallel.options["columns"] == ["config.lr", "summary.best"]
    assert note.options["text"] == "**note**"
    assert Report.from_markdown(text).markdown == text


def test_what_does_not_map_is_listed_and_noted_in_place() -> None:
    """Vega panels, embeds and unmapped options are in the list and quoted in the report."""
    report, unmapped = from_wandb(json.dumps(VIEW))
    assert any("panel 1: line plot options expressions" in u for u in unmapped)
    assert any("panel 4: panel Vega2" in u for u in unmapped)
    assert any("block 6: a twitter block" in u for u in unmapped)
    assert len(unmapped) == 3
    assert report.markdown.count("Not imported from wandb") == 2

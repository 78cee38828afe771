"""The report file format (src/wisp/reports/_format.py, _panels.py): round trip and errors."""

from __future__ import annotations

import pytest

from tests.reports.conftest import report_text
from wisp.errors import UsageError
from wisp.reports import Panel, Report

IDS = ["aaaa1111", "b", "c", "dddd4444"]


def test_a_parsed_file_is_written_back_byte_for_byte() -> None:
    """Parsing then writing a report gives the same bytes, comments and code blocks included."""
    text = report_text(IDS)
    report = Report.from_markdown(text)
    assert report.markdown == text
    assert [p.type for p in report.panels] == ["line", "bar"]
    assert report.runsets["sweep"].group == ["config.lr"]
    assert report.runsets["base"].runs == ["aaaa1111", "dddd4444"]


def test_only_wisp_panel_fences_are_panels() -> None:
    """A wisp-panel block quoted inside a longer fence stays Markdown."""
    text = report_text(IDS) + "\n````markdown\n```wisp-panel\ntype: nonsense\n```\n````\n"
    report = Report.from_markdown(text)
    assert len(report.panels) == 2 and report.markdown == text


def test_a_report_built_in_python_reads_back_the_same() -> None:
    """add_runset/add_text/add_panel write a file that loads to the same panels and run sets."""
    r = Report(title="t", project="spiral")
    r.add_runset("s", filter="config.lr > 1e-4", group=["config.lr", "tags"])
    r.add_text("Some *prose*.")
    r.add_panel("line", runset="s", y="val/loss", x="acc", smooth=0.6, log_y=True)
    r.add_panel("scatter", runs="config.lr < 1", x="config.lr", y="summary.best")
    r.add_panel("markdown", text="hi")
    back = Report.from_markdown(r.markdown)
    assert back.markdown == r.markdown
    assert [p.to_yaml() for p in back.panels] == [p.to_yaml() for p in r.panels]
    assert back.panels[0].options == {"y": ["val/loss"], "x": "acc", "smooth": 0.6, "log_y": True}
    assert back.panels[1].runs is not None and back.panels[1].runs.filter == "config.lr < 1"
    assert "y: [val/loss]" in r.markdown  # lists of plain values stay on one line


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("type: pie\ny: [a]", "line 10: panel 1: type: expected one of line"),
        ("type: line\nrunset: sweep", "panel 1: y: required for a line panel"),
        ("type: line\nrunset: sweep\ny: [a]\ncolour: red", "panel 1: colour: unknown field"),
        ("type: line\nrunset: nope\ny: [a]", "runset: 'nope' is not a run set (sweep, base)"),
        ("type: line\nrunset: sweep\ny: [a]\nsmooth: 2", "smooth: expected a number in 0..0.99"),
        ("type: line\nruns: 'lr <'\ny: [a]", "panel 1: runs.filter: invalid filter"),
        ("type: line\nruns: [bad id]\ny: [a]", "runs.runs[0]: 'bad id'"),
        ("type: scatter\nrunset: sweep\nx: config.lr\ny: colour.x", None),
        ("- just\n- a list", "a panel is a YAML mapping"),
        ("type: [unclosed", "not valid YAML"),
    ],
)
def test_bad_panels_are_refused_naming_line_and_field(spec: str, message: str | None) -> None:
    """Each fault is a UsageError naming where (line, panel) and the field."""
    head = report_text(IDS).split("Warm-up")[0]
    text = head + "Text.\n\n```wisp-panel\n" + spec + "\n```\n"
    if message is None:
        Report.from_markdown(text)  # a bare name is a summary key: accepted
        return
    with pytest.raises(UsageError) as err:
        Report.from_markdown(text, "r.md")
    assert message in str(err.value)
    assert str(err.value).startswith("r.md:")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("no front matter\n", "starts with a '---' line"),
        ("---\ntitle: x\n", "never closed"),
        ("---\nwisp-report: 2\n---\n", "format version 2 is not supported"),
        ("---\nowner: me\n---\n", "front matter: owner: unknown field"),
        ("---\nproject: a/b/c\n---\n", "front matter: project"),
        ("---\nrunsets: {s: {filter: 'x ==='}}\n---\n", "runsets.s.filter"),
        ("---\nrunsets: {s: {limit: 3}}\n---\n", "runsets.s.limit: unknown field"),
        ("---\n---\n```wisp-panel\ntype: line\ny: [a]\n```\n", "define a run set"),
        ("---\n---\n```wisp-panel\ntype: line\n", "line 3: wisp-panel block is never closed"),
    ],
)
def test_bad_files_are_refused_with_the_reason(text: str, message: str) -> None:
    """Front matter, version and fence faults are UsageErrors saying what is wrong."""
    with pytest.raises(UsageError, match=message.replace("(", r"\(").replace(")", r"\)")):
        Report.from_markdown(text)


def test_a_workspace_panel_is_a_line_panel_and_back() -> None:
    """One panel model: a workspace's PanelSpec converts to a line panel and back unchanged."""
    spec = {"id": "p1", "keys": ["loss", "acc"], "kind": "line", "title": "L", "x": "step",
            "smooth": 0.5, "smooth_mode": "ema", "log_y": True, "y_min": None, "y_max": 2.0,
            "w": 2, "h": 300}  # fmt: skip
    panel = Panel.from_workspace(spec)
    assert panel.type == "line" and panel.options["y"] == ["loss", "acc"]
    back = panel.to_workspace("p1")
    assert back == {k: v for k, v in spec.items() if v is not None}

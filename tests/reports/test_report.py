"""wisp.Report against local runs (src/wisp/reports/_report.py, _data.py, _source.py)."""

from __future__ import annotations

from pathlib import Path

from tests.reports.conftest import LRS, log_run, report_text
from wisp.reports import Report


def _lines(data: dict, i: int) -> list[dict]:
    lines: list[dict] = data["panels"][i]["lines"]
    return lines


def test_run_sets_select_by_filter_and_by_id_and_group(runs: list[str], tmp_path: Path) -> None:
    """The sweep run set draws its three runs as two groups; the base set its two ids only."""
    report = Report.from_markdown(report_text(runs))
    data = report.data(tmp_path)
    assert sorted(data["runsets"]["sweep"]["selected"]) == sorted(runs[:3])
    assert data["runsets"]["base"]["selected"] == [runs[0], runs[3]]
    lines = _lines(data, 0)
    assert sorted(len(ln["runs"]) for ln in lines) == [1, 2]  # lr 1e-3 twice, 1e-4 once
    assert all(ln["x"][0] == 0 and ln["x"][-1] == 49 for ln in lines)
    pooled = next(ln for ln in lines if len(ln["runs"]) == 2)
    assert pooled["y"][0] == LRS[0] * 1000  # both runs logged the same values
    bars = data["panels"][1]["bars"]
    assert sorted(b["value"] for b in bars) == sorted([LRS[0] * 10, LRS[3] * 10])


def test_lint_names_missing_keys_runs_and_empty_run_sets(runs: list[str], tmp_path: Path) -> None:
    """lint reports a misspelt key with a suggestion, an unknown run id, a set selecting none."""
    text = report_text(runs).replace("y: [val/loss]", "y: [val/los]").replace(runs[3], "nope123")
    text = text.replace("group: config.lr}", "group: config.lr}\n  none: {filter: 'config.lr > 5'}")
    found = [str(f) for f in Report.from_markdown(text).lint(tmp_path)]
    assert any("run 'nope123' is not in 'spiral'" in f and f.startswith("error") for f in found)
    assert any("runset none: selects no runs" in f and f.startswith("warning") for f in found)
    assert any("line 11" in f and "'val/los' (did you mean 'val/loss'?)" in f for f in found)
    assert Report.from_markdown(report_text(runs)).lint(tmp_path) == []


def test_a_frozen_report_ignores_runs_and_steps_logged_later(
    runs: list[str], tmp_path: Path
) -> None:
    """After freeze, a new matching run does not appear and a resumed run's new steps are cut."""
    path = tmp_path / "r.md"
    path.write_text(report_text(runs))
    report = Report.load(path)
    done = report.freeze(tmp_path)
    assert done[0].startswith("sweep: 3 runs, steps <= 49")
    report.save(path)
    frozen = Report.load(path)
    assert frozen.runsets["sweep"].runs == report.runsets["sweep"].runs
    assert frozen.runsets["sweep"].frozen and "frozen_at" in path.read_text()
    late = log_run(1e-4, ["sweep"], steps=80)  # matches the filter, longer than the others
    live = Report.from_markdown(report_text(runs)).data(tmp_path)
    assert late in live["runsets"]["sweep"]["selected"]
    data = frozen.data(tmp_path)
    assert late not in data["runsets"]["sweep"]["selected"]
    assert all(late not in ln["runs"] for ln in _lines(data, 0))
    assert frozen.freeze(tmp_path) == []  # frozen sets stay as they are
    again = Report.load(path)
    again.freeze(tmp_path, again=True)
    assert late in (again.runsets["sweep"].runs or [])
    assert again.runsets["sweep"].max_step == 79


def test_panel_types_draw_their_data(runs: list[str], tmp_path: Path) -> None:
    """Scalar, scatter, parallel, compare and runs panels compute from config and summary."""
    r = Report(title="all", project="spiral")
    r.add_runset("all", filter="")
    r.add_panel("scalar", y="best", agg="max")
    r.add_panel("scatter", x="config.lr", y="best")
    r.add_panel("parallel", columns=["config.lr", "best"])
    r.add_panel("compare")
    r.add_panel("runs", columns=["config.lr", "tags"])
    r.add_panel("line", y="val/loss", band="none", x="acc")
    scalar, scatter, parallel, compare, table, line = r.data(tmp_path)["panels"]
    assert scalar["value"] == max(LRS) * 10 and scalar["n"] == 4
    assert sorted((p["x"], p["y"]) for p in scatter["points"]) == sorted(
        (lr, lr * 10) for lr in LRS
    )
    assert len(parallel["rows"]) == 4
    assert "config.lr" in {row["field"] for row in compare["rows"]}
    assert {tuple(row["values"][1]) for row in table["rows"]} == {("sweep",), ()}
    assert len(line["lines"]) == 4 and all(ln["min"] is None for ln in line["lines"])
    assert all(ln["x"][:2] == [0.0, 0.02] for ln in line["lines"])  # against a logged metric


def test_a_media_panel_inlines_the_last_image_within_the_bounds(tmp_path: Path) -> None:
    """The image of the last step <= step: is inlined as a data: URI; a run without it is left out."""
    import numpy as np

    import wisp

    run = wisp.init(project="spiral", mode="offline")
    for s in range(3):
        run.log({"pic": wisp.Image(np.full((4, 4, 3), 60 * s, dtype=np.uint8))}, step=s)
    run.finish()
    log_run(1e-3, [])
    r = Report(title="m", project="spiral")
    r.add_runset("all", filter="")
    r.add_panel("media", key="pic", step=1)
    (panel,) = r.data(tmp_path)["panels"]
    (item,) = panel["items"]
    assert item["run"] == run.id and item["step"] == 1
    assert item["src"].startswith("data:image/png;base64,")


def test_a_media_panel_shows_audio_video_tables_and_html(tmp_path: Path) -> None:
    """Audio, video, a table and an HTML page logged at a step are inlined (players as data:
    URIs, the table's rows, the page's text) and drawn by the export."""
    import numpy as np

    import wisp

    clip = tmp_path / "clip.mp4"
    clip.write_bytes(b"\x00\x00\x00\x18ftypmp42" + bytes(64))
    run = wisp.init(project="spiral", mode="offline")
    tone = (np.sin(np.arange(800) / 5) * 0.5).astype(np.float32)
    table = wisp.Table(columns=["a", "b"], data=[[i, f"row{i}"] for i in range(150)])
    values = {
        "sound": wisp.Audio(tone, sample_rate=8000),
        "clip": wisp.Video(str(clip)),
        "rows": table,
        "page": wisp.Html("<h2>hello from a run</h2><script>alert(1)</script>"),
    }
    run.log(values, step=2)
    run.finish()
    r = Report(title="m", project="spiral")
    r.add_runset("all", filter="")
    for key in values:
        r.add_panel("media", key=key)
    sound, video, rows, page = (p["items"][0] for p in r.data(tmp_path)["panels"])
    assert sound["kind"] == "audio" and sound["src"].startswith("data:audio/wav;base64,")
    assert video["kind"] == "video" and video["src"].startswith("data:video/mp4;base64,")
    assert rows["kind"] == "table" and rows["table"]["columns"] == ["a", "b"]
    assert rows["table"]["n"] == 150 and rows["table"]["rows"][3] == [3, "row3"]
    assert len(rows["table"]["rows"]) == 100
    assert page["kind"] == "html" and "hello from a run" in page["html"]
    html = Path(r.export_html(tmp_path / "m.html", tmp_path)).read_text()
    assert '<audio controls preload="metadata" src="data:audio/wav' in html
    assert '<video controls preload="metadata" src="data:video/mp4' in html
    assert "<td>row3</td>" in html and "100 of 150 rows" in html
    frame = html.index('<iframe sandbox="" srcdoc="')
    assert html.index("&lt;h2&gt;hello from a run", frame) < html.index("</iframe>", frame)
    assert "<script>alert" not in html  # the page's data holds no "<" either

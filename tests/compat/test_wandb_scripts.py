"""wandb-style scripts run under ``import wisp as wandb`` (and, where cheap, the real wandb)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

import wisp
from tests.compat._recorded import Recorded
from tests.compat.conftest import needs_wandb, run_script, unflatten

IMPLS = ["wisp", "wandb"]


def _assert_hist(got: dict[str, object], values: np.ndarray, bins: int) -> None:
    counts, edges = np.histogram(values, bins=bins)
    assert got["_type"] == "histogram" and got["counts"] == counts.tolist()
    assert got["bins"] == pytest.approx(edges.tolist())


@pytest.mark.parametrize("impl", IMPLS)
def test_arrays_log_as_lists_and_histograms(tmp_path: Path, impl: str) -> None:
    """Arrays and CPU tensors log as lists up to 32 elements and 32-bin histograms above,
    and as statistics in the summary, the same under wisp and wandb."""
    needs_wandb(impl)
    out = run_script("arrays", tmp_path, impl)
    rec = Recorded(impl, tmp_path, out["run_dir"])
    (row,) = rec.rows
    assert row["per_class_acc"] == [0.5, 0.25, 0.75]
    assert row["confusion"] == [[1, 2], [3, 4]]
    assert row["t_small"] == [1.0, 2.0]
    assert row["empty"] == []
    _assert_hist(row["weights"], np.arange(100.0), 32)
    _assert_hist(row["t_big"], np.arange(40.0), 32)
    assert rec.summary["last_acc"] == [0.5, 0.25]
    dist = rec.summary["dist"]
    assert dist["_type"] == "numpy.ndarray" and dist["size"] == 40
    assert dist["mean"] == pytest.approx(19.5) and dist["max"] == 39.0
    assert dist["10%"] == pytest.approx(np.percentile(np.arange(40.0), 10))


@pytest.mark.parametrize("impl", IMPLS)
def test_lifecycle_matches_wandb(tmp_path: Path, impl: str) -> None:
    """wandb.run is None after finish() and `with`; create_new keeps both runs live and
    leaves wandb.run alone; return_previous returns the newest live run."""
    needs_wandb(impl)
    out = run_script("lifecycle", tmp_path, impl)
    for key in (
        "run_while_live",
        "run_after_finish",
        "run_in_with",
        "run_after_with",
        "create_new_keeps_current",
        "return_previous_is_newest",
        "current_after_other_finished",
        "none_at_end",
    ):
        assert out[key] is True, key
    if impl == "wisp":
        first, second = (wisp.open_run(d) for d in out["dirs"])
        assert [r["a"] for r in first.history()] == [1, 3] and first.state == "finished"
        assert [r["b"] for r in second.history()] == [2] and second.state == "finished"


@pytest.mark.parametrize("impl", IMPLS)
def test_config_summary_and_define_metric(tmp_path: Path, impl: str) -> None:
    """allow_val_change is not a key, setdefaults keeps set values, int keys become strings,
    nested and attribute summary access work, and define_metric keeps every summary kind."""
    needs_wandb(impl)
    out = run_script("data", tmp_path, impl)
    assert out["eval"] == {"f1": 0.6, "p": 0.5} and out["best_attr"] == 5
    assert out["metric_name"] == "loss" and out["lr"] == 0.01
    assert out["config_keys"] == ["batch_size", "epochs", "id2label", "lr"]
    rec = Recorded(impl, tmp_path, out["run_dir"])
    assert rec.config["id2label"] == {"0": "cat", "1": "dog"}
    assert "allow_val_change" not in rec.config
    s = rec.summary
    assert s["loss"] == {"min": 0.4, "max": 0.9}
    assert s["acc"] == {"min": 0.1, "max": 0.7}
    assert s["eval"] == {"f1": 0.6, "p": 0.5} and s["best"] == 5
    val_rows = [r for r in rec.rows if "val" in r]
    assert [r.get("epoch") for r in val_rows] == [0, 1, 2]  # step_sync filled it in


def test_define_metric_goal_single_kind_and_object(tmp_path: Path) -> None:
    """One summary kind keeps wisp's flat value; the call returns a Metric describing it."""
    out = run_script("data", tmp_path)
    data = wisp.open_run(out["run_dir"])
    assert data.summary["val_loss"] == pytest.approx(1.4)
    specs = {m["name"]: m for m in data.metrics}
    assert specs["loss"]["summary"] == "min,max"
    assert specs["val_loss"]["goal"] == "minimize"
    assert specs["val/*"]["step_sync"] is True and specs["val/*"]["step_metric"] == "epoch"


def test_wandb_environment_fills_init(tmp_path: Path) -> None:
    """WANDB_PROJECT, NAME, TAGS, NOTES, RUN_ID, RUN_GROUP, JOB_TYPE and DIR set the run;
    WISP_PROJECT wins over WANDB_PROJECT; WANDB_API_KEY is never written anywhere."""
    env = {
        "WANDB_PROJECT": "wandb-proj",
        "WANDB_NAME": "from-env",
        "WANDB_TAGS": "a,b",
        "WANDB_NOTES": "note",
        "WANDB_RUN_ID": "envrun1",
        "WANDB_RUN_GROUP": "grp",
        "WANDB_JOB_TYPE": "train",
        "WANDB_DIR": str(tmp_path / "wd"),
        "WANDB_API_KEY": "secret-wandb-key",
        "WANDB_MODE": "online",  # no wisp server configured: stays offline
    }
    out = run_script("env", tmp_path, env=env)
    assert out["project"] == "wandb-proj" and out["name"] == "from-env"
    assert out["tags"] == ["a", "b"] and out["notes"] == "note" and out["id"] == "envrun1"
    assert out["group"] == "grp" and out["job_type"] == "train"
    assert out["dir"].startswith(str(tmp_path / "wd"))
    data = wisp.open_run(out["dir"])
    assert data.metadata["mode"] == "offline" and data.metadata["group"] == "grp"
    for root, _dirs, names in os.walk(tmp_path):
        for n in names:
            assert b"secret-wandb-key" not in Path(root, n).read_bytes()
    again = run_script("env", tmp_path, env={**env, "WISP_PROJECT": "wisp-proj"})
    assert again["project"] == "wisp-proj"


def test_wandb_mode_disabled_writes_nothing(tmp_path: Path) -> None:
    """CI with WANDB_MODE=disabled records no run at all."""
    out = run_script("env", tmp_path, env={"WANDB_MODE": "disabled"})
    assert out["disabled"] is True and out["dir"] is None
    assert not (tmp_path / "wisp").exists()


def test_wandb_resume_and_console_variables(tmp_path: Path) -> None:
    """WANDB_RUN_ID + WANDB_RESUME=allow continue the run; WANDB_CONSOLE=off captures nothing."""
    env = {"WANDB_RUN_ID": "resumeme", "WANDB_RESUME": "allow", "WANDB_CONSOLE": "off"}
    first = run_script("env", tmp_path, env=env)
    second = run_script("env", tmp_path, env=env)
    assert first["dir"] == second["dir"]
    data = wisp.open_run(second["dir"])
    assert [r["_step"] for r in data.history()] == [0, 1]
    assert "console" not in data.records


def test_wandb_settings_are_accepted_and_mapped(tmp_path: Path) -> None:
    """Settings(silent=..., x_disable_stats=..., _disable_stats=...) map to wisp settings;
    a no-op setting (start_method) warns once per process."""
    out = run_script("settings_script", tmp_path, env={"WISP_SYSTEM_METRICS": "true"})
    assert out["silent"] is True and out["again_ok"]
    assert [w for w in out["warnings"] if "start_method" in w] == [
        "wisp: wandb setting 'start_method' has no effect in wisp"
    ]
    data = wisp.open_run(out["run_dir"])
    assert "system" not in data.records  # x_disable_stats turned the sampler off


def test_run_attributes_identity_changes_and_run_dir_files(tmp_path: Path) -> None:
    """run.path is entity/project/id; name/tags/notes set mid-run reach the run file;
    watch/unwatch, alert, mark_preempting work as methods; a file written into run.dir is
    saved at finish."""
    out = run_script("run_api", tmp_path)
    assert out["path"] == f"team/compat/{out['id']}" and out["entity"] == "team"
    assert out["offline"] is True and out["resumed"] is False and out["url"] is None
    assert out["project_name"] == "compat" and out["start_time"] > 1e9
    data = wisp.open_run(out["run_dir"])
    assert data.name == "after"
    assert data.metadata["tags"] == ["a", "b"] and data.metadata["notes"] == "n1"
    meta = json.loads((Path(out["run_dir"]) / "run.json").read_text())
    assert meta["name"] == "after"
    assert [a["title"] for a in data.records["alert"]] == ["t", "preempting"]
    watched = [r for r in data.history() if "parameters/weight" in r]
    assert len(watched) == 1 and watched[0]["x"] == 3.0  # run.unwatch() removed the hooks
    assert watched[0]["gradients/weight"]["_type"] == "histogram"
    (saved,) = [f for f in data.records["file"] if f["name"] == "model.txt"]
    assert (Path(out["run_dir"]) / saved["path"]).read_text() == "weights v1"


def test_identity_change_reaches_the_server(tmp_path: Path) -> None:
    """A run renamed mid-run shows the new name, tags and notes on the server after sync,
    filed under its entity's project (``entity="team"``: the team's ``team/compat``)."""
    pytest.importorskip("sqlalchemy")
    from wisp.server import teams_add
    from wisp.testing import Server

    out = run_script("run_api", tmp_path)
    with Server(tmp_path / "srv") as srv:
        teams_add("team", db=srv.db_url)
        wisp.sync(out["run_dir"], server_url=srv.url, api_key=srv.key, progress=False)
        got = srv.get(f"/runs/{out['id']}")
        project = srv.get("/entities/team/projects/compat")
    assert got["name"] == "after" and got["tags"] == ["a", "b"] and got["notes"] == "n1"
    assert got["project"] == "team/compat"
    assert project["owner"] == "team" and project["owner_kind"] == "team"


@pytest.mark.parametrize("impl", IMPLS)
def test_media_built_the_wandb_way(tmp_path: Path, impl: str) -> None:
    """Histogram(sequence=).histogram/.bins and Table.add_column/get_column behave as wandb's."""
    needs_wandb(impl)
    out = run_script("media", tmp_path, impl)
    want_counts, want_edges = np.histogram([1.0, 2.0, 2.5, 4.0], bins=3)
    assert out["histogram"] == want_counts.tolist()
    assert out["bins"] == pytest.approx(want_edges.tolist())
    assert out["column"] == ["a", "b", "c"] and out["column_np"] == [1, 2, 3]


def test_image_pixels_masks_and_boxes(tmp_path: Path) -> None:
    """A float image of 128.0 is stored as 128 (0-255, as wandb); masks are stored as PNGs of
    class ids and boxes as given; the table holds the added column."""
    from PIL import Image as PILImage

    out = run_script("media", tmp_path)
    run_dir = Path(out["run_dir"])
    data = wisp.open_run(str(run_dir))
    (row,) = data.history()
    img = row["img"]
    pixels = np.asarray(PILImage.open(run_dir / img["path"]))
    assert (pixels == 128).all()
    mask = np.asarray(PILImage.open(run_dir / img["masks"]["pred"]["path"]))
    want = np.zeros((8, 8), dtype=np.uint8)
    want[2:4, 2:6] = 3
    assert (mask == want).all()
    assert img["masks"]["pred"]["class_labels"] == {"0": "bg", "3": "cat"}
    (box,) = img["boxes"]["pred"]["box_data"]
    assert (
        box["position"]["maxY"] == 0.6 and box["class_id"] == 3 and box["scores"] == {"conf": 0.9}
    )
    assert data.table("table") == [
        {"id": 1, "label": "a"},
        {"id": 2, "label": "b"},
        {"id": 3, "label": "c"},
    ]


def test_save_end_log_code_and_restore(tmp_path: Path) -> None:
    """save(policy="end") stores the file as it is at finish; log_code saves code/...;
    restore() brings a saved file back from a local run."""
    out = run_script("files", tmp_path, "wisp", None, "train")
    run_dir = Path(out["run_dir"])
    data = wisp.open_run(str(run_dir))
    files = {f["name"]: f for f in data.records["file"]}
    assert (run_dir / files["ckpt.txt"]["path"]).read_text() == "epoch 9"
    assert files["ckpt.txt"]["policy"] == "end"
    assert (run_dir / files["src/model.py"]["path"]).read_text() == "MODEL = 1\n"
    assert files["code/src/model.py"]["kind"] == "code"
    back = run_script("files", tmp_path, "wisp", None, "restore")
    assert back["text"] == "epoch 9"


def test_star_import_and_hasattr_outside_a_run(tmp_path: Path) -> None:
    """`from wisp import *` works, hasattr(wisp, "config") is True, unknown names are
    AttributeError, and reading config before init raises a run-state error."""
    out = run_script("star", tmp_path)
    assert out["has_config"] is True and out["has_summary"] is True
    assert out["has_nonsense"] is False and out["run_is_none"] is True
    assert out["config_read"] == "RunStateError"


def test_unflatten_helper() -> None:
    """The comparison helper nests '/'-joined keys."""
    assert unflatten({"a/b": 1, "c": 2}) == {"a": {"b": 1}, "c": 2}

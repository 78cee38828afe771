"""wisp.Html and wisp.Object3D: stored files round-trip; bad input is refused."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

import wisp
from wisp.errors import UsageError, WriterError
from wisp.media._html import INJECT
from wisp.media._read import read_points

from .conftest import logged


def _file(r: wisp.Run, value: dict[str, Any]) -> str:
    assert r.dir is not None
    return os.path.join(r.dir, value["path"])


def test_html_string_is_stored_verbatim_without_inject(run: wisp.Run):
    """Html(str, inject=False) stores exactly the given UTF-8 text as a .html file."""
    text = "<html><body><p>naïve ✓</p><script>1</script></body></html>"
    run.log({"page": wisp.Html(text, inject=False, caption="report")})
    value = logged(run, "page")
    assert value["_type"] == "html" and value["caption"] == "report"
    assert value["path"].endswith(".html")
    assert Path(_file(run, value)).read_text("utf-8") == text


def test_html_inject_goes_into_head(make_run: Any, tmp_path: Path):
    """inject=True puts the charset and base style at the start of <head> (one is made if
    missing); paths and open files are read."""
    path = tmp_path / "r.html"
    path.write_text("<html><head><title>t</title></head><body>x</body></html>", "utf-8")
    r = make_run()
    r.log(
        {
            "a": wisp.Html(path),
            "b": wisp.Html(io.StringIO("<b>bold</b>")),
            "c": wisp.Html(str(path)),
        }
    )
    assert r.dir is not None
    r.finish()
    d = wisp.open_run(r.dir)
    a = Path(d.media_files("a")[1][0][0]).read_text("utf-8")
    b = Path(d.media_files("b")[1][0][0]).read_text("utf-8")
    assert a == f"<html><head>{INJECT}<title>t</title></head><body>x</body></html>"
    assert b == f"<head>{INJECT}</head><b>bold</b>"
    assert d.media_files("c")[1][0][0] == d.media_files("a")[1][0][0]  # same content, one file


def test_html_data_is_not_path(run: wisp.Run):
    """data_is_not_path=True stores a path-like string as the document itself."""
    run.log({"page": wisp.Html("report.html", inject=False, data_is_not_path=True)})
    assert Path(_file(run, logged(run, "page"))).read_text("utf-8") == "report.html"


@pytest.mark.parametrize(
    ("args", "match"),
    [((b"<p>",), "has type bytes"), (("x.html",), "no such file"), (("<p>", "yes"), "inject")],
)
def test_html_bad_input(args: tuple[Any, ...], match: str):
    """Bytes, missing files and a non-bool inject are refused with UsageError."""
    with pytest.raises(UsageError, match=match):
        wisp.Html(*args)


def test_points_xyz_round_trip_exactly(run: wisp.Run):
    """An (N, 3) float32 cloud is stored as wisp.points and read back bit for bit."""
    pts = np.random.default_rng(0).normal(size=(1000, 3)).astype(np.float32)
    run.log({"cloud": wisp.Object3D(pts, caption="c")})
    value = logged(run, "cloud")
    assert (value["format"], value["points"], value["caption"]) == ("points", 1000, "c")
    cloud = read_points(_file(run, value))
    np.testing.assert_array_equal(cloud.positions, pts)
    assert cloud.colors is None and cloud.categories is None


def test_points_with_categories_and_colours(make_run: Any):
    """(N, 4) keeps integer categories; (N, 6) keeps 0-255 colours exactly (torch input too)."""
    r = make_run()
    cat = np.array([[0, 0, 0, 1], [1, 2, 3, 7], [4, 5, 6, 65535]], dtype=np.float64)
    rgb = torch.tensor([[0.5, 1, 2, 255, 0, 10], [3, 4, 5, 1, 2, 3]])
    r.log({"cat": wisp.Object3D(cat), "rgb": wisp.Object3D(rgb)})
    assert r.dir is not None
    r.finish()
    d = wisp.open_run(r.dir)
    a = read_points(d.media_files("cat")[1][0][0])
    np.testing.assert_array_equal(a.categories, [1, 7, 65535])
    np.testing.assert_array_equal(a.positions, cat[:, :3])
    b = read_points(d.media_files("rgb")[1][0][0])
    np.testing.assert_array_equal(b.colors, [[255, 0, 10], [1, 2, 3]])
    np.testing.assert_allclose(b.positions, rgb[:, :3].numpy())


def test_pts_files_are_converted(make_run: Any, tmp_path: Path):
    """.pts text (with a count line) and .pts.json files become wisp.points clouds."""
    (tmp_path / "a.pts").write_text("2\n1 2 3\n4 5 6\n")
    (tmp_path / "b.pts.json").write_text(json.dumps([[1, 2, 3, 10, 20, 30]]))
    r = make_run()
    r.log(
        {"a": wisp.Object3D(tmp_path / "a.pts"), "b": wisp.Object3D(str(tmp_path / "b.pts.json"))}
    )
    assert r.dir is not None
    r.finish()
    d = wisp.open_run(r.dir)
    np.testing.assert_array_equal(
        read_points(d.media_files("a")[1][0][0]).positions, [[1, 2, 3], [4, 5, 6]]
    )
    assert d.scalars("a")[1][0]["points"] == 2
    np.testing.assert_array_equal(read_points(d.media_files("b")[1][0][0]).colors, [[10, 20, 30]])


@pytest.mark.parametrize("suffix", [".obj", ".stl", ".glb", ".gltf"])
def test_mesh_files_are_kept(run: wisp.Run, tmp_path: Path, suffix: str):
    """Mesh files are stored byte for byte with their format."""
    content = os.urandom(64)
    path = tmp_path / f"m{suffix}"
    path.write_bytes(content)
    run.log({"m": wisp.Object3D(path)})
    value = logged(run, "m")
    assert value["format"] == suffix[1:] and value["points"] is None
    assert Path(_file(run, value)).read_bytes() == content


@pytest.mark.parametrize(
    ("data", "match"),
    [
        (np.zeros((10, 5)), r"shape \(10, 5\); expected \(N, 3\) x y z"),
        (np.zeros((10,)), "expected"),
        (np.zeros((0, 3)), "N >= 1"),
        (np.zeros((3, 3), dtype=bool), "dtype bool"),
        ("mesh.ply", "unsupported file type"),
        ([[1, 2, 3]], "has type list"),
    ],
)
def test_object3d_bad_input(data: Any, match: str):
    """Wrong shapes, dtypes and file types are refused with UsageError."""
    with pytest.raises(UsageError, match=match):
        wisp.Object3D(data)


def test_bad_categories_fail_on_the_writer_and_are_reported(run: wisp.Run):
    """Non-integer categories are found on the writer thread: log() does not raise, other
    values are kept, and finish() reports the failure naming the key and what was expected."""
    run.log({"c": wisp.Object3D(np.array([[0, 0, 0, 0.5]]))})
    run.log({"ok": 1})
    with pytest.raises(WriterError, match=r"value 'c'.*category\) must hold integers"):
        run.finish()
    assert run.dir is not None
    assert wisp.open_run(run.dir).scalars("ok")[1] == [1]

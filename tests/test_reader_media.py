"""RunData's media readers: histograms as arrays, images as paths, tables as rows/DataFrames."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd
import pytest

import wisp
from wisp.errors import UsageError


@pytest.fixture
def data(tmp_path: Any) -> Iterator[wisp.RunData]:
    r = wisp.init(project="reader", dir=str(tmp_path), settings={"git": False})
    img = np.zeros((4, 6, 3), dtype=np.uint8)
    for step in range(3):
        r.log(
            {
                "h": wisp.Histogram([0.0, 1.0, 1.0, float("nan")], num_bins=2),
                "img": wisp.Image(img + step),
                "gallery": [wisp.Image(img), wisp.Image(img + 100)],
                "tab": wisp.Table(columns=["step", "pic"], data=[[step, wisp.Image(img)]]),
                "loss": 1.0,
            }
        )
    r.finish()
    assert r.dir is not None
    yield wisp.open_run(r.dir)


def test_histograms_as_arrays(data: wisp.RunData) -> None:
    """histograms() gives steps and numpy counts/edges with the NaN and inf counts."""
    steps, hists = data.histograms("h")
    assert steps == [0, 1, 2]
    h = hists[0]
    assert isinstance(h.counts, np.ndarray) and isinstance(h.edges, np.ndarray)
    assert h.counts.tolist() == [1, 2] and h.edges.tolist() == [0.0, 0.5, 1.0]
    assert (h.nan, h.inf) == (1, 0)


def test_images_as_paths(data: wisp.RunData) -> None:
    """images() gives absolute paths of existing files: one per image, several per gallery."""
    steps, images = data.images("img")
    assert steps == [0, 1, 2] and all(len(p) == 1 for p in images)
    assert all(os.path.isabs(p[0]) and os.path.isfile(p[0]) for p in images)
    assert len({p[0] for p in images}) == 3
    _, galleries = data.images("gallery")
    assert [len(g) for g in galleries] == [2, 2, 2]
    assert all(os.path.isfile(p) for g in galleries for p in g)


def test_table_rows_and_frame(data: wisp.RunData) -> None:
    """table() gives the last (or a chosen step's) rows as dicts; table_frame() a DataFrame."""
    rows = data.table("tab")
    assert [r["step"] for r in rows] == [2]
    assert os.path.isfile(rows[0]["pic"])
    assert data.table("tab", step=1)[0]["step"] == 1
    frame = data.table_frame("tab", step=0)
    assert isinstance(frame, pd.DataFrame)
    assert list(frame.columns) == ["step", "pic"] and frame["step"].tolist() == [0]


def test_wrong_kind_and_missing_keys(data: wisp.RunData) -> None:
    """Asking for the wrong kind of value, a missing key or a missing step is a clear error."""
    with pytest.raises(UsageError, match="'loss' holds float values, not histogram"):
        data.histograms("loss")
    with pytest.raises(UsageError, match="not image or images"):
        data.images("h")
    with pytest.raises(KeyError, match="nope"):
        data.table("nope")
    with pytest.raises(KeyError, match="step 9"):
        data.table("tab", step=9)

"""wisp.Table: construction, cells, snapshot at log(), the stored file, limits and errors."""

from __future__ import annotations

import datetime
import enum
import json
import os
from typing import Any

import numpy as np
import pandas as pd
import pytest
import torch

import wisp
from wisp.errors import UsageError, ValueLimitError
from wisp.media._table import MAX_COLUMNS, MAX_ROWS

from .conftest import logged, read_back


def _file(r: wisp.Run, value: dict[str, Any]) -> dict[str, Any]:
    assert r.dir is not None
    with open(os.path.join(r.dir, value["path"]), encoding="utf-8") as f:
        doc: dict[str, Any] = json.load(f)
    return doc


class Color(enum.IntEnum):
    RED = 1


def test_columns_and_data_stored_as_json_file(run: wisp.Run) -> None:
    """A table is stored as a wisp.table JSON file; the row holds its path, columns and size."""
    table = wisp.Table(
        columns=["a", "b", "c", "d"], data=[[1, 2.5, "x", True], [None, -1, "", False]]
    )
    run.log({"t": table})
    value = logged(run, "t")
    assert value["_type"] == "table" and value["path"].endswith(".table.json")
    assert value["columns"] == ["a", "b", "c", "d"] and value["rows"] == 2
    assert _file(run, value) == {
        "format": "wisp.table",
        "version": 1,
        "columns": ["a", "b", "c", "d"],
        "data": [[1, 2.5, "x", True], [None, -1, "", False]],
    }


def test_cell_conversions(run: wisp.Run) -> None:
    """numpy/torch scalars, int enums, NaN, dates and pandas NA become plain JSON cells."""
    table = wisp.Table(columns=["v"])
    for cell in (
        np.float32(0.5),
        np.int64(3),
        np.bool_(True),
        np.str_("s"),
        torch.tensor(2.0),
        Color.RED,
        float("nan"),
        datetime.date(2024, 1, 2),
        pd.NA,
    ):
        table.add_data(cell)
    run.log({"t": table})
    cells = [row[0] for row in _file(run, logged(run, "t"))["data"]]
    assert cells[:7] == [0.5, 3, True, "s", 2.0, 1, pytest.approx(float("nan"), nan_ok=True)]
    assert cells[7:] == ["2024-01-02", None]
    assert type(cells[5]) is int


def test_image_cells(run: wisp.Run) -> None:
    """Image cells are stored as media files and referenced from the table by relative path."""
    img = np.full((4, 4, 3), 200, dtype=np.uint8)
    run.log(
        {
            "t": wisp.Table(
                columns=["id", "img"], data=[[0, wisp.Image(img, caption="c")], [1, None]]
            )
        }
    )
    doc = _file(run, logged(run, "t"))
    cell = doc["data"][0][1]
    assert cell["_type"] == "image" and cell["caption"] == "c"
    assert run.dir is not None
    assert os.path.isfile(os.path.join(run.dir, cell["path"]))
    assert doc["data"][1] == [1, None]


def test_dataframe(run: wisp.Run) -> None:
    """A pandas DataFrame's columns and cells (NaN, None, timestamps) are stored as given."""
    df = pd.DataFrame(
        {
            "n": [1, 2],
            "f": [0.5, np.nan],
            "s": ["a", None],
            "b": [True, False],
            "t": pd.to_datetime(["2024-01-01", "2024-01-02"]),
        }
    )
    run.log({"t": wisp.Table(dataframe=df)})
    doc = _file(run, logged(run, "t"))
    assert doc["columns"] == ["n", "f", "s", "b", "t"]
    assert doc["data"][0] == [1, 0.5, "a", True, "2024-01-01T00:00:00"]
    missing = doc["data"][1][2]  # pandas reports a missing string as None or NaN
    assert missing is None or missing != missing
    assert doc["data"][1][1] != doc["data"][1][1] and doc["data"][1][3] is False


def test_numpy_2d_data(run: wisp.Run) -> None:
    """A 2-D numpy array is accepted as data."""
    run.log({"t": wisp.Table(columns=["x", "y"], data=np.arange(6).reshape(3, 2))})
    assert _file(run, logged(run, "t"))["data"] == [[0, 1], [2, 3], [4, 5]]


def test_rows_added_after_log_go_to_the_next_log(run: wisp.Run) -> None:
    """log() stores the rows present then; add_data() afterwards changes nothing logged."""
    table = wisp.Table(columns=["i"])
    table.add_data(0)
    run.log({"t": table})
    table.add_data(1)
    run.log({"t": table})
    _, values = read_back(run).scalars("t")
    assert [v["rows"] for v in values] == [1, 2]
    assert _file(run, values[0])["data"] == [[0]]


def test_table_properties() -> None:
    """columns, data and len() reflect the rows added, as copies."""
    table = wisp.Table(columns=["a", "b"], data=[(1, 2)])
    table.add_data(3, 4)
    assert table.columns == ["a", "b"] and len(table) == 2
    rows = table.data
    rows[0][0] = 99
    assert table.data == [[1, 2], [3, 4]]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"data": [[1]]}, "needs columns"),
        ({"columns": "ab"}, "list of names"),
        ({"columns": ["a", "a"]}, "unique"),
        ({"columns": ["a", ""]}, "unique and non-empty"),
        ({"columns": ["a"], "data": 5}, "list of rows"),
        ({"columns": ["a"], "data": [5]}, "row 0 is int"),
        ({"columns": ["a", "b"], "data": [[1]]}, r"row 0 has 1 cells; expected 2 \(a, b\)"),
        ({"columns": ["a"], "data": [[{"x": 1}]]}, "column 'a', row 0 is dict"),
        ({"columns": ["a"], "data": [[[1, 2]]]}, "column 'a', row 0 is list"),
        ({"columns": ["a"], "data": [[torch.zeros(3)]]}, "column 'a', row 0 is Tensor"),
        ({"columns": ["a"], "data": [[np.zeros(3)]]}, "column 'a', row 0 is ndarray"),
        ({"columns": ["a"], "dataframe": pd.DataFrame({"a": [1]})}, "dataframe= alone"),
        ({"dataframe": {"a": [1]}}, "pandas DataFrame"),
    ],
)
def test_rejected(kwargs: dict[str, Any], match: str) -> None:
    """Bad columns, rows and cells are refused, naming the row and column."""
    with pytest.raises(UsageError, match=match):
        wisp.Table(**kwargs)


def test_row_limit() -> None:
    """A table refuses rows past MAX_ROWS with an error saying the limit."""
    table = wisp.Table(columns=["i"], data=[[i] for i in range(MAX_ROWS)])
    with pytest.raises(ValueLimitError, match="at most 100,000 rows"):
        table.add_data(0)
    with pytest.raises(ValueLimitError, match="at most 100,000 rows"):
        wisp.Table(columns=["i"], data=[[0]] * (MAX_ROWS + 1))
    assert len(table) == MAX_ROWS


def test_column_limit() -> None:
    """A table refuses more than MAX_COLUMNS columns."""
    with pytest.raises(ValueLimitError, match=f"at most {MAX_COLUMNS}"):
        wisp.Table(columns=[f"c{i}" for i in range(MAX_COLUMNS + 1)])


def test_size_limit_names_the_key(make_run: Any) -> None:
    """A table larger than max_value_bytes is refused at log(), naming the key."""
    r = make_run(max_value_bytes=2000)
    table = wisp.Table(columns=["s"], data=[["x" * 100] for _ in range(30)])
    with pytest.raises(ValueLimitError, match="'tab'"):
        r.log({"tab": table})
    r.log({"tab": wisp.Table(columns=["s"], data=[["x" * 100]])})

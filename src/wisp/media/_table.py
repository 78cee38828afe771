"""``wisp.Table``: rows of numbers, strings, bools, None and Images.

Stored as a JSON file in the run's ``media/`` folder, named by content hash
(format ``wisp.table`` version 1, readable with any JSON parser that accepts
the ``NaN``/``Infinity`` tokens, e.g. Python's ``json``)::

    {"format": "wisp.table", "version": 1,
     "columns": ["id", "image", "label"],
     "data": [[0, {"_type": "image", "path": "media/<hash>.png", ...}, "cat"], ...]}

Image cells hold the same object as an image history value; their ``path``
is relative to the run directory.  The history row holds::

    {"_type": "table", "path": "media/<hash>.table.json", "columns": [...], "rows": n}

A table holds at most :data:`MAX_ROWS` rows and :data:`MAX_COLUMNS` columns.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from wisp._deferred import Deferred
from wisp.errors import UsageError, ValueLimitError
from wisp.media._image import Image

if TYPE_CHECKING:
    from wisp._deferred import ResolveContext

__all__ = ["FORMAT", "MAX_COLUMNS", "MAX_ROWS", "VERSION", "Table"]

FORMAT = "wisp.table"
VERSION = 1
MAX_ROWS = 100_000
MAX_COLUMNS = 1_000
_PLAIN = frozenset({int, float, str, bool, type(None)})
_dumps = json.JSONEncoder(allow_nan=True, separators=(",", ":"), ensure_ascii=False).encode


def _cell(value: Any, column: str, row: int) -> tuple[Any, int]:
    """(the cell as stored, about how many bytes it takes) or UsageError naming the cell."""
    t = type(value)
    if t in _PLAIN:
        return value, len(value) + 3 if t is str else 8
    if isinstance(value, Image):
        return value, 160
    if isinstance(value, (bool, int, float, str)):  # subclasses: IntEnum, numpy.float64, ...
        if isinstance(value, bool):
            return bool(value), 8
        plain = (
            int(value)
            if isinstance(value, int)
            else (float(value) if isinstance(value, float) else str(value))
        )
        return plain, len(plain) + 3 if isinstance(plain, str) else 8
    name = t.__name__
    root = (t.__module__ or "").partition(".")[0]
    if name in ("NAType", "NaTType"):  # pandas missing values
        return None, 8
    if root in ("numpy", "torch") and getattr(value, "ndim", 1) == 0:
        device = getattr(value, "device", None)
        kind = getattr(value.dtype, "kind", "f")
        if (device is None or str(device) == "cpu") and kind in "biufUS":
            return _cell(value.item(), column, row)
    if hasattr(value, "isoformat"):  # datetime, date, pandas.Timestamp
        text = value.isoformat()
        return text, len(text) + 3
    raise UsageError(
        f"wisp.Table cell in column {column!r}, row {row} is {type(value).__name__}; "
        "expected a number, str, bool, None or wisp.Image"
    )


class Table(Deferred):
    """A table logged as one value: ``Table(columns=[...], data=[[...], ...])``.

    Or ``Table(dataframe=df)`` from pandas.  ``add_data(*cells)`` appends a
    row, ``add_column(name, cells)`` a column; ``get_column(name)`` reads one.
    ``log()`` stores the rows the table holds at that moment; rows added later go
    into the next ``log()``.
    """

    __slots__ = ("_columns", "_image_max", "_nbytes", "_rows")

    def __init__(
        self,
        columns: list[str] | tuple[str, ...] | None = None,
        data: Any = None,
        dataframe: Any = None,
    ) -> None:
        self._rows: list[tuple[Any, ...]] = []
        self._nbytes = 64
        self._image_max = 0
        if dataframe is not None:
            if columns is not None or data is not None:
                raise UsageError("wisp.Table() takes dataframe= alone, without columns or data")
            self._from_dataframe(dataframe)
            return
        if columns is None:
            if data is not None:
                raise UsageError("wisp.Table(data=...) needs columns=[...] naming each column")
            columns = []
        self._set_columns(columns)
        if data is not None:
            if hasattr(data, "tolist") and getattr(data, "ndim", 2) == 2:
                data = data.tolist()  # a 2-D numpy array
            if not isinstance(data, (list, tuple)):
                raise UsageError(
                    f"wisp.Table(data=...) must be a list of rows, got {type(data).__name__}"
                )
            self._check_room(len(data))
            for row in data:
                if not isinstance(row, (list, tuple)):
                    raise UsageError(
                        f"wisp.Table(data=...) row {len(self._rows)} is {type(row).__name__}; "
                        "expected a list or tuple of cells"
                    )
                self.add_data(*row)

    def _set_columns(self, columns: Any) -> None:
        if not isinstance(columns, (list, tuple)):
            raise UsageError(
                f"wisp.Table(columns=...) must be a list of names, got {type(columns).__name__}"
            )
        names = [c if isinstance(c, str) else str(c) for c in columns]
        if len(names) > MAX_COLUMNS:
            raise ValueLimitError(
                f"wisp.Table has {len(names)} columns; at most {MAX_COLUMNS} are allowed"
            )
        if len(set(names)) != len(names) or "" in names:
            raise UsageError(f"wisp.Table column names must be unique and non-empty: {names!r}")
        self._columns = names
        self._nbytes += sum(len(n) + 3 for n in names)

    def _from_dataframe(self, df: Any) -> None:
        if not (hasattr(df, "columns") and hasattr(df, "iloc")):
            raise UsageError(
                f"wisp.Table(dataframe=...) must be a pandas DataFrame, got {type(df).__name__}"
            )
        self._set_columns(list(df.columns))
        self._check_room(len(df))
        columns = [df.iloc[:, i].tolist() for i in range(len(self._columns))]
        for row in zip(*columns, strict=True):
            self.add_data(*row)

    def _check_room(self, more: int) -> None:
        if len(self._rows) + more > MAX_ROWS:
            raise ValueLimitError(
                f"wisp.Table holds at most {MAX_ROWS:,} rows; it has {len(self._rows):,} and "
                f"{more:,} more were added (log a sample, or several tables)"
            )

    @property
    def columns(self) -> list[str]:
        return list(self._columns)

    @property
    def data(self) -> list[list[Any]]:
        """The rows, as lists (copies)."""
        return [list(row) for row in self._rows]

    def add_data(self, *cells: Any) -> None:
        """Append one row: one cell per column."""
        if len(cells) != len(self._columns):
            raise UsageError(
                f"wisp.Table row {len(self._rows)} has {len(cells)} cells; expected "
                f"{len(self._columns)} ({', '.join(self._columns)})"
            )
        self._check_room(1)
        row = []
        size = 3
        n = len(self._rows)
        for column, value in zip(self._columns, cells, strict=True):
            cell, nbytes = _cell(value, column, n)
            if isinstance(cell, Image):
                self._image_max = max(self._image_max, cell.estimate_bytes())
            row.append(cell)
            size += nbytes
        self._rows.append(tuple(row))
        self._nbytes += size

    def add_column(self, name: str, data: Any, optional: bool = False) -> None:
        """Append a column (wandb's ``Table.add_column``): one cell per existing row.

        An empty table takes as many rows as ``data`` has.  ``optional`` is accepted
        for wandb compatibility (any cell may be None).
        """
        if not isinstance(name, str) or not name or name in self._columns:
            raise UsageError(
                f"wisp.Table.add_column() name must be a new, non-empty string, got {name!r}"
            )
        if hasattr(data, "tolist") and getattr(data, "ndim", 1) == 1:
            data = data.tolist()
        if not isinstance(data, (list, tuple)):
            raise UsageError(
                f"wisp.Table.add_column({name!r}) data must be a list, got {type(data).__name__}"
            )
        if self._rows and len(data) != len(self._rows):
            raise UsageError(
                f"wisp.Table.add_column({name!r}) has {len(data)} cells; the table has "
                f"{len(self._rows)} rows"
            )
        if not self._rows:
            self._check_room(len(data))
        if len(self._columns) + 1 > MAX_COLUMNS:
            raise ValueLimitError(f"wisp.Table holds at most {MAX_COLUMNS} columns")
        cells = []
        size = 0
        for i, value in enumerate(data):
            cell, nbytes = _cell(value, name, i)
            if isinstance(cell, Image):
                self._image_max = max(self._image_max, cell.estimate_bytes())
            cells.append(cell)
            size += nbytes
        if self._rows:
            self._rows = [(*row, cell) for row, cell in zip(self._rows, cells, strict=True)]
        else:
            blank = (None,) * len(self._columns)  # other columns of a table with no rows yet
            self._rows = [(*blank, cell) for cell in cells]
        self._columns.append(name)
        self._nbytes += size + len(name) + 3

    def get_column(self, name: str, convert_to: str | None = None) -> Any:
        """The cells of column ``name`` as a list, or a numpy array with ``convert_to="numpy"``."""
        if name not in self._columns:
            raise UsageError(
                f"wisp.Table has no column {name!r} (columns: {', '.join(self._columns)})"
            )
        i = self._columns.index(name)
        cells = [row[i] for row in self._rows]
        if convert_to is None:
            return cells
        if convert_to != "numpy":
            raise UsageError(f"get_column() convert_to must be None or 'numpy', got {convert_to!r}")
        import numpy as np

        return np.array(cells)

    def __len__(self) -> int:
        return len(self._rows)

    def estimate_bytes(self) -> int:
        return max(self._nbytes, self._image_max)

    def at_log(self, key: str) -> Deferred:
        # Rows are tuples nobody else holds: a copy of the list is a faithful snapshot.
        return _FrozenTable(tuple(self._columns), tuple(self._rows), self.estimate_bytes())

    def resolve(self, ctx: ResolveContext) -> Any:
        return self.at_log("").resolve(ctx)

    def __repr__(self) -> str:
        return f"<wisp.Table {len(self._rows)} rows x {len(self._columns)} columns>"


class _FrozenTable(Deferred):
    __slots__ = ("_columns", "_nbytes", "_rows")

    def __init__(self, columns: tuple[str, ...], rows: tuple[tuple[Any, ...], ...], n: int):
        self._columns = columns
        self._rows = rows
        self._nbytes = n

    def estimate_bytes(self) -> int:
        return self._nbytes

    def resolve(self, ctx: ResolveContext) -> dict[str, Any]:
        data = [[c.resolve(ctx) if isinstance(c, Image) else c for c in row] for row in self._rows]
        doc = {"format": FORMAT, "version": VERSION, "columns": list(self._columns), "data": data}
        path = ctx.save_media(_dumps(doc).encode("utf-8"), ".table.json")
        return {
            "_type": "table",
            "path": path,
            "columns": list(self._columns),
            "rows": len(self._rows),
        }

"""Long tables of histories (``run_id``, ``step``, key columns) in pandas, Arrow or polars.

Backends yield parts: ``pyarrow.RecordBatch`` objects when pyarrow is installed, or lists
of row dicts (``{"run_id", "step", key: value}``, absent keys left out).  :func:`build`
joins them without copying the Arrow buffers, then converts once.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Iterator
from typing import Any

from wisp.errors import install_hint

__all__ = ["arrow_available", "build", "by_run_id", "need", "to_batch"]

_HINTS = {
    "pandas": "pip install pandas",
    "pyarrow": f"pip install pyarrow  (or: {install_hint('export')})",
    "polars": "pip install polars",
}


def need(module: str, what: str) -> Any:
    """Import an optional dependency, or ImportError saying how to install it."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise ImportError(
            f"{what} needs {module}: {_HINTS.get(module, 'pip install ' + module)}"
        ) from None


def arrow_available() -> bool:
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        return False
    return True


def to_batch(part: Any, schema: Any) -> Any:
    """A part (record batch or row dicts) as a record batch of ``schema`` (nulls where absent)."""
    import pyarrow as pa

    if isinstance(part, list):
        cols = {f.name: [row.get(f.name) for row in part] for f in schema}
        return pa.RecordBatch.from_pydict(cols, schema=schema)
    have = set(part.schema.names)
    arrays = [
        part.column(f.name) if f.name in have else pa.nulls(part.num_rows, f.type) for f in schema
    ]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def by_run_id(parts: Iterable[Any], ids: dict[str, str]) -> Iterator[Any]:
    """The parts with ``run_id`` holding each run's id where the server named it by its key
    (``ids``: key -> id, for the runs whose key is not their id)."""
    for part in parts:
        if not ids:
            yield part
        elif isinstance(part, list):
            for row in part:
                row["run_id"] = ids.get(row["run_id"], row["run_id"])
            yield part
        else:
            import pyarrow as pa

            i = part.schema.get_field_index("run_id")
            codes = part.column(i).dictionary_encode()  # a few runs a part: rename each once
            names = pa.array([ids.get(k, k) for k in codes.dictionary.to_pylist()], pa.string())
            col = pa.DictionaryArray.from_arrays(codes.indices, names).cast(pa.string())
            arrays = [col if j == i else part.column(j) for j in range(part.num_columns)]
            yield pa.RecordBatch.from_arrays(arrays, schema=part.schema)


def build(parts: Iterable[Any], keys: list[str] | None, fmt: str) -> Any:
    """One table from the parts, in ``fmt`` (pandas, arrow or polars)."""
    if not arrow_available():
        if fmt != "pandas":
            need("pyarrow", f"histories(format={fmt!r})")
        pd = need("pandas", "histories(format='pandas')")
        frames = [pd.DataFrame.from_records(p) for p in parts if p]
        cols = ["run_id", "step"]
        if not frames:
            return pd.DataFrame(columns=[*cols, *(keys or [])])
        df = pd.concat(frames, ignore_index=True)
        rest = keys if keys is not None else sorted(c for c in df.columns if c not in cols)
        for k in rest:
            if k not in df.columns:
                df[k] = float("nan")
        return df[[*cols, *rest]]
    import pyarrow as pa

    tables = []
    for p in parts:
        if isinstance(p, list):
            if p:
                tables.append(pa.Table.from_pylist(p))
        elif p.num_rows:
            tables.append(pa.Table.from_batches([p]))
    if tables:
        table = pa.concat_tables(tables, promote_options="default")
    else:
        table = pa.table({"run_id": pa.array([], pa.string()), "step": pa.array([], pa.int64())})
    del tables
    have = [c for c in table.column_names if c not in ("run_id", "step")]
    rest = list(keys) if keys is not None else sorted(have)
    for k in rest:
        if k not in table.column_names:
            table = table.append_column(k, pa.nulls(table.num_rows, pa.float64()))
    table = table.select(["run_id", "step", *rest])
    if fmt == "arrow":
        return table
    if fmt == "polars":
        pl = need("polars", "histories(format='polars')")
        return pl.from_arrow(table)
    need("pandas", "histories(format='pandas')")
    df = table.to_pandas(split_blocks=True, self_destruct=True)
    del table
    return df

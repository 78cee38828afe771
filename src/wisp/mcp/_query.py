"""``wisp query --sql``: read-only SQL over a project's runs and metrics, in DuckDB.

Tables (format version 1):

- ``runs``: ``id``, ``name``, ``state``, ``project``, ``group``, ``job_type``, ``tags``
  (a list), ``created_at``/``finished_at`` (timestamps, UTC), ``config`` and ``summary``
  (JSON text), and one column per flattened config and numeric summary key,
  ``"config.lr"``, ``"summary.val/loss"``;
- ``history``: ``run_id``, ``step`` and one DOUBLE column per metric key (wide);
- ``points``: ``run_id``, ``step``, ``key``, ``value`` (long: ``history`` unpivoted, NULLs
  left out).

The connection is in memory and has no access to files or the network
(``enable_external_access = false``), so a query reads only these tables.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

from wisp.errors import UsageError, install_hint

__all__ = ["run_query", "tables"]


def _need(module: str) -> Any:
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise UsageError(f"wisp query needs {module}: {install_hint('query')}") from None


def _flat(d: dict[str, Any], prefix: str, out: dict[str, Any]) -> None:
    for k, v in d.items():
        if isinstance(v, dict) and "_type" not in v:
            _flat(v, f"{prefix}{k}.", out)
        else:
            out[f"{prefix}{k}"] = v


def _ts(v: float | None) -> datetime | None:
    return None if v is None else datetime.fromtimestamp(v, tz=timezone.utc)


def tables(api: Any, project: str, keys: list[str] | None, filters: str | None) -> dict[str, Any]:
    """The ``runs`` and ``history`` Arrow tables of ``project``."""
    pa = _need("pyarrow")
    runs = list(api.runs(project, filters))
    cols: dict[str, list[Any]] = {
        k: []
        for k in (
            "id",
            "name",
            "state",
            "project",
            "group",
            "job_type",
            "tags",
            "created_at",
            "finished_at",
            "config",
            "summary",
        )
    }
    extra: list[dict[str, Any]] = []
    for r in runs:
        cols["id"].append(r.id)
        cols["name"].append(r.name)
        cols["state"].append(r.state)
        cols["project"].append(r.project_path)
        cols["group"].append(r.group)
        cols["job_type"].append(r.job_type)
        cols["tags"].append(list(r.tags))
        cols["created_at"].append(_ts(r.created_at))
        cols["finished_at"].append(_ts(r.finished_at))
        cols["config"].append(json.dumps(r.config, default=str))
        summary = dict(r.summary)
        cols["summary"].append(json.dumps(summary, default=str))
        flat: dict[str, Any] = {}
        _flat(r.config, "config.", flat)
        _flat(summary, "summary.", flat)
        extra.append(flat)
    names = sorted({k for f in extra for k in f})
    arrays: dict[str, Any] = {k: pa.array(v) for k, v in cols.items()}
    arrays["tags"] = pa.array(cols["tags"], type=pa.list_(pa.string()))
    for name in names:
        vals = [f.get(name) for f in extra]
        if all(v is None or (isinstance(v, int | float) and not isinstance(v, bool)) for v in vals):
            arrays[name] = pa.array([None if v is None else float(v) for v in vals], pa.float64())
        elif name.startswith("config."):
            arrays[name] = pa.array(
                [None if v is None else (v if isinstance(v, str) else json.dumps(v)) for v in vals],
                pa.string(),
            )
    run_table = pa.table(arrays)
    history = (
        api.runs(project, filters).histories(keys=keys, format="arrow")
        if runs
        else pa.table({"run_id": pa.array([], pa.string()), "step": pa.array([], pa.int64())})
    )
    return {"runs": run_table, "history": history}


def run_query(
    api: Any, project: str, sql: str, *, keys: str | None = None, filters: str | None = None
) -> tuple[list[str], list[list[Any]]]:
    """Run ``sql`` over the project's tables; the column names and the rows."""
    duckdb = _need("duckdb")
    wanted = [k for k in (keys or "").split(",") if k] or None
    data = tables(api, project, wanted, filters)
    con = duckdb.connect(":memory:")
    try:
        for name, table in data.items():
            con.register(f"_{name}", table)
            con.execute(f"CREATE TABLE {name} AS SELECT * FROM _{name}")
            con.unregister(f"_{name}")
        metric_cols = [c for c in data["history"].column_names if c not in ("run_id", "step")]
        if metric_cols:
            con.execute(
                "CREATE VIEW points AS SELECT run_id, step, key, value FROM "
                "(UNPIVOT history ON COLUMNS(* EXCLUDE (run_id, step)) INTO NAME key VALUE value)"
            )
        else:
            con.execute(
                "CREATE VIEW points AS SELECT NULL::VARCHAR AS run_id, NULL::BIGINT AS step, "
                "NULL::VARCHAR AS key, NULL::DOUBLE AS value WHERE false"
            )
        con.execute("SET enable_external_access = false")
        con.execute("SET lock_configuration = true")
        try:
            cur = con.execute(sql)
        except duckdb.Error as exc:
            raise UsageError(f"--sql: {exc}") from None
        cols = [d[0] for d in cur.description or ()]
        return cols, [list(row) for row in cur.fetchall()]
    finally:
        con.close()

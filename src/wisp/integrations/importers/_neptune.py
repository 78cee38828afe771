"""Import Neptune runs exported by Neptune's official exporter (``neptune-exporter``).

The exporter writes one folder per project under its data path, each run as
``<run_id>_part_<n>.parquet`` (``part_0`` is renamed into place last, so a run
without it is incomplete), with one row per value in this schema
(``neptune_exporter/model.py``)::

    project_id string, run_id string, attribute_path string, attribute_type string,
    step decimal128(18, 6), timestamp timestamp[ms, UTC],
    int_value int64, float_value float64, string_value string, bool_value bool,
    datetime_value timestamp[ms, UTC], string_set_value list<string>,
    file_value struct<path string>,                  # relative to the files path
    histogram_value struct<type string, edges list<float64>, values list<float64>>

``attribute_type`` is one of ``float int string bool datetime string_set``
(parameters), ``float_series string_series histogram_series`` (series), ``file
file_series file_set``.  Files live under the exporter's files path (by default
``exports/files`` beside ``exports/data``).

Mapping: project -> project (the part after the workspace), run -> a run whose id is
derived from ``project_id/run_id``; parameters -> config (``datetime`` as ISO 8601,
``string_set`` as a sorted list) except ``sys/*``, kept in ``imported_from.sys``;
``sys/tags`` -> tags, ``sys/description`` -> notes, ``sys/name`` -> name,
``sys/experiment/name`` -> group, ``sys/creation_time`` -> created_at,
``sys/failed`` -> failed, float series -> history (every point; NaN kept),
histogram series -> wisp histograms, string series -> a text file per series
(``step<TAB>ISO time<TAB>value`` lines), files, file series and file sets -> run
files.  Decimal steps are scaled by the smallest power of ten (at most 10^6) that
makes every step of the run an integer (``imported_from.step_multiplier``).
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import logging
import os
from collections.abc import Iterator
from decimal import Decimal
from typing import Any, TextIO

from wisp.errors import UsageError
from wisp.integrations.importers._progress import ImportReport, Progress, RunIndex
from wisp.integrations.importers._writeback import ImportedRun, Typed

__all__ = ["import_neptune", "neptune_runs"]

log = logging.getLogger("wisp")

PARAMS = {"float", "int", "string", "bool", "datetime", "string_set"}
FILES = {"file", "file_series", "file_set", "artifact"}


def _pyarrow() -> Any:
    try:
        import pyarrow.parquet as pq
    except ImportError as exc:
        raise ImportError(
            "importing Neptune exports needs pyarrow to read their parquet files; install it "
            "with `pip install pyarrow`"
        ) from exc
    return pq


def _paths(source: str, files: str | None) -> tuple[str, str | None]:
    """The exporter's data path and files path from what the user gave."""
    data = source
    if os.path.isdir(os.path.join(source, "data")) and not _parts_in(source):
        data = os.path.join(source, "data")
    if not os.path.isdir(data):
        raise UsageError(f"no Neptune export at {source}")
    if files is None:
        guess = os.path.join(os.path.dirname(os.path.abspath(data)), "files")
        files = guess if os.path.isdir(guess) else None
    return os.path.abspath(data), files and os.path.abspath(files)


def _parts_in(folder: str) -> bool:
    try:
        return any(n.endswith(".parquet") for n in os.listdir(folder))
    except OSError:
        return False


def neptune_runs(data: str) -> Iterator[tuple[str, str, list[str]]]:
    """``(project folder, run file prefix, [part files in order])`` of each complete run."""
    folders = (
        [data]
        if _parts_in(data)
        else [
            os.path.join(data, d)
            for d in sorted(os.listdir(data))
            if os.path.isdir(os.path.join(data, d))
        ]
    )
    for folder in folders:
        runs: dict[str, dict[int, str]] = {}
        for name in os.listdir(folder):
            if not name.endswith(".parquet") or "_part_" not in name:
                continue
            prefix, _, part = name[: -len(".parquet")].rpartition("_part_")
            if part.isdigit():
                runs.setdefault(prefix, {})[int(part)] = os.path.join(folder, name)
        for prefix in sorted(runs):
            parts = runs[prefix]
            if 0 in parts:  # part_0 lands last: without it the export of this run is unfinished
                yield folder, prefix, [parts[i] for i in sorted(parts)]


def _fingerprint(parts: list[str]) -> str:
    h = hashlib.sha256()
    for p in parts:
        st = os.stat(p)
        h.update(f"{os.path.basename(p)}|{st.st_size}|{st.st_mtime_ns}\n".encode())
    return h.hexdigest()


def _multiplier(steps: list[Decimal]) -> int:
    for k in range(7):
        m: int = 10**k
        if all((s * m) == (s * m).to_integral_value() for s in steps):
            return m
    return 1_000_000


def _iso(v: Any) -> str | None:
    if v is None:
        return None
    if isinstance(v, _dt.datetime):
        return v.isoformat()
    return str(v)


def _param(row: dict[str, Any]) -> Any:
    t = row["attribute_type"]
    if t == "float":
        return row["float_value"]
    if t == "int":
        return row["int_value"]
    if t == "bool":
        return row["bool_value"]
    if t == "datetime":
        return _iso(row["datetime_value"])
    if t == "string_set":
        return sorted(row["string_set_value"] or [])
    return row["string_value"]


def _seconds(ts: Any) -> float | None:
    return None if ts is None else float(ts.timestamp())


def _safe(path: str) -> str:
    parts = [p for p in path.replace("\\", "/").split("/") if p not in ("", ".", "..")]
    return "/".join(parts) or "file"


def _import_run(
    folder: str,
    prefix: str,
    parts: list[str],
    files_root: str | None,
    base: str,
    index: RunIndex,
    report: ImportReport,
    copy_files: bool,
) -> None:
    pq = _pyarrow()
    rows: list[dict[str, Any]] = []
    for p in parts:
        rows.extend(pq.read_table(p).to_pylist())
    if not rows:
        report.skip("empty export file")
        return
    project_id = str(rows[0]["project_id"])
    source_id = f"{project_id}/{rows[0]['run_id']}"
    run_id = "nep-" + hashlib.sha256(source_id.encode()).hexdigest()[:24]
    fingerprint = _fingerprint(parts)
    state = index.claim(run_id, fingerprint, report)
    if state is None:
        return

    config: dict[str, Any] = {}
    sys_attrs: dict[str, Any] = {}
    series: list[dict[str, Any]] = []
    texts: dict[str, list[str]] = {}
    file_rows: list[dict[str, Any]] = []
    for row in rows:
        t, path = row["attribute_type"], row["attribute_path"]
        if t in PARAMS:
            (sys_attrs if path.startswith("sys/") else config)[path] = _param(row)
        elif t in ("float_series", "histogram_series"):
            series.append(row)
        elif t == "string_series":
            step = row["step"]
            texts.setdefault(path, []).append(
                f"{'' if step is None else step.normalize()}\t{_iso(row['timestamp']) or ''}\t"
                f"{row['string_value'] or ''}"
            )
        elif t in FILES:
            file_rows.append(row)
        else:
            report.leave_out(f"values of Neptune type {t!r}")

    steps = [r["step"] for r in series if r["step"] is not None]
    mult = _multiplier(steps)
    by_step: dict[int, list[Any]] = {}
    points = 0
    for r in series:
        if r["step"] is None:
            report.leave_out("series points without a step")
            continue
        step = int(r["step"] * mult)
        ts = _seconds(r["timestamp"])
        if r["attribute_type"] == "float_series":
            value: Any = r["float_value"]
            if value is None:
                report.leave_out("series points without a value")
                continue
        else:
            h = r["histogram_value"] or {}
            counts = h.get("values") or []
            value = Typed(
                {
                    "_type": "histogram",
                    "bins": list(h.get("edges") or []),
                    "counts": [int(c) if float(c).is_integer() else c for c in counts],
                    "nan": 0,
                    "inf": 0,
                }
            )
        slot = by_step.setdefault(step, [ts, {}])
        slot[1][r["attribute_path"]] = value
        if ts is not None and (slot[0] is None or ts < slot[0]):
            slot[0] = ts
        points += 1

    created = sys_attrs.get("sys/creation_time")
    start = (
        _dt.datetime.fromisoformat(created).timestamp()
        if isinstance(created, str)
        else min((s[0] for s in by_step.values() if s[0] is not None), default=0.0)
    )
    tags = sys_attrs.get("sys/tags")
    origin = {
        "imported_from": {
            "source": "neptune",
            "path": folder,
            "project_id": project_id,
            "run_id": str(rows[0]["run_id"]),
            "sys": sys_attrs,
            "step_multiplier": mult,
        }
    }
    out = ImportedRun(
        base,
        run_id=run_id,
        project=_project(project_id),
        name=str(sys_attrs.get("sys/name") or sys_attrs.get("sys/custom_run_id") or prefix),
        created_at=start,
        origin=origin,
        config=config,
        tags=[str(t)[:256] for t in tags][:256] if isinstance(tags, list) else [],
        notes=sys_attrs.get("sys/description") or None,
        group=sys_attrs.get("sys/experiment/name") or None,
    )
    last = start
    for step in sorted(by_step):
        ts, values = by_step[step]
        ts = last if ts is None else ts
        out.log(step, ts, values)
        last = max(last, ts)
    n_files = _write_texts(out, texts) + (
        _copy_files(out, file_rows, files_root, folder, mult, report) if copy_files else 0
    )
    end = sys_attrs.get("sys/modification_time")
    end_t = _dt.datetime.fromisoformat(end).timestamp() if isinstance(end, str) else last
    exit_code = 1 if sys_attrs.get("sys/failed") else 0
    run_dir = out.finish(max(end_t, start), exit_code)
    index.done(run_id, run_dir, "neptune", source_id, fingerprint)
    report.runs.append(run_dir)
    report.points += points
    report.files += n_files
    if state == "changed":
        report.updated += 1


def _project(project_id: str) -> str:
    p = project_id.rsplit("/", 1)[-1].strip()[:128]
    return p if p and p.isprintable() else "neptune"


def _write_texts(out: ImportedRun, texts: dict[str, list[str]]) -> int:
    from wisp._rundir import FILES_DIR
    from wisp.integrations._files import save_file

    for path, lines in texts.items():
        rel = f"{_safe(path)}.series.txt"
        dest = os.path.join(out.dir, FILES_DIR, *rel.split("/"))
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        with open(dest, "w", encoding="utf-8") as f:
            f.write("\n".join(lines) + "\n")
        save_file(out.run, dest, rel, kind="string_series")
    return len(texts)


def _copy_files(
    out: ImportedRun,
    rows: list[dict[str, Any]],
    files_root: str | None,
    folder: str,
    mult: int,
    report: ImportReport,
) -> int:
    from wisp.integrations._files import save_file

    n = 0
    for row in rows:
        rel = (row["file_value"] or {}).get("path")
        if not rel:
            report.leave_out("file values without a path")
            continue
        src = _find(files_root, folder, rel)
        if src is None:
            report.leave_out("files missing from the export's files path")
            continue
        name = _safe(row["attribute_path"])
        if row["attribute_type"] == "file_series" and row["step"] is not None:
            name += f"/step_{int(row['step'] * mult)}"
        sources = (
            [src]
            if os.path.isfile(src)
            else [os.path.join(d, f) for d, _s, fs in sorted(os.walk(src)) for f in sorted(fs)]
        )
        for s in sources:
            inner = os.path.basename(s) if s == src else os.path.relpath(s, src)
            save_file(out.run, s, f"{name}/{inner}", kind="file")
            n += 1
    return n


def _find(files_root: str | None, folder: str, rel: str) -> str | None:
    roots = [r for r in (files_root,) if r]
    if files_root:
        roots.append(os.path.join(files_root, os.path.basename(folder)))
    for root in roots:
        full = os.path.realpath(os.path.join(root, rel))
        if full.startswith(os.path.realpath(root) + os.sep) and os.path.exists(full):
            return full
    return None


def import_neptune(
    source: str | os.PathLike[str],
    dir: str | os.PathLike[str] | None = None,  # noqa: A002 - wisp.init's name
    *,
    files_path: str | os.PathLike[str] | None = None,
    files: bool = True,
    stream: TextIO | None = None,
) -> ImportReport:
    """Import every run of a ``neptune-exporter`` export into ``<dir>/wisp/``.

    ``source`` is the exporter's data path (``exports/data``), one project folder in it,
    or the folder holding ``data/`` and ``files/``.  ``files_path`` is the exporter's
    files path (default: ``files/`` beside the data path).  Needs ``pyarrow``.  Runs
    already imported and unchanged are left alone; an interrupted import resumes.
    """
    _pyarrow()
    data, files_root = _paths(
        os.fspath(source), os.fspath(files_path) if files_path is not None else None
    )
    base = os.path.abspath(os.fspath(dir) if dir is not None else os.getcwd())
    report = ImportReport("neptune")
    index = RunIndex(base)
    runs = list(neptune_runs(data))
    progress = Progress("wisp import neptune", total=len(runs), stream=stream)
    try:
        for folder, prefix, parts in runs:
            try:
                _import_run(folder, prefix, parts, files_root, base, index, report, files)
            except (OSError, ValueError, KeyError, TypeError) as exc:
                report.failed.append((prefix, f"{type(exc).__name__}: {exc}"))
            progress.advance(note=prefix)
    finally:
        progress.close()
    if files and files_root is None and any(report.runs):
        log.info("wisp: no files path found beside %s; files were not imported", data)
    return report

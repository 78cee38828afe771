"""A report's panels as data: run sets resolved against a source, each panel's points.

``resolve(report, source)`` returns ``{"runsets": ..., "panels": [...]}``, JSON: what the
HTML export inlines and draws, one entry per panel in order (docs/reports.md, "Panel data").
A line panel holds ``lines`` (``{label, run | runs, key, x, y, min, max}``: downsampled as the
dashboard draws them, a grouped run set giving one line per group and metric with its
band); bar ``bars``, scalar ``value``, scatter ``points``, parallel and runs ``rows``,
compare ``rows`` of differing fields, media ``items``, markdown ``text``.

``freeze`` pins each run set to its runs and last step; ``lint`` checks a report's run sets
and keys against the runs they select.
"""

from __future__ import annotations

import base64
import difflib
import math
import statistics
import time
from typing import Any

from wisp.reports._panels import Panel, RunSet
from wisp.reports._source import Series, Source

__all__ = ["Finding", "field_value", "freeze", "lint", "resolve"]

BUCKETS = 400  # points per line: about a panel's width in pixels, as workspace panels ask
_MISSING = object()


def field_value(run: dict[str, Any], name: str) -> Any:
    """A run's value of a field (``config.lr``, ``summary.acc``, ``state``; a bare name that
    is not a column is a summary key); ``_MISSING`` when absent."""
    from wisp.server.query.filter import COLUMNS, field_path

    if name in COLUMNS:
        return run.get(name, _MISSING)
    if name.partition(".")[0] not in ("config", "summary"):
        return run.get("summary", {}).get(name, _MISSING)
    path = field_path(name)
    cur: Any = run
    for part in path:
        if not isinstance(cur, dict) or part not in cur:
            flat = run.get(path[0], {})  # a key logged with dots in its name
            return flat.get(".".join(path[1:]), _MISSING) if isinstance(flat, dict) else _MISSING
        cur = cur[part]
    return cur


def _num(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
        return None
    return float(v)


def _label(run: dict[str, Any]) -> str:
    return str(run.get("name") or run["id"])


def _runset_of(report: Any, panel: Panel) -> tuple[str, RunSet]:
    if panel.runs is not None:
        return "", panel.runs
    name = panel.runset or report.default_runset()
    return name, report.runsets[name]


# -- grouping ----------------------------------------------------------------------------------


def group_name(label: str, n: int) -> str:
    """A group's line label: its field values and how many runs it holds."""
    return f"{label} ({n} run{'s' if n > 1 else ''})"


def group_label(fields: list[str], values: list[Any]) -> str:
    """``config.lr=0.1, tags=(none)``: a group's fields and values."""
    return ", ".join(
        f"{f}={'(none)' if v is _MISSING or v is None else v}"
        for f, v in zip(fields, values, strict=True)
    )


def _groups(
    runs: list[dict[str, Any]], fields: list[str]
) -> list[tuple[str, list[dict[str, Any]]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for run in runs:
        label = group_label(fields, [field_value(run, f) for f in fields])
        out.setdefault(label, []).append(run)
    return list(out.items())


def _agg(values: list[float], how: str) -> float:
    if how == "median":
        return float(statistics.median(values))
    if how == "min":
        return min(values)
    if how == "max":
        return max(values)
    return math.fsum(values) / len(values)


def _pool(series: list[Series], how: str, band: str, buckets: int) -> Series:
    """Runs' series of one metric as one: per equal-width x bucket the ``how`` of the runs'
    values, and the band (min/max of them, or the aggregate +- one standard deviation)."""
    pts = [
        (x, y) for s in series for x, y in zip(s["x"], s["y"], strict=True) if _num(y) is not None
    ]
    if not pts:
        return {"x": [], "y": [], "min": [], "max": []}
    lo = min(p[0] for p in pts)
    hi = max(p[0] for p in pts)
    width = (hi - lo) / buckets or 1.0
    bins: dict[int, list[tuple[float, float]]] = {}
    for x, y in pts:
        bins.setdefault(min(int((x - lo) / width), buckets - 1), []).append((x, y))
    out: Series = {"x": [], "y": [], "min": [], "max": []}
    for b in sorted(bins):
        xs = [p[0] for p in bins[b]]
        ys = [p[1] for p in bins[b]]
        mid = _agg(ys, how)
        out["x"].append(min(xs))
        out["y"].append(mid)
        if band == "std":
            sd = statistics.pstdev(ys) if len(ys) > 1 else 0.0
            out["min"].append(mid - sd)
            out["max"].append(mid + sd)
        else:
            out["min"].append(min(ys))
            out["max"].append(max(ys))
    return out


# -- panels ------------------------------------------------------------------------------------


def _line(panel: Panel, rs: RunSet, runs: list[dict[str, Any]], source: Source) -> dict[str, Any]:
    o = panel.options
    ys: list[str] = o["y"]
    x = o.get("x", "step")
    band = o.get("band", "minmax")
    agg = o.get("agg", "mean")
    many = len(ys) > 1
    lines: list[dict[str, Any]] = []
    if rs.group and runs and x == "step":  # aggregated where the runs are, when it can
        pooled = source.grouped(runs, ys, rs.group, rs.max_step, BUCKETS, agg, band)
        if pooled is not None:
            for label, n, ids, key, agg_s in pooled:
                name = group_name(label, n) + (f" {key}" if many else "")
                lines.append({"label": name, "runs": ids, "key": key, **agg_s})
            if band == "none":
                for line in lines:
                    line["min"] = line["max"] = None
            return {"x": x, "lines": lines}
    got = source.series(runs, ys, x, rs.max_step, BUCKETS) if runs else {}
    if rs.group:
        for label, members in _groups(runs, rs.group):
            for key in ys:
                parts = [got[(r["id"], key)] for r in members if (r["id"], key) in got]
                if not parts:
                    continue
                s = _pool(parts, agg, band, BUCKETS)
                name = group_name(label, len(members)) + (f" {key}" if many else "")
                lines.append({"label": name, "runs": [r["id"] for r in members], "key": key, **s})
    else:
        for run in runs:
            for key in ys:
                one = got.get((run["id"], key))
                if one is not None:
                    name = _label(run) + (f" {key}" if many else "")
                    lines.append({"label": name, "run": run["id"], "key": key, **one})
    if band == "none":
        for line in lines:
            line["min"] = line["max"] = None
    return {"x": x, "lines": lines}


def _bars(panel: Panel, rs: RunSet, runs: list[dict[str, Any]]) -> dict[str, Any]:
    how = panel.options.get("agg", "mean")
    bars: list[dict[str, Any]] = []
    units = _groups(runs, rs.group) if rs.group else [(_label(r), [r]) for r in runs]
    for label, members in units:
        for key in panel.summary_keys:
            vals = [v for r in members if (v := _num(field_value(r, key))) is not None]
            if vals:
                bars.append({"label": label, "key": key, "value": _agg(vals, how), "n": len(vals)})
    return {"bars": bars}


def _rows(runs: list[dict[str, Any]], columns: list[str]) -> list[dict[str, Any]]:
    out = []
    for run in runs:
        values = [field_value(run, c) for c in columns]
        out.append(
            {
                "run": run["id"],
                "label": _label(run),
                "values": [None if v is _MISSING else v for v in values],
            }
        )
    return out


def _flat(d: Any, prefix: str, out: dict[str, Any]) -> None:
    if isinstance(d, dict) and d:
        for k, v in d.items():
            _flat(v, f"{prefix}.{k}", out)
    else:
        out[prefix] = d


def _compare(panel: Panel, runs: list[dict[str, Any]]) -> dict[str, Any]:
    prefixes = panel.options.get("fields") or ["config", "summary"]
    flats = []
    for run in runs:
        flat: dict[str, Any] = {}
        for p in prefixes:
            v = field_value(run, p) if p not in ("config", "summary") else run.get(p, {})
            if v is not _MISSING:
                _flat(v, p, flat)
        flats.append(flat)
    names = sorted({k for f in flats for k in f})
    rows = []
    for name in names:
        values = [f.get(name) for f in flats]
        if panel.options.get("diff_only", True) and len({repr(v) for v in values}) <= 1:
            continue
        rows.append({"field": name, "values": values})
    return {"runs": [_label(r) for r in runs], "rows": rows}


TABLE_ROWS = 100  # rows of a logged table a media panel shows


def _table_of(data: bytes) -> dict[str, Any] | None:
    """A logged table's columns and first rows (``wisp.table`` JSON); a typed cell (an
    image, a histogram) as ``[image]``; None when the file is no such table."""
    import json

    try:
        doc = json.loads(data)
    except ValueError:
        return None
    if not isinstance(doc, dict) or doc.get("format") != "wisp.table":
        return None
    rows = [
        [f"[{c.get('_type', 'value')}]" if isinstance(c, dict) else c for c in row]
        for row in doc.get("data", [])[:TABLE_ROWS]
    ]
    return {"columns": list(doc.get("columns", [])), "rows": rows, "n": len(doc.get("data", []))}


def media_item(name: str, data: bytes | None) -> dict[str, Any]:
    """How a media panel shows one logged file: ``kind`` (image, audio, video, html, table or
    file) and, when its bytes were inlined, ``src`` (a ``data:`` URI), ``html`` or ``table``."""
    from wisp.reports._source import media_kind

    kind, mime = media_kind(name) or ("file", "")
    item: dict[str, Any] = {"name": name, "kind": kind}
    if data is None or kind == "file":
        return item
    if kind == "html":
        item["html"] = data.decode("utf-8", "replace")
    elif kind == "table":
        table = _table_of(data)
        if table is None:
            item["kind"] = "file"
        else:
            item["table"] = table
    else:
        item["src"] = f"data:{mime};base64," + base64.b64encode(data).decode()
    return item


def _media(panel: Panel, rs: RunSet, runs: list[dict[str, Any]], source: Source) -> dict[str, Any]:
    """Per run, the files logged under ``key`` at its last step within the bounds: images,
    audio and video up to 2 MiB inlined as ``data:`` URIs, HTML as text, tables as rows."""
    key = panel.options["key"]
    items: list[dict[str, Any]] = []
    for run in runs:
        got = source.media(run, key, rs.max_step, panel.options.get("step"))
        if got is None:
            continue
        step, files = got
        for name, data in files:
            item: dict[str, Any] = {"run": run["id"], "label": _label(run), "step": step}
            items.append({**item, **media_item(name, data)})
    return {"key": key, "items": items}


def panel_data(
    report: Any, panel: Panel, runs: list[dict[str, Any]], rs: RunSet, source: Source
) -> dict[str, Any]:
    """One panel's data (its options and what it draws) over ``runs``."""
    out: dict[str, Any] = {"type": panel.type, "title": panel.title, **panel.options}
    o = panel.options
    if panel.type == "line":
        out.update(_line(panel, rs, runs, source))
    elif panel.type in ("bar", "scalar"):
        got = _bars(panel, RunSet() if panel.type == "scalar" else rs, runs)
        if panel.type == "bar":
            out.update(got)
        else:
            vals = [b["value"] for b in got["bars"]]
            how = o.get("agg", "mean")
            out["value"] = _agg(vals, how) if vals else None
            out["n"] = len(vals)
    elif panel.type == "scatter":
        pts = []
        for run in runs:
            x, y = _num(field_value(run, o["x"])), _num(field_value(run, o["y"]))
            if x is not None and y is not None:
                pts.append({"run": run["id"], "label": _label(run), "x": x, "y": y})
        out["points"] = pts
    elif panel.type in ("parallel", "runs"):
        cols = o.get("columns") or ["name", "state", "created_at"]
        out["columns"] = cols
        out["rows"] = _rows(runs, cols)
    elif panel.type == "compare":
        out.update(_compare(panel, runs))
    elif panel.type == "media":
        out.update(_media(panel, rs, runs, source))
    return out


def resolve(report: Any, source: Source, limit: int | None = None) -> dict[str, Any]:
    """Every run set's runs and every panel's data (see the module's docstring); with
    ``limit``, the first ``limit`` panels only and the run sets they use (a page's first
    screen, drawn before the rest)."""
    selected: dict[str, list[dict[str, Any]]] = {}
    if limit is None:
        for name, rs in report.runsets.items():
            selected[name], _ = source.select(report.project, rs)
    panels = []
    for panel in report.panels[:limit]:
        if panel.type == "markdown":
            panels.append({"type": "markdown", "title": panel.title, **panel.options})
            continue
        name, rs = _runset_of(report, panel)
        if name and name not in selected:
            selected[name], _ = source.select(report.project, rs)
        runs = selected[name] if name else source.select(report.project, rs)[0]
        panels.append(panel_data(report, panel, runs, rs, source))
    runsets = {
        n: {**rs.to_yaml(), "selected": [r["id"] for r in selected[n]]}
        for n, rs in report.runsets.items()
        if n in selected
    }
    return {"runsets": runsets, "panels": panels}


# -- freeze ------------------------------------------------------------------------------------


def _used_keys(report: Any, target: RunSet) -> list[str]:
    keys: dict[str, None] = {}
    for panel in report.panels:
        if panel.type == "markdown":
            continue
        if _runset_of(report, panel)[1] is target:
            keys.update(dict.fromkeys(panel.keys))
    return list(keys)


def freeze(report: Any, source: Source, again: bool = False) -> list[str]:
    """Pin every run set (named and inline) to the ids of the runs it selects now and the
    last step they hold; returns a line per run set frozen.  Frozen ones are kept unless
    ``again``."""
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    sets: list[tuple[str, RunSet]] = list(report.runsets.items())
    sets += [(f"panel {i + 1}", p.runs) for i, p in enumerate(report.panels) if p.runs is not None]
    done = []
    for name, rs in sets:
        if rs.frozen and not again:
            continue
        if again and rs.frozen_at is not None and rs.filter:
            rs.runs = None  # select anew by the filter
        runs, _ = source.select(report.project, rs)
        keys = _used_keys(report, rs)
        steps = [s for r in runs if (s := source.last_step(r, keys)) is not None]
        rs.runs = [r["id"] for r in runs]
        rs.max_step = max(steps, default=0)
        rs.frozen_at = stamp
        done.append(f"{name}: {len(runs)} runs, steps <= {rs.max_step}")
    report.touch_runsets()
    return done


# -- lint --------------------------------------------------------------------------------------


class Finding:
    """One thing lint found: ``level`` ("error" or "warning"), ``where`` and ``message``."""

    def __init__(self, level: str, where: str, message: str) -> None:
        self.level, self.where, self.message = level, where, message

    def __str__(self) -> str:
        return f"{self.level}: {self.where}: {self.message}"

    def __repr__(self) -> str:
        return f"<Finding {self}>"


def _suggest(name: str, have: set[str]) -> str:
    close = difflib.get_close_matches(name, sorted(have), n=3)
    return f" (did you mean {', '.join(repr(c) for c in close)}?)" if close else ""


def lint(report: Any, source: Source) -> list[Finding]:
    """Run sets that select nothing or name missing runs, keys and fields no selected run has."""
    found: list[Finding] = []
    selected: dict[int, list[dict[str, Any]]] = {}

    def runs_of(where: str, rs: RunSet) -> list[dict[str, Any]]:
        if id(rs) not in selected:
            runs, missing = source.select(report.project, rs)
            for r in missing:
                found.append(Finding("error", where, f"run {r!r} is not in {report.project!r}"))
            if not runs:
                what = f"filter {rs.filter!r}" if rs.runs is None else "its run ids"
                found.append(Finding("warning", where, f"selects no runs ({what})"))
            selected[id(rs)] = runs
        return selected[id(rs)]

    for name, rs in report.runsets.items():
        runs = runs_of(f"runset {name}", rs)
        for f in rs.group:
            if runs and all(field_value(r, f) is _MISSING for r in runs):
                found.append(Finding("warning", f"runset {name}: group", f"no run has {f!r}"))
    for i, panel in enumerate(report.panels):
        if panel.type == "markdown":
            continue
        where = f"panel {i + 1} ({panel.type}, line {report.panel_line(i)})"
        runs = runs_of(where, _runset_of(report, panel)[1])
        if not runs:
            continue
        keys: set[str] = set()
        for r in runs:
            keys.update(source.metric_keys(r))
        for k in panel.keys if panel.type == "line" else []:
            if k not in keys:
                msg = f"no selected run logs {k!r}{_suggest(k, keys)}"
                found.append(Finding("error", where, msg))
        fields = [*panel.summary_keys]
        for name in ("x", "y") if panel.type == "scatter" else ():
            fields.append(panel.options[name])
        fields += panel.options.get("columns") or []
        for f in fields:
            if all(field_value(r, f) is _MISSING for r in runs):
                have = {k for r in runs for k in r.get("summary", {})}
                msg = f"no selected run has {f!r}{_suggest(f, have)}"
                found.append(Finding("error" if panel.summary_keys else "warning", where, msg))
    return found

"""The tools an agent calls, over :class:`wisp.Api` (a local folder or a server).

Each tool is a plain function of an :class:`Tools` instance returning a JSON-able dict, so
the same code serves ``wisp mcp`` (stdio), ``/mcp`` on ``wisp server`` and the tests; the
MCP SDK only wraps them (``_server.py``).  Rights are the Api's: over a server every call is
an HTTP request made with the caller's key.

Results are bounded: a list or a history never carries more than ``max_bytes`` of JSON
(``WISP_MCP_MAX_BYTES``, default 64 KiB); what does not fit comes with a ``next_cursor``
to pass back, so nothing is ever silently truncated.  Non-finite floats travel as the
strings ``"nan"``, ``"inf"`` and ``"-inf"`` (JSON has no such numbers).
"""

from __future__ import annotations

import base64
import json
import math
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime, timezone
from typing import Any

from wisp.errors import NotFoundError, UsageError
from wisp.mcp._json import is_num, jsonable

__all__ = ["DEFAULT_MAX_BYTES", "Tools", "decode_cursor", "encode_cursor"]

DEFAULT_MAX_BYTES = 64 * 1024
MAX_LIMIT = 1000
#: config keys and summary metrics compare_runs shows at most (a count says how many more)
MAX_COMPARE_KEYS = 200
_RUN_FIELDS = ("id", "name", "state", "created_at", "tags")


def encode_cursor(state: dict[str, Any]) -> str:
    raw = json.dumps(state, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str | None, field: str = "cursor") -> dict[str, Any]:
    if not cursor:
        return {}
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        state = json.loads(raw)
    except (ValueError, TypeError):
        raise UsageError(f"{field}: not a cursor this server gave out ({cursor[:40]!r})") from None
    if not isinstance(state, dict):
        raise UsageError(f"{field}: not a cursor this server gave out")
    return state


def _size(v: Any) -> int:
    return len(json.dumps(v, separators=(",", ":"), allow_nan=False))


def _quote(v: Any) -> str:
    """A value in the filter language."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if v is None:
        return "null"
    if isinstance(v, int | float):
        return repr(v)
    return json.dumps(str(v))


def _field(name: str) -> str:
    """A config/summary field with each dotted part quoted when it is not a plain word."""
    head, _, rest = name.partition(".")
    if not rest:
        return name
    parts = [p if p.replace("_", "a").isalnum() else json.dumps(p) for p in rest.split(".")]
    return ".".join([head, *parts])


def _when(v: str | float | int | None, field: str) -> float | None:
    """A time given as unix seconds or ISO 8601 (a date alone is midnight UTC)."""
    if v is None or v == "":
        return None
    if isinstance(v, int | float) and not isinstance(v, bool):
        return float(v)
    if isinstance(v, str):
        try:
            return float(v)
        except ValueError:
            pass
        try:
            t = datetime.fromisoformat(v.replace("Z", "+00:00"))
        except ValueError:
            raise UsageError(
                f"{field}: expected unix seconds or an ISO 8601 time, got {v!r}"
            ) from None
        if t.tzinfo is None:
            t = t.replace(tzinfo=timezone.utc)
        return t.timestamp()
    raise UsageError(f"{field}: expected unix seconds or an ISO 8601 time, got {v!r}")


def build_filter(
    filter: str | None = None,  # noqa: A002 - the tool's argument name
    state: str | list[str] | None = None,
    tags: list[str] | None = None,
    config: dict[str, Any] | None = None,
    id_prefix: str | None = None,
    name_contains: str | None = None,
    created_after: str | float | None = None,
    created_before: str | float | None = None,
) -> str:
    """Structured arguments compiled to one expression of the runs filter language."""
    parts: list[str] = []
    if filter:
        parts.append(f"({filter})")
    if state:
        states = [state] if isinstance(state, str) else list(state)
        parts.append("(" + " or ".join(f"state = {_quote(s)}" for s in states) + ")")
    for t in tags or ():
        parts.append(f"tags contains {_quote(t)}")
    for k, v in (config or {}).items():
        parts.append(f"{_field('config.' + k)} = {_quote(v)}")
    if id_prefix:
        parts.append(f"id contains {_quote(id_prefix)}")
    if name_contains:
        parts.append(f"name contains {_quote(name_contains)}")
    after = _when(created_after, "created_after")
    before = _when(created_before, "created_before")
    if after is not None:
        parts.append(f"created_at >= {after!r}")
    if before is not None:
        parts.append(f"created_at < {before!r}")
    return " and ".join(parts)


class Tools:
    """The agent tools over one :class:`wisp.Api` (``api``)."""

    def __init__(self, api: Any, *, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        if max_bytes < 1024:
            raise UsageError(f"max_bytes must be at least 1024, got {max_bytes}")
        self.api = api
        self.max_bytes = max_bytes

    # -- helpers -------------------------------------------------------------------------------

    def _project(self, project: str | None) -> str:
        if project:
            return project
        names = [p.name for p in self.api.projects()]
        if len(names) == 1:
            return str(names[0])
        raise UsageError(
            "project: required when there is not exactly one project "
            f"(projects: {', '.join(names[:20]) or 'none'})"
        )

    def run_obj(self, run: str, project: str | None = None) -> Any:
        """A run by path (``project/id``), id, or a unique prefix of its id."""
        if "/" in run:
            return self.api.run(run)
        proj = self._project(project)
        try:
            return self.api.run(f"{proj}/{run}")
        except NotFoundError:
            pass
        found = [
            r for r in self.api.runs(proj, f"id contains {_quote(run)}") if r.id.startswith(run)
        ]
        if len(found) == 1:
            return found[0]
        if not found:
            raise NotFoundError(f"run: no run of project {proj!r} has an id starting {run!r}")
        ids = ", ".join(r.id for r in found[:10])
        raise UsageError(f"run: {run!r} is the start of several run ids ({ids}); give more of it")

    @staticmethod
    def _brief(r: Any, summary_keys: Iterable[str] = ()) -> dict[str, Any]:
        out: dict[str, Any] = {f: getattr(r, f) for f in _RUN_FIELDS}
        out["path"] = r.path
        keys = list(summary_keys)
        if keys:
            summary = r.summary
            out["summary"] = {k: jsonable(summary.get(k)) for k in keys}
        return out

    def _page(
        self, items: Iterator[Any], start: int, limit: int, make: Callable[[Any], Any]
    ) -> tuple[list[Any], int | None]:
        """Up to ``limit`` items made JSON, cut where the result would pass ``max_bytes``;
        the offset to go on from, or None at the end."""
        out: list[Any] = []
        used = 256
        pos = start
        for item in items:
            if len(out) >= limit:
                return out, pos
            made = make(item)
            n = _size(made) + 1
            if out and used + n > self.max_bytes:
                return out, pos
            out.append(made)
            used += n
            pos += 1
        return out, None

    # -- read tools ----------------------------------------------------------------------------

    def list_projects(self) -> dict[str, Any]:
        """Every project the caller may read, with its run count and last activity."""
        projects = [
            {"name": p.name, "run_count": p.run_count, "last_activity": p.last_activity}
            for p in self.api.projects()
        ]
        return {"projects": projects}

    def list_runs(
        self,
        project: str | None = None,
        filter: str | None = None,  # noqa: A002
        state: str | list[str] | None = None,
        tags: list[str] | None = None,
        config: dict[str, Any] | None = None,
        id_prefix: str | None = None,
        name_contains: str | None = None,
        created_after: str | float | None = None,
        created_before: str | float | None = None,
        sort: str = "-created_at",
        summary_keys: list[str] | None = None,
        limit: int = 50,
        cursor: str | None = None,
    ) -> dict[str, Any]:
        """A project's runs, newest first by default, filtered and paged."""
        if not 1 <= limit <= MAX_LIMIT:
            raise UsageError(f"limit: expected 1..{MAX_LIMIT}, got {limit}")
        proj = self._project(project)
        expr = build_filter(
            filter, state, tags, config, id_prefix, name_contains, created_after, created_before
        )
        start = int(decode_cursor(cursor).get("offset", 0))
        runs = self.api.runs(proj, expr or None, order=sort, per_page=min(limit + 1, 1000))
        total = len(runs)

        def items() -> Iterator[Any]:
            for i in range(start, total):
                r = runs[i]
                if id_prefix and not r.id.startswith(id_prefix):
                    continue
                yield r

        page, nxt = self._page(items(), start, limit, lambda r: self._brief(r, summary_keys or ()))
        return {
            "project": proj,
            "filter": expr,
            "total": total,
            "runs": page,
            "next_cursor": None if nxt is None else encode_cursor({"offset": nxt}),
        }

    def get_run(self, run: str, project: str | None = None, full: bool = False) -> dict[str, Any]:
        """A run's config, summary, state, tags, notes and metric keys."""
        r = self.run_obj(run, project)
        out = self._brief(r)
        out.update(
            project=r.project_path,
            notes=r.notes,
            group=r.group,
            job_type=r.job_type,
            finished_at=r.finished_at,
            config=jsonable(r.config),
            summary=jsonable(dict(r.summary)),
        )
        for attr in ("parent", "fork_step"):  # lineage, where the Api knows it
            v = getattr(r, attr, None)
            if v is not None and not callable(v):
                out[attr] = getattr(v, "path", v)
        if not full:
            for part in ("config", "summary"):
                if _size(out[part]) > self.max_bytes // 3:
                    keys = sorted(out[part])
                    out[part] = {"truncated": True, "keys": keys[:500], "count": len(keys)}
        return out

    def get_metric_history(
        self,
        run: str,
        key: str,
        project: str | None = None,
        min_step: int | None = None,
        max_step: int | None = None,
        buckets: int | None = None,
        cursor: str | None = None,
        limit: int = 5000,
    ) -> dict[str, Any]:
        """Every point of ``key`` with ``min_step <= step <= max_step``, in pages; or, with
        ``buckets``, a min/max-preserving summary of at most that many buckets."""
        r = self.run_obj(run, project)
        if buckets is not None:
            if not 1 <= buckets <= 2000:
                raise UsageError(f"buckets: expected 1..2000, got {buckets}")
            rows = r.history(keys=[key], samples=buckets, pandas=False)
            pts = []
            for row in rows:
                if key not in row:
                    continue
                step = row.get("_step")
                if (min_step is not None and step < min_step) or (
                    max_step is not None and step > max_step
                ):
                    continue
                v = row[key]
                pts.append(
                    {
                        "step": step,
                        "last": jsonable(v),
                        "min": jsonable(row.get(f"{key}:min", v)),
                        "max": jsonable(row.get(f"{key}:max", v)),
                    }
                )
            return {"run": r.path, "key": key, "buckets": pts, "next_cursor": None}
        if not 1 <= limit <= 100_000:
            raise UsageError(f"limit: expected 1..100000, got {limit}")
        after = decode_cursor(cursor).get("after")
        lo = min_step if after is None else int(after) + 1
        points: list[list[Any]] = []
        used = 256
        more = False
        for row in r.scan_history(keys=[key], min_step=lo, page_size=min(limit + 1, 10_000)):
            step = row.get("_step")
            if key not in row or row[key] is None or step is None:
                continue
            if lo is not None and step < lo:
                continue
            if max_step is not None and step > max_step:
                break
            pt = [step, jsonable(row[key])]
            n = _size(pt) + 1
            if len(points) >= limit or (points and used + n > self.max_bytes):
                more = True
                break
            points.append(pt)
            used += n
        nxt = encode_cursor({"after": points[-1][0]}) if more and points else None
        return {"run": r.path, "key": key, "points": points, "next_cursor": nxt}

    def compare_runs(self, runs: list[str], project: str | None = None) -> dict[str, Any]:
        """The config keys whose values differ between the runs, and their summary metrics
        side by side."""
        if not 2 <= len(runs) <= 20:
            raise UsageError(f"runs: expected 2..20 runs, got {len(runs)}")
        objs = [self.run_obj(x, project) for x in runs]
        labels = [r.path for r in objs]
        configs = [_flatten(r.config) for r in objs]
        summaries = [_flatten(dict(r.summary)) for r in objs]
        keys = sorted(set().union(*configs))
        missing = object()
        differ = {}
        for k in keys:
            vals = [c.get(k, missing) for c in configs]
            if any(v is missing or v != vals[0] for v in vals):
                differ[k] = {
                    lab: (None if v is missing else jsonable(v))
                    for lab, v in zip(labels, vals, strict=True)
                }
        metrics = sorted(
            k
            for k in set().union(*summaries)
            if not k.startswith("_") and any(is_num(s.get(k)) for s in summaries)
        )
        side = {
            k: {lab: jsonable(s.get(k)) for lab, s in zip(labels, summaries, strict=True)}
            for k in metrics[:MAX_COMPARE_KEYS]
        }
        return {
            "runs": labels,
            "config_differs": dict(list(differ.items())[:MAX_COMPARE_KEYS]),
            "config_same_count": len(keys) - len(differ),
            "summary": side,
            "more_keys": max(0, len(differ) - MAX_COMPARE_KEYS)
            + max(0, len(metrics) - MAX_COMPARE_KEYS),
        }

    def best_run(
        self,
        metric: str,
        project: str | None = None,
        mode: str = "min",
        filter: str | None = None,  # noqa: A002
        state: str | list[str] | None = None,
    ) -> dict[str, Any]:
        """The run with the lowest (``mode="min"``) or highest summary value of ``metric``."""
        if mode not in ("min", "max"):
            raise UsageError(f"mode: expected 'min' or 'max', got {mode!r}")
        proj = self._project(project)
        expr = build_filter(filter, state)
        best: Any = None
        best_v = 0.0
        seen = 0
        for r in self.api.runs(proj, expr or None):
            raw: Any = _flatten(dict(r.summary)).get(metric)
            if not is_num(raw) or not math.isfinite(float(raw)):
                continue
            v = float(raw)
            seen += 1
            if best is None or (v < best_v if mode == "min" else v > best_v):
                best, best_v = r, v
        if best is None:
            raise NotFoundError(
                f"metric: no run of project {proj!r} has a finite summary value of {metric!r}"
            )
        out = self._brief(best)
        out.update(metric=metric, value=best_v, mode=mode, runs_compared=seen)
        return out

    def diagnose_run(self, run: str, project: str | None = None) -> dict[str, Any]:
        """Health of a run's scalar metrics: NaN/inf counts, divergence, plateau, and the gap
        between train/ and val/ keys of the same name (overfitting)."""
        from wisp.mcp._diagnose import diagnose

        return diagnose(self.run_obj(run, project))

    def get_console(
        self,
        run: str,
        project: str | None = None,
        tail: int = 100,
        grep: str | None = None,
    ) -> dict[str, Any]:
        """The last ``tail`` captured console lines (those containing ``grep`` only)."""
        if not 1 <= tail <= 10_000:
            raise UsageError(f"tail: expected 1..10000, got {tail}")
        r = self.run_obj(run, project)
        lines = [ln for ln in r.console_lines() if grep is None or grep in ln]
        picked = lines[-tail:]
        out: list[str] = []
        used = 256
        for ln in reversed(picked):
            n = len(json.dumps(ln)) + 1
            if out and used + n > self.max_bytes:
                break
            out.append(ln)
            used += n
        out.reverse()
        return {"run": r.path, "lines": out, "matched": len(lines), "shown": len(out)}

    def get_alerts(
        self,
        project: str | None = None,
        since: str | float | None = None,
        cursor: str | None = None,
        level: str | None = None,
        limit: int = 100,
    ) -> dict[str, Any]:
        """Alerts raised by the project's runs (``wisp.alert``), oldest first: those after
        ``since`` (unix seconds or an ISO time), or after ``cursor`` (``next_cursor`` of an
        earlier call: poll with it to get each alert once)."""
        if not 1 <= limit <= MAX_LIMIT:
            raise UsageError(f"limit: expected 1..{MAX_LIMIT}, got {limit}")
        proj = self._project(project)
        st = decode_cursor(cursor)
        if st:
            after = (float(st["ts"]), str(st["run"]), int(st["n"]))
        else:
            t = _when(since, "since")
            after = (float("-inf") if t is None else t, "", -1)
        expr = None
        if after[0] != float("-inf"):  # runs that ended before it raised nothing since
            expr = f"not finished_at exists or finished_at >= {after[0]!r}"
        want = None if level is None else level.upper()
        found = []
        for r in self.api.runs(proj, expr):
            for n, a in enumerate(r.alerts()):
                pos = (float(a.get("ts") or 0), r.id, n)
                if pos > after and (want is None or a.get("level") == want):
                    found.append((pos, {**jsonable(a), "run": r.path, "run_name": r.name}))
        found.sort(key=lambda x: x[0])
        page = found[:limit]
        last = page[-1][0] if page else after
        nxt = None
        if last[0] != float("-inf"):
            nxt = encode_cursor({"ts": last[0], "run": last[1], "n": last[2]})
        return {
            "project": proj,
            "alerts": [a for _, a in page],
            "more": len(found) > limit,
            "next_cursor": nxt,
        }

    # -- write tools ---------------------------------------------------------------------------

    def stop_run(self, run: str, project: str | None = None) -> dict[str, Any]:
        """Ask a live run's process to finish cleanly (through the server, as wandb's remote
        stop); it stops within a heartbeat interval and ends as ``killed``."""
        r = self.run_obj(run, project)
        if r.state != "running":
            raise UsageError(f"run: {r.path} is {r.state}, not running; there is nothing to stop")
        r.stop()
        return {"run": r.path, "stop_requested": True}

    def add_tags(self, run: str, tags: list[str], project: str | None = None) -> dict[str, Any]:
        """Add tags to a run (others kept)."""
        r = self.run_obj(run, project)
        have = list(r.tags)
        r.tags = have + [t for t in tags if t not in have]
        r.update()
        return {"run": r.path, "tags": list(r.tags)}

    def remove_tags(self, run: str, tags: list[str], project: str | None = None) -> dict[str, Any]:
        """Remove tags from a run (others kept)."""
        r = self.run_obj(run, project)
        r.tags = [t for t in r.tags if t not in set(tags)]
        r.update()
        return {"run": r.path, "tags": list(r.tags)}

    def set_notes(self, run: str, notes: str, project: str | None = None) -> dict[str, Any]:
        """Replace a run's notes."""
        r = self.run_obj(run, project)
        r.notes = notes
        r.update()
        return {"run": r.path, "notes": r.notes}


def _flatten(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        name = f"{prefix}{k}"
        if isinstance(v, dict) and v and "_type" not in v:
            out.update(_flatten(v, name + "."))
        else:
            out[name] = v
    return out

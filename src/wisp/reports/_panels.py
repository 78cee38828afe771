"""The panel model and run sets of a report, checked field by field (docs/reports.md).

One model serves reports and saved workspaces (a workspace is a report without prose):
``Panel.from_workspace`` / ``Panel.to_workspace`` convert a workspace's line panel
(``server/schemas/workspaces.PanelSpec``) to and from a report's ``line`` panel.

Every check raises ``UsageError`` naming the field (``panel 3 (line 14): y[0]: ...``); the
limits are the shared ones in ``wisp._protocol``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from wisp._protocol import (
    MAX_KEY_LENGTH,
    MAX_NAME_LENGTH,
    MAX_RUNSET_RUNS,
    MAX_STEP,
    id_problem,
    key_problem,
    text_problem,
)
from wisp.errors import UsageError

__all__ = ["PANEL_TYPES", "Panel", "RunSet", "check_field", "check_runset"]

Check = Callable[[Any, str], Any]


def _fail(where: str, why: str) -> UsageError:
    return UsageError(f"{where}: {why}")


def _key(v: Any, where: str) -> str:
    if not isinstance(v, str):
        raise _fail(where, f"expected a metric key (text), got {v!r}")
    problem = key_problem(v)
    if problem is not None:
        raise _fail(where, problem)
    return v


def _keys(lo: int, hi: int) -> Check:
    def check(v: Any, where: str) -> list[str]:
        items = [v] if isinstance(v, str) else v
        if not isinstance(items, list) or not lo <= len(items) <= hi:
            raise _fail(where, f"expected {lo} to {hi} metric keys, got {v!r}")
        return [_key(k, f"{where}[{i}]") for i, k in enumerate(items)]

    return check


def check_field(v: Any, where: str) -> str:
    """A run field: a column (``state``, ``name``, ...), ``config.<path>``, ``summary.<path>``
    or a bare summary key (``val/loss`` means ``summary.val/loss``)."""
    from wisp.server.http.problem import Problem
    from wisp.server.query.filter import COLUMNS, field_path

    if not isinstance(v, str) or not v or len(v) > MAX_KEY_LENGTH:
        raise _fail(where, f"expected a field (config.<key>, summary.<key> or a column), got {v!r}")
    head = v.partition(".")[0]
    if head in ("config", "summary") or v in COLUMNS:
        try:
            field_path(v)
        except Problem as p:
            raise _fail(where, p.message) from None
    return v


def _fields(lo: int, hi: int) -> Check:
    def check(v: Any, where: str) -> list[str]:
        if not isinstance(v, list) or not lo <= len(v) <= hi:
            raise _fail(where, f"expected a list of {lo} to {hi} fields, got {v!r}")
        return [check_field(f, f"{where}[{i}]") for i, f in enumerate(v)]

    return check


def _choice(*options: str) -> Check:
    def check(v: Any, where: str) -> str:
        if v not in options:
            raise _fail(where, f"expected one of {', '.join(options)}, got {v!r}")
        return str(v)

    return check


def _number(lo: float | None = None, hi: float | None = None) -> Check:
    def check(v: Any, where: str) -> float:
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
            raise _fail(where, f"expected a finite number, got {v!r}")
        if (lo is not None and v < lo) or (hi is not None and v > hi):
            raise _fail(where, f"expected a number in {lo}..{hi}, got {v!r}")
        return float(v)

    return check


def _int(lo: int, hi: int) -> Check:
    def check(v: Any, where: str) -> int:
        if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
            raise _fail(where, f"expected an integer in {lo}..{hi}, got {v!r}")
        return v

    return check


def _flag(v: Any, where: str) -> bool:
    if not isinstance(v, bool):
        raise _fail(where, f"expected true or false, got {v!r}")
    return v


def _text(limit: int) -> Check:
    def check(v: Any, where: str) -> str:
        if not isinstance(v, str):
            raise _fail(where, f"expected text, got {v!r}")
        problem = text_problem(v, limit)
        if problem is not None:
            raise _fail(where, problem)
        return v

    return check


_X = _key  # "step", "time" (wall clock), "relative" (seconds since the run began) or a metric

#: Each panel type's fields besides the common ones (``_COMMON``); the first listed of a
#: type's required fields is named in errors.
PANEL_TYPES: dict[str, dict[str, tuple[Check, bool]]] = {
    "line": {
        "y": (_keys(1, 20), True),
        "x": (_X, False),
        "band": (_choice("minmax", "std", "none"), False),
        "agg": (_choice("mean", "median"), False),
        "smooth": (_number(0, 0.99), False),
        "smooth_mode": (_choice("ema", "time"), False),
        "log_x": (_flag, False),
        "log_y": (_flag, False),
        "y_min": (_number(), False),
        "y_max": (_number(), False),
    },
    "bar": {"y": (_keys(1, 20), True), "agg": (_choice("mean", "median", "min", "max"), False)},
    "scalar": {"y": (_key, True), "agg": (_choice("mean", "median", "min", "max"), False)},
    "scatter": {
        "x": (check_field, True),
        "y": (check_field, True),
        "log_x": (_flag, False),
        "log_y": (_flag, False),
    },
    "parallel": {"columns": (_fields(2, 20), True)},
    "compare": {"fields": (_fields(1, 50), False), "diff_only": (_flag, False)},
    "media": {"key": (_key, True), "step": (_int(0, MAX_STEP), False)},
    "runs": {"columns": (_fields(1, 50), False)},
    "markdown": {"text": (_text(100_000), True)},
}
_COMMON: dict[str, Check] = {
    "id": _text(64),
    "title": _text(MAX_NAME_LENGTH),
    "w": _int(1, 4),
    "h": _int(120, 1200),
}


@dataclass
class RunSet:
    """Which runs a panel draws: ``runs`` (exact ids) or ``filter``; ``group`` joins runs with
    equal values into one line; ``max_step`` caps the steps drawn (set by freezing)."""

    filter: str = ""
    runs: list[str] | None = None
    group: list[str] = field(default_factory=list)
    max_step: int | None = None
    frozen_at: str | None = None

    @property
    def frozen(self) -> bool:
        return self.runs is not None and self.max_step is not None

    def to_yaml(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.filter:
            out["filter"] = self.filter
        if self.runs is not None:
            out["runs"] = list(self.runs)
        if self.group:
            out["group"] = self.group[0] if len(self.group) == 1 else list(self.group)
        if self.max_step is not None:
            out["max_step"] = self.max_step
        if self.frozen_at is not None:
            out["frozen_at"] = self.frozen_at
        return out


def check_runset(v: Any, where: str) -> RunSet:
    """A run set from its YAML: a mapping, a filter (text) or a list of run ids."""
    if isinstance(v, str):
        v = {"filter": v}
    elif isinstance(v, list):
        v = {"runs": v}
    if not isinstance(v, dict):
        raise _fail(where, f"expected a run set (filter, runs, group, max_step), got {v!r}")
    unknown = sorted(set(v) - {"filter", "runs", "group", "max_step", "frozen_at"})
    if unknown:
        raise _fail(f"{where}.{unknown[0]}", "unknown field (filter, runs, group, max_step)")
    rs = RunSet()
    if v.get("filter") is not None:
        rs.filter = _text(4000)(v["filter"], f"{where}.filter")
        from wisp.api._filters import parse

        try:
            parse(rs.filter)
        except UsageError as exc:
            raise _fail(f"{where}.filter", str(exc)) from None
    if v.get("runs") is not None:
        runs = v["runs"]
        if not isinstance(runs, list) or len(runs) > MAX_RUNSET_RUNS:
            raise _fail(f"{where}.runs", f"expected a list of at most {MAX_RUNSET_RUNS} run ids")
        for i, r in enumerate(runs):
            problem = id_problem(r)
            if problem is not None:
                raise _fail(f"{where}.runs[{i}]", f"{r!r}: {problem}")
        rs.runs = list(runs)
    if v.get("group") is not None:
        g = v["group"]
        items = [g] if isinstance(g, str) else g
        if not isinstance(items, list) or not 1 <= len(items) <= 5:
            raise _fail(f"{where}.group", f"expected a field or a list of 1 to 5, got {g!r}")
        rs.group = [check_field(x, f"{where}.group[{i}]") for i, x in enumerate(items)]
    if v.get("max_step") is not None:
        rs.max_step = _int(0, MAX_STEP)(v["max_step"], f"{where}.max_step")
    if v.get("frozen_at") is not None:
        rs.frozen_at = _text(64)(str(v["frozen_at"]), f"{where}.frozen_at")
    return rs


@dataclass
class Panel:
    """One panel: its ``type``, its options (checked) and where its runs come from (the name
    of a front-matter run set in ``runset``, or an inline ``runs`` run set)."""

    type: str
    options: dict[str, Any] = field(default_factory=dict)
    runset: str | None = None
    runs: RunSet | None = None
    title: str = ""

    @classmethod
    def from_yaml(cls, spec: dict[str, Any], where: str) -> Panel:
        kind = spec.get("type")
        if kind not in PANEL_TYPES:
            raise _fail(f"{where}: type", f"expected one of {', '.join(PANEL_TYPES)}, got {kind!r}")
        fields = PANEL_TYPES[kind]
        panel = cls(type=kind)
        for name, value in spec.items():
            at = f"{where}: {name}"
            if name == "type":
                continue
            if name == "runset":
                if kind == "markdown":
                    raise _fail(at, "a markdown panel draws no runs")
                panel.runset = _text(MAX_NAME_LENGTH)(value, at)
            elif name == "runs":
                if kind == "markdown":
                    raise _fail(at, "a markdown panel draws no runs")
                panel.runs = check_runset(value, at)
            elif name in _COMMON:
                checked = _COMMON[name](value, at)
                if name == "title":
                    panel.title = checked
                else:
                    panel.options[name] = checked
            elif name in fields:
                panel.options[name] = fields[name][0](value, at)
            else:
                allowed = ", ".join([*fields, "runset", "runs", *_COMMON])
                raise _fail(at, f"unknown field for a {kind} panel (fields: {allowed})")
        missing = [n for n, (_, required) in fields.items() if required and n not in spec]
        if missing:
            raise _fail(f"{where}: {missing[0]}", f"required for a {kind} panel")
        if panel.runset is not None and panel.runs is not None:
            raise _fail(f"{where}: runs", "give runset (a name) or runs (inline), not both")
        return panel

    def to_yaml(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.type}
        if self.title:
            out["title"] = self.title
        if self.runset is not None:
            out["runset"] = self.runset
        if self.runs is not None:
            out["runs"] = self.runs.to_yaml()
        out.update(self.options)
        return out

    @property
    def keys(self) -> list[str]:
        """The metric keys this panel reads from histories or media."""
        if self.type == "line":
            ys: list[str] = self.options["y"]
            x = self.options.get("x", "step")
            return [*ys, x] if x not in ("step", "time", "relative") else list(ys)
        if self.type == "media":
            return [self.options["key"]]
        return []

    @property
    def summary_keys(self) -> list[str]:
        """The summary keys this panel reads (bar and scalar values)."""
        if self.type in ("bar", "scalar"):
            y = self.options["y"]
            return [y] if isinstance(y, str) else list(y)
        return []

    # -- workspaces: the same model ------------------------------------------------------------

    @classmethod
    def from_workspace(cls, spec: dict[str, Any]) -> Panel:
        """A workspace's line panel (``PanelSpec`` as JSON) as a report panel."""
        names = {"keys": "y", "log_y": "log_y", "smooth": "smooth", "smooth_mode": "smooth_mode"}
        out: dict[str, Any] = {"type": "line"}
        for k, v in spec.items():
            if k in ("kind",) or v is None or (k == "smooth" and not v):
                continue
            out[names.get(k, k)] = v
        if out.get("x") == "step":
            del out["x"]
        return cls.from_yaml(out, "workspace panel")

    def to_workspace(self, panel_id: str) -> dict[str, Any]:
        """This line panel as a workspace ``PanelSpec`` (JSON)."""
        if self.type != "line":
            raise UsageError(f"a workspace holds line panels only, not {self.type}")
        o = self.options
        spec: dict[str, Any] = {"id": o.get("id", panel_id), "keys": list(o["y"]), "kind": "line"}
        spec["title"] = self.title
        spec["x"] = o.get("x", "step")
        for k in ("smooth", "smooth_mode", "log_y", "y_min", "y_max", "w", "h"):
            if k in o:
                spec[k] = o[k]
        return spec

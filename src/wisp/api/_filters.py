"""Filters for ``Api.runs()``: MongoDB-style dicts translated to wisp's filter language, and
the language's expression tree evaluated over local runs.

The grammar is defined once, in ``wisp.server.query.filter`` (standard library only); a dict is
*translated* to that language's text (never evaluated as code), and a local folder's runs are
selected by evaluating the parsed tree with the semantics of the server's SQL
(``wisp.server.query.runs``): a number compares numerically and never matches a non-number, a
string compares as text, a comparison on a missing key is false (so ``not`` selects it),
``tags contains "x"`` tests membership, other ``contains`` search the text.
"""

from __future__ import annotations

import math
import re
from typing import Any

from wisp.errors import UsageError

__all__ = ["evaluate", "field_name", "from_mongo", "parse", "to_source"]

_ALIASES = {
    "display_name": "name",
    "displayName": "name",
    "createdAt": "created_at",
    "group": "group",
    "jobType": "job_type",
}
_PREFIXES = {"summary_metrics.": "summary.", "config.": "config.", "summary.": "summary."}
_OPS = {"$eq": "=", "$ne": "!=", "$lt": "<", "$lte": "<=", "$gt": ">", "$gte": ">="}
_PLAIN = re.compile(r"[A-Za-z_][\w/\-]*")
_PART = re.compile(r"[\w/\-]+")


def parse(src: str) -> dict[str, Any] | None:
    """The expression tree of a filter; UsageError naming the fault when invalid."""
    from wisp.server.http.problem import Problem
    from wisp.server.query.filter import parse as _parse

    try:
        return _parse(src)
    except Problem as p:
        raise UsageError(f"invalid filter {src!r}: {p.message}") from None


def field_name(name: str) -> str:
    """wisp's name for a field given wandb's way (``summary_metrics.acc`` -> ``summary.acc``)."""
    return _field(name)


def _field(name: str) -> str:
    if not isinstance(name, str) or not name:
        raise UsageError(f"filter: a field name must be a non-empty string, got {name!r}")
    name = _ALIASES.get(name, name)
    for old, new in _PREFIXES.items():
        if name.startswith(old):
            head, rest = new[:-1], name[len(old) :]
            if head == "config" and rest.endswith(".value"):
                rest = rest[: -len(".value")]  # wandb's {"config.lr.value": ...}
            parts = rest.split(".")
            return head + "." + ".".join(p if _PART.fullmatch(p) else _quote(p) for p in parts)
    if not _PLAIN.fullmatch(name):
        raise UsageError(f"filter: unknown field {name!r}")
    return name


def _quote(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _value(v: Any, where: str) -> str:
    if v is None:
        return "null"
    if v is True or v is False:
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if not math.isfinite(v):
            raise UsageError(f"filter: {where}: {v} cannot be compared (not a finite number)")
        return repr(v)
    if isinstance(v, str):
        return _quote(v)
    raise UsageError(
        f"filter: {where}: expected a number, string, bool or None, got {type(v).__name__}"
    )


def _join(op: str, parts: list[str]) -> str:
    if not parts:
        raise UsageError(f"filter: ${op} needs at least one condition")
    return parts[0] if len(parts) == 1 else "(" + f" {op} ".join(parts) + ")"


def _cond(field: str, spec: Any) -> str:
    f = _field(field)
    is_tags = f == "tags"
    if not isinstance(spec, dict) or not any(str(k).startswith("$") for k in spec):
        if is_tags:
            return f"tags contains {_value(spec, field)}"
        return f"{f} = {_value(spec, field)}"
    parts = []
    for op, v in spec.items():
        where = f"{field}.{op}"
        if op in _OPS:
            if is_tags and op in ("$eq", "$ne"):
                c = f"tags contains {_value(v, where)}"
                parts.append(c if op == "$eq" else f"not {c}")
            else:
                parts.append(f"{f} {_OPS[op]} {_value(v, where)}")
        elif op in ("$in", "$nin"):
            if not isinstance(v, (list, tuple)) or not v:
                raise UsageError(f"filter: {where}: expected a non-empty list")
            if is_tags:
                alts = [f"tags contains {_value(x, where)}" for x in v]
            else:
                alts = [f"{f} = {_value(x, where)}" for x in v]
            inner = _join("or", alts)
            parts.append(inner if op == "$in" else f"not {inner}")
        elif op == "$exists":
            parts.append(f"{f} exists" if v else f"not {f} exists")
        elif op == "$contains" and isinstance(v, str):
            parts.append(f"{f} contains {_value(v, where)}")
        elif op == "$not":
            parts.append(f"not {_cond(field, v)}")
        else:
            raise UsageError(
                f"filter: unsupported operator {op!r} on {field!r} (supported: "
                f"{', '.join([*_OPS, '$in', '$nin', '$exists', '$contains', '$not'])})"
            )
    return _join("and", parts)


def from_mongo(doc: dict[str, Any]) -> str:
    """The filter-language text of a MongoDB-style filter dict."""
    if not isinstance(doc, dict):
        raise UsageError(f"filters must be a str or a dict, got {type(doc).__name__}")
    parts = []
    for k, v in doc.items():
        if k in ("$and", "$or", "$nor"):
            if not isinstance(v, (list, tuple)):
                raise UsageError(f"filter: {k} expects a list of filter dicts")
            subs = [from_mongo(x) for x in v]
            inner = _join("and" if k == "$and" else "or", subs)
            parts.append(f"not {inner}" if k == "$nor" else inner)
        elif k.startswith("$"):
            raise UsageError(f"filter: unsupported top-level operator {k!r}")
        else:
            parts.append(_cond(k, v))
    if not parts:
        return ""
    return _join("and", parts) if len(parts) > 1 else parts[0]


def to_source(filters: str | dict[str, Any] | None) -> str:
    """The filter-language text of ``filters`` (a string, a dict, or None)."""
    if filters is None:
        return ""
    if isinstance(filters, str):
        return filters
    return from_mongo(filters)


# -- evaluation over local runs ----------------------------------------------------------------

_MISSING = object()


def _lookup(run: dict[str, Any], path: list[str]) -> Any:
    cur: Any = run
    for part in path:
        if not isinstance(cur, dict) or part not in cur:
            return _MISSING
        cur = cur[part]
    return cur


def _num(tree_value: Any) -> float | None:
    if isinstance(tree_value, dict):
        text = tree_value["num"]
        return float(text)
    return None


def _cmp(op: str, a: Any, b: Any) -> bool:
    if op == "=":
        return bool(a == b)
    if op == "!=":
        return bool(a != b)
    if op == "<":
        return bool(a < b)
    if op == "<=":
        return bool(a <= b)
    if op == ">":
        return bool(a > b)
    return bool(a >= b)


def evaluate(tree: dict[str, Any] | None, run: dict[str, Any]) -> bool:
    """Whether ``run`` (a run dict as the server returns it) matches the tree."""
    if tree is None:
        return True
    if "or" in tree:
        return any(evaluate(t, run) for t in tree["or"])
    if "and" in tree:
        return all(evaluate(t, run) for t in tree["and"])
    if "not" in tree:
        return not evaluate(tree["not"], run)
    if "exists" in tree:
        path = tree["exists"]["path"]
        v = _lookup(run, path)
        if len(path) == 1:
            return path[0] == "tags" or (v is not _MISSING and v is not None)
        return v is not _MISSING
    if "contains" in tree:
        path = tree["contains"]["path"]
        v = _lookup(run, path)
        want = tree["value"]
        if path == ["tags"]:
            return isinstance(v, list) and want in v
        text = want["num"] if isinstance(want, dict) else want
        if v is _MISSING or v is None:
            return False
        hay = v if isinstance(v, str) else _text(v)
        return isinstance(text, str) and text in hay
    path = tree["field"]["path"]
    op = tree["cmp"]
    want = tree["value"]
    v = _lookup(run, path)
    if want is None:
        is_null = v is None if len(path) == 1 else (v is not _MISSING and v is None)
        return is_null if op == "=" else not is_null
    if v is _MISSING or v is None:
        return False
    if isinstance(want, bool):
        hit = isinstance(v, bool) and v == want
        return hit if op == "=" else (isinstance(v, bool) and not hit)
    n = _num(want)
    if n is not None:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            return False
        return _cmp(op, float(v), n)
    if not isinstance(v, str):
        return False
    return _cmp(op, v, want)


def _text(v: Any) -> str:
    import json

    return json.dumps(v, separators=(", ", ": "))

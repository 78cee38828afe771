"""Runs queries: the filter language compiled to bound SQL, sorting and pagination.

The language itself (grammar and expression tree) is defined in ``server.query.filter``; this module
turns its tree into SQL.  A number compares numerically (JSON values that are not numbers
never match); a string compares as text; ``tags contains "x"`` tests membership.  Values
only ever reach SQL as bound parameters.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy import (
    Text,
    and_,
    cast,
    false,
    func,
    not_,
    or_,
    select,
    true,
)

from wisp.server.http.problem import Problem
from wisp.server.query.filter import COLUMNS, field_path, number, parse
from wisp.server.query.filter import bad as _bad
from wisp.server.store import schema as S

__all__ = ["FIELDS", "filter_tree", "list_runs", "parse_filter"]

FIELDS = COLUMNS
_NUMERIC = ("created_at", "finished_at", "duration", "stalled")


_OPS = {
    "=": "__eq__",
    "==": "__eq__",
    "!=": "__ne__",
    "<": "__lt__",
    "<=": "__le__",
    ">": "__gt__",
    ">=": "__ge__",
}


class _Field:
    """A filterable/sortable field: a plain column or a path into a JSON column."""

    def __init__(self, store: Any, name: str) -> None:
        self.store = store
        self.name = name
        self.json: Any = None
        self.path: list[str] = []
        r = S.runs.c
        path = field_path(name)
        if path[0] in ("artifact", "alert"):
            raise _bad(f"{name} describes {path[0]} events: automation triggers only")
        if len(path) > 1:
            self.json = r.config if path[0] == "config" else r.summary
            self.path = path[1:]
            return
        cols = {
            "state": store.state_expr(),
            "name": r.name,
            "id": r.given_id,
            "notes": r.notes,
            "group": r.run_group,
            "job_type": r.job_type,
            "tags": r.tags,
            "created_at": r.created_at,
            "finished_at": r.finished_at,
            "duration": store.duration_expr(),
            "stalled": store.runs.stalled_expr(),
        }
        self.col = cols[name]

    # JSON access: the SQL differs per backend (wisp.server.store.dialect)
    def _jtype(self) -> Any:
        return self.store.dialect.json_type(self.json, self.path)

    def num(self) -> Any:
        if self.json is None:
            return self.col if self.name in _NUMERIC else None
        return self.store.dialect.json_number(self.json, self.path)

    def text(self) -> Any:
        if self.json is None:
            return self.col if self.name not in ("tags",) else cast(self.col, Text)
        return self.store.dialect.json_text(self.json, self.path)

    def exists(self) -> Any:
        if self.json is None:
            return self.col.is_not(None) if self.name != "tags" else true()
        return self._jtype().is_not(None)

    def contains(self, value: Any) -> Any:
        if self.name == "tags":
            if not isinstance(value, str):
                raise _bad("tags contains expects a string")
            return self.store.dialect.json_array_contains(S.runs.c.tags, value)
        if value is None or isinstance(value, bool):
            raise _bad(f"{self.name} contains expects a string or number")
        txt = self.text()
        if txt is None:
            raise _bad(f"{self.name} cannot be searched as text")
        return txt.contains(str(value), autoescape=True)

    def compare(self, op: str, value: Any) -> Any:
        meth = _OPS[op]
        if value is None:
            if op not in ("=", "==", "!="):
                raise _bad("null only compares with = or !=")
            e = self.exists() if self.json is None else self._jtype().in_(["null"])
            if self.json is None:
                e = not_(e)
            return not_(e) if op == "!=" else e
        if isinstance(value, bool):
            if self.json is None or op not in ("=", "==", "!="):
                raise _bad(f"booleans compare only with = or != on config/summary keys ({op})")
            e = self.store.dialect.json_is_bool(self.json, self.path, value)
            return not_(e) if op == "!=" else e
        if isinstance(value, (int, float)):
            n = self.num()
            if n is None:
                raise _bad(f"{self.name} is not numeric")
            return getattr(n, meth)(float(value))
        if self.name == "tags":
            raise _bad("use 'tags contains \"x\"' to filter on tags")
        t = self.text()
        if self.name in _NUMERIC:
            raise _bad(f"{self.name} compares with numbers")
        return getattr(t, meth)(value)

    def sort_keys(self, desc: bool) -> list[Any]:
        if self.json is None:
            col = self.text() if self.name == "tags" else self.col
            keys = [col]
        else:
            keys = [self.num(), self.text()]
        return [(k.desc() if desc else k.asc()).nulls_last() for k in keys]


def _known(cond: Any) -> Any:
    """Two-valued logic: a comparison with a missing value is false, so ``not`` selects it."""
    return func.coalesce(cond, false())


def field_ref(store: Any, name: str) -> _Field:
    return _Field(store, name)


def _value(v: Any) -> Any:
    return number(v) if isinstance(v, dict) else v


Measure = Callable[[dict[str, Any]], Any]  # a measure field of the tree -> a numeric SQL value


def _sql(store: Any, tree: dict[str, Any] | None, measure: Measure | None = None) -> Any:
    """The SQL condition of a filter's expression tree (``query.filter``); 422 when invalid.
    ``measure`` gives the SQL value of ``change()``/``zscore()`` (automations only: without
    it they are refused)."""
    if tree is None:
        return true()
    if "or" in tree:
        return or_(*(_sql(store, t, measure) for t in tree["or"]))
    if "and" in tree:
        return and_(*(_sql(store, t, measure) for t in tree["and"]))
    if "not" in tree:
        return not_(_sql(store, tree["not"], measure))
    if "exists" in tree:
        return field_ref(store, tree["exists"]["name"]).exists()
    if "contains" in tree:
        return _known(field_ref(store, tree["contains"]["name"]).contains(_value(tree["value"])))
    if "measure" in tree["field"]:
        if measure is None:
            raise _bad(
                f"{tree['field']['measure']}() is for automation triggers only "
                "(wisp automation add --when); the runs list cannot filter on it"
            )
        got = measure(tree["field"])
        return _known(getattr(got, _OPS[tree["cmp"]])(float(number(tree["value"]))))
    fld = field_ref(store, tree["field"]["name"])
    return _known(fld.compare(tree["cmp"], _value(tree["value"])))


def parse_filter(store: Any, src: str, measure: Measure | None = None) -> Any:
    """The SQL condition for a filter expression (a ``Problem`` names what is wrong);
    ``measure``: see ``_sql`` (automations pass it, the runs list does not)."""
    return _sql(store, parse(src, triggers=measure is not None), measure)


def filter_tree(store: Any, src: str) -> dict[str, Any] | None:
    """The expression tree of a valid filter, for the dashboard to evaluate; 422 when invalid."""
    tree = parse(src)
    _sql(store, tree)
    return tree


def list_runs(
    store: Any,
    project: str,
    *,
    filter_expr: str = "",
    sort: str = "created_at",
    order: str = "desc",
    limit: int = 50,
    offset: int = 0,
    group: str | None = None,
) -> dict[str, Any]:
    """One page of a project's runs, filtered and sorted in SQL, with the total count."""
    r = S.runs.c
    cond = and_(r.project == project, parse_filter(store, filter_expr))
    if group is not None:
        cond = and_(cond, r.run_group == group)
    try:
        skeys = field_ref(store, sort).sort_keys(order == "desc")
    except Problem as p:
        raise Problem(422, "invalid", p.message.replace("filter:", "sort:"), "sort") from None
    q = select(S.runs).where(cond).order_by(*skeys, r.id).limit(limit).offset(offset)
    with store.db.read() as conn:
        total = conn.execute(select(func.count()).select_from(S.runs).where(cond)).scalar_one()
        runs = [store.run_dict(row) for row in conn.execute(q)]
    return {"runs": runs, "total": total}

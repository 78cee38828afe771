"""Runs queries: the filter language, sorting and pagination, compiled to bound SQL.

Grammar (keywords case-insensitive)::

    expr  := term ("or" term)*
    term  := fact ("and" fact)*
    fact  := "not" fact | "(" expr ")" | field op value | field "exists"
    op    := "=" | "==" | "!=" | "<" | "<=" | ">" | ">=" | "contains"
    field := state | name | id | notes | group | job_type | tags | created_at | finished_at
             | duration | config.<path> | summary.<path>      (path: dotted, parts may be "quoted")
    value := number | "string" | 'string' | true | false | null | bare-word

A number compares numerically (JSON values that are not numbers never match); a
string compares as text; ``tags contains "x"`` tests membership.  Values only
ever reach SQL as bound parameters.
"""

from __future__ import annotations

import re
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

from wisp.server import _schema as S
from wisp.server._problem import Problem

__all__ = ["FIELDS", "list_runs", "parse_filter"]

FIELDS = (
    "state",
    "name",
    "id",
    "notes",
    "group",
    "job_type",
    "tags",
    "created_at",
    "finished_at",
    "duration",
)
_TOKEN = re.compile(
    r"""\s*(?:(?P<num>-?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?(?![\w.]))"""
    r"""|(?P<str>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')"""
    r"""|(?P<op><=|>=|==|!=|<|>|=|\(|\))"""
    r"""|(?P<word>(?:[A-Za-z_][\w/\-]*|"(?:[^"\\]|\\.)*")(?:\.(?:[\w/\-]+|"(?:[^"\\]|\\.)*"))*))"""
)
_KEYWORDS = {"and", "or", "not", "contains", "exists"}


def _bad(message: str) -> Problem:
    return Problem(422, "invalid", f"filter: {message}", "filter")


def _unquote(s: str) -> str:
    return re.sub(r"\\(.)", r"\1", s[1:-1])


def _tokens(src: str) -> list[tuple[str, str]]:
    out = []
    pos = 0
    src = src.rstrip()
    while pos < len(src):
        m = _TOKEN.match(src, pos)
        if m is None or m.end() == pos:
            raise _bad(f"unexpected text at position {pos}: {src[pos : pos + 20]!r}")
        kind = m.lastgroup or ""
        out.append((kind, m.group(kind)))
        pos = m.end()
    return out


def _split_path(word: str) -> list[str]:
    parts = re.findall(r'"(?:[^"\\]|\\.)*"|[^.]+', word)
    return [_unquote(p) if p.startswith('"') else p for p in parts]


class _Compiler:
    def __init__(self, store: Any, toks: list[tuple[str, str]]) -> None:
        self.store = store
        self.toks = toks
        self.i = 0

    def peek(self) -> tuple[str, str] | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def take(self) -> tuple[str, str]:
        t = self.peek()
        if t is None:
            raise _bad("unexpected end of expression")
        self.i += 1
        return t

    def kw(self, word: str) -> bool:
        t = self.peek()
        if t is not None and t[0] == "word" and t[1].lower() == word:
            self.i += 1
            return True
        return False

    def expr(self) -> Any:
        parts = [self.term()]
        while self.kw("or"):
            parts.append(self.term())
        return or_(*parts) if len(parts) > 1 else parts[0]

    def term(self) -> Any:
        parts = [self.fact()]
        while self.kw("and"):
            parts.append(self.fact())
        return and_(*parts) if len(parts) > 1 else parts[0]

    def fact(self) -> Any:
        if self.kw("not"):
            return not_(self.fact())
        t = self.take()
        if t == ("op", "("):
            e = self.expr()
            if self.take() != ("op", ")"):
                raise _bad("expected ')'")
            return e
        if t[0] != "word" or t[1].lower() in _KEYWORDS:
            raise _bad(f"expected a field name, got {t[1]!r}")
        fld = field_ref(self.store, t[1])
        if self.kw("exists"):
            return fld.exists()
        if self.kw("contains"):
            return _known(fld.contains(self.value()))
        op = self.take()
        if op[0] != "op" or op[1] in "()":
            raise _bad(f"expected an operator after {t[1]!r}, got {op[1]!r}")
        return _known(fld.compare(op[1], self.value()))

    def value(self) -> Any:
        kind, v = self.take()
        if kind == "num":
            return float(v) if any(c in v for c in ".eE") else int(v)
        if kind == "str":
            return _unquote(v)
        if kind == "word":
            low = v.lower()
            if low in ("true", "false"):
                return low == "true"
            if low == "null":
                return None
            return v
        raise _bad(f"expected a value, got {v!r}")


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
        head, _, rest = name.partition(".")
        if head in ("config", "summary") and rest:
            self.json = r.config if head == "config" else r.summary
            self.path = _split_path(rest)
            if any(not p or '"' in p for p in self.path) or len(self.path) > 16:
                raise _bad(f"bad key path in {name!r}")
            return
        cols = {
            "state": store.state_expr(),
            "name": r.name,
            "id": r.id,
            "notes": r.notes,
            "group": r.run_group,
            "job_type": r.job_type,
            "tags": r.tags,
            "created_at": r.created_at,
            "finished_at": r.finished_at,
            "duration": store.duration_expr(),
        }
        if name not in cols:
            raise _bad(
                f"unknown field {name!r}: expected one of {', '.join(FIELDS)}, "
                "config.<key> or summary.<key>"
            )
        self.col = cols[name]

    # JSON access: the SQL differs per backend (wisp.server._dialect)
    def _jtype(self) -> Any:
        return self.store.dialect.json_type(self.json, self.path)

    def num(self) -> Any:
        if self.json is None:
            return self.col if self.name in ("created_at", "finished_at", "duration") else None
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
        if self.name in ("created_at", "finished_at", "duration"):
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


def parse_filter(store: Any, src: str) -> Any:
    """The SQL condition for a filter expression (a ``Problem`` names what is wrong)."""
    if len(src) > 4000:
        raise _bad("longer than 4000 characters")
    toks = _tokens(src)
    if not toks:
        return true()
    c = _Compiler(store, toks)
    e = c.expr()
    if c.peek() is not None:
        raise _bad(f"unexpected {c.peek()[1]!r}")  # type: ignore[index]
    return e


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
    with store.engine.connect() as conn:
        total = conn.execute(select(func.count()).select_from(S.runs).where(cond)).scalar_one()
        runs = [store.run_dict(row) for row in conn.execute(q)]
    return {"runs": runs, "total": total}

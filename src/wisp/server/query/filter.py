"""The runs filter language, defined once: its grammar, parsed to a JSON expression tree.

The server compiles the tree to bound SQL (``server.query.runs``); the dashboard fetches the same
tree from ``GET /api/v1/filter/parse`` and evaluates it over the runs it has loaded
(``web/src/filter.ts``), so the page holds no tokenizer or grammar of its own.

Grammar (keywords case-insensitive)::

    expr  := term ("or" term)*
    term  := fact ("and" fact)*
    fact  := "not" fact | "(" expr ")" | field op value | field "exists" | field "contains" value
             | field "in" "(" value ("," value)* ")"     (the tree of field = v1 or field = v2 ...)
             | measure op number
    measure := "change" "(" summary.<path> "," integer ["steps"] ")"
             | "zscore" "(" (summary.<path> | config.<path>) ")"
    op    := "=" | "==" | "!=" | "<" | "<=" | ">" | ">=" | "contains"
    field := state | name | id | notes | group | job_type | tags | created_at | finished_at
             | duration | stalled | config.<path> | summary.<path>
             | artifact.(event | name | type | version | alias | project)   (automations only)
             | alert.(title | text | level)                                 (automations only)
             (path: dotted, parts may be "quoted")
    value := number | duration | "string" | 'string' | true | false | null | nan | inf | bare-word
    duration := number ("s" | "m" | "h" | "d")      (seconds, minutes, hours, days: a number of s)

``stalled`` is the seconds since a *running* run last logged a step (since it started when it
logged none); no value for other states, so ``stalled > 30m`` holds for runs alive (heartbeats
arriving) that stopped stepping.  ``nan`` and ``inf`` (bare words, any case) are the texts a
non-finite summary or config value is stored as (``"NaN"``, ``"Infinity"``):
``summary.loss = nan``; ``"-Infinity"`` is written quoted.

A *measure* is a number the server computes per run for automations only (``server.query
.measures``): ``change(summary.loss, 100 steps)`` is the metric's value at its last logged step
minus its value 100 steps before (no value with fewer steps of history, or a non-finite end);
``zscore(summary.acc)`` is ``(value - mean) / std`` over the project's runs that have a finite
value (population standard deviation; no value for fewer than two runs or a zero spread).
The runs list refuses them (422): its filter is evaluated by the dashboard over loaded rows.

``artifact.*`` and ``alert.*`` fields describe an *event* (``server.query.events``): an
automation whose trigger names them reacts to artifact changes instead of runs
(``artifact.event = version and artifact.name = model``, ``artifact.alias = production``);
(``alert.level = ERROR``: a run's ``wisp.alert()``); such a trigger names no run fields, and
the runs list refuses them.

Expression tree, format version 1 (``TREE_VERSION``); an empty filter is ``null``::

    {"or": [tree, tree, ...]}            two or more
    {"and": [tree, tree, ...]}           two or more
    {"not": tree}
    {"exists": field}
    {"contains": field, "value": value}
    {"cmp": "=" | "!=" | "<" | "<=" | ">" | ">=", "field": field, "value": value}

    field := {"name": "config.a.b", "path": ["config", "a", "b"]}   (a column: a 1-part path)
           | {"name": "change(summary.loss, 100 steps)", "path": ["summary", "loss"],
              "measure": "change", "steps": 100}            (only in "cmp", with a number)
           | {"name": "zscore(summary.acc)", "path": ["summary", "acc"], "measure": "zscore"}
    value := null | true | false | "text" | {"num": "<Python str() of the number>"}

A number travels as the text Python gives it (``str(int)`` or ``str(float)``, ``inf`` for
an overflow), so the page compares the very double SQL compares and ``contains`` searches
for the very text SQL searches for.  ``==`` arrives as ``=``.  Which fields and value types
an operator accepts is checked when the tree is compiled to SQL (``server.query.runs``), so an
invalid filter is refused with the same 422 on both paths.
"""

from __future__ import annotations

import re
from typing import Any

from wisp.server.http.problem import Problem

__all__ = [
    "ALERT_FIELDS",
    "ARTIFACT_FIELDS",
    "COLUMNS",
    "MAX_DEPTH",
    "MAX_LENGTH",
    "MEASURES",
    "TREE_VERSION",
    "bad",
    "field_path",
    "number",
    "parse",
]

TREE_VERSION = 1
MAX_LENGTH = 4000
MAX_DEPTH = 300  # nested parentheses and "not"s (as deep as SQL compiles); deeper is refused
MAX_KEY_DEPTH = 16
COLUMNS = (
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
    "stalled",
)
_TOKEN = re.compile(
    r"""\s*(?:(?P<dur>\d+(?:\.\d+)?[smhd](?![\w.]))"""
    r"""|(?P<num>-?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?(?![\w.]))"""
    r"""|(?P<str>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')"""
    r"""|(?P<op><=|>=|==|!=|<|>|=|\(|\)|,)"""
    r"""|(?P<word>(?:[A-Za-z_][\w/\-]*|"(?:[^"\\]|\\.)*")(?:\.(?:[\w/\-]+|"(?:[^"\\]|\\.)*"))*))"""
)
_UNIT = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_NONFINITE = {"nan": "NaN", "inf": "Infinity", "infinity": "Infinity"}  # as clean_json stores them
_KEYWORDS = {"and", "or", "not", "contains", "exists", "in"}
MEASURES = ("change", "zscore")
ARTIFACT_FIELDS = ("event", "name", "type", "version", "alias", "project")
ALERT_FIELDS = ("title", "text", "level")
MAX_WINDOW = 10**9  # steps of a change() window
_CMP = {"=": "=", "==": "=", "!=": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}


def bad(message: str) -> Problem:
    """The 422 for an invalid filter."""
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
            raise bad(f"unexpected text at position {pos}: {src[pos : pos + 20]!r}")
        kind = m.lastgroup or ""
        out.append((kind, m.group(kind)))
        pos = m.end()
    return out


def field_path(name: str) -> list[str]:
    """``["state"]`` for a column, ``["config", "a", "b"]`` for ``config.a.b``; 422 otherwise."""
    head, _, rest = name.partition(".")
    if head in ("config", "summary") and rest:
        parts = re.findall(r'"(?:[^"\\]|\\.)*"|[^.]+', rest)
        path = [_unquote(p) if p.startswith('"') else p for p in parts]
        if any(not p or '"' in p for p in path) or len(path) > MAX_KEY_DEPTH:
            raise bad(f"bad key path in {name!r}")
        return [head, *path]
    if (head == "artifact" and rest in ARTIFACT_FIELDS) or (
        head == "alert" and rest in ALERT_FIELDS
    ):
        return [head, rest]
    if name not in COLUMNS:
        raise bad(
            f"unknown field {name!r}: expected one of {', '.join(COLUMNS)}, "
            "config.<key>, summary.<key> or (automations) artifact.<field>, alert.<field>"
        )
    return [name]


class _Parser:
    def __init__(self, toks: list[tuple[str, str]], triggers: bool) -> None:
        self.toks = toks
        self.triggers = triggers
        self.i = 0
        self.depth = 0

    def peek(self) -> tuple[str, str] | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def take(self) -> tuple[str, str]:
        t = self.peek()
        if t is None:
            raise bad("unexpected end of expression")
        self.i += 1
        return t

    def kw(self, word: str) -> bool:
        t = self.peek()
        if t is not None and t[0] == "word" and t[1].lower() == word:
            self.i += 1
            return True
        return False

    def expr(self) -> dict[str, Any]:
        parts = [self.term()]
        while self.kw("or"):
            parts.append(self.term())
        return {"or": parts} if len(parts) > 1 else parts[0]

    def term(self) -> dict[str, Any]:
        parts = [self.fact()]
        while self.kw("and"):
            parts.append(self.fact())
        return {"and": parts} if len(parts) > 1 else parts[0]

    def nested(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise bad(f"nested deeper than {MAX_DEPTH} levels")

    def fact(self) -> dict[str, Any]:
        if self.kw("not"):
            self.nested()
            inner = self.fact()
            self.depth -= 1
            return {"not": inner}
        t = self.take()
        if t == ("op", "("):
            self.nested()
            e = self.expr()
            self.depth -= 1
            if self.take() != ("op", ")"):
                raise bad("expected ')'")
            return e
        if t[0] != "word" or t[1].lower() in _KEYWORDS:
            raise bad(f"expected a field name, got {t[1]!r}")
        if t[1].lower() in MEASURES and self.peek() == ("op", "("):
            return self.measure(t[1].lower())
        fld = {"name": t[1], "path": field_path(t[1])}
        if fld["path"][0] in ("artifact", "alert") and not self.triggers:
            raise _only_triggers(t[1])
        if self.kw("exists"):
            return {"exists": fld}
        if self.kw("contains"):
            return {"contains": fld, "value": self.value()}
        if self.kw("in"):
            return self.one_of(fld)
        op = self.take()
        if op[0] != "op" or op[1] in "(),":
            raise bad(f"expected an operator after {t[1]!r}, got {op[1]!r}")
        return {"cmp": _CMP[op[1]], "field": fld, "value": self.value()}

    def measure(self, fn: str) -> dict[str, Any]:
        """``change(summary.x, N steps) op number`` / ``zscore(summary.x) op number``."""
        if not self.triggers:
            raise _only_triggers(f"{fn}()")
        self.take()  # "("
        kind, name = self.take()
        path = field_path(name) if kind == "word" else []
        if len(path) < 2 or (fn == "change" and path[0] != "summary"):
            want = "summary.<key>" if fn == "change" else "summary.<key> or config.<key>"
            raise bad(f"{fn}() takes {want}, got {name!r}")
        fld: dict[str, Any] = {"name": "", "path": path, "measure": fn}
        label = name
        if fn == "change":
            if self.take() != ("op", ","):
                raise bad("change() takes a window: change(summary.<key>, <N> steps)")
            kind, n = self.take()
            if kind != "num" or not n.isdigit() or not 0 < int(n) <= MAX_WINDOW:
                raise bad(f"change() window must be a whole number of steps, got {n!r}")
            fld["steps"] = int(n)
            if not self.kw("steps"):
                self.kw("step")
            label = f"{name}, {int(n)} steps"
        if self.take() != ("op", ")"):
            raise bad(f"expected ')' to close {fn}(")
        fld["name"] = f"{fn}({label})"
        op = self.take()
        if op[0] != "op" or op[1] in "(),":
            raise bad(f"expected an operator after {fld['name']}, got {op[1]!r}")
        value = self.value()
        if not isinstance(value, dict):
            raise bad(f"{fld['name']} compares with a number")
        return {"cmp": _CMP[op[1]], "field": fld, "value": value}

    def one_of(self, fld: dict[str, Any]) -> dict[str, Any]:
        """``field in (a, b, ...)``: the tree of ``field = a or field = b ...``."""
        if self.take() != ("op", "("):
            raise bad(f"expected '(' after {fld['name']!r} in")
        parts = [{"cmp": "=", "field": fld, "value": self.value()}]
        while (sep := self.take()) == ("op", ","):
            parts.append({"cmp": "=", "field": fld, "value": self.value()})
        if sep != ("op", ")"):
            raise bad(f"expected ',' or ')' in the list of {fld['name']!r}")
        return {"or": parts} if len(parts) > 1 else parts[0]

    def value(self) -> Any:
        kind, v = self.take()
        if kind == "dur":
            return {"num": str(float(v[:-1]) * _UNIT[v[-1]])}
        if kind == "num":
            return {"num": str(float(v) if any(c in v for c in ".eE") else int(v))}
        if kind == "str":
            return _unquote(v)
        if kind == "word":
            low = v.lower()
            if low in ("true", "false"):
                return low == "true"
            if low == "null":
                return None
            if low in _NONFINITE:
                return _NONFINITE[low]
            return v
        raise bad(f"expected a value, got {v!r}")


def _only_triggers(what: str) -> Problem:
    return bad(
        f"{what} is for automation triggers only (wisp automation add --when); "
        "a runs filter cannot use it"
    )


def parse(src: str, *, triggers: bool = False) -> dict[str, Any] | None:
    """The expression tree of a filter (``None`` when empty); a 422 ``Problem`` names the fault.
    ``triggers``: an automation's trigger, which may use measures and event fields."""
    if len(src) > MAX_LENGTH:
        raise bad(f"longer than {MAX_LENGTH} characters")
    toks = _tokens(src)
    if not toks:
        return None
    p = _Parser(toks, triggers)
    e = p.expr()
    extra = p.peek()
    if extra is not None:
        raise bad(f"unexpected {extra[1]!r}")
    return e


def number(value: dict[str, str]) -> int | float:
    """The Python number of a ``{"num": text}`` tree value."""
    text = value["num"]
    return float(text) if any(c in text for c in ".eEn") else int(text)

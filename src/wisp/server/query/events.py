"""Triggers on events: the filter language over ``artifact.*`` fields, compiled to SQL over
``artifact_events`` (one row per new version, per alias added or moved; ``store.artifacts``),
and over ``alert.*`` fields, matched in Python against the alerts runs send (``wisp.alert()``,
ALERT records: ``alert.title``, ``alert.text``, ``alert.level``).

Fields: ``artifact.event`` (``version`` | ``alias``), ``artifact.name``, ``artifact.type``,
``artifact.version`` (``v3``), ``artifact.alias`` (the alias that was added or moved; none for
a ``version`` event) and ``artifact.project``.  They compare as text (``=``, ``!=``, ``<``, ...,
``in (...)``, ``contains``, ``exists``); so do ``alert.*`` fields.  A trigger is about runs,
artifact events or alerts: one that names fields of two of them is refused.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from sqlalchemy import Text, and_, cast, false, func, not_, or_

from wisp.server.query.filter import bad
from wisp.server.store import schema as S

__all__ = ["alert_matches", "artifact_condition", "trigger_kind"]

_OPS = {"=": "__eq__", "!=": "__ne__", "<": "__lt__", "<=": "__le__", ">": "__gt__", ">=": "__ge__"}
_COLUMN = {"event": "kind"}  # artifact.event is the ``kind`` column
_EVENTS = ("artifact", "alert")


def _fields(tree: dict[str, Any] | None) -> Iterator[dict[str, Any]]:
    if tree is None:
        return
    for op in ("or", "and"):
        if op in tree:
            for t in tree[op]:
                yield from _fields(t)
            return
    if "not" in tree:
        yield from _fields(tree["not"])
    elif "exists" in tree:
        yield tree["exists"]
    elif "contains" in tree:
        yield tree["contains"]
    else:
        yield tree["field"]


def trigger_kind(tree: dict[str, Any] | None) -> str:
    """``artifact`` or ``alert`` when the trigger names such fields, else ``run``; 422 when
    it names fields of two kinds."""
    kinds = {f["path"][0] if f["path"][0] in _EVENTS else "run" for f in _fields(tree)}
    if len(kinds) > 1:
        raise bad("a trigger is about runs, artifact events or alerts: one of them")
    return kinds.pop() if kinds else "run"


def alert_matches(tree: dict[str, Any] | None, alert: dict[str, Any]) -> bool:
    """Whether an alert (``title``, ``text``, ``level``) matches an alert trigger's tree."""
    if tree is None:
        return True
    for op, combine in (("or", any), ("and", all)):
        if op in tree:
            return combine(alert_matches(t, alert) for t in tree[op])
    if "not" in tree:
        return not alert_matches(tree["not"], alert)
    leaf = tree.get("exists") or tree.get("contains") or tree["field"]
    have = alert.get(leaf["path"][1])
    if not isinstance(have, str):
        return False
    if "exists" in tree:
        return True
    if "contains" in tree:
        return _text(tree["value"]) in have
    return bool(getattr(have, _OPS[tree["cmp"]])(_text(tree["value"])))


def _col(field: dict[str, Any]) -> Any:
    return S.artifact_events.c[_COLUMN.get(field["path"][1], field["path"][1])]


def _text(value: Any) -> str:
    if isinstance(value, dict):  # a number: v3 is text, but "artifact.name = 7" is meant
        return str(value["num"])
    if value is None or isinstance(value, bool):
        raise bad("artifact fields compare with text")
    return str(value)


def artifact_condition(tree: dict[str, Any] | None) -> Any:
    """The SQL condition over ``artifact_events`` of an artifact trigger's tree."""
    if tree is None:
        return false()
    if "or" in tree:
        return or_(*(artifact_condition(t) for t in tree["or"]))
    if "and" in tree:
        return and_(*(artifact_condition(t) for t in tree["and"]))
    if "not" in tree:
        return not_(artifact_condition(tree["not"]))
    if "exists" in tree:
        return _col(tree["exists"]).is_not(None)
    if "contains" in tree:
        cond = cast(_col(tree["contains"]), Text).contains(_text(tree["value"]), autoescape=True)
    else:
        cond = getattr(_col(tree["field"]), _OPS[tree["cmp"]])(_text(tree["value"]))
    return func.coalesce(cond, false())

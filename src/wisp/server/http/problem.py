"""Request problems: the one exception the HTTP layer turns into a 4xx answer.

Every error body has the shape ``{"error": {"code", "message", "field"}}``
(see docs/http-api.md); ``extra`` adds top-level members such as ``acked_seq``.
"""

from __future__ import annotations

import math
import re
from typing import Any

from wisp._protocol import (
    ID_PATTERN,
    ID_RULE,
    MAX_DEPTH,
    MAX_INT,
    MAX_JSON_KEY_LENGTH,
    MAX_STRING_LENGTH,
    text_problem,
)

__all__ = ["MAX_DEPTH", "Problem", "check_id", "clean_json", "clean_str", "storable_params"]

_ID = re.compile(ID_PATTERN)
_NONFINITE = {math.inf: "Infinity", -math.inf: "-Infinity"}


class Problem(Exception):
    """A client error: HTTP ``status`` with a machine ``code`` and the offending ``field``."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        field: str | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.field = field
        self.extra = extra or {}

    def __reduce__(self) -> tuple[Any, ...]:
        # raised in an ingest process (wisp.server.ingesting), answered by the server's
        return (Problem, (self.status, self.code, self.message, self.field, self.extra))

    def body(self) -> dict[str, Any]:
        err: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.field is not None:
            err["field"] = self.field
        return {"error": err, **self.extra}


def invalid(field: str, message: str) -> Problem:
    return Problem(422, "invalid", f"{field}: {message}", field)


def check_id(value: Any, field: str) -> str:
    """A run or writer id: 1-64 characters of ``[A-Za-z0-9_-]`` (``wisp._protocol``)."""
    if not isinstance(value, str) or not _ID.fullmatch(value):
        raise invalid(field, f"expected {ID_RULE}")
    return value


def clean_str(value: Any, field: str, max_len: int = MAX_STRING_LENGTH) -> str:
    """A string storable in every backend: no NUL, no lone surrogates, bounded length."""
    if not isinstance(value, str):
        raise invalid(field, f"expected a string, got {type(value).__name__}")
    problem = text_problem(value, max_len)
    if problem is not None:  # the rule the SDK checks too (wisp._protocol)
        raise invalid(field, problem)
    return value


def storable_params(params: dict[str, Any]) -> dict[str, Any]:
    """Path or query values every database can compare against (the text rule of
    :mod:`wisp._protocol`: no NUL, no lone surrogate); else a 422 naming the parameter."""
    for name, value in params.items():
        problem = text_problem(value, 1 << 20) if isinstance(value, str) else None
        if problem is not None:
            raise invalid(name, problem)
    return params


def clean_json(value: Any, field: str, depth: int = 0) -> Any:
    """A copy of a JSON value that both JSON column types accept.

    Non-finite floats become the strings ``"NaN"``, ``"Infinity"``, ``"-Infinity"``
    (JSON has no token for them); strings and keys are checked by :func:`clean_str`.
    """
    if depth > MAX_DEPTH:
        raise invalid(field, f"nested deeper than {MAX_DEPTH} levels")
    t = type(value)
    if t is str:
        return clean_str(value, field)
    if t is float:
        if math.isfinite(value):
            return value
        return "NaN" if value != value else _NONFINITE[value]
    if t is int:
        if -MAX_INT < value < MAX_INT:
            return value
        raise invalid(field, "integer out of range (+-2**64)")
    if value is None or t is bool:
        return value
    if t is list:
        return [clean_json(v, f"{field}[{i}]", depth + 1) for i, v in enumerate(value)]
    if t is dict:
        out = {}
        for k, v in value.items():
            out[clean_str(k, f"{field}.<key>", MAX_JSON_KEY_LENGTH)] = clean_json(
                v, f"{field}.{k}", depth + 1
            )
        return out
    raise invalid(field, f"unsupported JSON value of type {t.__name__}")

"""Route declarations: each endpoint states its method, path and types once.

``@endpoint(...)`` on a handler method records an :class:`Endpoint`; the app
(``server.app``) builds its Starlette routes from those records and ``server.http.openapi``
builds the OpenAPI document from the same records, so the two cannot disagree.
The wrapper decodes path parameters, query parameters
and the JSON body through the declared msgspec Structs (a mismatch is a 422
whose ``field`` names the offending parameter or body member), calls the
handler with an :class:`In`, and turns a :class:`Problem` into its JSON answer.
See docs/architecture.md, "Adding an endpoint".
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import msgspec
from starlette.requests import Request
from starlette.responses import Response

from wisp.server.http.body import json_response, read_json
from wisp.server.http.problem import Problem, invalid, storable_params

__all__ = ["Endpoint", "In", "bind", "convert", "endpoint", "endpoints"]

RAW = "raw"  # ``body=RAW``: the handler reads the request stream itself
Responses = dict[int, Any]  # status -> Struct type | None (no body) | {content type: schema}


@dataclass(frozen=True)
class Endpoint:
    """One operation: what it takes and answers (the OpenAPI document is made from these)."""

    method: str
    path: str  # relative to /api/v1 unless it starts with /api/
    scope: str  # "read" | "write" | "admin" | "public"
    summary: str
    responses: Responses
    path_params: type | None = None
    query: type | None = None
    body: Any = None  # a Struct type, RAW, or None
    body_content: str = "application/json"
    name: str = ""
    description: str = ""
    #: reads the body instead of :func:`read_json` (for payloads too large to decode whole);
    #: the handler then validates ``r.raw`` itself (``r.body`` stays None)
    reader: Callable[[Request, int], Awaitable[Any]] | None = None
    #: the ``/entities/{entity}/projects/{project}...`` twin of a ``/projects/{project}...``
    #: operation: the handler sees ``project`` as ``"entity/project"``
    entity: bool = False

    @property
    def full_path(self) -> str:
        return self.path if self.path.startswith("/api/") else "/api/v1" + self.path


@dataclass
class In:
    """A decoded request: ``path``, ``query`` and ``body`` Structs (None when undeclared).

    ``raw`` is the body as parsed JSON before conversion, for handlers that walk
    large payloads themselves (the records fast path).
    """

    request: Request
    path: Any = None
    query: Any = None
    body: Any = None
    raw: Any = field(default=None, repr=False)


Handler = Callable[[Any, In], Awaitable[Response]]
_ATTR = "__wisp_endpoint__"


def endpoint(
    method: str,
    path: str,
    *,
    scope: str,
    summary: str,
    responses: Responses,
    path_params: type | None = None,
    query: type | None = None,
    body: Any = None,
    body_content: str = "application/json",
    description: str = "",
    reader: Callable[[Request, int], Awaitable[Any]] | None = None,
) -> Callable[[Handler], Handler]:
    """Declare a handler method ``async def h(self, r: In) -> Response`` as an endpoint."""

    def mark(fn: Handler) -> Handler:
        spec = Endpoint(
            method.upper(),
            path,
            scope,
            summary,
            responses,
            path_params,
            query,
            body,
            body_content,
            fn.__name__,
            description,
            reader,
        )
        setattr(fn, _ATTR, spec)
        return fn

    return mark


_PROJECT_PATH = "/projects/{project}"


def endpoints(cls: type) -> list[Endpoint]:
    """The endpoints declared on ``cls``, in definition order.

    Each operation on one project (``/projects/{project}...``) comes with its twin under
    ``/entities/{entity}/projects/{project}...``, for the projects a user or team owns by name
    (``entity/project``, see :func:`wisp._protocol.project_problem`): a project's full name
    cannot be one path segment, and a path that names it in two segments after ``/projects``
    would be ambiguous (``/projects/a/runs``)."""
    out = []
    for klass in reversed(cls.__mro__):
        for v in vars(klass).values():
            spec = getattr(v, _ATTR, None)
            if isinstance(spec, Endpoint):
                out.append(spec)
                if spec.path == _PROJECT_PATH or spec.path.startswith(_PROJECT_PATH + "/"):
                    twin = dataclasses.replace(
                        spec, path="/entities/{entity}" + spec.path, entity=True
                    )
                    out.append(twin)
    return out


# -- decoding ----------------------------------------------------------------------------------

_AT = re.compile(r" - at `\$(.*)`$")
_NAMED = re.compile(r"(?:missing required|contains unknown) field `(.*)`")


def field_of(err: msgspec.ValidationError, where: str) -> tuple[str, str]:
    """``(field, message)`` for a msgspec validation error in ``where`` ("body", "query", ...)."""
    text = str(err)
    path = ""
    m = _AT.search(text)
    if m:
        path, text = m.group(1), text[: m.start()]
    named = _NAMED.search(text)
    if named:
        path = f"{path}.{named.group(1)}"
    path = path.lstrip(".")
    if not path:
        return where, text
    return (path if where in ("query", "path", "body") else f"{where}.{path}"), text


def convert(obj: Any, typ: type, where: str, strict: bool = True) -> Any:
    """``obj`` converted to ``typ``; a mismatch is a 422 naming the field under ``where``."""
    try:
        return msgspec.convert(obj, typ, strict=strict)
    except msgspec.ValidationError as e:
        fld, msg = field_of(e, where)
        raise invalid(fld, msg) from None
    except UnicodeEncodeError:  # a lone surrogate (JSON "\\ud800") somewhere in obj
        raise invalid(where, "is not valid Unicode (it holds a lone surrogate)") from None


def _lax_fields(typ: type) -> frozenset[str]:
    """Fields of a query Struct that are numbers: an empty value means "not given"."""
    info = msgspec.inspect.type_info(typ)
    assert isinstance(info, msgspec.inspect.StructType)
    nums = (msgspec.inspect.IntType, msgspec.inspect.FloatType)
    out = set()
    for f in info.fields:
        t = f.type
        parts = t.types if isinstance(t, msgspec.inspect.UnionType) else (t,)
        if any(isinstance(p, nums) for p in parts):
            out.add(f.encode_name)
    return frozenset(out)


Auth = Callable[[Request, str], Awaitable[None]]


def bind(spec: Endpoint, obj: Any, auth: Auth | None = None) -> Any:
    """The ASGI-level handler for ``spec``, calling ``obj.<spec.name>``.

    The server passes no ``auth``: who may call what is decided once, before routing, by
    the auth middleware (``_auth.RULES``); ``auth`` is for apps without it (tests)."""
    fn: Callable[[In], Awaitable[Response]] = getattr(obj, spec.name)
    lax = _lax_fields(spec.query) if spec.query is not None else frozenset()
    max_body = getattr(getattr(obj, "settings", None), "max_body_bytes", 1 << 30)

    async def handle(request: Request) -> Response:
        try:
            if auth is not None:
                await auth(request, spec.scope)
            r = In(request)
            if spec.entity:  # the handlers read the project's full name, "entity/project"
                pp = request.scope["path_params"]
                pp["project"] = f"{pp.pop('entity')}/{pp['project']}"
            if spec.path_params is not None:
                params = storable_params(dict(request.path_params))
                r.path = convert(params, spec.path_params, "path")
            if spec.query is not None:
                q = {k: v for k, v in request.query_params.items() if v or k not in lax}
                r.query = convert(storable_params(q), spec.query, "query", strict=False)
            if spec.body is not None and spec.body != RAW and spec.reader is not None:
                r.raw = await spec.reader(request, max_body)
            elif spec.body is not None and spec.body != RAW:
                r.raw = await read_json(request, max_body)
                r.body = convert(r.raw, spec.body, "body")
            return await fn(r)
        except Problem as p:
            return json_response(p.body(), p.status)

    handle.__name__ = spec.name
    return handle

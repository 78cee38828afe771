"""Route declarations (src/wisp/server/http/routes.py): requests decoded through declared types."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated, Any

import msgspec
import pytest
from msgspec import Meta
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.testclient import TestClient

from wisp.server.http.body import json_response
from wisp.server.http.problem import Problem
from wisp.server.http.routes import In, bind, endpoint, endpoints


class Q(msgspec.Struct):
    s: Annotated[str, Meta(max_length=10)] = "dflt"
    i: Annotated[int, Meta(ge=0, le=100)] = 7
    f: float | None = None


class P(msgspec.Struct, forbid_unknown_fields=True):
    thing_id: Annotated[str, Meta(pattern="^[a-z]{1,5}$")]


class B(msgspec.Struct, forbid_unknown_fields=True):
    n: Annotated[int, Meta(ge=0)]
    tags: list[str] = []


class Out(msgspec.Struct):
    got: dict[str, Any]


class Handlers:
    def __init__(self) -> None:
        self.scopes: list[str] = []

    async def auth(self, request: Request, scope: str) -> None:
        self.scopes.append(scope)
        if scope == "write" and "authorization" not in request.headers:
            raise Problem(401, "unauthorized", "a key is required")

    @endpoint("GET", "/things/{thing_id}", scope="read", summary="s", path_params=P, query=Q,
              responses={200: Out})  # fmt: skip
    async def get_thing(self, r: In) -> Response:
        q: Q = r.query
        return json_response({"got": {"id": r.path.thing_id, "s": q.s, "i": q.i, "f": q.f}})

    @endpoint("POST", "/things", scope="write", summary="s", body=B, responses={200: Out})
    async def post_thing(self, r: In) -> Response:
        return json_response({"got": {"n": r.body.n, "raw": r.raw}})


@pytest.fixture
def client() -> Iterator[TestClient]:
    h = Handlers()
    routes = [
        Route(e.full_path, bind(e, h, h.auth), methods=[e.method]) for e in endpoints(Handlers)
    ]
    with TestClient(Starlette(routes=routes)) as c:
        yield c


def test_endpoints_are_listed_in_definition_order() -> None:
    """endpoints() returns each declaration with its full /api/v1 path, in source order."""
    got = [(e.method, e.full_path, e.name) for e in endpoints(Handlers)]
    assert got == [
        ("GET", "/api/v1/things/{thing_id}", "get_thing"),
        ("POST", "/api/v1/things", "post_thing"),
    ]


def test_query_defaults_and_values_are_decoded(client: TestClient) -> None:
    """Absent parameters take their defaults, an empty number is absent, values are converted."""
    base = "/api/v1/things/abc"
    assert client.get(base).json()["got"] == {"id": "abc", "s": "dflt", "i": 7, "f": None}
    got = client.get(f"{base}?s=x&i=5&f=2.5&unknown=1").json()["got"]
    assert got == {"id": "abc", "s": "x", "i": 5, "f": 2.5}
    assert client.get(f"{base}?i=&f=").json()["got"]["i"] == 7


@pytest.mark.parametrize(
    ("url", "field"),
    [
        ("/api/v1/things/abc?i=x", "i"),
        ("/api/v1/things/abc?i=101", "i"),
        ("/api/v1/things/abc?i=-1", "i"),
        ("/api/v1/things/abc?f=abc", "f"),
        ("/api/v1/things/abc?s=" + "a" * 11, "s"),
        ("/api/v1/things/ABC", "thing_id"),
    ],
)
def test_bad_parameters_are_422_naming_the_field(client: TestClient, url: str, field: str) -> None:
    """A path or query parameter that does not fit its declared type is a 422 naming it."""
    r = client.get(url)
    assert r.status_code == 422
    assert r.json()["error"]["code"] == "invalid"
    assert r.json()["error"]["field"] == field


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (b"[1]", "body"),
        (b"{}", "n"),
        (b'{"n": -1}', "n"),
        (b'{"n": 1, "x": 2}', "x"),
        (b'{"n": 1, "tags": [1]}', "tags[0]"),
    ],
)
def test_bad_bodies_are_422_naming_the_member(client: TestClient, body: bytes, field: str) -> None:
    """A JSON body that does not fit its declared Struct is a 422 naming the member."""
    r = client.post("/api/v1/things", content=body, headers={"Authorization": "Bearer k"})
    assert r.status_code == 422
    assert r.json()["error"]["field"] == field


def test_scope_is_checked_before_decoding(client: TestClient) -> None:
    """The declared scope is checked first: no key is 401 even for a malformed body."""
    assert client.post("/api/v1/things", content=b"{").status_code == 401
    ok = client.post("/api/v1/things", content=b'{"n": 3}', headers={"Authorization": "Bearer k"})
    assert ok.json() == {"got": {"n": 3, "raw": {"n": 3}}}

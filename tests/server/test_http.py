"""HTTP plumbing of the server (src/wisp/server/http/body.py): body limits, gzip, JSON."""

from __future__ import annotations

import gzip
import json
import math
from collections.abc import Iterator
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.testclient import TestClient

from wisp.server.http.body import (
    Encoded,
    json_response,
    loads,
    read_body,
    read_encoded,
    read_json,
)
from wisp.server.http.problem import Problem

LIMIT = 1000


def _guarded(fn: Any) -> Any:
    async def handle(request: Request) -> Response:
        try:
            return await fn(request)
        except Problem as p:
            return json_response(p.body(), p.status)

    return handle


async def _body(request: Request) -> Response:
    return json_response({"size": len(await read_body(request, LIMIT))})


async def _encoded(request: Request) -> Response:
    got = await read_encoded(request, LIMIT)
    return json_response({"sent": got.data.hex(), "gzip": got.gzip})


async def _json(request: Request) -> Response:
    return json_response({"doc": await read_json(request, 100 * LIMIT)})


@pytest.fixture
def client() -> Iterator[TestClient]:
    app = Starlette(
        routes=[
            Route("/body", _guarded(_body), methods=["POST"]),
            Route("/json", _guarded(_json), methods=["POST"]),
            Route("/encoded", _guarded(_encoded), methods=["POST"]),
        ]
    )
    with TestClient(app) as c:
        yield c


def _code(r: Any) -> tuple[int, str]:
    return r.status_code, r.json()["error"]["code"]


def test_body_at_the_limit_is_read_and_one_byte_more_is_413(client: TestClient) -> None:
    """A body of exactly the limit is accepted; one byte more answers 413, declared or streamed."""
    assert client.post("/body", content=b"x" * LIMIT).json() == {"size": LIMIT}
    assert _code(client.post("/body", content=b"x" * (LIMIT + 1))) == (413, "too_large")

    def chunks() -> Iterator[bytes]:  # no Content-Length: the limit is enforced while reading
        for _ in range(11):
            yield b"x" * 100

    assert _code(client.post("/body", content=chunks())) == (413, "too_large")


def test_gzip_is_decoded_and_its_decoded_size_is_limited(client: TestClient) -> None:
    """gzip bodies are decoded; a small body that decodes past the limit (a bomb) answers 413."""
    gz = {"Content-Encoding": "gzip"}
    ok = client.post("/body", content=gzip.compress(b"y" * LIMIT), headers=gz)
    assert ok.json() == {"size": LIMIT}
    bomb = gzip.compress(b"\0" * (LIMIT * 50))
    assert len(bomb) < LIMIT
    assert _code(client.post("/body", content=bomb, headers=gz)) == (413, "too_large")


def test_bad_gzip_is_400_and_other_encodings_415(client: TestClient) -> None:
    """Truncated or corrupt gzip answers 400 bad_gzip; an encoding other than gzip answers 415."""
    gz = {"Content-Encoding": "gzip"}
    whole = gzip.compress(b'{"a": 1}' * 20)
    assert _code(client.post("/body", content=whole[:-8], headers=gz)) == (400, "bad_gzip")
    assert _code(client.post("/body", content=b"not gzip at all", headers=gz)) == (400, "bad_gzip")
    br = {"Content-Encoding": "br"}
    assert _code(client.post("/body", content=b"x", headers=br)) == (415, "unsupported_encoding")


def test_invalid_or_too_deep_json_is_400_naming_the_body(client: TestClient) -> None:
    """Malformed JSON and JSON nested past the parser's depth answer 400 bad_json, field body."""
    r = client.post("/json", content=b'{"a": ')
    assert _code(r) == (400, "bad_json") and r.json()["error"]["field"] == "body"
    deep = client.post("/json", content=b"[" * 40_000 + b"]" * 40_000)
    assert _code(deep) == (400, "bad_json") and "nested too deeply" in deep.text
    assert client.post("/json", content=b'{"a": [1]}').json() == {"doc": {"a": [1]}}


def test_loads_agrees_with_the_standard_library() -> None:
    """The msgspec fast path parses exactly what json.loads parses, NaN tokens and huge ints too."""
    docs = [b'{"a": [1, 2.5, "x", null, true]}', b"[NaN, Infinity, -Infinity]", b"123456789" * 5]
    for doc in docs:
        got, want = loads(doc), json.loads(doc)
        assert json.dumps(got) == json.dumps(want)
    assert math.isnan(loads(b"[NaN]")[0])
    with pytest.raises(ValueError):
        loads(b"{bad")


def test_non_finite_floats_are_sent_as_null(client: TestClient) -> None:
    """json_response writes NaN/Infinity, which JSON cannot hold, as null, nested ones too."""
    r = json_response({"a": math.nan, "b": [math.inf, 1.5], "c": {"d": -math.inf}})
    assert json.loads(bytes(r.body)) == {"a": None, "b": [None, 1.5], "c": {"d": None}}
    assert r.media_type == "application/json"


def test_bytes_after_the_gzip_stream_are_refused(client: TestClient) -> None:
    """A gzip body followed by trailing garbage answers 400 bad_gzip instead of being accepted."""
    gz = {"Content-Encoding": "gzip"}
    body = gzip.compress(b'{"a": 1}') + b"garbage"
    assert _code(client.post("/body", content=body, headers=gz)) == (400, "bad_gzip")


def test_an_encoded_body_is_kept_as_sent_and_decoded_later_with_the_same_limits(
    client: TestClient,
) -> None:
    """read_encoded (record batches) keeps gzip bytes as sent, bounded by the limit as sent;
    Encoded.decoded() gives the body, 413 for a bomb and 400 for a corrupt stream, as
    read_body answers while reading."""
    gz = {"Content-Encoding": "gzip"}
    sent = gzip.compress(b'{"a": 1}' * 20)
    assert client.post("/encoded", content=sent, headers=gz).json() == {
        "sent": sent.hex(),
        "gzip": True,
    }
    assert client.post("/encoded", content=b"plain").json()["gzip"] is False
    assert _code(client.post("/encoded", content=b"x" * (LIMIT + 1), headers=gz)) == (
        413,
        "too_large",
    )
    assert _code(client.post("/encoded", content=b"x", headers={"Content-Encoding": "br"})) == (
        415,
        "unsupported_encoding",
    )
    assert Encoded(sent, True, LIMIT).decoded() == b'{"a": 1}' * 20
    assert Encoded(b"as is", False, LIMIT).decoded() == b"as is"
    for data, code in (
        (gzip.compress(b"\0" * (LIMIT * 50)), (413, "too_large")),
        (gzip.compress(b"y" * (LIMIT + 1)), (413, "too_large")),
        (sent[:-8], (400, "bad_gzip")),
        (sent + b"more", (400, "bad_gzip")),
        (b"not gzip at all", (400, "bad_gzip")),
    ):
        with pytest.raises(Problem) as got:
            Encoded(data, True, LIMIT).decoded()
        assert (got.value.status, got.value.code) == code
    assert Encoded(gzip.compress(b"y" * LIMIT), True, LIMIT).decoded() == b"y" * LIMIT

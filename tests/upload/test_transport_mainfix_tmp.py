"""The HTTP transport and API client: status mapping, retries of stale connections, real server endpoints (src/wisp/_upload/_transport.py)."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from wisp._protocol import RecordType
from wisp._upload._transport import ApiClient, Conflict, HttpTransport
from wisp.errors import FatalApiError, RetryableApiError, UsageError
from wisp.testing import Server


class _Scripted(ThreadingHTTPServer):
    """A loopback HTTP/1.1 server answering each request from a script of (status, headers, body)."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.script: list[tuple[int, dict[str, str], bytes]] = []
        self.seen: list[tuple[str, str, dict[str, str], bytes]] = []
        self.connections = 0
        self.drop_after_answer = False

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive unless told otherwise
    server: _Scripted

    def setup(self) -> None:
        super().setup()
        self.server.connections += 1

    def log_message(self, *args: Any) -> None:
        pass

    def _answer(self) -> None:
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else b""
        headers = {k.lower(): v for k, v in self.headers.items()}
        self.server.seen.append((self.command, self.path, headers, body))
        status, extra, out = self.server.script.pop(0) if self.server.script else (200, {}, b"{}")
        self.send_response(status)
        for k, v in extra.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(out)
        if self.server.drop_after_answer:
            self.close_connection = True  # without saying so: the client's next use fails

    do_GET = do_PUT = do_POST = do_HEAD = _answer


@pytest.fixture
def scripted() -> Iterator[_Scripted]:
    srv = _Scripted()
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()


def _err(code: str, message: str, field: str | None = None) -> bytes:
    err = {"code": code, "message": message}
    if field:
        err["field"] = field
    return json.dumps({"error": err}).encode()


def test_requests_carry_prefix_key_and_encoding(scripted: _Scripted) -> None:
    """Paths go under the URL's path and /api/v1, with the bearer key, content type and gzip flag."""
    client = ApiClient(scripted.url + "/sub/", "secret")
    scripted.script.append((200, {}, b'{"acked_seq": 4}'))
    assert client.post_records("run 1", b"\x1f\x8b", gzip=True) == 4
    method, path, headers, body = scripted.seen[0]
    assert (method, path, body) == ("POST", "/sub/api/v1/runs/run%201/records", b"\x1f\x8b")
    assert headers["authorization"] == "Bearer secret"
    assert headers["content-encoding"] == "gzip"
    assert headers["content-type"] == "application/json"
    client.close()


def test_statuses_map_onto_the_error_tree(scripted: _Scripted) -> None:
    """429 and 5xx are retryable (Retry-After honoured), other 4xx fatal with the server's message."""
    client = ApiClient(scripted.url, None)
    scripted.script += [
        (429, {"Retry-After": "3"}, b""),
        (503, {}, b"busy"),
        (422, {}, _err("invalid", "records[0].type: bad", "records[0].type")),
        (409, {}, b'{"acked_seq": 11}'),
        (409, {}, b"{}"),
        (200, {}, b"not json"),
    ]
    with pytest.raises(RetryableApiError) as e1:
        client.heartbeat("r")
    assert e1.value.status == 429 and e1.value.retry_after == 3.0
    with pytest.raises(RetryableApiError, match="503: busy"):
        client.heartbeat("r")
    with pytest.raises(FatalApiError, match=r"422: records\[0\]\.type: bad \(field") as e3:
        client.heartbeat("r")
    assert e3.value.status == 422
    assert client.post_records("r", b"{}", gzip=False) == Conflict(11)
    with pytest.raises(FatalApiError, match="409 without acked_seq"):
        client.post_records("r", b"{}", gzip=False)
    with pytest.raises(RetryableApiError, match="not JSON"):
        client.put_run("r", {})
    client.close()


def test_a_connection_the_server_dropped_is_replaced_once(scripted: _Scripted) -> None:
    """A kept-alive connection closed by the server is retried on a fresh one, invisibly."""
    scripted.drop_after_answer = True
    transport = HttpTransport(scripted.url)
    for _ in range(3):
        resp = transport.request("GET", "/x", None, {}, 5.0)
        assert resp.status == 200
    assert len(scripted.seen) == 3 and scripted.connections == 3
    transport.close()


def test_no_server_is_retryable() -> None:
    """A refused connection becomes RetryableApiError naming the server."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    client = ApiClient(f"http://127.0.0.1:{port}", None, timeout=2.0)
    with pytest.raises(RetryableApiError, match=f"cannot reach http://127.0.0.1:{port}"):
        client.heartbeat("r")


def test_only_http_urls_are_accepted() -> None:
    """A server URL that is not http(s) is refused up front."""
    with pytest.raises(UsageError, match="http:// or https://"):
        HttpTransport("ftp://example.test")


def test_endpoints_against_a_real_server(server: Server) -> None:
    """put_run, post_records, writer_acked and media HEAD/PUT work against a real wisp server."""
    client = ApiClient(server.url, server.key)
    client.put_run("tr1", {"project": "p", "name": "n", "tags": [], "config": {}})
    batch = {
        "writer_id": "w1",
        "first_seq": 0,
        "records": [
            {"type": RecordType.RUN, "data": {"run_id": "tr1", "writer_id": "w1", "project": "p"}},
            {"type": RecordType.HISTORY, "data": {"rows": [[0, 1.0, {"loss": 0.5}]]}},
        ],
    }
    assert client.post_records("tr1", json.dumps(batch).encode(), gzip=False) == 1
    assert client.writer_acked("tr1", "w1") == 1
    assert client.writer_acked("tr1", "nobody") == -1
    again = dict(batch, first_seq=5)
    assert client.post_records("tr1", json.dumps(again).encode(), gzip=False) == Conflict(1)
    import hashlib

    data = b"media bytes"
    sha = hashlib.sha256(data).hexdigest()
    assert client.has_media(sha) is False
    client.put_media(sha, data)
    assert client.has_media(sha) is True
    client.heartbeat("tr1")
    assert server.points("tr1", "loss") == [(0, 0.5)]
    client.close()

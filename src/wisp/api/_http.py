"""The read/edit side of HTTP API v1 for ``wisp.Api``: JSON calls with retries, and streams.

JSON calls go through the uploader's :class:`wisp._upload._transport.ApiClient` (same
transport, same error mapping) and are retried on :class:`RetryableApiError` (connection
errors, timeouts, 429, 5xx) with exponential backoff and full jitter, honouring
``Retry-After``, as the uploader does.  Streamed answers (history export) use their own
``http.client`` connection so the body is read incrementally; a stream is retried only
until its first byte arrives.
"""

from __future__ import annotations

import json
import random
import time
import zlib
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

from wisp._upload._retry import retry_delay
from wisp._upload._transport import API_PREFIX, ApiClient, Transport, error_message
from wisp.errors import FatalApiError, RetryableApiError

__all__ = ["HttpApi", "Stream"]


class Stream:
    """A streamed response body: ``read(n)`` (gzip decoded when the server compressed it)."""

    def __init__(self, conn: Any, resp: Any) -> None:
        self._conn = conn
        self._resp = resp
        self.content_type = (resp.getheader("content-type") or "").split(";")[0]
        gz = (resp.getheader("content-encoding") or "").lower() == "gzip"
        self._dec = zlib.decompressobj(31) if gz else None
        self._buf = b""
        self.closed = False

    def read(self, n: int = -1) -> bytes:
        import http.client

        try:
            return self._read(n)
        except (OSError, http.client.HTTPException) as exc:
            self.close()
            raise RetryableApiError(
                f"the server's stream broke off ({type(exc).__name__}: {exc}); see its log"
            ) from exc

    def _read(self, n: int) -> bytes:
        if self._dec is None:
            return bytes(self._resp.read(n if n is not None and n >= 0 else None))
        while n < 0 or len(self._buf) < n:
            chunk = self._resp.read(1 << 16)
            if not chunk:
                self._buf += self._dec.flush()
                break
            self._buf += self._dec.decompress(chunk)
        if n < 0:
            out, self._buf = self._buf, b""
        else:
            out, self._buf = self._buf[:n], self._buf[n:]
        return out

    def lines(self) -> Iterator[bytes]:
        rest = b""
        while True:
            chunk = self.read(1 << 16)
            if not chunk:
                break
            rest += chunk
            *done, rest = rest.split(b"\n")
            yield from (d for d in done if d)
        if rest:
            yield rest

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._conn.close()

    def __enter__(self) -> Stream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class HttpApi:
    """JSON and streamed calls to one server, retried with backoff."""

    def __init__(
        self,
        server_url: str,
        api_key: str | None,
        *,
        transport: Transport | None = None,
        timeout: float = 60.0,
        retries: int = 6,
        backoff: tuple[float, float] = (0.25, 8.0),
        sleep: Callable[[float], None] = time.sleep,
        rand: Callable[[], float] = random.random,
    ) -> None:
        self.server_url = server_url.rstrip("/")
        self.api_key = api_key
        self.client = ApiClient(self.server_url, api_key, transport=transport, timeout=timeout)
        #: streamed answers go through the given transport too (buffered), not a socket
        self._in_process = transport is not None
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self._sleep = sleep
        self._rand = rand

    def close(self) -> None:
        self.client.close()

    def _delay(self, failures: int, retry_after: float | None) -> float:
        return retry_delay(failures, retry_after, self.backoff, self._rand)

    def _retrying(self, fn: Callable[[], Any]) -> Any:
        failures = 0
        while True:
            try:
                return fn()
            except RetryableApiError as exc:
                failures += 1
                if failures > self.retries:
                    raise
                self._sleep(self._delay(failures, exc.retry_after))

    def json(
        self,
        method: str,
        path: str,
        *,
        query: dict[str, Any] | None = None,
        body: Any = None,
    ) -> dict[str, Any]:
        """One JSON call (``path`` under /api/v1); FatalApiError on 4xx, retried otherwise."""
        if query:
            path += "?" + urlencode({k: v for k, v in query.items() if v is not None})
        data = None if body is None else json.dumps(body, allow_nan=True).encode()

        def once() -> dict[str, Any]:
            resp = self.client.call(method, path, data)
            try:
                doc = json.loads(resp.body) if resp.body else {}
            except ValueError:
                raise RetryableApiError(
                    f"{method} {path}: answer is not JSON", status=resp.status
                ) from None
            return doc if isinstance(doc, dict) else {"value": doc}

        out: dict[str, Any] = self._retrying(once)
        return out

    def raw(self, path: str) -> bytes:
        """The bytes of a GET (media downloads)."""

        def once() -> bytes:
            return bytes(self.client.call("GET", path).body)

        data: bytes = self._retrying(once)
        return data

    def stream(self, path: str, body: Any, accept: str) -> Stream:
        """POST ``body`` and return the answer's body as a :class:`Stream`."""
        data = json.dumps(body).encode()
        headers = {
            "Content-Type": "application/json",
            "Accept": accept,
            "Accept-Encoding": "gzip",
            "User-Agent": "wisp-api/1",
        }
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        parts = urlsplit(self.server_url)
        full = parts.path.rstrip("/") + API_PREFIX + path

        def buffered() -> Stream:
            resp = self.client.transport.request(
                "POST", API_PREFIX + path, data, headers, self.timeout
            )
            if resp.status == 200:
                return Stream(_Closed(), _Buffered(resp))
            msg, _ = error_message(resp)
            text = f"POST {path}: server answered {resp.status}: {msg}"
            if resp.status in (408, 429) or resp.status >= 500:
                raise RetryableApiError(text, status=resp.status)
            raise FatalApiError(text, status=resp.status)

        def once() -> Stream:
            import http.client

            cls = (
                http.client.HTTPSConnection
                if parts.scheme == "https"
                else http.client.HTTPConnection
            )
            conn = cls(parts.hostname or "localhost", parts.port, timeout=self.timeout)
            try:
                conn.request("POST", full, body=data, headers=headers)
                resp = conn.getresponse()
            except (OSError, http.client.HTTPException) as exc:
                conn.close()
                raise RetryableApiError(
                    f"POST {path}: cannot reach {self.server_url} ({type(exc).__name__}: {exc})"
                ) from exc
            if resp.status == 200:
                return Stream(conn, resp)
            from wisp._upload._transport import Response

            body_bytes = resp.read()
            conn.close()
            msg, _ = error_message(Response(resp.status, {}, body_bytes))
            text = f"POST {path}: server answered {resp.status}: {msg}"
            if resp.status in (408, 429) or resp.status >= 500:
                ra = resp.getheader("retry-after")
                retry_after = float(ra) if ra and ra.replace(".", "", 1).isdigit() else None
                raise RetryableApiError(text, status=resp.status, retry_after=retry_after)
            raise FatalApiError(text, status=resp.status)

        out: Stream = self._retrying(buffered if self._in_process else once)
        return out


class _Buffered:
    """A whole answer with the ``getheader``/``read`` of ``http.client.HTTPResponse``."""

    def __init__(self, resp: Any) -> None:
        import io

        self._headers = {k.lower(): v for k, v in resp.headers.items()}
        self._body = io.BytesIO(resp.body)

    def getheader(self, name: str) -> str | None:
        value: str | None = self._headers.get(name.lower())
        return value

    def read(self, n: int | None = None) -> bytes:
        return self._body.read(-1 if n is None else n)


class _Closed:
    def close(self) -> None:
        pass


def q(s: str) -> str:
    """A path segment, percent-encoded."""
    return quote(s, safe="")

"""Talking to a wisp server: a stdlib HTTP transport and the ingestion API client.

The wire format is the HTTP API v1 of docs/http-api.md: JSON over
HTTP under ``/api/v1``, ``Authorization: Bearer <key>``, record batches
optionally gzip-compressed.  This module only speaks it; what to send and when
is the uploader's business (``wisp._upload._uploader``).

:class:`HttpTransport` uses ``http.client`` (imported when first used) with one
keep-alive connection per transport, so it belongs to one thread.  Anything
that has a ``request()`` like it can be injected instead.

Failures become the error tree of :mod:`wisp.errors`: connection errors,
timeouts, 429 and 5xx are :class:`RetryableApiError` (with ``retry_after`` from
a ``Retry-After`` header), any other 4xx is :class:`FatalApiError`.
"""

from __future__ import annotations

import json
from typing import Any, NamedTuple, Protocol
from urllib.parse import quote, urlsplit

from wisp._protocol import url_problem
from wisp._wire import RunBody
from wisp.errors import FatalApiError, RetryableApiError, UsageError

__all__ = ["API_PREFIX", "ApiClient", "HttpTransport", "Response", "Transport", "error_message"]

API_PREFIX = "/api/v1"
_REDIRECTS = (301, 302, 303, 307, 308)


class Response(NamedTuple):
    status: int
    headers: dict[str, str]  # names lower-cased
    body: bytes


class Transport(Protocol):
    """Sends one HTTP request; raises ``OSError`` when no answer came back."""

    def request(
        self, method: str, path: str, body: bytes | None, headers: dict[str, str], timeout: float
    ) -> Response: ...

    def close(self) -> None: ...


class HttpTransport:
    """``http.client`` over one reusable connection to ``base_url`` (http or https)."""

    def __init__(self, base_url: str) -> None:
        problem = url_problem(base_url)
        if problem is not None:
            raise UsageError(f"the server URL {problem}")
        parts = urlsplit(base_url)
        assert parts.hostname is not None
        self.scheme = parts.scheme
        self.host = parts.hostname
        self.port = parts.port
        self.prefix = parts.path.rstrip("/")
        self._conn: Any = None

    def _connect(self, timeout: float) -> Any:
        import http.client

        if self.scheme == "https":
            return http.client.HTTPSConnection(self.host, self.port, timeout=timeout)
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout)

    def request(
        self, method: str, path: str, body: bytes | None, headers: dict[str, str], timeout: float
    ) -> Response:
        import http.client

        # A kept-alive connection the server closed fails on first use: retry once, fresh.
        for attempt in (0, 1):
            fresh = self._conn is None
            if fresh:
                self._conn = self._connect(timeout)
            conn = self._conn
            conn.timeout = timeout
            if conn.sock is not None:
                conn.sock.settimeout(timeout)
            try:
                conn.request(method, self.prefix + path, body=body, headers=headers)
                resp = conn.getresponse()
                data = resp.read()
            except (OSError, http.client.HTTPException) as exc:
                self.close()
                if fresh or attempt or isinstance(exc, TimeoutError):
                    if isinstance(exc, OSError):
                        raise
                    raise ConnectionError(f"{type(exc).__name__}: {exc}") from exc
                continue
            hdrs = {k.lower(): v for k, v in resp.getheaders()}
            if resp.will_close:
                self.close()
            return Response(resp.status, hdrs, data)
        raise AssertionError("unreachable")  # pragma: no cover

    def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    from email.utils import parsedate_to_datetime

    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    import time

    return max(0.0, when.timestamp() - time.time())


def error_message(resp: Response) -> tuple[str, dict[str, Any]]:
    try:
        doc = json.loads(resp.body)
    except ValueError:
        doc = None
    if isinstance(doc, dict) and isinstance(doc.get("error"), dict):
        err = doc["error"]
        msg = str(err.get("message") or err.get("code") or "")
        if err.get("field"):
            msg = f"{msg} (field {err['field']!r})"
        return msg, doc
    text = resp.body[:200].decode("utf-8", "replace").strip()
    return text, doc if isinstance(doc, dict) else {}


def answer_summary(resp: Response) -> str:
    """One line for what a server answered: ``HTTP 501 (text/html: Error response)``."""
    import re

    ctype = resp.headers.get("content-type", "").split(";")[0].strip() or "no content type"
    text = resp.body[:2000].decode("utf-8", "replace")
    title = re.search(r"<title[^>]*>(.*?)</title>", text, re.I | re.S)
    if title is not None:
        text = title.group(1)
    text = " ".join(re.sub(r"<[^>]*>", " ", text).split())
    if len(text) > 80:
        text = text[:77] + "..."
    return f"HTTP {resp.status} ({ctype}{': ' + text if text else ''})"


def _wisp_error(resp: Response) -> bool:
    """True when the body is a wisp server's error document (``{"error": {...}}``)."""
    try:
        doc = json.loads(resp.body)
    except ValueError:
        return False
    return isinstance(doc, dict) and isinstance(doc.get("error"), dict)


class Conflict(NamedTuple):
    """A 409 answer to a record batch: the server has applied up to ``acked_seq``."""

    acked_seq: int


class ApiClient:
    """The ingestion endpoints of the API, with errors mapped to the wisp error tree."""

    def __init__(
        self,
        server_url: str,
        api_key: str | None,
        *,
        transport: Transport | None = None,
        timeout: float = 30.0,
    ) -> None:
        self.server_url = server_url.rstrip("/")
        self.transport: Transport = transport or HttpTransport(self.server_url)
        self.timeout = timeout
        self.plain_uploads = False  # True once the server said it takes blob bytes itself
        #: set once the server answered that someone asked for the run to stop
        self.stop_requested = False
        self._headers = {"User-Agent": "wisp-uploader/1", "Accept": "application/json"}
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"

    def close(self) -> None:
        self.transport.close()

    def call(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        *,
        content_type: str = "application/json",
        gzip: bool = False,
        ok: tuple[int, ...] = (),
        timeout: float | None = None,
    ) -> Response:
        """One request; 2xx and ``ok`` statuses come back, others raise."""
        headers = dict(self._headers)
        if body is not None:
            headers["Content-Type"] = content_type
            if gzip:
                headers["Content-Encoding"] = "gzip"
        what = f"{method} {path}"
        try:
            resp = self.transport.request(
                method,
                API_PREFIX + path,
                body,
                headers,
                self.timeout if timeout is None else timeout,
            )
        except OSError as exc:
            raise RetryableApiError(
                f"{what}: cannot reach {self.server_url} ({type(exc).__name__}: {exc})"
            ) from exc
        status = resp.status
        if status in _REDIRECTS and method == "GET" and resp.headers.get("location"):
            # bytes in an object store: a presigned URL, fetched without our API key
            from wisp._upload._direct import fetch

            body = fetch(resp.headers["location"], self.timeout if timeout is None else timeout)
            return Response(200, {}, body)
        if 200 <= status < 300 or status in ok:
            return resp
        if status in (404, 501) and not _wisp_error(resp):  # wisp's own 404s are JSON
            raise self.not_wisp(f"{method} {API_PREFIX}{path}", resp)
        msg, _doc = error_message(resp)
        text = f"{what}: server answered {status}" + (f": {msg}" if msg else "")
        if status == 429 or status >= 500 or status == 408:
            raise RetryableApiError(
                text, status=status, retry_after=_retry_after(resp.headers.get("retry-after"))
            )
        raise FatalApiError(text, status=status)

    def not_wisp(self, what: str, resp: Response) -> FatalApiError:
        """The error for an answer no wisp server gives (a 501, an HTML page, ...)."""
        fix = "the address `wisp server` prints, e.g. http://host:8080"
        for suffix in (API_PREFIX, "/api"):
            if self.server_url.endswith(suffix):  # the API's path, given as the server's
                fix = f"the server's address without {suffix}: {self.server_url[: -len(suffix)]}"
                break
        return FatalApiError(
            f"{self.server_url} is not a wisp server: {what} answered {answer_summary(resp)}; "
            f"the server URL (WISP_SERVER_URL, settings server_url, `wisp login`) is {fix}",
            status=resp.status,
        )

    def _json(self, resp: Response, what: str = "the request") -> dict[str, Any]:
        if resp.body and "html" in resp.headers.get("content-type", ""):
            raise self.not_wisp(what, resp)
        try:
            doc = json.loads(resp.body) if resp.body else {}
        except ValueError:
            raise RetryableApiError(
                f"server answered {resp.status} with a body that is not JSON: {resp.body[:80]!r}",
                status=resp.status,
            ) from None
        return doc if isinstance(doc, dict) else {}

    # -- endpoints ---------------------------------------------------------------------------

    def put_run(self, run_id: str, body: RunBody) -> dict[str, Any]:
        """Create or update a run (the body's shape: :class:`wisp._wire.RunBody`)."""
        data = json.dumps(body, allow_nan=True).encode()
        path = f"/runs/{quote(run_id, safe='')}"
        resp = self.call("PUT", path, data, ok=(405,))
        if resp.status == 405:  # every wisp server takes this PUT: something else answered
            raise self.not_wisp(f"PUT {API_PREFIX}{path}", resp)
        return self._json(resp, f"PUT {API_PREFIX}{path}")

    def post_records(self, run_id: str, body: bytes, *, gzip: bool) -> int | Conflict:
        """Post one batch (an encoded body); the acked seq, or a :class:`Conflict`."""
        resp = self.call(
            "POST", f"/runs/{quote(run_id, safe='')}/records", body, gzip=gzip, ok=(409,)
        )
        doc = self._json(resp)
        self._note_stop(doc)
        acked = doc.get("acked_seq")
        if type(acked) is not int:
            if resp.status == 409:  # not a seq conflict: the run is not ours (run_owned, ...)
                msg, _ = error_message(resp)
                raise FatalApiError(
                    f"POST /runs/{run_id}/records: 409 without acked_seq ({msg or doc}): "
                    "the upload stops",
                    status=409,
                )
            raise RetryableApiError(f"POST /runs/{run_id}/records: no acked_seq in {doc}")
        return Conflict(acked) if resp.status == 409 else acked

    def writer_acked(self, run_id: str, writer_id: str) -> int:
        path = f"/runs/{quote(run_id, safe='')}/writers/{quote(writer_id, safe='')}"
        acked = self._json(self.call("GET", path)).get("acked_seq", -1)
        return acked if type(acked) is int else -1

    def has_media(self, sha256: str) -> bool:
        resp = self.call("HEAD", f"/media/{sha256}", ok=(404,))
        return resp.status != 404

    def put_media(self, sha256: str, data: bytes) -> None:
        """Upload a media file: to the server, or straight to its object store."""
        from wisp._upload._direct import upload_blob

        def direct() -> None:
            self.call("PUT", f"/media/{sha256}", data, content_type="application/octet-stream")

        upload_blob(self, "media", sha256, len(data), data, direct)

    def heartbeat(self, run_id: str) -> None:
        resp = self.call("POST", f"/runs/{quote(run_id, safe='')}/heartbeat", b"{}")
        self._note_stop(self._json(resp))

    def _note_stop(self, doc: dict[str, Any]) -> None:
        """Someone asked the server to stop this run (``POST /runs/{id}/stop``): its answers
        to heartbeats and record batches say ``"stop": true`` from then on."""
        if doc.get("stop") is True:
            self.stop_requested = True

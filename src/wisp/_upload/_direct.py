"""Blob bytes straight to and from an object store, over presigned URLs (stdlib only).

The server plans each upload (``POST /api/v1/uploads/{sha256}``, docs/http-api.md):
``stored`` (nothing to send), ``direct`` (PUT the bytes to the server, as before) or
``presigned`` (PUT each part to its URL, several at a time, then ``complete``).  A part
that fails is sent again; when ``complete`` says parts are missing the plan is asked for
again, which lists only those (the server resumes the pending upload).  Downloads that
the server answers with a redirect are fetched from the redirect's URL, without the API
key (:func:`fetch`).
"""

from __future__ import annotations

import json
import time
from typing import IO, Any
from urllib.parse import urlsplit

from wisp.errors import FatalApiError, RetryableApiError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from wisp._upload._transport import ApiClient

__all__ = ["REDIRECTS", "fetch", "open_url", "upload_blob"]

REDIRECTS = (301, 302, 303, 307, 308)
_TRIES = 4
_BLOCK = 1 << 20


class _Slice:
    """``size`` bytes of a file from ``offset``, read as http.client sends them."""

    def __init__(self, f: IO[bytes], size: int) -> None:
        self.f = f
        self.left = size

    def read(self, n: int = -1) -> bytes:
        if self.left <= 0:
            return b""
        n = self.left if n < 0 else min(n, self.left)
        data = self.f.read(n)
        self.left -= len(data)
        return data


def _connection(url: str, timeout: float) -> tuple[Any, str]:
    import http.client

    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise FatalApiError(f"the server sent an upload URL that is not http(s): {url[:80]!r}")
    cls = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    conn = cls(parts.hostname, parts.port, timeout=timeout, blocksize=_BLOCK)
    target = parts.path + (f"?{parts.query}" if parts.query else "")
    return conn, target


def _put_part(url: str, source: str | bytes, offset: int, size: int, timeout: float) -> None:
    """PUT one part (bytes, or a slice of the file at ``source``), retried on failure."""
    import http.client

    for attempt in range(_TRIES):
        conn, target = _connection(url, timeout)
        headers = {"Content-Type": "application/octet-stream", "Content-Length": str(size)}
        try:
            if isinstance(source, bytes):
                conn.request("PUT", target, body=source[offset : offset + size], headers=headers)
                resp = conn.getresponse()
            else:
                with open(source, "rb") as f:
                    f.seek(offset)
                    conn.request("PUT", target, body=_Slice(f, size), headers=headers)
                    resp = conn.getresponse()
            text = resp.read()[:300]
            status = resp.status
        except (OSError, http.client.HTTPException) as exc:
            status, text = 0, f"{type(exc).__name__}: {exc}".encode()
        finally:
            conn.close()
        if 200 <= status < 300:
            return
        if status and status < 500 and status not in (408, 429):
            raise FatalApiError(f"object store refused a part: {status} {text!r}", status=status)
        if attempt + 1 == _TRIES:
            raise RetryableApiError(f"object store: part upload failed: {status} {text!r}")
        time.sleep(0.5 * 2**attempt)


def upload_blob(
    api: ApiClient,
    kind: str,
    sha256: str,
    size: int,
    source: str | bytes,
    direct: Callable[[], None],
    *,
    suffix: str = "",
    workers: int = 4,
) -> bool:
    """Upload a blob as the server plans it; whether bytes were sent.

    ``source`` is the bytes, or the path of the file; ``direct`` sends them to the server
    (the ``direct`` plan, and servers older than planned uploads)."""
    if getattr(api, "plain_uploads", False):
        direct()
        return True
    ask = json.dumps({"kind": kind, "size": size, "suffix": suffix}).encode()
    for _round in range(3):
        resp = api.call("POST", f"/uploads/{sha256}", ask, ok=(404,))
        plan = json.loads(resp.body) if resp.status != 404 else {"method": "direct"}
        method = plan.get("method")
        if method == "stored":
            return False
        if method != "presigned":
            api.plain_uploads = True  # this server takes the bytes itself: stop asking
            direct()
            return True
        parts = plan.get("parts") or []
        timeout = max(api.timeout, 300.0)

        def send(p: dict[str, Any], timeout: float = timeout) -> None:
            _put_part(str(p["url"]), source, int(p["offset"]), int(p["size"]), timeout)

        from wisp.artifacts._hashing import parallel

        parallel(send, parts, n=max(1, min(workers, len(parts))))
        done = {"kind": kind, "size": size, "suffix": suffix, "upload_id": plan["upload_id"]}
        resp = api.call("POST", f"/uploads/{sha256}/complete", json.dumps(done).encode(), ok=(409,))
        if resp.status != 409:
            return True
    raise RetryableApiError(f"upload of {sha256}: parts still missing after 3 rounds")


def open_url(url: str, timeout: float) -> Any:
    """GET a presigned URL (no credentials of ours go with it); the open response."""
    import urllib.error
    import urllib.request

    if urlsplit(url).scheme not in ("http", "https"):
        raise FatalApiError(f"the server redirected to a URL that is not http(s): {url[:80]!r}")
    try:
        return urllib.request.urlopen(url, timeout=timeout)
    except urllib.error.HTTPError as exc:
        status = exc.code
        exc.close()
        cls = RetryableApiError if status >= 500 or status in (408, 429) else FatalApiError
        raise cls(f"GET from the object store: {status}", status=status) from None
    except OSError as exc:
        raise RetryableApiError(f"GET from the object store: {exc}") from exc


def fetch(url: str, timeout: float) -> bytes:
    """The bytes at a presigned URL."""
    with open_url(url, timeout) as resp:
        data: bytes = resp.read()
    return data

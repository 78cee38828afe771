"""The artifact endpoints of HTTP API v1 (docs/http-api.md), with streamed file bodies.

JSON calls go through :class:`wisp._upload._transport.ApiClient` (errors mapped to the
wisp error tree); file bytes are streamed from and to disk over ``http.client`` on one
keep-alive connection per thread.
"""

from __future__ import annotations

import hashlib
import json
import threading
from urllib.parse import quote, urlsplit

from wisp._protocol import project_path
from wisp._upload._direct import REDIRECTS, open_url
from wisp._upload._transport import API_PREFIX, ApiClient
from wisp.errors import ArtifactError, FatalApiError, RetryableApiError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import IO, Any

    from wisp._wire import (
        ArtifactAliasBody,
        ArtifactCommitBody,
        ArtifactMissingBody,
        ArtifactUseBody,
    )

__all__ = ["ArtifactClient"]

_CHUNK = 1 << 20
_MISSING_BATCH = 10_000


def _q(s: str) -> str:
    return quote(s, safe="")


class ArtifactClient:
    def __init__(
        self, server_url: str, api_key: str | None, *, transport: Any = None, timeout: float = 60.0
    ) -> None:
        self.api = ApiClient(server_url, api_key, transport=transport, timeout=timeout)
        self._transport = transport
        self._shared = threading.Lock()
        self.server_url = self.api.server_url
        self.api_key = api_key
        self.timeout = timeout
        self._local = threading.local()
        self.bytes_sent = 0
        self.files_sent = 0
        self._count = threading.Lock()
        self._conns: list[Any] = []
        self._apis: list[ApiClient] = []

    def close(self) -> None:
        """Close every connection (they reopen on next use)."""
        self.api.close()
        with self._count:
            conns, self._conns = self._conns, []
            apis, self._apis = self._apis, []
        for c in conns:
            c.close()
        for a in apis:
            a.close()

    def _json(self, method: str, path: str, body: Any = None, ok: tuple[int, ...] = ()) -> Any:
        data = None if body is None else json.dumps(body).encode()
        resp = self.api.call(method, path, data, ok=ok)
        try:
            return resp.status, json.loads(resp.body) if resp.body else {}
        except ValueError:
            raise RetryableApiError(f"{method} {path}: answer is not JSON") from None

    # -- file bytes ------------------------------------------------------------------------

    def _conn(self) -> Any:
        import http.client

        conn = getattr(self._local, "conn", None)
        with self._count:
            if conn is not None and conn not in self._conns:
                conn = None  # closed by close(): open a new one
        if conn is None:
            parts = urlsplit(self.server_url)
            cls = (
                http.client.HTTPSConnection
                if parts.scheme == "https"
                else http.client.HTTPConnection
            )
            conn = cls(parts.hostname or "", parts.port, timeout=self.timeout)
            with self._count:
                self._conns.append(conn)
            self._local.conn = conn
            self._local.prefix = parts.path.rstrip("/")
        return conn

    def _drop(self) -> None:
        conn = getattr(self._local, "conn", None)
        self._local.conn = None
        if conn is not None:
            conn.close()

    def _headers(self) -> dict[str, str]:
        h = {"User-Agent": "wisp-artifacts/1"}
        if self.api_key:
            h["Authorization"] = f"Bearer {self.api_key}"
        return h

    def _stream(self, method: str, path: str, body: Any, headers: dict[str, str]) -> Any:
        import http.client

        # A kept-alive connection the server closed meanwhile fails on first use: once more,
        # on a fresh one (a file body is read again from its start).
        for attempt in (0, 1):
            fresh = getattr(self._local, "conn", None) is None
            conn = self._conn()
            try:
                full = self._local.prefix + API_PREFIX + path
                conn.request(method, full, body=body, headers=headers)
                return conn.getresponse()
            except (OSError, http.client.HTTPException) as exc:
                self._drop()
                if fresh or attempt or isinstance(exc, TimeoutError):
                    msg = f"{method} {path}: {type(exc).__name__}: {exc}"
                    raise RetryableApiError(msg) from exc
                if body is not None:
                    body.seek(0)
        raise AssertionError("unreachable")  # pragma: no cover

    def _fail(self, method: str, path: str, resp: Any) -> None:
        text = resp.read()[:300].decode("utf-8", "replace")
        self._drop()
        msg = f"{method} {path}: server answered {resp.status}: {text}"
        if resp.status >= 500 or resp.status in (408, 429):
            raise RetryableApiError(msg, status=resp.status)
        raise FatalApiError(msg, status=resp.status)

    def put_file(self, digest: str, path: str, size: int) -> None:
        """Upload the file at ``path`` as blob ``digest`` (the server checks the hash): to
        the server, or straight to its object store over presigned URLs."""
        from wisp._upload._direct import upload_blob

        def direct() -> None:
            self._put_file(digest, path, size)

        api = self._thread_api()
        api.plain_uploads = api.plain_uploads or self.api.plain_uploads
        if api is self.api:  # one shared transport (injected): one upload at a time
            with self._shared:
                sent = upload_blob(api, "artifact", digest, size, path, direct)
        else:
            sent = upload_blob(api, "artifact", digest, size, path, direct)
        self.api.plain_uploads = self.api.plain_uploads or api.plain_uploads
        if sent:
            with self._count:
                self.bytes_sent += size
                self.files_sent += 1

    def _thread_api(self) -> ApiClient:
        """This thread's JSON client (files are sent from several threads at once)."""
        api: ApiClient | None = getattr(self._local, "api", None)
        with self._count:
            if api is not None and api not in self._apis:
                api = None  # closed by close(): open a new one
        if api is None:
            if self._transport is not None:  # an injected transport: share the one client
                return self.api
            api = ApiClient(self.server_url, self.api_key, timeout=self.timeout)
            with self._count:
                self._apis.append(api)
            self._local.api = api
        return api

    def _put_file(self, digest: str, path: str, size: int) -> None:
        headers = self._headers()
        headers["Content-Type"] = "application/octet-stream"
        headers["Content-Length"] = str(size)
        url = f"/artifact-files/{digest}"
        with open(path, "rb") as f:
            resp = self._stream("PUT", url, f, headers)
        if resp.status not in (200, 201):
            self._fail("PUT", url, resp)
        resp.read()
        if resp.will_close:
            self._drop()

    def get_file(self, digest: str, out: IO[bytes]) -> int:
        """Write blob ``digest`` into ``out``, checking its sha256; the byte count."""
        url = f"/artifact-files/{digest}"
        resp = self._stream("GET", url, None, self._headers())
        if resp.status in REDIRECTS and resp.getheader("location"):
            resp.read()
            if resp.will_close:
                self._drop()
            with open_url(resp.getheader("location"), self.timeout) as moved:
                return self._receive(url, digest, moved, out)
        if resp.status != 200:
            self._fail("GET", url, resp)
        n = self._receive(url, digest, resp, out)
        if resp.will_close:
            self._drop()
        return n

    @staticmethod
    def _receive(url: str, digest: str, resp: Any, out: IO[bytes]) -> int:
        h = hashlib.sha256()
        n = 0
        while True:
            chunk = resp.read(_CHUNK)
            if not chunk:
                break
            h.update(chunk)
            out.write(chunk)
            n += len(chunk)
        if h.hexdigest() != digest:
            raise ArtifactError(f"GET {url}: the bytes received do not hash to {digest}")
        return n

    # -- JSON endpoints --------------------------------------------------------------------

    def missing(self, digests: list[str]) -> list[str]:
        """The digests the server does not hold yet."""
        out: list[str] = []
        for i in range(0, len(digests), _MISSING_BATCH):
            ask: ArtifactMissingBody = {"sha256": digests[i : i + _MISSING_BATCH]}
            _, doc = self._json("POST", "/artifact-files/missing", ask)
            out += doc.get("missing", [])
        return out

    def commit(self, project: str, name: str, body: ArtifactCommitBody) -> dict[str, Any]:
        """Publish a version (the server answers the existing one for a known digest)."""
        _, doc = self._json("POST", f"{project_path(project)}/artifacts/{_q(name)}/versions", body)
        return dict(doc)

    def version(self, project: str, name: str, ref: str) -> dict[str, Any] | None:
        """A version by ``vN`` or alias (with its manifest), None when there is none."""
        path = f"{project_path(project)}/artifacts/{_q(name)}/versions/{_q(ref)}"
        status, doc = self._json("GET", path, ok=(404,))
        return None if status == 404 else dict(doc)

    def use(self, project: str, name: str, digest: str, run_id: str) -> None:
        path = f"{project_path(project)}/artifacts/{_q(name)}/usage"
        body: ArtifactUseBody = {"digest": digest, "run_id": run_id}
        self._json("POST", path, body)

    def set_alias(self, project: str, name: str, version: str, alias: str) -> dict[str, Any]:
        path = f"{project_path(project)}/artifacts/{_q(name)}/aliases/{_q(alias)}"
        body: ArtifactAliasBody = {"version": version}
        _, doc = self._json("PUT", path, body)
        return dict(doc)

    def list(self, project: str) -> list[dict[str, Any]]:
        _, doc = self._json("GET", f"{project_path(project)}/artifacts")
        return list(doc.get("artifacts", []))

"""Connection limits uvicorn lacks: deadlines, header sizes and a per-client connection cap.

uvicorn's h11 protocol never times out a client that connects and sends nothing, or sends
its headers or body a byte at a time, parses a request head of any size that arrives in one
piece, and lets one client hold every connection the server will take.
:func:`guarded_protocol` returns an ``H11Protocol`` subclass (passed to uvicorn as ``http=``)
that

- closes a connection whose request headers are not complete ``header_timeout`` seconds
  after the connection opened (or after the previous response finished);
- closes a connection that is sending a request body but has sent nothing for
  ``body_timeout`` seconds;
- answers 431 (and closes) a request line + headers over :data:`MAX_HEAD_BYTES` or with more
  than :data:`MAX_HEADERS` header lines;
- answers 503 (and closes) a new connection from a client address that already holds
  ``per_client`` open connections (``--max-client-connections``; trusted proxies, which
  carry many clients, are exempt: limit clients at the proxy).

A request being answered (the client waiting on us) is never timed out here.  The cap on all
connections is uvicorn's ``limit_concurrency`` (503 beyond it); :func:`uvicorn_options` sets
it all, and turns uvicorn's own ``proxy_headers`` off (``http.clientaddr`` decides who may forward).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from wisp.server.http.clientaddr import is_trusted
from wisp.server.settings import ServerSettings

__all__ = ["MAX_HEADERS", "MAX_HEAD_BYTES", "guarded_protocol", "uvicorn_options"]

MAX_HEAD_BYTES = 64 * 1024  # request line + headers
MAX_HEADERS = 100  # header lines per request


def _refusal(status: int, reason: str, code: str, detail: str) -> bytes:
    body = json.dumps({"error": {"code": code, "message": detail}}).encode()
    head = (
        f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/problem+json\r\n"
        f"connection: close\r\ncontent-length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


_TOO_MANY = _refusal(
    503,
    "Service Unavailable",
    "too_many_connections",
    "too many open connections from your address",
)
_HEAD_TOO_LARGE = _refusal(
    431,
    "Request Header Fields Too Large",
    "headers_too_large",
    f"request line and headers over {MAX_HEAD_BYTES} bytes or {MAX_HEADERS} lines",
)


def guarded_protocol(
    header_timeout: float,
    body_timeout: float,
    per_client: int = 0,
    trusted_proxies: list[str] | None = None,
) -> Any:
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    proxies = ServerSettings(trusted_proxies=list(trusted_proxies or [])).trusted_proxy_networks()
    open_by_client: dict[str, int] = {}  # this process's connections per client address

    class GuardedH11Protocol(H11Protocol):
        _wisp_timer: asyncio.TimerHandle | None = None
        _wisp_client: str | None = None  # counted in open_by_client
        _wisp_head: bytes = b""  # the request head received so far

        def _wisp_arm(self, seconds: float) -> None:
            if self._wisp_timer is not None:
                self._wisp_timer.cancel()
            self._wisp_timer = self.loop.call_later(seconds, self._wisp_expire)

        def _wisp_expire(self) -> None:
            self._wisp_timer = None
            if (
                self.conn.their_state in (h11.IDLE, h11.SEND_BODY)
                and not self.transport.is_closing()
            ):
                self.transport.close()  # the client is the one keeping us waiting

        def _wisp_refuse(self, answer: bytes) -> None:
            if not self.transport.is_closing():
                self.transport.write(answer)
                self.transport.close()

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            peer = transport.get_extra_info("peername")
            addr = peer[0] if isinstance(peer, tuple) and peer else ""
            if per_client > 0 and addr and not is_trusted(addr, proxies):
                if open_by_client.get(addr, 0) >= per_client:
                    self._wisp_refuse(_TOO_MANY)
                    return
                open_by_client[addr] = open_by_client.get(addr, 0) + 1
                self._wisp_client = addr
            self._wisp_arm(header_timeout)

        def _wisp_head_ok(self, data: bytes) -> bool:
            """Whether the request head (so far) is within the limits; kept until complete."""
            head = self._wisp_head + data
            end = head.find(b"\r\n\r\n")
            size = len(head) if end < 0 else end + 4
            if size > MAX_HEAD_BYTES or head.count(b"\r\n", 0, size) > MAX_HEADERS + 1:
                return False
            self._wisp_head = head[:size] if end < 0 else b""
            return True

        def data_received(self, data: bytes) -> None:
            if self.conn.their_state is h11.IDLE and not self._wisp_head_ok(data):
                self._wisp_refuse(_HEAD_TOO_LARGE)
                return
            super().data_received(data)
            state = self.conn.their_state
            if state is not h11.IDLE:
                self._wisp_head = b""
            if state is h11.SEND_BODY:
                self._wisp_arm(body_timeout)  # reset by every chunk
            elif state is not h11.IDLE and self._wisp_timer is not None:
                self._wisp_timer.cancel()
                self._wisp_timer = None

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._wisp_head = b""
            if not self.transport.is_closing():
                self._wisp_arm(header_timeout)  # the next request's headers

        def connection_lost(self, exc: Exception | None) -> None:
            if self._wisp_timer is not None:
                self._wisp_timer.cancel()
                self._wisp_timer = None
            if self._wisp_client is not None:
                left = open_by_client.get(self._wisp_client, 1) - 1
                if left > 0:
                    open_by_client[self._wisp_client] = left
                else:
                    open_by_client.pop(self._wisp_client, None)
                self._wisp_client = None
            super().connection_lost(exc)

    return GuardedH11Protocol


def uvicorn_options(settings: ServerSettings) -> dict[str, Any]:
    """Keyword arguments for ``uvicorn.run``/``uvicorn.Config``: limits, timeouts, TLS."""
    opts: dict[str, Any] = {
        "http": guarded_protocol(
            settings.header_timeout,
            settings.body_timeout,
            settings.max_client_connections,
            settings.trusted_proxies,
        ),
        "timeout_keep_alive": settings.keep_alive_timeout,
        "limit_concurrency": settings.max_connections or None,
        "h11_max_incomplete_event_size": MAX_HEAD_BYTES,
        "backlog": 2048,
        "proxy_headers": False,  # the client's address: http.clientaddr, trusted proxies only
        "log_config": log_config(),
    }
    if settings.tls_cert:
        opts["ssl_certfile"] = settings.tls_cert
        opts["ssl_keyfile"] = settings.tls_key or None
    return opts


def log_config() -> dict[str, Any]:
    """uvicorn's logging configuration with secrets kept out of the access log."""
    import copy

    from uvicorn.config import LOGGING_CONFIG

    cfg = copy.deepcopy(LOGGING_CONFIG)
    cfg.setdefault("filters", {})["wisp_redact"] = {
        "()": "wisp.server.http.clientaddr.RedactSecrets"
    }
    cfg["handlers"]["access"].setdefault("filters", []).append("wisp_redact")
    return cfg

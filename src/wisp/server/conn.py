"""Connection limits uvicorn lacks: a header deadline and a body idle timeout.

uvicorn's h11 protocol never times out a client that connects and sends nothing, or sends
its headers or body a byte at a time, so a thousand idle sockets could exhaust the
server's file descriptors.  :func:`guarded_protocol` returns an ``H11Protocol`` subclass
(passed to uvicorn as ``http=``) that closes a connection

- whose request headers are not complete ``header_timeout`` seconds after the connection
  opened (or after the previous response finished), and
- that is sending a request body but has sent nothing for ``body_timeout`` seconds.

A request being answered (the client waiting on us) is never timed out here.  The cap on
connections is uvicorn's ``limit_concurrency`` (503 beyond it), and header sizes are
bounded by ``h11_max_incomplete_event_size``; :func:`uvicorn_options` sets all three.
"""

from __future__ import annotations

import asyncio
from typing import Any

from wisp.server.settings import ServerSettings

__all__ = ["guarded_protocol", "uvicorn_options"]


def guarded_protocol(header_timeout: float, body_timeout: float) -> Any:
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class GuardedH11Protocol(H11Protocol):
        _wisp_timer: asyncio.TimerHandle | None = None

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

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._wisp_arm(header_timeout)

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            state = self.conn.their_state
            if state is h11.SEND_BODY:
                self._wisp_arm(body_timeout)  # reset by every chunk
            elif state is not h11.IDLE and self._wisp_timer is not None:
                self._wisp_timer.cancel()
                self._wisp_timer = None

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing():
                self._wisp_arm(header_timeout)  # the next request's headers

        def connection_lost(self, exc: Exception | None) -> None:
            if self._wisp_timer is not None:
                self._wisp_timer.cancel()
                self._wisp_timer = None
            super().connection_lost(exc)

    return GuardedH11Protocol


def uvicorn_options(settings: ServerSettings) -> dict[str, Any]:
    """Keyword arguments for ``uvicorn.run``/``uvicorn.Config``: limits, timeouts, TLS."""
    opts: dict[str, Any] = {
        "http": guarded_protocol(settings.header_timeout, settings.body_timeout),
        "timeout_keep_alive": settings.keep_alive_timeout,
        "limit_concurrency": settings.max_connections or None,
        "h11_max_incomplete_event_size": 64 * 1024,
        "backlog": 2048,
    }
    if settings.tls_cert:
        opts["ssl_certfile"] = settings.tls_cert
        opts["ssl_keyfile"] = settings.tls_key or None
    return opts

"""``Server-Timing: app;dur=<ms>`` on every answer: how long the server took to start it.

Measured from the moment the app gets the request (its headers parsed) until its response
starts: the authentication, the handler and every wait between them (a thread, a database
connection, the CPU), not the network or the time the body takes to stream out.  Browsers
show it in their developer tools; ``benchmarks/bench_concurrent.py`` sets it beside each
poll's wall time, to tell the server's share of a slow poll from the client's own wait.
"""

from __future__ import annotations

import time
from typing import Any

__all__ = ["server_timing"]


def server_timing(app: Any) -> Any:
    """``app`` (ASGI) with the header added to its HTTP answers (Starlette's
    ``Middleware(server_timing)``)."""

    async def timed(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        t0 = time.perf_counter()

        async def send_timed(message: Any) -> None:
            if message.get("type") == "http.response.start":
                ms = (time.perf_counter() - t0) * 1e3
                headers = [*message.get("headers", []), (b"server-timing", b"app;dur=%.1f" % ms)]
                message = {**message, "headers": headers}
            await send(message)

        await app(scope, receive, send_timed)

    return timed

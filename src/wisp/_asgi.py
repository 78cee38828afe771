"""Call an ASGI app in process: one HTTP request in, one buffered response out.

Used by ``wisp ui`` (its uploaders call the app without a socket) and by ``/mcp`` on
``wisp server`` (each agent tool call is a request to the same app, made with the caller's
key, so it is checked exactly as any other request).
"""

from __future__ import annotations

import asyncio
from typing import Any
from urllib.parse import unquote

from wisp._upload._transport import Response

__all__ = ["call_asgi"]


async def call_asgi(
    app: Any,
    server: tuple[str, int],
    method: str,
    target: str,
    body: bytes,
    headers: dict[str, str],
) -> Response:
    """Send ``method target`` (a path with its query) to ``app`` and collect the answer."""
    path, _, query = target.partition("?")
    raw = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers.items()]
    raw.append((b"content-length", str(len(body)).encode()))
    raw.append((b"host", f"{server[0]}:{server[1]}".encode()))
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": unquote(path),
        "raw_path": path.encode("latin-1"),
        "query_string": query.encode("latin-1"),
        "root_path": "",
        "headers": raw,
        "client": ("127.0.0.1", 0),
        "server": server,
    }
    sent = False
    finished = asyncio.Event()  # the client "leaves" only once the whole answer is in
    status = 500
    out_headers: dict[str, str] = {}
    chunks: list[bytes] = []

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if sent:  # a streamed answer stops early when told the client left
            await finished.wait()
            return {"type": "http.disconnect"}
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = int(message["status"])
            for k, v in message.get("headers", []):
                out_headers[k.decode("latin-1").lower()] = v.decode("latin-1")
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                finished.set()

    try:
        await app(scope, receive, send)
    finally:
        finished.set()
    return Response(status, out_headers, b"".join(chunks))

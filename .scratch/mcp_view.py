"""``/mcp`` on ``wisp server``: the agent tools over MCP's streamable HTTP (docs/agents.md).

Each tool call is made with the caller's key: the tool's :class:`wisp.Api` sends its
requests to this same app, in process (no socket), with the ``Authorization`` header of the
MCP request, so every read and write is checked by the same middleware and rights as any
other request. Stateless (no MCP session kept between requests), so N server processes
behind a proxy serve it alike. Mounted only when the ``mcp`` extra is installed; otherwise
``/mcp`` answers 501 with the install hint.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Mount, Route

from wisp.server.http.problem import problem_response  # adjust to the layout

__all__ = ["mcp_routes"]

#: a stand-in URL for in-process calls (never resolved: no socket is opened)
IN_PROCESS = "http://wisp.in-process"


class _AppTransport:
    """A Transport that sends each request to ``app`` on the server's own event loop (the
    tool runs in a worker thread of that loop)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    def request(
        self, method: str, path: str, body: bytes | None, headers: dict[str, str], timeout: float
    ) -> Any:
        import anyio.from_thread

        from wisp._asgi import call_asgi

        async def call() -> Any:
            with anyio.fail_after(timeout):
                return await call_asgi(
                    self.app, ("wisp.in-process", 80), method, path, body or b"", headers
                )

        return anyio.from_thread.run(call)

    def close(self) -> None:
        pass


def _bearer(request: Request | None) -> str | None:
    if request is None:
        return None
    auth = request.headers.get("authorization", "")
    scheme, _, secret = auth.partition(" ")
    return secret.strip() or None if scheme.lower() == "bearer" else None


def mcp_routes(app_ref: list[Any], max_bytes: int) -> tuple[list[BaseRoute], Any]:
    """The ``/mcp`` route and a lifespan context for it; ``app_ref[0]`` is the whole app
    (set once it is built)."""
    try:
        from wisp.mcp._server import build
    except ImportError:  # pragma: no cover - wisp.mcp is part of the package
        raise
    try:
        import mcp  # noqa: F401
    except ImportError:

        async def missing(request: Request) -> Response:
            return problem_response(
                501, "mcp_not_installed", "the MCP endpoint needs pip install 'wisp-tracker[mcp]'"
            )

        return [Route("/mcp", missing, methods=["GET", "POST", "DELETE"])], None

    from wisp.api import Api

    def api_for(ctx: Any) -> Any:
        request = getattr(ctx.request_context, "request", None)
        return Api(IN_PROCESS, _bearer(request), transport=_AppTransport(app_ref[0]), retries=0)

    server = build(api_for, max_bytes=max_bytes)
    sub = server.streamable_http_app(
        streamable_http_path="/", stateless_http=True, json_response=True
    )

    @contextlib.asynccontextmanager
    async def lifespan(_: Any) -> AsyncIterator[None]:
        async with sub.router.lifespan_context(sub):
            yield

    return [Mount("/mcp", app=sub)], lifespan

"""``/mcp`` on ``wisp server``: the agent tools over MCP's streamable HTTP (docs/agents.md).

Each tool call is made with the caller's key: the tool's :class:`wisp.Api` sends its
requests to this same app, in process (no socket), with the ``Authorization`` and ``Host``
of the MCP request, so every read and write passes the same middleware and rights as any
other request.  Stateless (no MCP session is kept between requests), so N server processes
behind a proxy serve it alike.  Without the ``mcp`` extra, ``/mcp`` answers 501 with
the install hint.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

from starlette.routing import Route

from wisp.errors import install_hint
from wisp.server.http.body import json_response
from wisp.server.http.problem import Problem

__all__ = ["McpEndpoint", "mcp_route"]

#: the base URL of in-process calls (never resolved: no socket is opened)
IN_PROCESS = "http://wisp.in-process"
#: one in-process call's limit: the MCP client's own timeout is the real bound
CALL_TIMEOUT = 120.0


class _AppTransport:
    """A transport (``request``/``close``, as ``wisp._upload._transport.Transport``) that
    sends each request to ``app`` on the server's event loop; tools run in its worker
    threads, from where ``anyio.from_thread`` reaches the loop."""

    def __init__(self, app: Any, host: str) -> None:
        self.app = app
        name, _, port = host.rpartition(":") if not host.endswith("]") else (host, "", "")
        self.server = (name or host, int(port) if port.isdigit() else 80)

    def request(
        self, method: str, path: str, body: bytes | None, headers: dict[str, str], timeout: float
    ) -> Any:
        import anyio
        import anyio.from_thread

        from wisp._asgi import call_asgi

        async def call() -> Any:
            with anyio.fail_after(timeout):
                return await call_asgi(self.app, self.server, method, path, body or b"", headers)

        return anyio.from_thread.run(call)

    def close(self) -> None:
        pass


def _bearer(headers: Any) -> str | None:
    kind, _, secret = str(headers.get("authorization", "")).partition(" ")
    return secret.strip() or None if kind.lower() == "bearer" else None


class McpEndpoint:
    """The ``/mcp`` ASGI endpoint.  The MCP SDK (seconds to import) is loaded and its session
    manager started on the first request, in the app's lifespan task group, so ``wisp server``
    and ``wisp ui`` start as fast without it."""

    def __init__(self, app: Callable[[], Any], max_bytes: int) -> None:
        self._app = app
        self._max_bytes = max_bytes
        self._sub: Any = None
        self._lock: Any = None
        self._tg: Any = None
        self._closing: Any = None

    @contextlib.asynccontextmanager
    async def lifespan(self, _: Any) -> AsyncIterator[None]:
        import anyio

        self._lock, self._closing = anyio.Lock(), anyio.Event()
        async with anyio.create_task_group() as tg:
            self._tg = tg
            try:
                yield
            finally:
                self._closing.set()  # ends the session manager's task, if it started

    async def _start(self) -> Any:
        import anyio

        from wisp.api import Api
        from wisp.mcp._server import build

        app = self._app

        def api_for(ctx: Any) -> Any:
            request = ctx.request_context.request
            headers = request.headers if request is not None else {}
            transport = _AppTransport(app(), str(headers.get("host") or "127.0.0.1"))
            key = _bearer(headers)
            return Api(IN_PROCESS, key, transport=transport, timeout=CALL_TIMEOUT, retries=0)

        sub = build(api_for, max_bytes=self._max_bytes).streamable_http_app(
            streamable_http_path="/mcp", stateless_http=True, json_response=True
        )
        ready = anyio.Event()

        async def manage() -> None:
            async with sub.router.lifespan_context(sub):
                ready.set()
                await self._closing.wait()

        self._tg.start_soon(manage)
        await ready.wait()
        return sub

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if self._sub is None:
            try:
                import mcp  # noqa: F401
            except ImportError:
                p = Problem(
                    501,
                    "mcp_not_installed",
                    f"/mcp needs the MCP SDK: {install_hint('mcp')}",
                )
                await json_response(p.body(), p.status)(scope, receive, send)
                return
            if self._tg is None:  # an app driven without its lifespan
                p = Problem(503, "mcp_not_started", "/mcp runs only in a started server")
                await json_response(p.body(), p.status)(scope, receive, send)
                return
            async with self._lock:
                if self._sub is None:
                    self._sub = await self._start()
        await self._sub(scope, receive, send)


def mcp_route(app: Callable[[], Any], max_bytes: int) -> tuple[Route, Callable[[Any], Any]]:
    """The ``/mcp`` route and the lifespan it needs; ``app()`` returns the whole app once it
    is built."""
    endpoint = McpEndpoint(app, max_bytes)
    return Route("/mcp", endpoint, methods=["GET", "POST", "DELETE"]), endpoint.lifespan

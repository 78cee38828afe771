"""Agents as users: the MCP tools (``wisp mcp``, ``/mcp`` on ``wisp server``), ``wisp query``
and the agent skill file (docs/agents.md).

The tools (``_tools.py``) are plain functions over :class:`wisp.Api`; the official ``mcp``
SDK (the ``mcp`` extra) is imported only when a server is built.  ``import wisp`` loads
nothing of this package.
"""

from __future__ import annotations

from typing import Any

from wisp.mcp._tools import DEFAULT_MAX_BYTES, Tools

__all__ = ["DEFAULT_MAX_BYTES", "Tools", "serve_stdio"]


def serve_stdio(api: Any, *, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
    """Serve the tools over ``api`` on stdin/stdout until the client closes them."""
    from wisp.mcp._server import build

    server = build(lambda ctx: api, max_bytes=max_bytes)
    try:
        server.run("stdio")
    finally:
        api.close()

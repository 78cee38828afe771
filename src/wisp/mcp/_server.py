"""The MCP server: the tools of ``_tools.py`` registered with the official ``mcp`` SDK.

``build(api_for)`` makes an ``MCPServer`` whose every tool call first asks ``api_for(ctx)``
for the :class:`wisp.Api` to use: one Api for ``wisp mcp`` (stdio), an Api bound to the
caller's key for ``/mcp`` on ``wisp server``.  Read tools carry ``readOnlyHint``; write tools
(tags, notes, stop) are refused by the server's rights when the caller's key may not write.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from wisp.errors import UsageError, WispError, install_hint
from wisp.mcp._tools import DEFAULT_MAX_BYTES, Tools

__all__ = ["READ_TOOLS", "WRITE_TOOLS", "build", "need_mcp"]

READ_TOOLS = (
    "list_projects",
    "list_runs",
    "get_run",
    "get_metric_history",
    "compare_runs",
    "best_run",
    "diagnose_run",
    "get_console",
    "get_alerts",
)
WRITE_TOOLS = ("add_tags", "remove_tags", "set_notes", "stop_run")
INSTRUCTIONS = (
    "wisp experiment tracker. Find runs with list_runs (filters, partial ids, time windows), "
    "read one with get_run, whole metric histories with get_metric_history (page with "
    "next_cursor until it is null; buckets=N for an overview), compare_runs for the config "
    "keys that differ, best_run for the best value of a metric, diagnose_run for NaN, "
    "divergence, plateaus and overfitting, get_alerts(since=...) to poll for alerts."
)


def need_mcp() -> Any:
    """The ``mcp`` SDK's server module, or a UsageError with the install hint."""
    try:
        from mcp.server import mcpserver
    except ImportError:
        raise UsageError(
            f"the MCP server needs the official mcp SDK: {install_hint('mcp')}"
        ) from None
    return mcpserver


def _tool(
    name: str, api_for: Callable[[Any], Any], max_bytes: int, context: type, tool_error: type
) -> Any:
    """A function with the signature of ``Tools.<name>`` plus a ``ctx`` the SDK fills in;
    wisp's errors (a bad argument, a run not found, a right refused) reach the agent as the
    tool's error text."""
    method = getattr(Tools, name)
    sig = inspect.signature(method, eval_str=True)
    params = [p for p in sig.parameters.values() if p.name != "self"]
    ctx = inspect.Parameter("ctx", inspect.Parameter.KEYWORD_ONLY, annotation=context)

    def call(ctx: Any, **kwargs: Any) -> Any:
        try:
            return getattr(Tools(api_for(ctx), max_bytes=max_bytes), name)(**kwargs)
        except WispError as exc:
            raise tool_error(str(exc)) from None

    call.__name__ = name
    call.__doc__ = method.__doc__
    call.__signature__ = sig.replace(parameters=[*params, ctx])  # type: ignore[attr-defined]
    call.__annotations__ = {p.name: p.annotation for p in params} | {
        "ctx": context,
        "return": sig.return_annotation,
    }
    return call


def build(
    api_for: Callable[[Any], Any],
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    tools: tuple[str, ...] = READ_TOOLS + WRITE_TOOLS,
) -> Any:
    """An ``MCPServer`` with the wisp tools, each calling ``api_for(ctx)`` for its Api."""
    mcpserver = need_mcp()
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.types import ToolAnnotations

    from wisp import __version__

    server = mcpserver.MCPServer(
        name="wisp", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING"
    )
    for name in tools:
        write = name in WRITE_TOOLS
        server.add_tool(
            _tool(name, api_for, max_bytes, mcpserver.Context, ToolError),
            name=name,
            annotations=ToolAnnotations(
                read_only_hint=not write,
                destructive_hint=name == "stop_run",
                idempotent_hint=name != "stop_run",
            ),
            structured_output=True,
        )
    return server

"""`wisp mcp --dir` spoken to by the mcp SDK's own client over stdio: the tools are listed
with their schemas, results are structured, and wisp's errors reach the agent as text."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp")


async def _session(folder: Path, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    from mcp.client.stdio import StdioServerParameters, stdio_client

    from mcp import ClientSession

    env = {k: v for k, v in os.environ.items() if not k.startswith(("WISP_", "WANDB_"))}
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "wisp.cli", "mcp", "--dir", str(folder), "--max-bytes", "4096"],
        env=env,
        cwd=str(folder),
    )
    out: list[Any] = []
    with anyio.fail_after(60):
        async with stdio_client(params) as (r, w), ClientSession(r, w) as s:
            await s.initialize()
            out.append(await s.list_tools())
            for name, args in calls:
                out.append(await s.call_tool(name, args))
    return out


def test_stdio_tools_listed_and_called(runs_dir: Path) -> None:
    """The client sees every tool with an input schema, pages a history to its end, and
    gets a readable error for an unknown run."""
    calls: list[tuple[str, dict[str, Any]]] = [
        ("list_runs", {"project": "agents", "config": {"lr": 0.01}}),
        ("get_run", {"run": "nope", "project": "agents"}),
    ]
    listed, runs, missing = anyio.run(_session, runs_dir, calls)
    names = {t.name for t in listed.tools}
    assert {
        "list_runs",
        "get_metric_history",
        "compare_runs",
        "best_run",
        "diagnose_run",
        "get_alerts",
        "add_tags",
        "remove_tags",
        "set_notes",
    } <= names
    schema = next(t for t in listed.tools if t.name == "get_metric_history").input_schema
    assert schema["required"] == ["run", "key"]
    assert "ctx" not in schema["properties"]
    reads = {t.name: t.annotations.read_only_hint for t in listed.tools}
    assert reads["list_runs"] is True and reads["add_tags"] is False
    assert runs.structured_content["total"] == 1
    rid = runs.structured_content["runs"][0]["id"]
    assert missing.is_error
    assert "no run of project 'agents' has an id starting 'nope'" in missing.content[0].text

    pages: list[tuple[str, dict[str, Any]]] = [
        ("get_metric_history", {"run": rid, "key": "train/loss", "project": "agents"})
    ]
    _, first = anyio.run(_session, runs_dir, pages)
    got = first.structured_content
    points = list(got["points"])
    while got["next_cursor"]:
        more = {"run": rid, "key": "train/loss", "project": "agents", "cursor": got["next_cursor"]}
        _, page = anyio.run(_session, runs_dir, [("get_metric_history", more)])
        got = page.structured_content
        points += got["points"]
    assert [p[0] for p in points] == list(range(300))

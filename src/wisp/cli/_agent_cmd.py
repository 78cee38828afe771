"""``wisp mcp``, ``wisp query`` and ``wisp skills``: the commands agents use (docs/agents.md)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from wisp.cli._remote import key_from_file
from wisp.cli._term import EXIT, CliError

__all__ = ["cmd_mcp", "cmd_query", "cmd_skills", "open_api"]


def open_api(args: argparse.Namespace) -> Any:
    """The :class:`wisp.Api` the arguments name: ``--server`` (with its key), ``--dir``, or
    the configured server, else the current folder."""
    from wisp.api import Api

    key = key_from_file(getattr(args, "key_file", None)) or getattr(args, "key", None)
    if args.server:
        return Api(server_url=args.server, api_key=key)
    if args.dir is not None:
        return Api(dir=args.dir)
    return Api(api_key=key)


def cmd_mcp(args: argparse.Namespace) -> int:
    from wisp.mcp import serve_stdio

    limit = args.max_bytes or int(os.environ.get("WISP_MCP_MAX_BYTES") or 64 * 1024)
    if limit < 1024:
        raise CliError(f"--max-bytes must be at least 1024, got {limit}")
    serve_stdio(open_api(args), max_bytes=limit)
    return EXIT["ok"]


def cmd_query(args: argparse.Namespace) -> int:
    from wisp.mcp._query import run_query

    api = open_api(args)
    with api:
        cols, rows = run_query(api, args.project, args.sql, keys=args.keys, filters=args.filter)
    if args.json:
        json.dump({"columns": cols, "rows": rows}, sys.stdout, default=str, separators=(",", ":"))
        sys.stdout.write("\n")
        return EXIT["ok"]
    from wisp.cli._term import table

    print(table(cols, [["" if v is None else str(v) for v in r] for r in rows]))
    return EXIT["ok"]


def cmd_skills(args: argparse.Namespace) -> int:
    from wisp.mcp._skills import install

    written = install(args.agent, args.root)
    if args.json:
        print(json.dumps({"written": written}))
    else:
        for path in written:
            print(f"wrote {path}")
    return EXIT["ok"]

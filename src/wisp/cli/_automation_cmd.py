"""``wisp automation add|ls|pause|resume|test|rm|deliveries`` (docs/automations.md)."""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from wisp.cli._artifact_cmd import _project, server_target
from wisp.cli._term import EXIT, CliError, table

__all__ = ["cmd_automation"]


def _when(t: float | None) -> str:
    return "" if t is None else time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t))


def _print(rows: list[dict[str, Any]], as_json: bool, cols: list[str]) -> int:
    if as_json:
        print(json.dumps(rows, indent=1))
        return EXIT["ok"]
    cells = [[_when(r[c]) if c.endswith("_at") else str(r[c] or "") for c in cols] for r in rows]
    print(table(cols, cells))
    return EXIT["ok"]


def cmd_automation(args: argparse.Namespace) -> int:
    target = server_target(args, True)
    assert target is not None
    from wisp.api import Api

    with Api(*target) as api:
        autos = api.automations
        project = _project(args)
        act = args.automation_command
        if act == "add":
            secret = args.secret or ""
            if args.secret_file:
                from wisp.cli._remote import key_from_file

                secret = key_from_file(args.secret_file) or ""
            row = autos.add(
                project,
                args.when,
                args.webhook or "",
                secret=secret,
                name=args.name,
                email=args.email or "",
            )
            print(row["id"])
            return EXIT["ok"]
        if act == "ls":
            cols = ["id", "name", "when", "webhook", "email", "signed", "paused"]
            return _print(autos.list(project), args.json, cols)
        if act == "deliveries":
            rows = autos.deliveries(project, args.id, args.limit)
            cols = ["id", "event", "run_id", "status", "attempts", "response_code", "last_error"]
            return _print(rows, args.json, [*cols, "created_at"])
        if act == "rm":
            autos.remove(project, args.id)
            print(f"automation {args.id}: removed")
            return EXIT["ok"]
        if act == "test":
            got = autos.test(project, args.id)
            print(f"automation {args.id}: test delivery {got['id']} queued")
            return EXIT["ok"]
        if act in ("pause", "resume"):
            row = getattr(autos, act)(project, args.id)
            print(f"automation {args.id}: {'paused' if row['paused'] else 'active'}")
            return EXIT["ok"]
    raise CliError(f"unknown action {act!r}")


def add_parser(add: Any, remote: argparse.ArgumentParser) -> None:
    """``wisp automation ...`` on the command parser (``add``: its ``add`` helper)."""
    sp = add("automation", "server-side triggers that call a webhook (docs/automations.md)")
    act = sp.add_subparsers(dest="automation_command", metavar="ACTION", required=True)
    a = act.add_parser("add", parents=[remote], help="add one (prints its id)")
    a.add_argument("--when", required=True, help="runs filter, e.g. 'summary.loss > 10'")
    action = a.add_mutually_exclusive_group(required=True)
    action.add_argument("--webhook", help="http(s) URL to POST events to")
    action.add_argument("--email", help="addresses to e-mail events to (the server's SMTP)")
    a.add_argument("--secret", default=None, help="signs payloads (visible in ps: --secret-file)")
    a.add_argument("--secret-file", default=None, help="read the secret from a file ('-': stdin)")
    a.add_argument("--name", default="", help="a name shown in the payload's text")
    a = act.add_parser("ls", parents=[remote], help="list a project's automations")
    a.add_argument("--json", action="store_true", help="machine-readable output")
    for name, text in (
        ("pause", "stop firing (events are not queued while paused)"),
        ("resume", "fire again"),
        ("test", "send a sample payload (event 'test')"),
        ("rm", "remove it (pending deliveries are cancelled)"),
    ):
        act.add_parser(name, parents=[remote], help=text).add_argument("id", metavar="ID")
    a = act.add_parser("deliveries", parents=[remote], help="the delivery log, newest first")
    a.add_argument("id", metavar="ID")
    a.add_argument("--limit", type=int, default=50)
    a.add_argument("--json", action="store_true", help="machine-readable output")

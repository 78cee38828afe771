"""``wisp server users|teams|projects|gc ...`` (administration with database access)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from typing import Any

from wisp.cli._remote import _cell, _function, call_with
from wisp.cli._term import EXIT, CliError, table

__all__ = ["cmd_admin", "read_password"]


def read_password(path: str | None, confirm: bool = True) -> str:
    """A password from a file (``-``: stdin), ``$WISP_PASSWORD`` or a prompt; never argv.

    An empty one (stdin at its end: ``</dev/null``, an empty file) is refused, never taken
    as "no password"."""
    pw = _read_password(path, confirm)
    if not pw:
        where = {None: "standard input", "-": "standard input"}.get(path, path)
        raise CliError(
            f"no password given ({where} was empty)",
            "type one at the prompt, or give it with --password-file FILE or WISP_PASSWORD; "
            "--no-password makes a user with API keys only",
        )
    return pw


def _read_password(path: str | None, confirm: bool) -> str:
    if path == "-":
        return sys.stdin.readline().rstrip("\r\n")
    if path is not None:
        with open(path, encoding="utf-8") as f:
            return f.readline().rstrip("\r\n")
    env = os.environ.get("WISP_PASSWORD")
    if env:
        return env
    if not sys.stdin.isatty():
        return sys.stdin.readline().rstrip("\r\n")
    import getpass

    pw = getpass.getpass("password: ")
    if confirm and getpass.getpass("again: ") != pw:
        raise CliError("the passwords differ", "type the same password twice")
    return pw


def _fn(name: str) -> Callable[..., Any]:
    return _function("wisp.server", name, f"`wisp server {name.replace('_', ' ')}`", "server")


def cmd_admin(args: argparse.Namespace) -> int:
    group = args.keys_group
    db = args.db
    if group == "gc":
        n, size = call_with(
            _fn("media_gc"),
            db=db,
            media_dir=args.media_dir,
            older_than_days=args.older_than_days,
            dry_run=args.dry_run,
        )
        verb = "would delete" if args.dry_run else "deleted"
        args.out.say(f"{verb} {n} unreferenced media and artifact files ({size} bytes)")
        args.out.data(files=n, bytes=size, dry_run=bool(args.dry_run))
        return EXIT["ok"]
    action = getattr(args, f"{group}_action")
    if group == "users":
        if action == "add":
            pw = None if args.no_password else read_password(args.password_file)
            call_with(_fn("users_add"), args.name, password=pw, admin=args.admin, db=db)
            args.out.say(f"added user {args.name}" + (" (site admin)" if args.admin else ""))
            args.out.data(user=args.name, admin=bool(args.admin), password=pw is not None)
        elif action == "ls":
            users = list(call_with(_fn("users_list"), db=db))
            if args.json:
                print(json.dumps({"users": users}))
            else:
                rows = [
                    [
                        u["name"],
                        "yes" if u["is_admin"] else "",
                        _cell(u["created_at"]),
                        _cell(u["disabled_at"]),
                    ]
                    for u in users
                ]
                print(table(["NAME", "ADMIN", "CREATED", "DISABLED"], rows) if rows else "no users")
        elif action == "disable":
            call_with(_fn("users_disable"), args.name, enable=args.enable, db=db)
            args.out.say(f"{'enabled' if args.enable else 'disabled'} {args.name}")
            args.out.data(user=args.name, disabled=not args.enable)
        else:
            call_with(
                _fn("users_reset_password"), args.name, read_password(args.password_file), db=db
            )
            args.out.say(f"password of {args.name} set; their dashboard sessions were ended")
            args.out.data(user=args.name, password=True)
    elif group == "teams":
        if action == "add":
            call_with(_fn("teams_add"), args.name, db=db)
            args.out.say(f"added team {args.name}")
            args.out.data(team=args.name)
        elif action == "ls":
            teams = list(call_with(_fn("teams_list"), db=db))
            if args.json:
                print(json.dumps({"teams": teams}))
            else:
                for t in teams:
                    members = ", ".join(f"{m['user']} ({m['role']})" for m in t["members"])
                    print(f"{t['name']}: {members or '-'}")
        else:
            role = None if args.remove else args.role
            call_with(_fn("teams_member"), args.team, args.user, role, db=db)
            args.out.say(f"{args.user} in {args.team}: {role or 'removed'}")
            args.out.data(team=args.team, user=args.user, role=role)
    else:
        got = call_with(
            _fn("projects_set"), args.name, owner=args.owner, visibility=args.visibility, db=db
        )
        args.out.say(f"project {got['name']} (owner {got['owner']}): {got['visibility']}")
        args.out.data(project=got)
    return EXIT["ok"]

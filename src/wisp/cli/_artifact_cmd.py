"""``wisp artifact put|get|ls|alias``: artifacts from the shell (docs/cli.md)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from wisp.cli._term import EXIT, CliError

__all__ = ["cmd_artifact", "server_target"]


def _client(args: argparse.Namespace, needed: bool) -> Any:
    target = server_target(args, needed)
    if target is None:
        return None
    from wisp.artifacts._client import ArtifactClient

    return ArtifactClient(*target)


def server_target(args: argparse.Namespace, needed: bool) -> tuple[str, str | None] | None:
    """``(server URL, API key)`` from ``--server``/``--key``/``--key-file`` and the settings;
    None when no server is configured and ``needed`` is false (else a CliError)."""
    from wisp._settings import Settings

    s = Settings.resolve()
    url = args.server or s.server_url
    from wisp.cli._remote import key_from_file

    key = key_from_file(getattr(args, "key_file", None)) or args.key
    key = key if key is not None else s.api_key
    if not url or (s.mode == "offline" and not args.server):
        if needed:
            raise CliError(
                "no server configured",
                "pass --server URL or run `wisp login` (or set WISP_SERVER_URL)",
            )
        return None
    return url, key


def _project(args: argparse.Namespace, given: str | None = None) -> str:
    project = given or args.project or os.environ.get("WISP_PROJECT")
    if not project:
        raise CliError("which project?", "pass --project NAME (or set WISP_PROJECT)")
    return str(project)


def cmd_artifact(args: argparse.Namespace) -> int:
    return int({"put": _put, "get": _get, "ls": _ls, "alias": _alias}[args.artifact_command](args))


def _put(args: argparse.Namespace) -> int:
    from wisp.artifacts._api import publish
    from wisp.artifacts._artifact import Artifact

    if not os.path.exists(args.path):
        raise CliError(f"{args.path}: no such file or folder")
    art = Artifact(args.name, args.type, description=args.description)
    if os.path.isdir(args.path):
        art.add_dir(args.path)
    else:
        art.add_file(args.path)
    client = _client(args, needed=False)
    publish(art, _project(args), args.alias, client)
    where = f"{art.version} on {client.server_url}" if client else "the local cache (offline)"
    args.out.say(f"{art.name}: {len(art.files())} files, digest {art.digest}, stored as {where}")
    args.out.data(
        name=art.name,
        version=art.version,
        digest=art.digest,
        files=len(art.files()),
        server=client.server_url if client else None,
    )
    return EXIT["ok"]


def _get(args: argparse.Namespace) -> int:
    from wisp.artifacts._api import use_artifact

    client = _client(args, needed=False)
    art = use_artifact(None, args.ref, client=client, project=_project(args, None))
    root = art.download(args.root)
    d = art.last_download
    args.out.say(
        f"{art.name}:{art.version or art.digest} -> {root} "
        f"({d.get('files', 0)} files, {d.get('from_cache', 0)} from the cache)"
    )
    args.out.data(
        name=art.name,
        version=art.version,
        digest=art.digest,
        root=str(root),
        files=d.get("files", 0),
        from_cache=d.get("from_cache", 0),
    )
    return EXIT["ok"]


def _ls(args: argparse.Namespace) -> int:
    client = _client(args, needed=True)
    rows = client.list(_project(args, args.list_project))
    if args.json:
        json.dump(rows, sys.stdout, indent=2)
        print()
        return EXIT["ok"]
    from wisp._upload._live import human_size
    from wisp.cli._term import table

    print(
        table(
            ["name", "type", "versions", "latest", "size"],
            [
                [r["name"], r["type"], str(r["versions"]), r["latest"] or "", human_size(r["size"])]
                for r in rows
            ],
        )
    )
    return EXIT["ok"]


def _alias(args: argparse.Namespace) -> int:
    from wisp.artifacts._api import parse_ref

    client = _client(args, needed=True)
    project, name, version = parse_ref(args.ref, args.project or os.environ.get("WISP_PROJECT"))
    if not (version.startswith("v") and version[1:].isdigit()):
        raise CliError(f"{args.ref}: expected NAME:vN")
    doc = client.set_alias(project, name, version, args.alias)
    args.out.say(
        f"{project}/{name}:{args.alias} -> {doc['version']} (aliases: {', '.join(doc['aliases'])})"
    )
    args.out.data(project=project, name=name, alias=args.alias, version=doc["version"])
    return EXIT["ok"]

"""``wisp report lint|freeze|export|push|pull|versions|diff|revert|ls|import``: reports from the
shell (docs/reports.md).

Local commands (lint, freeze, export of a file) read runs from ``--dir`` unless ``--server``
(or a configured server with ``--remote``) is given; push, pull and the history commands talk
to the server.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from wisp.cli._term import EXIT, CliError
from wisp.errors import install_hint

__all__ = ["add_parser", "cmd_report"]


def add_parser(sub: Any) -> None:
    """The ``report`` command and its actions, added to the top-level subparsers."""
    sp = sub.add_parser(
        "report",
        help="check, freeze, export, push and pull reports (Markdown with live panels)",
        description="reports: Markdown files with live panels over runs (docs/reports.md)",
    )
    act = sp.add_subparsers(dest="report_command", metavar="ACTION", required=True)
    runs = argparse.ArgumentParser(add_help=False)
    runs.add_argument(
        "--dir",
        default=os.environ.get("WISP_DIR") or ".",
        help="folder of local runs (default: $WISP_DIR or .), unless --server is given",
    )
    remote = argparse.ArgumentParser(add_help=False)
    remote.add_argument("--server", default=None, help="server URL (default: the configured one)")
    remote.add_argument("--key", default=None, help="API key (prefer --key-file or WISP_API_KEY)")
    remote.add_argument("--key-file", default=None, help="read the key from a file ('-': stdin)")
    a = act.add_parser("lint", parents=[runs, remote], help="check run sets, keys and fields")
    a.add_argument("file", metavar="FILE.md")
    a.add_argument("--json", action="store_true", help="machine-readable findings")
    a = act.add_parser("freeze", parents=[runs, remote], help="pin run sets to runs and steps")
    a.add_argument("file", metavar="FILE.md")
    a.add_argument("--again", action="store_true", help="re-select frozen run sets by filter")
    a = act.add_parser("export", parents=[runs, remote], help="one self-contained HTML file")
    a.add_argument("source", metavar="FILE.md|ID", help="a report file, or a server report's id")
    a.add_argument("--project", default=None, help="the report's project (for an ID)")
    a.add_argument(
        "--version", dest="at_version", type=int, default=None, help="a version (default: latest)"
    )
    a.add_argument("--html", required=True, metavar="OUT.html", help="where to write")
    a = act.add_parser("push", parents=[remote], help="upload a new version; prints the id")
    a.add_argument("file", metavar="FILE.md")
    a.add_argument("--project", default=None, help="default: the file's project")
    a.add_argument("--id", default=None, help="a new version of this report (default: a new one)")
    a.add_argument("--base", type=int, default=None, help="refuse if the latest is not this")
    a = act.add_parser("pull", parents=[remote], help="write a server report to a file")
    a.add_argument("id", metavar="ID", help="report id, or project/ID")
    a.add_argument("--project", default=None)
    a.add_argument(
        "--version", dest="at_version", type=int, default=None, help="a version (default: latest)"
    )
    a.add_argument("-o", "--output", default=None, help="file (default: ID.md; '-': stdout)")
    a = act.add_parser("versions", parents=[remote], help="every version: who, when")
    a.add_argument("id", metavar="ID")
    a.add_argument("--project", default=None)
    a.add_argument("--json", action="store_true")
    a = act.add_parser("diff", parents=[remote], help="unified diff between two versions")
    a.add_argument("id", metavar="ID")
    a.add_argument("a", type=int, metavar="A")
    a.add_argument("b", type=int, metavar="B")
    a.add_argument("--project", default=None)
    a = act.add_parser("revert", parents=[remote], help="make an old version the newest")
    a.add_argument("id", metavar="ID")
    a.add_argument("to_version", type=int, metavar="VERSION")
    a.add_argument("--project", default=None)
    a = act.add_parser("ls", parents=[remote], help="the reports of a project")
    a.add_argument("--project", default=None)
    a.add_argument("--json", action="store_true")
    a = act.add_parser("import", help="convert a wandb report spec (JSON) into a report file")
    a.add_argument("spec", metavar="SPEC.json")
    a.add_argument("-o", "--output", required=True, metavar="FILE.md")
    a.add_argument("--project", default=None, help="default: the spec's project")


def _need_yaml() -> None:
    try:
        import yaml  # noqa: F401
    except ImportError:
        raise CliError(
            "reports need PyYAML", install_hint("reports"), EXIT["missing_dependency"]
        ) from None


def _api(args: argparse.Namespace, needs_server: bool) -> Any:
    from wisp._settings import Settings
    from wisp.api import Api
    from wisp.cli._remote import key_from_file

    if not needs_server and getattr(args, "server", None) is None:
        return Api(dir=args.dir)
    s = Settings.resolve()
    url = args.server or s.server_url
    if not url:
        raise CliError("no server configured", "pass --server URL or run `wisp login`")
    key = key_from_file(args.key_file) or args.key or s.api_key
    return Api(server_url=url, api_key=key)


def _project(args: argparse.Namespace, ident: str) -> tuple[str, str]:
    if "/" in ident:
        named, _, rid = ident.rpartition("/")
        return named, rid
    project = args.project or os.environ.get("WISP_PROJECT")
    if not project:
        raise CliError("which project?", "pass --project NAME, or ID as project/ID")
    return str(project), ident


def _load(path: str) -> Any:
    from wisp.reports import Report

    return Report.load(path)


def _lint(args: argparse.Namespace) -> int:
    report = _load(args.file)
    found = report.lint(_api(args, False))
    if args.json:
        rows = [{"level": f.level, "where": f.where, "message": f.message} for f in found]
        print(json.dumps(rows, indent=2))
    else:
        for f in found:
            print(f"{args.file}: {f}")
        errors = sum(f.level == "error" for f in found)
        print(f"{args.file}: {errors} errors, {len(found) - errors} warnings", file=sys.stderr)
    return EXIT["failed"] if any(f.level == "error" for f in found) else EXIT["ok"]


def _freeze(args: argparse.Namespace) -> int:
    report = _load(args.file)
    for line in report.freeze(_api(args, False), again=args.again) or ["already frozen"]:
        print(f"{args.file}: {line}")
    report.save(args.file)
    return EXIT["ok"]


def _export(args: argparse.Namespace) -> int:
    if os.path.exists(args.source) or args.source.endswith(".md"):
        report = _load(args.source)
        api = _api(args, False)
    else:
        from wisp.reports._client import get

        api = _api(args, True)
        project, rid = _project(args, args.source)
        report = get(api, f"{project}/{rid}", args.at_version).report
    print(report.export_html(args.html, api))
    return EXIT["ok"]


def _push(args: argparse.Namespace) -> int:
    from wisp.reports._client import push

    report = _load(args.file)
    project = args.project or report.project
    if not project:
        raise CliError("which project?", "pass --project NAME or set project in the file")
    ref = push(_api(args, True), project, report.markdown, args.id, args.base)
    print(ref.id)
    print(f"{project}/{ref.id}: version {ref.version}", file=sys.stderr)
    return EXIT["ok"]


def _pull(args: argparse.Namespace) -> int:
    from wisp.reports._client import get

    project, rid = _project(args, args.id)
    ref = get(_api(args, True), f"{project}/{rid}", args.at_version)
    out = args.output or f"{rid}.md"
    if out == "-":
        sys.stdout.write(ref.markdown)
        return EXIT["ok"]
    with open(out, "w", encoding="utf-8", newline="") as f:
        f.write(ref.markdown)
    print(f"{out}: version {ref.version} of {project}/{rid}", file=sys.stderr)
    return EXIT["ok"]


def _history(args: argparse.Namespace) -> int:
    from wisp.reports._client import ReportRef, reports_of

    api = _api(args, True)
    if args.report_command == "ls":
        project = args.project or os.environ.get("WISP_PROJECT")
        if not project:
            raise CliError("which project?", "pass --project NAME")
        rows = reports_of(api, project)
        if args.json:
            print(json.dumps(rows, indent=2))
        for r in [] if args.json else rows:
            print(f"{r['id']}  v{r['version']}  {r.get('author') or '-'}  {r.get('title', '')}")
        return EXIT["ok"]
    project, rid = _project(args, args.id)
    ref = ReportRef(api, project, {"id": rid, "version": 0})
    if args.report_command == "versions":
        rows = ref.versions()
        if args.json:
            print(json.dumps(rows, indent=2))
        else:
            import time

            for v in rows:
                when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(v["created_at"]))
                print(f"v{v['version']}  {when}  {v.get('author') or '-'}  {v.get('title', '')}")
    elif args.report_command == "diff":
        sys.stdout.write(ref.diff(args.a, args.b))
    else:
        new = ref.revert(args.to_version)
        print(f"{project}/{rid}: version {new.version} holds version {args.to_version}'s text")
    return EXIT["ok"]


def _import(args: argparse.Namespace) -> int:
    from wisp.reports._wandb import from_wandb

    with open(args.spec, encoding="utf-8") as f:
        text = f.read()
    report, unmapped = from_wandb(text, args.project)
    report.save(args.output)
    print(f"{args.output}: {len(report.panels)} panels, {len(report.runsets)} run sets")
    for line in unmapped:
        print(f"not imported: {line}", file=sys.stderr)
    return EXIT["ok"]


def cmd_report(args: argparse.Namespace) -> int:
    _need_yaml()
    action = args.report_command
    handlers = {"lint": _lint, "freeze": _freeze, "export": _export, "push": _push}
    handlers |= {"pull": _pull, "import": _import}
    return int(handlers.get(action, _history)(args))

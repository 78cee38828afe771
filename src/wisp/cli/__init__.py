"""The ``wisp`` command.  ``main()`` builds an argparse parser (stdlib only) and
imports the module behind a subcommand only when that subcommand runs, so
``wisp --help`` stays instant.  Exit codes are documented in docs/cli.md.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

__all__ = ["main"]

_EPILOG = """exit codes: 0 ok, 1 failed (e.g. doctor found a failure, server unreachable),
2 usage error (bad arguments, unknown run, port in use), 3 optional dependency missing,
130 interrupted.
docs: docs/cli.md"""


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="wisp",
        description="wisp: an experiment tracker for ML training.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--version", action="store_true", help="print the version and exit")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    def add(name: str, help: str) -> argparse.ArgumentParser:  # noqa: A002
        sp = sub.add_parser(name, help=help, description=help)
        return sp

    def dir_opt(sp: argparse.ArgumentParser) -> None:
        sp.add_argument(
            "--dir",
            default=os.environ.get("WISP_DIR") or ".",
            help="directory holding the wisp/ run folder (default: $WISP_DIR or .)",
        )

    sp = add("ui", "open the dashboard on the runs of a directory (local server)")
    sp.add_argument(
        "folder",
        nargs="?",
        metavar="DIR",
        default=None,
        help="show only this folder's runs (a database of its own); without it, the dashboard "
        "keeps the runs of every folder it followed",
    )
    dir_opt(sp)
    sp.add_argument("--host", default="127.0.0.1")
    sp.add_argument("--port", type=int, default=8642, help="0 picks a free port (default 8642)")
    sp.add_argument(
        "--data",
        default=None,
        help="where the dashboard keeps its database and media "
        "(default: $WISP_DATA_DIR or ~/.local/share/wisp)",
    )
    sp.add_argument("--open", action="store_true", help="also open the dashboard in a browser")

    sp = add("server", "run the wisp server, or manage its keys, users, teams and projects")
    server_opts = argparse.ArgumentParser(add_help=False)
    for target in (server_opts, sp):
        target.add_argument(
            "--db",
            default=os.environ.get("WISP_DATABASE_URL"),
            help="database URL (default: $WISP_DATABASE_URL)",
        )
        media = os.environ.get("WISP_MEDIA_URL")
        target.add_argument(
            "--media-url",
            "--media-dir",
            dest="media_dir",
            default=media,
            help="where media and artifact bytes are stored: a directory, or "
            "s3://bucket/prefix (AWS_* variables; default: $WISP_MEDIA_URL, else a directory "
            "beside the database)",
        )
    sp.add_argument("--host", default="127.0.0.1")
    sp.add_argument("--port", type=int, default=8080)
    sp.add_argument("--no-auth", action="store_true", help="serve reads without an API key")
    sp.add_argument("--heartbeat-timeout", type=float, default=None)
    sp.add_argument("--workers", type=int, default=None)
    sp.add_argument(
        "--allowed-host",
        action="append",
        default=None,
        help="a Host name clients may use (repeatable; '*': any; default on loopback: loopback)",
    )
    sp.add_argument("--tls-cert", default=None, help="PEM certificate: serve HTTPS")
    sp.add_argument("--tls-key", default=None, help="the certificate's private key")
    sp.add_argument("--sso-header", default=None, help="trusted user header, e.g. X-Forwarded-User")
    sp.add_argument(
        "--trusted-proxy",
        action="append",
        default=None,
        help="address or network of a reverse proxy whose X-Forwarded-For (and --sso-header) "
        "is believed (repeatable)",
    )
    sp.add_argument(
        "--media-quota", type=int, default=None, help="media bytes per user (0: no cap)"
    )
    sp.add_argument("--max-connections", type=int, default=None, help="connection cap (503 beyond)")
    sp.add_argument(
        "--max-client-connections",
        type=int,
        default=None,
        help="open connections per client address (default 32, 503 beyond; 0: no cap)",
    )
    sp.add_argument("--header-timeout", type=float, default=None, help="seconds to send headers")
    sp.add_argument("--body-timeout", type=float, default=None, help="seconds a body may pause")
    sp.add_argument("--key-rate", type=float, default=None, help="requests/s per key (0: off)")
    sp.add_argument(
        "--ingest-concurrency",
        type=int,
        default=None,
        help="record batches applied at once per process (default 2; 0: no cap)",
    )
    sp.add_argument(
        "--ingest-processes",
        type=int,
        default=None,
        help="processes applying record batches, per server process (default: 2 on "
        "PostgreSQL, 0 on SQLite: in the server process)",
    )
    sp.add_argument(
        "--no-deliver",
        action="store_true",
        help="detect automation events but send no webhooks (another process delivers them)",
    )
    sp.add_argument(
        "--secrets-key-file",
        default=None,
        help="Fernet key encrypting webhook secrets (default <data dir>/secrets.key, made 0600)",
    )
    sp.add_argument(
        "--smtp-url",
        default=None,
        help="SMTP server of e-mail automations: smtp[s]://[user@]host[:port] "
        "(password in $WISP_SERVER_SMTP_PASSWORD)",
    )
    sp.add_argument("--smtp-from", default=None, help="sender address of automation e-mails")
    sp.add_argument("--smtp-starttls", action="store_true", help="STARTTLS on the SMTP link")
    ksub = sp.add_subparsers(dest="keys_group", metavar="keys")
    kp = ksub.add_parser("keys", help="create, list or revoke API keys")
    kact = kp.add_subparsers(dest="keys_action", metavar="ACTION", required=True)
    kc = kact.add_parser("create", help="create a key (printed once)", parents=[server_opts])
    kc.add_argument("--name", default=None)
    kc.add_argument("--scope", choices=("read", "write", "admin"), default="write")
    kc.add_argument("--user", default=None, help="the key's user (default: the admin user)")
    kc.add_argument("--expires-days", type=float, default=None, help="expire after N days")
    kc.add_argument("--json", action="store_true")
    kl = kact.add_parser("list", help="list keys", parents=[server_opts])
    kl.add_argument("--json", action="store_true")
    kr = kact.add_parser("revoke", help="revoke a key", parents=[server_opts])
    kr.add_argument("key_id")
    pw_help = "read the password from this file ('-': stdin; default: $WISP_PASSWORD or a prompt)"
    up = ksub.add_parser("users", help="add, list, disable users, reset passwords")
    uact = up.add_subparsers(dest="users_action", metavar="ACTION", required=True)
    ua = uact.add_parser("add", help="add a user", parents=[server_opts])
    ua.add_argument("name")
    ua.add_argument("--admin", action="store_true", help="a site admin")
    ua.add_argument("--password-file", default=None, help=pw_help)
    ua.add_argument("--no-password", action="store_true", help="API keys only, no dashboard")
    uact.add_parser("ls", help="list users", parents=[server_opts]).add_argument(
        "--json", action="store_true"
    )
    ud = uact.add_parser("disable", help="disable a user", parents=[server_opts])
    ud.add_argument("name")
    ud.add_argument("--enable", action="store_true", help="enable them again")
    ur = uact.add_parser("reset-password", help="set a user's password", parents=[server_opts])
    ur.add_argument("name")
    ur.add_argument("--password-file", default=None, help=pw_help)
    tp = ksub.add_parser("teams", help="add teams, list them, set members' roles")
    tact = tp.add_subparsers(dest="teams_action", metavar="ACTION", required=True)
    tact.add_parser("add", help="add a team", parents=[server_opts]).add_argument("name")
    tact.add_parser("ls", help="list teams and members", parents=[server_opts]).add_argument(
        "--json", action="store_true"
    )
    tm = tact.add_parser("member", help="set a member's role (or --remove)", parents=[server_opts])
    tm.add_argument("team")
    tm.add_argument("user")
    tm.add_argument("--role", choices=("viewer", "member", "admin"), default="member")
    tm.add_argument("--remove", action="store_true")
    gp = ksub.add_parser(
        "gc", help="delete media and artifact files nothing refers to", parents=[server_opts]
    )
    gp.add_argument("--older-than-days", type=float, default=1.0, help="grace period (default 1)")
    gp.add_argument("--dry-run", action="store_true", help="only count what would go")
    pp = ksub.add_parser("projects", help="set a project's owner and visibility")
    pact = pp.add_subparsers(dest="projects_action", metavar="ACTION", required=True)
    ps = pact.add_parser("set", help="create or change a project", parents=[server_opts])
    ps.add_argument("name")
    ps.add_argument("--owner", default=None, help="a user or team name")
    ps.add_argument("--visibility", choices=("private", "team", "public-read"), default=None)

    sp = add("login", "save a server URL and API key to the config file (mode 0600)")
    sp.add_argument("url", help="the server, e.g. http://localhost:8080")
    sp.add_argument(
        "--key", default=None, help="API key (visible in ps: prefer --key-file, stdin or env)"
    )
    sp.add_argument("--key-file", default=None, help="read the key from a file ('-': stdin)")
    sp.add_argument("--no-verify", action="store_true", help="save without contacting the server")

    sp = add("sync", "upload local runs to the server")
    sp.add_argument(
        "paths",
        nargs="*",
        metavar="RUN",
        help="run directories, or run ids (or prefixes) or names under --dir",
    )
    sp.add_argument("--all", action="store_true", help="every run under --dir")
    sp.add_argument("--follow", action="store_true", help="keep uploading while runs grow")
    sp.add_argument(
        "--retry-rejected",
        action="store_true",
        help="send records the server refused (set aside in rejected.jsonl) again",
    )
    sp.add_argument(
        "--recheck",
        action="store_true",
        help="ask the server what it holds of runs already sent, and send what it lacks "
        "(after restoring its database from a backup, or starting it anew)",
    )
    sp.add_argument(
        "--give-up-after",
        type=float,
        default=None,
        metavar="SECONDS",
        help="give a run up after this long without progress (server unreachable; default 60)",
    )
    sp.add_argument("--server", default=None, help="server URL (default: the configured one)")
    sp.add_argument(
        "--key", default=None, help="API key (visible in ps: prefer --key-file, stdin or env)"
    )
    sp.add_argument("--key-file", default=None, help="read the key from a file ('-': stdin)")
    dir_opt(sp)

    sp = add("ls", "list local runs")
    dir_opt(sp)
    sp.add_argument("--project", default=None, help="only runs of this project")
    sp.add_argument("--keys", default=None, help="summary keys to show, comma-separated")
    sp.add_argument("--json", action="store_true", help="machine-readable output")

    sp = add("show", "show a run: metadata, config, summary, files")
    sp.add_argument("run", metavar="RUN", help="run id (or prefix), name or directory")
    dir_opt(sp)
    sp.add_argument("--json", action="store_true", help="machine-readable output")

    sp = add("export", "export a run's history, or a whole project's (--project)")
    sp.add_argument("run", metavar="RUN", nargs="?", help="run id (or prefix), name or directory")
    sp.add_argument(
        "--project",
        default=None,
        help="export every run of this project (server from settings/--server, else --dir)",
    )
    sp.add_argument("--server", default=None, help="server URL for --project (default: login)")
    sp.add_argument("--filter", default=None, help="only runs matching this filter (--project)")
    sp.add_argument("--format", choices=("csv", "jsonl", "parquet"), default="csv")
    sp.add_argument(
        "-o",
        "--output",
        default=None,
        help="file to write ('-' for stdout; default: <run name>.<format>)",
    )
    sp.add_argument("--keys", default=None, help="only these metrics, comma-separated")
    sp.add_argument(
        "--media",
        default=None,
        metavar="DIR",
        help="write the run's media files (audio, video, images, ...) into DIR instead",
    )
    dir_opt(sp)

    sp = add("gc", "delete local run directories that are fully synced")
    dir_opt(sp)
    sp.add_argument("--dry-run", action="store_true", help="only list what would be deleted")
    sp.add_argument("-v", "--verbose", action="store_true", help="also say why runs are kept")

    sp = add("import", "convert wandb, TensorBoard, MLflow, Neptune or Aim runs into wisp runs")
    sp.add_argument("source", choices=("wandb", "tensorboard", "mlflow", "neptune", "aim"))
    sp.add_argument(
        "paths",
        nargs="+",
        metavar="PATH",
        help="wandb run files/dirs, TensorBoard logdirs, an mlruns folder or MLflow server "
        "URL, Neptune exporter output folders, or Aim repositories (the folder holding .aim)",
    )
    sp.add_argument("--project", default=None, help="project of the imported runs (TensorBoard)")
    sp.add_argument(
        "--experiment",
        action="append",
        default=None,
        help="MLflow: only this experiment (name or id; repeatable)",
    )
    sp.add_argument(
        "--no-files", action="store_true", help="MLflow/Neptune: do not copy artifacts/files"
    )
    dir_opt(sp)

    sp = add("sweep", "create a sweep from a sweep file (prints its id), or control one")
    sp.add_argument("config", nargs="?", metavar="SWEEP_FILE", help="YAML or JSON sweep file")
    sp.add_argument("--project", default=None, help="project of the sweep's runs")
    for action in ("stop", "cancel", "pause", "resume", "status"):
        sp.add_argument(f"--{action}", metavar="SWEEP_ID", default=None)
    sp.add_argument("--json", action="store_true", help="machine-readable --status")
    dir_opt(sp)

    sp = add("agent", "run trials of a sweep, one process each")
    sp.add_argument("sweep_id", metavar="SWEEP_ID")
    sp.add_argument("--count", type=int, default=None, help="run at most N trials")
    dir_opt(sp)

    sp = add("artifact", "put, get, list and alias artifact versions (docs/artifacts.md)")
    art = sp.add_subparsers(dest="artifact_command", metavar="ACTION", required=True)
    remote = argparse.ArgumentParser(add_help=False)
    remote.add_argument("--server", default=None, help="server URL (default: the configured one)")
    remote.add_argument(
        "--key", default=None, help="API key (visible in ps: prefer --key-file or WISP_API_KEY)"
    )
    remote.add_argument("--key-file", default=None, help="read the key from a file ('-': stdin)")
    remote.add_argument("--project", default=None, help="project (default: $WISP_PROJECT)")
    a = art.add_parser("put", parents=[remote], help="log a file or folder as a new version")
    a.add_argument("path", metavar="PATH")
    a.add_argument("--name", required=True)
    a.add_argument("--type", required=True)
    a.add_argument("--alias", action="append", default=[], help="alias (repeatable)")
    a.add_argument("--description", default=None)
    a = art.add_parser("get", parents=[remote], help="download NAME:ALIAS or NAME:vN")
    a.add_argument("ref", metavar="NAME:ALIAS")
    a.add_argument("--root", default=None, help="folder to write into")
    a = art.add_parser("ls", parents=[remote], help="list the artifacts of a project")
    a.add_argument("list_project", nargs="?", metavar="PROJECT", default=None)
    a.add_argument("--json", action="store_true", help="machine-readable output")
    a = art.add_parser("alias", parents=[remote], help="point ALIAS at NAME:vN")
    a.add_argument("ref", metavar="NAME:vN")
    a.add_argument("alias", metavar="ALIAS")

    def source(sp: argparse.ArgumentParser) -> None:
        sp.add_argument(
            "--dir",
            default=None,
            help="read runs from this folder (default: the configured server, else .)",
        )
        sp.add_argument("--server", default=None, help="server URL (default: the configured one)")
        sp.add_argument("--key", default=None, help="API key (prefer --key-file or WISP_API_KEY)")
        sp.add_argument("--key-file", default=None, help="read the key from a file ('-': stdin)")

    sp = add("mcp", "serve the agent tools over MCP on stdin/stdout (docs/agents.md)")
    source(sp)
    sp.add_argument(
        "--max-bytes",
        type=int,
        default=None,
        help="largest tool result before it is paged (default $WISP_MCP_MAX_BYTES or 65536)",
    )
    sp = add("query", "run read-only SQL over a project's runs and metrics (DuckDB)")
    sp.add_argument("--project", required=True, help="the project whose runs make the tables")
    sp.add_argument("--sql", required=True, help="SQL over the tables runs, history, points")
    sp.add_argument("--filter", default=None, help="only runs matching this filter")
    sp.add_argument("--keys", default=None, help="metrics to load, comma-separated (default all)")
    sp.add_argument("--json", action="store_true", help="machine-readable output")
    source(sp)
    sp = add("skills", "install a skill file that teaches a coding agent to use wisp")
    sp.add_argument(
        "agent",
        nargs="?",
        choices=("claude", "codex", "cursor", "all"),
        default="all",
        help="which agent's layout (default: all)",
    )
    sp.add_argument("--root", default=".", help="the project folder to write into (default .)")
    sp.add_argument("--json", action="store_true", help="machine-readable output")
    from wisp.cli._report_cmd import add_parser as add_report

    add_report(sub)
    from wisp.cli._automation_cmd import add_parser as automation_parser

    automation_parser(add, remote)

    sp = add("doctor", "check this environment for common tracking problems")
    dir_opt(sp)
    sp.add_argument("--json", action="store_true", help="machine-readable output")
    _json_everywhere(p)
    return p


def _json_everywhere(parser: argparse.ArgumentParser) -> None:
    """Give every command (and sub-command) ``--json``: those that had none print their
    answer through :class:`wisp.cli._term.Output` (one document, ``exit_code`` included)."""
    for action in parser._actions:  # argparse keeps sub-parsers only here
        if not isinstance(action, argparse._SubParsersAction):
            continue
        for sub in dict.fromkeys(action.choices.values()):
            if sub.prog == "wisp mcp":
                continue  # speaks JSON-RPC on stdout: nothing else may be printed there
            native = "--json" in sub._option_string_actions
            if not native:
                sub.add_argument(
                    "--json", action="store_true", help="print one JSON document (errors too)"
                )
            sub.set_defaults(output_json=not native)
            _json_everywhere(sub)


_COMMANDS = {
    "ui": ("wisp.cli._remote", "cmd_ui"),
    "server": ("wisp.cli._remote", "cmd_server"),
    "login": ("wisp.cli._remote", "cmd_login"),
    "sync": ("wisp.cli._remote", "cmd_sync"),
    "ls": ("wisp.cli._runs", "cmd_ls"),
    "show": ("wisp.cli._runs", "cmd_show"),
    "export": ("wisp.cli._runs", "cmd_export"),
    "gc": ("wisp.cli._runs", "cmd_gc"),
    "import": ("wisp.cli._import_cmd", "cmd_import"),
    "doctor": ("wisp.cli._doctor_cmd", "cmd_doctor"),
    "sweep": ("wisp.cli._sweep_cmd", "cmd_sweep"),
    "agent": ("wisp.cli._sweep_cmd", "cmd_agent"),
    "artifact": ("wisp.cli._artifact_cmd", "cmd_artifact"),
    "mcp": ("wisp.cli._agent_cmd", "cmd_mcp"),
    "query": ("wisp.cli._agent_cmd", "cmd_query"),
    "skills": ("wisp.cli._agent_cmd", "cmd_skills"),
    "report": ("wisp.cli._report_cmd", "cmd_report"),
    "automation": ("wisp.cli._automation_cmd", "cmd_automation"),
}


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``wisp`` command; returns the exit code."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.version:
        from wisp import __version__

        print(f"wisp {__version__}")
        return 0
    if not args.command:
        parser.print_help()
        return 2
    import importlib

    from wisp.cli._term import EXIT, CliError, Output, color
    from wisp.errors import UsageError, WispError

    as_json = bool(getattr(args, "json", False))
    args.out = out = Output(as_json)
    module, name = _COMMANDS[args.command]
    try:
        code: int = getattr(importlib.import_module(module), name)(args)
    except CliError as exc:
        return _error(str(exc), exc.hint, color, exc.code, as_json)
    except UsageError as exc:
        hint = "see `wisp " + args.command + " --help`"
        return _error(str(exc), hint, color, EXIT["usage"], as_json)
    except WispError as exc:
        hint = "`wisp doctor` checks the environment"
        return _error(str(exc), hint, color, EXIT["failed"], as_json)
    except KeyboardInterrupt:
        print(file=sys.stderr)
        return EXIT["interrupted"]
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT["ok"]
    except OSError as exc:
        where = f" ({exc.filename})" if exc.filename else ""
        hint = "check the path and permissions"
        if isinstance(exc, ConnectionError) and not exc.filename:
            hint = "check the address, and that it is running"
        return _error(f"{exc.strerror or exc}{where}", hint, color, EXIT["failed"], as_json)
    if getattr(args, "output_json", False):
        out.finish(code)
    return code


def _error(message: str, hint: str | None, color: object, code: int, as_json: bool) -> int:
    paint = color  # the lazily imported wisp.cli._term.color
    text = f"wisp: error: {message}"
    print(paint(text, "red", sys.stderr), file=sys.stderr)  # type: ignore[operator]
    if hint:
        print(f"hint: {hint}", file=sys.stderr)
    if as_json:
        import json

        error = {"message": message, "hint": hint}
        print(json.dumps({"error": error, "exit_code": code}), flush=True)
    return code

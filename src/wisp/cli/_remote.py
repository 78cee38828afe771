"""Commands that talk to other parts of wisp: ``ui``, ``server``, ``keys``, ``login``, ``sync``.

Each imports its part lazily (the server, the dashboard, the uploader), so
``wisp --help`` and ``wisp ls`` never pay for them.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from typing import Any

from wisp.cli._parts import call_with
from wisp.cli._parts import cell as _cell
from wisp.cli._parts import function as _function
from wisp.cli._term import EXIT, CliError, log_lines, table

__all__ = ["cmd_keys", "cmd_login", "cmd_server", "cmd_sync", "cmd_ui", "http_get"]


def cmd_ui(args: argparse.Namespace) -> int:
    ui = _function("wisp._ui", "ui", "`wisp ui`", "server")
    only = args.folder is not None  # `wisp ui DIR`: that folder's runs alone, its own database
    folder = args.folder if only else args.dir
    if only and not os.path.isdir(folder):
        raise CliError(f"no folder {folder!r}", "wisp ui DIR shows the runs under DIR/wisp")
    if args.data:
        data = args.data
    elif only:
        data = _function("wisp._ui", "folder_data_dir", "`wisp ui`", "server")(folder)
    else:
        data = _function("wisp._ui", "data_dir", "`wisp ui`", "server")()
    roots = _function("wisp._ui", "ui_roots", "`wisp ui`", "server")(folder, only)

    def ready(url: str) -> None:
        args.out.say(f"wisp ui: follows the runs under {' and '.join(roots)}", err=True)
        shared = (
            ""
            if only or args.data
            else (
                "; it keeps the runs of every folder `wisp ui` followed before "
                "(`wisp ui DIR` shows one folder's runs only)"
            )
        )
        args.out.say(f"wisp ui: database and media in {os.path.abspath(data)}{shared}", err=True)
        args.out.say(f"wisp dashboard: {url}  (Ctrl-C stops it)")
        args.out.event("ready", url=url, data=os.path.abspath(data))

    call_with(
        ui,
        dir=folder,
        only=only,
        host=args.host,
        port=args.port,
        open_browser=args.open,
        data=data,
        ready=ready,
        progress=sys.stderr,
        first_budget=2.0,  # print the URL early; the import goes on while the dashboard runs
    )
    return EXIT["ok"]


def _startup_failed(exc: SystemExit) -> CliError:
    """uvicorn's exit when the server could not start (code 3, its STARTUP_FAILURE): the
    cause is logged above; our exit codes reserve 3 for a missing dependency."""
    return CliError(
        f"the server did not start (uvicorn exit {exc.code}; its message is above)",
        "a port in use? pick another with --port",
        EXIT["failed"],
    )


def cmd_server(args: argparse.Namespace) -> int:
    if getattr(args, "keys_action", None):
        return cmd_keys(args)
    if getattr(args, "keys_group", None) in ("users", "teams", "projects", "gc"):
        from wisp.cli._server_admin import cmd_admin

        return cmd_admin(args)
    serve = _function("wisp.server", "serve", "`wisp server`", "server")
    from wisp.server.serving import START_LOG

    try:
        with log_lines(START_LOG, args.out):
            _serve(serve, args)
    except SystemExit as exc:
        if exc.code in (0, None):
            raise
        raise _startup_failed(exc) from None
    return EXIT["ok"]


def _serve(serve: Callable[..., Any], args: argparse.Namespace) -> None:
    scheme = "https" if args.tls_cert else "http"
    args.out.event("starting", url=f"{scheme}://{args.host}:{args.port}", db=args.db)
    call_with(
        serve,
        db=args.db,
        media_dir=args.media_dir,
        host=args.host,
        port=args.port,
        workers=args.workers,
        no_auth=args.no_auth,
        heartbeat_timeout=args.heartbeat_timeout,
        allowed_hosts=args.allowed_host,
        tls_cert=args.tls_cert,
        tls_key=args.tls_key,
        sso_header=args.sso_header,
        trusted_proxies=args.trusted_proxy,
        media_quota_bytes=args.media_quota,
        max_connections=args.max_connections,
        max_client_connections=args.max_client_connections,
        header_timeout=args.header_timeout,
        body_timeout=args.body_timeout,
        key_rate=args.key_rate,
        ingest_concurrency=args.ingest_concurrency,
        ingest_processes=args.ingest_processes,
        no_deliver=args.no_deliver,
        secrets_key_file=args.secrets_key_file,
        smtp_url=args.smtp_url,
        smtp_from=args.smtp_from,
        smtp_starttls=args.smtp_starttls,
    )


def cmd_keys(args: argparse.Namespace) -> int:
    action = args.keys_action
    what = f"`wisp server keys {action}`"
    if action == "create":
        fn = _function("wisp.server", "keys_create", what, "server")
        made = call_with(
            fn,
            scope=args.scope,
            name=args.name,
            db=args.db,
            user=args.user,
            expires_days=args.expires_days,
        )
        key_id, secret = made if isinstance(made, tuple) else ("", made)
        if args.json:
            print(json.dumps({"id": key_id, "key": secret, "scope": args.scope}))
        else:
            print(secret)
            print(
                f"key id {key_id} ({args.scope}); store the key now, it is shown only once: "
                "`wisp login URL --key KEY`",
                file=sys.stderr,
            )
    elif action == "list":
        fn = _function("wisp.server", "keys_list", what, "server")
        keys = list(call_with(fn, db=args.db))
        if args.json:
            print(json.dumps({"keys": keys}, default=str))
        else:
            cols: tuple[str, ...] = ("id", "user", "scope", "name", "created_at")
            cols = (*cols, "expires_at", "last_used_at", "revoked_at")
            heads = ["ID", "USER", "SCOPE", "NAME", "CREATED", "EXPIRES", "LAST USED", "REVOKED"]
            rows = [[_cell(k.get(c)) for c in cols] for k in keys]
            print(table(heads, rows) if rows else "no keys")
    else:
        fn = _function("wisp.server", "keys_revoke", what, "server")
        if call_with(fn, args.key_id, db=args.db) is False:
            raise CliError(
                f"no active key {args.key_id!r}", "`wisp server keys list` shows key ids"
            )
        args.out.say(f"revoked {args.key_id}")
        args.out.data(revoked=args.key_id)
    return EXIT["ok"]


def http_get(url: str, key: str | None, timeout: float) -> tuple[int, dict[str, str], bytes]:
    """GET ``url``; (status, headers, body).  Raises OSError when nothing answers."""
    import urllib.error
    import urllib.request

    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {key}"} if key else {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, dict(resp.headers), resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers or {}), exc.read()
    except urllib.error.URLError as exc:
        raise OSError(str(exc.reason)) from None


def _check_url(url: str) -> str:
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise CliError(
            f"server URL must look like http://host:port, got {url!r}",
            "e.g. `wisp login http://localhost:8080`",
        )
    return url.rstrip("/")


def key_from_file(path: str | None) -> str | None:
    """An API key from a file's first line (``-``: stdin), so it never shows in ``ps``."""
    if path is None:
        return None
    if path == "-":
        return sys.stdin.readline().strip() or None
    with open(path, encoding="utf-8") as f:
        return f.readline().strip() or None


def cmd_login(args: argparse.Namespace) -> int:
    from wisp._userconfig import config_path, write_config

    url = _check_url(args.url)
    key = key_from_file(args.key_file) or args.key or os.environ.get("WISP_API_KEY")
    if not key and not sys.stdin.isatty():
        key = sys.stdin.readline().strip()  # `... | wisp login URL`: not in argv or ps
        if not key:
            raise CliError("no API key given", "pipe it in, --key-file F, or set WISP_API_KEY")
    if not key:
        import getpass

        key = getpass.getpass("API key: ").strip()
        if not key:
            raise CliError("no API key given", "create one with `wisp server keys create`")
    if not args.no_verify:
        try:
            status, _headers, _ = http_get(f"{url}/api/v1/projects", key, timeout=5.0)
        except OSError as exc:
            raise CliError(
                f"cannot reach {url}: {exc}",
                "is the server running? (--no-verify saves anyway)",
                EXIT["failed"],
            ) from None
        if status in (401, 403):
            raise CliError(
                f"{url} refused the key (HTTP {status})",
                "check the key with `wisp server keys list`",
                EXIT["failed"],
            )
        if status >= 400:
            raise CliError(
                f"{url} answered HTTP {status}; is it a wisp server?",
                "check the URL",
                EXIT["failed"],
            )
    path = write_config({"server_url": url, "api_key": key}, config_path())
    args.out.say(f"logged in to {url}; saved to {path} (mode 0600)")
    args.out.data(server_url=url, config=str(path), verified=not args.no_verify)
    return EXIT["ok"]


def cmd_sync(args: argparse.Namespace) -> int:
    import wisp

    if not args.paths and not args.all:
        raise CliError(
            "nothing to sync", "give run directories, or --all for every run under --dir"
        )
    fn = getattr(wisp, "sync", None)
    if not callable(fn):
        fn = _function("wisp._upload._sync", "sync", "`wisp sync`", "server")
    from wisp.cli._runs import resolve_run

    # a path, or a run id, id prefix or name under --dir, as `show` and `export` take
    paths = list(dict.fromkeys(resolve_run(p, args.dir) for p in args.paths))
    if args.all:
        from wisp.cli._runs import find_runs

        paths += [p for p in find_runs(args.dir) if p not in paths]
        if not paths:
            args.out.say(f"no runs under {args.dir}")
            args.out.data(synced=0, up_to_date=0, rejected=0, runs=[])
            return EXIT["ok"]
    started = time.monotonic()
    results = call_with(
        fn,
        paths,
        all=False,
        follow=args.follow,
        server_url=args.server,
        api_key=key_from_file(args.key_file) or args.key,
        progress=sys.stderr.isatty(),
        retry_rejected=args.retry_rejected or None,
        recheck=args.recheck or None,
        give_up_after=args.give_up_after,
    )
    uploaded = skipped = rejected = 0
    later = []  # skipped and not on the server: a run whose process has only just started it
    for r in results or ():
        rejected += getattr(r, "rejected", 0)
        if getattr(r, "skipped", None) and not getattr(r, "done", True):
            later.append(r.run_dir)
            args.out.say(f"{r.run_dir}: skipped, {r.skipped}")
        elif getattr(r, "skipped", None):
            skipped += 1
        else:
            uploaded += 1
    took = time.monotonic() - started
    args.out.say(
        f"synced {uploaded} run(s), {skipped} already up to date"
        + (f", {len(later)} not started yet" if later else "")
        + f", in {took:.1f}s"
    )
    args.out.data(synced=uploaded, up_to_date=skipped, rejected=rejected, seconds=round(took, 3))
    args.out.data(not_started=later)
    args.out.data(runs=paths)
    if rejected:
        args.out.say(
            f"{rejected} record(s) refused by the server are set aside (rejected.jsonl in "
            "their run directories); `wisp sync --retry-rejected` sends them again"
        )
    if args.all:  # offline sweeps under --dir go along with their runs (docs/sweeps.md)
        from wisp.sweeps._sync import push_local_sweeps

        if swept := push_local_sweeps(args.dir, args.server, args.key):
            args.out.say(f"synced {swept} sweep(s)")
        args.out.data(sweeps=swept)
    return EXIT["ok"]

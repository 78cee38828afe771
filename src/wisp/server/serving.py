"""``wisp server`` and ``wisp server keys ...``: functions the CLI wires to commands.

Start-up lines (where the database and media are, a warning when serving without TLS) are
records of the ``wisp.server.start`` logger, :data:`START_LOG`: ``wisp server`` shows them
on stderr, a program calling :func:`serve` sees them as it configures logging.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import logging
import os
import sys
from typing import Any

from wisp.errors import UsageError, install_hint
from wisp.server.settings import (
    LOOPBACK_NAMES,
    ServerSettings,
    display_db_url,
    is_loopback,
    port_problem,
)

__all__ = ["START_LOG", "keys_create", "keys_list", "keys_revoke", "serve"]

_ENV = "WISP_SERVER_SETTINGS_JSON"
#: the logger of the server's start-up lines
START_LOG = "wisp.server.start"
log = logging.getLogger(START_LOG)
#: settings given on the command line that must not be negative
_NON_NEGATIVE = frozenset({"max_client_connections", "ingest_concurrency", "ingest_processes"})


def serve(
    db: str | None = None,
    media_dir: str | None = None,
    host: str = "127.0.0.1",
    port: int = 8080,
    workers: int = 1,
    no_auth: bool = False,
    heartbeat_timeout: float = 300.0,
    log_level: str = "info",
    *,
    allowed_hosts: list[str] | None = None,
    tls_cert: str | None = None,
    tls_key: str | None = None,
    sso_header: str | None = None,
    trusted_proxies: list[str] | None = None,
    media_quota_bytes: int | None = None,
    max_connections: int | None = None,
    max_client_connections: int | None = None,
    header_timeout: float | None = None,
    body_timeout: float | None = None,
    key_rate: float | None = None,
    ingest_concurrency: int | None = None,
    ingest_processes: int | None = None,
    no_deliver: bool = False,
    secrets_key_file: str | None = None,
    smtp_url: str | None = None,
    smtp_from: str | None = None,
    smtp_starttls: bool = False,
) -> None:
    """Run the tracking server (blocks).  ``--no-auth`` is refused on a non-loopback host.

    On a loopback host the ``Host`` header must name a loopback address unless
    ``allowed_hosts`` says otherwise (DNS rebinding); binding another address without TLS
    logs a warning (keys and passwords would cross the network in clear).
    """
    loopback = is_loopback(host)
    if no_auth and not loopback:
        raise UsageError(
            f"--no-auth is only allowed on a loopback host (127.0.0.1, ::1, localhost), "
            f"not {host!r}: create a read key with `wisp server keys create --scope read`"
        )
    if workers < 1:
        raise UsageError(f"--workers must be >= 1, got {workers}")
    if heartbeat_timeout <= 0:
        raise UsageError(f"--heartbeat-timeout must be > 0, got {heartbeat_timeout}")
    if sso_header and not trusted_proxies:
        raise UsageError("--sso-header needs --trusted-proxy (the proxies allowed to set it)")
    try:
        import uvicorn
    except ImportError:
        raise UsageError(f"the wisp server needs its extra: {install_hint('server')}") from None
    if allowed_hosts is None and loopback:
        allowed_hosts = list(LOOPBACK_NAMES)
    settings = ServerSettings(
        db=db or "",
        media_dir=media_dir or "",
        host=host,
        port=port,
        workers=workers,
        no_auth=no_auth,
        heartbeat_timeout=heartbeat_timeout,
        allowed_hosts=allowed_hosts,
        tls_cert=tls_cert or "",
        tls_key=tls_key or "",
        sso_header=sso_header or "",
        trusted_proxies=list(trusted_proxies or []),
    )
    given = {
        "media_quota_bytes": media_quota_bytes,
        "max_connections": max_connections,
        "max_client_connections": max_client_connections,
        "header_timeout": header_timeout,
        "body_timeout": body_timeout,
        "key_rate": key_rate,
        "ingest_concurrency": ingest_concurrency,
        "ingest_processes": ingest_processes,
    }
    for name, value in given.items():
        if value is None:
            continue  # the settings' default
        if name in _NON_NEGATIVE and value < 0:
            raise UsageError(f"--{name.replace('_', '-')} must be >= 0, got {value}")
        setattr(settings, name, value)
    settings.deliver = not no_deliver
    settings.secrets_key_file = secrets_key_file or ""
    settings.smtp_url = smtp_url or ""
    settings.smtp_from = smtp_from or ""
    settings.smtp_starttls = smtp_starttls
    settings = settings.resolved()
    from wisp.server.store.dialect import dialect_for_url

    if ingest_processes is None:  # the database's default (wisp.server.ingesting)
        settings.ingest_processes = dialect_for_url(settings.db).ingest_processes
    settings.trusted_proxy_networks()  # a malformed address fails here, not per request
    problem = port_problem(host, port)
    if problem is not None:
        raise UsageError(f"cannot start the server: {problem}; pick another with --port")
    if not loopback and not settings.tls:
        log.warning(
            "wisp server: WARNING: serving %s:%s without TLS: API keys, passwords and "
            "session cookies cross the network in clear. Use --tls-cert/--tls-key, or bind "
            "127.0.0.1 behind a TLS reverse proxy (docs/server.md).",
            host,
            port,
        )
    from wisp.server.blobs import open_blob_store
    from wisp.server.conn import uvicorn_options
    from wisp.server.store.db import make_engine, migrate

    open_blob_store(settings.media_dir).check()  # an unreachable bucket fails here, clearly
    engine = make_engine(settings.db)
    migrate(engine)
    engine.dispose()
    settings.migrate = False
    media = settings.media_dir
    where = media if "://" in media else os.path.abspath(media)  # s3://bucket/prefix as given
    log.info("wisp server: database %s", display_db_url(settings.db))
    log.info("wisp server: media files in %s", where)
    opts = uvicorn_options(settings)
    # the GIL changes hands every 1 ms (Python's default: 5 ms), so a read waiting behind
    # ingest on a worker thread gets it sooner (wisp.server.readfirst)
    sys.setswitchinterval(0.001)
    if workers == 1:
        from wisp.server.app import create_app

        uvicorn.run(create_app(settings), host=host, port=port, log_level=log_level, **opts)
        return
    # Worker processes are spawned: uvicorn pickles its options, so the app and the
    # connection-guarding protocol are named by import path and rebuilt in each worker
    # from the settings passed in the environment.
    os.environ[_ENV] = json.dumps(dataclasses.asdict(settings))
    opts["http"] = "wisp.server.serving:worker_protocol"
    uvicorn.run(
        "wisp.server.serving:app_from_env",
        factory=True,
        host=host,
        port=port,
        workers=workers,
        log_level=log_level,
        **opts,
    )


@functools.cache
def _env_settings() -> ServerSettings:
    return ServerSettings(**json.loads(os.environ[_ENV]))


def app_from_env() -> Any:
    """App factory for uvicorn worker processes (settings passed in the environment)."""
    from wisp.server.app import create_app

    return create_app(_env_settings())


@functools.cache
def _worker_protocol_class() -> Any:
    from wisp.server.conn import guarded_protocol

    settings = _env_settings()
    return guarded_protocol(
        settings.header_timeout,
        settings.body_timeout,
        settings.max_client_connections,
        settings.trusted_proxies,
    )


def worker_protocol(*args: Any, **kwargs: Any) -> Any:
    """uvicorn's ``http=`` protocol in a worker process: the guarded h11 protocol built
    from the settings in the environment (a class made in ``serve()`` cannot be pickled)."""
    return _worker_protocol_class()(*args, **kwargs)


def _store(db: str | None) -> Any:
    from wisp.server.store.facade import open_store

    return open_store(ServerSettings(db=db or "").resolved().db)


def keys_create(
    scope: str = "write",
    name: str = "",
    db: str | None = None,
    user: str | None = None,
    expires_days: float | None = None,
) -> tuple[str, str]:
    """Create an API key of ``user`` (default: the site admin ``admin``, created if
    missing); returns ``(key_id, secret)``.  The secret is shown only this once."""
    if scope not in ("read", "write", "admin"):
        raise UsageError(f"--scope must be read, write or admin, got {scope!r}")
    store = _store(db)
    try:
        uid = None
        if user is not None:
            got = store.users.user(user)
            if got is None:
                raise UsageError(f"no user {user!r}: `wisp server users add {user}` first")
            if scope == "admin" and not got["is_admin"]:
                raise UsageError(f"{user!r} is not a site admin: admin keys are for admins")
            uid = int(got["id"])
        expires = store.clock() + expires_days * 86400 if expires_days else None
        result: tuple[str, str] = store.create_key(scope, name, uid, expires)
        return result
    finally:
        store.close()


def keys_list(db: str | None = None) -> list[dict[str, Any]]:
    """All keys (id, scope, name, created_at, revoked_at), never the secrets."""
    store = _store(db)
    try:
        result: list[dict[str, Any]] = store.list_keys()
        return result
    finally:
        store.close()


def keys_revoke(key_id: str, db: str | None = None) -> bool:
    """Revoke a key by id; False if there was no such active key."""
    store = _store(db)
    try:
        return bool(store.revoke_key(key_id))
    finally:
        store.close()

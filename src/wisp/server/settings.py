"""Server settings: one dataclass, filled by ``serve()`` from its arguments."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "LOOPBACK_NAMES",
    "ServerSettings",
    "default_data_dir",
    "display_db_url",
    "is_loopback",
    "port_problem",
]

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]", "::1")


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    import ipaddress

    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def port_problem(host: str, port: int) -> str | None:
    """Why ``host:port`` cannot be served (in use, not allowed), or None when it can.

    Binds and closes a socket as uvicorn would (``SO_REUSEADDR``), so a busy port is said
    in one line before any server starts; port 0 (any free port) is always fine.
    """
    if port == 0:
        return None
    if not 0 < port < 65536:
        return f"port must be 0-65535, got {port}"
    import errno
    import socket

    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        return f"cannot resolve host {host!r} ({exc})"
    family, kind, proto, _name, addr = infos[0]
    with socket.socket(family, kind, proto) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(addr)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                return f"port {port} on {host} is already in use (another wisp server or ui?)"
            return f"cannot listen on {host}:{port} ({exc.strerror or exc})"
    return None


def display_db_url(url: str) -> str:
    """A database URL to print: its password, if any, replaced by ``***``."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urlunsplit(parts._replace(netloc=netloc))


def default_data_dir() -> Path:
    """``$WISP_SERVER_DIR``, else ``$XDG_DATA_HOME/wisp/server`` (``~/.local/share``)."""
    env = os.environ.get("WISP_SERVER_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(Path.home(), ".local", "share")
    return Path(base) / "wisp" / "server"


MAX_FILE_BYTES = 1 << 40  # one artifact file: 1 TiB


@dataclass
class ServerSettings:
    """Everything the app factory needs; defaults suit a single-user local server."""

    db: str = ""
    media_dir: str = ""
    host: str = "127.0.0.1"
    port: int = 8080
    workers: int = 1
    no_auth: bool = False
    heartbeat_timeout: float = 300.0
    max_body_bytes: int = 64 * 1024 * 1024
    max_media_bytes: int = 1024 * 1024 * 1024
    media_quota_bytes: int = 0  # per user, 0: unlimited
    allowed_hosts: list[str] | None = None  # None: any (serve() and wisp ui fill in loopback)
    sso_header: str = ""  # e.g. X-Forwarded-User; trusted only from trusted_proxies
    # reverse proxies whose X-Forwarded-For (and sso_header) are believed (_clientaddr)
    trusted_proxies: list[str] = field(default_factory=list)
    tls_cert: str = ""  # PEM certificate (chain): serve HTTPS
    tls_key: str = ""  # its private key (if not in the certificate file)
    header_timeout: float = 10.0  # seconds to send complete request headers
    body_timeout: float = 30.0  # seconds a request body may pause
    keep_alive_timeout: int = 5  # seconds an idle keep-alive connection stays open
    key_rate: float = 1000.0  # requests a second per API key (bursts of twice that; 0: off)
    # record batches a process applies at once (0: no cap); the rest wait their turn, so
    # reads are not starved of the GIL by many uploaders (docs/server.md, "Scale")
    ingest_concurrency: int = 2
    # processes of each server process that apply record batches (0: its own threads);
    # `wisp server` defaults to the database's Dialect.ingest_processes (wisp.server.ingesting)
    ingest_processes: int = 0
    max_connections: int = 1000  # concurrent connections + requests; 503 beyond (0: no cap)
    # open connections per client address and process; 503 beyond (0: no cap; trusted
    # proxies are exempt)
    max_client_connections: int = 32
    # automations (docs/automations.md): seconds between the worker's passes; whether this
    # process sends webhooks (False: it only detects; another process delivers)
    automation_interval: float = 1.0
    deliver: bool = True
    # webhook secrets are Fernet-encrypted with this key file (default <data dir>/secrets.key;
    # $WISP_SERVER_SECRETS_KEY wins); e-mail actions go through this SMTP server
    # (smtp[s]://[user@]host[:port], password in $WISP_SERVER_SMTP_PASSWORD), sent as smtp_from
    secrets_key_file: str = ""
    smtp_url: str = ""
    smtp_from: str = ""
    smtp_starttls: bool = False
    static_dir: str = field(default_factory=lambda: str(Path(__file__).with_name("static")))
    migrate: bool = True
    mcp_max_bytes: int = 64 * 1024  # the largest /mcp tool result before it is paged
    # the folders `wisp ui` imports runs from: ``GET /projects`` names them, so the dashboard's
    # landing page says where its runs come from (empty on `wisp server`)
    ui_folders: list[str] = field(default_factory=list)

    @property
    def tls(self) -> bool:
        return bool(self.tls_cert)

    def host_allow_list(self) -> set[str] | None:
        """Host names (lower case, no port) requests may name; None for any."""
        if self.allowed_hosts is None or "*" in self.allowed_hosts:
            return None
        return {h.lower() for h in self.allowed_hosts}

    def trusted_proxy_networks(self) -> list[Any]:
        import ipaddress

        return [ipaddress.ip_network(p, strict=False) for p in self.trusted_proxies]

    def resolved(self) -> ServerSettings:
        """A copy with the database URL and media directory defaults filled in."""
        base = default_data_dir()
        db = self.db or f"sqlite:///{base / 'wisp.db'}"
        media = self.media_dir or str(base / "media")
        keys = self.secrets_key_file or str(base / "secrets.key")
        return ServerSettings(
            **{**self.__dict__, "db": db, "media_dir": media, "secrets_key_file": keys}
        )

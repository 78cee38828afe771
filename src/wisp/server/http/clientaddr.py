"""Who is calling: the client address, from forwarded headers only through trusted proxies.

uvicorn's own ``proxy_headers`` is off (it trusts ``X-Forwarded-For`` from loopback by default,
so anyone on the host, or behind a proxy that passes the header through, could pick their
address). The peer address is the client unless the peer is one of ``--trusted-proxy``: then
it is the rightmost address of ``X-Forwarded-For`` that is not a trusted proxy itself (the
one the last trusted hop saw). Sign-in limits, the audit log and the per-client connection
cap all use this one answer.
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import MutableMapping, Sequence
from typing import Any

__all__ = [
    "RedactSecrets",
    "client_address",
    "is_trusted",
    "redact_secrets",
    "request_client",
    "scope_client",
]

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def is_trusted(addr: str, proxies: Sequence[Network]) -> bool:
    """Whether ``addr`` (an IP address string) is in one of ``proxies``."""
    if not proxies:
        return False
    try:
        ip = ipaddress.ip_address(addr)
    except ValueError:
        return False
    return any(ip in net for net in proxies)


def client_address(peer: str, forwarded_for: str | None, proxies: Sequence[Network]) -> str:
    """The client's address: ``peer``, or from a trusted proxy the last untrusted hop of
    ``X-Forwarded-For`` (malformed entries end the walk: the proxy's own peer is kept)."""
    if not forwarded_for or not is_trusted(peer, proxies):
        return peer
    addr = peer
    for hop in reversed(forwarded_for.split(",")):
        hop = hop.strip()
        if hop.startswith("[") and "]" in hop:  # [v6]:port
            hop = hop[1 : hop.index("]")]
        elif hop.count(":") == 1:  # v4:port
            hop = hop.split(":", 1)[0]
        try:
            ipaddress.ip_address(hop)
        except ValueError:
            break
        addr = hop
        if not is_trusted(hop, proxies):
            break
    return addr


def scope_client(scope: MutableMapping[str, Any], proxies: Sequence[Network]) -> str:
    """:func:`client_address` of an ASGI scope, computed once per request."""
    got = scope.get("wisp_client")
    if isinstance(got, str):
        return got
    peer = (scope.get("client") or ("", 0))[0]
    xff = None
    for k, v in scope.get("headers", ()):
        if k == b"x-forwarded-for":
            xff = v.decode("latin-1") if xff is None else f"{xff},{v.decode('latin-1')}"
    addr = client_address(peer, xff, proxies)
    scope["wisp_client"] = addr
    return addr


def request_client(request: Any) -> str:
    """The client's address of a Starlette request (set by the auth middleware; the peer
    in apps without it)."""
    got = request.scope.get("wisp_client")
    if isinstance(got, str):
        return got
    return str(request.client.host) if request.client else ""


_SECRET_NAMES = {"key", "api_key", "apikey", "token", "access_token", "password", "secret"}


def redact_secrets(target: str) -> str:
    """A request target for a log line: values of credential-like query parameters and
    anything shaped like a wisp API key replaced by ``[redacted]``."""
    import re

    target = re.sub(r"wisp_(?:r|w|a)_[0-9a-f]+_[A-Za-z0-9_\-]+", "[redacted]", target)
    path, sep, query = target.partition("?")
    if not sep:
        return target
    parts = []
    for pair in query.split("&"):
        name, eq, _value = pair.partition("=")
        parts.append(f"{name}=[redacted]" if eq and name.lower() in _SECRET_NAMES else pair)
    return f"{path}?{'&'.join(parts)}"


class RedactSecrets(logging.Filter):
    """A filter for uvicorn's access log: the request target through :func:`redact_secrets`
    (an API key put in a URL is never written to the log)."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and len(args) >= 3 and isinstance(args[2], str):
            record.args = (*args[:2], redact_secrets(args[2]), *args[3:])
        return True

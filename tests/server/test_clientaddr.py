"""The client's address is believed from X-Forwarded-For only through trusted proxies, and secrets
in request targets never reach a log line."""

from __future__ import annotations

import ipaddress
import logging

import pytest

from wisp.server.http.clientaddr import RedactSecrets, client_address, redact_secrets

NETS = [ipaddress.ip_network("10.0.0.0/24"), ipaddress.ip_network("::1/128")]


@pytest.mark.parametrize(
    ("peer", "xff", "want"),
    [
        ("192.0.2.9", "203.0.113.5", "192.0.2.9"),  # untrusted peer: the header is ignored
        ("10.0.0.5", None, "10.0.0.5"),  # a proxy without the header: itself
        ("10.0.0.5", "203.0.113.5", "203.0.113.5"),
        ("10.0.0.5", "1.1.1.1, 203.0.113.5", "203.0.113.5"),  # the client can prepend lies
        ("10.0.0.5", "203.0.113.5, 10.0.0.7", "203.0.113.5"),  # two trusted hops
        ("10.0.0.5", "garbage", "10.0.0.5"),
        ("10.0.0.5", "203.0.113.5:4711", "203.0.113.5"),
        ("::1", "[2001:db8::1]:80", "2001:db8::1"),
    ],
)
def test_client_address(peer: str, xff: str | None, want: str) -> None:
    """The last hop that is not a trusted proxy; the peer itself when it is not trusted."""
    assert client_address(peer, xff, NETS) == want


def test_secrets_are_redacted_from_log_lines() -> None:
    """Credential-like query values and anything shaped like a wisp key become [redacted]."""
    key = "wisp_w_0123abcd_Zm9vYmFy-_x"
    assert redact_secrets(f"/api/v1/projects?api_key={key}&q=1") == (
        "/api/v1/projects?api_key=[redacted]&q=1"
    )
    assert redact_secrets("/x?token=abc&password=p") == "/x?token=[redacted]&password=[redacted]"
    assert key not in redact_secrets(f"/api/v1/x/{key}?filter={key}")
    rec = logging.LogRecord(
        "uvicorn.access", 20, "", 0, "%s %s %s", ("1.2.3.4", "GET", f"/?key={key}"), None
    )
    assert RedactSecrets().filter(rec) and key not in rec.getMessage()

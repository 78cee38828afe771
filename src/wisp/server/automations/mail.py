"""The e-mail action of automations: the payload's ``text`` and its JSON, through the SMTP server
the admin configures (``wisp server --smtp-url smtp[s]://[user@]host[:port] --smtp-from ADDR
[--smtp-starttls]``, the password in ``$WISP_SERVER_SMTP_PASSWORD``).  Python's ``smtplib``;
a delivery that the server accepted (no exception) is ``sent`` with response code 250.
"""

from __future__ import annotations

import json
import os
import smtplib
from email.message import EmailMessage
from urllib.parse import unquote, urlsplit

__all__ = ["PASSWORD_ENV", "check_smtp_url", "send_mail"]

PASSWORD_ENV = "WISP_SERVER_SMTP_PASSWORD"


def check_smtp_url(url: str) -> str | None:
    """Why ``url`` is not an SMTP server URL, or None."""
    parts = urlsplit(url)
    if parts.scheme not in ("smtp", "smtps") or not parts.hostname:
        return f"expected smtp://host[:port] or smtps://host[:port], got {url!r}"
    try:
        parts.port  # noqa: B018 (a bad port raises)
    except ValueError as e:
        return str(e)
    return None


def message(sender: str, to: str, body: bytes, delivery_id: int, event: str) -> EmailMessage:
    """The e-mail of one delivery: subject from the automation, the text and the JSON."""
    payload = json.loads(body)
    msg = EmailMessage()
    msg["From"] = sender
    msg["To"] = to
    msg["Subject"] = f"wisp: {payload['automation']['name']}"[:200]
    msg["X-Wisp-Delivery"] = str(delivery_id)
    msg["X-Wisp-Event"] = event
    msg.set_content(payload["text"] + "\n\n" + json.dumps(payload, indent=2, sort_keys=True))
    return msg


def send_mail(
    url: str,
    sender: str,
    starttls: bool,
    to: str,
    body: bytes,
    delivery_id: int,
    event: str,
    timeout: float,
) -> int:
    """Send one delivery by e-mail; 250 (raises ``OSError``/``smtplib.SMTPException``)."""
    if not url:
        raise OSError("no SMTP server configured (wisp server --smtp-url)")
    parts = urlsplit(url)
    host = parts.hostname or ""
    ssl = parts.scheme == "smtps"
    port = parts.port or (465 if ssl else 25)
    msg = message(sender or f"wisp@{host}", to, body, delivery_id, event)
    cls = smtplib.SMTP_SSL if ssl else smtplib.SMTP
    with cls(host, port, timeout=timeout) as smtp:
        if starttls and not ssl:
            smtp.starttls()
        if parts.username:
            smtp.login(unquote(parts.username), os.environ.get(PASSWORD_ENV, ""))
        smtp.send_message(msg)
    return 250

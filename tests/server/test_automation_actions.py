"""Automation secrets and actions on real servers (SQLite and PostgreSQL): secrets are stored
Fernet-encrypted under a 0600 key file and still sign; plain secrets of an older server are
encrypted at startup; the e-mail action reaches a loopback SMTP server (aiosmtpd) once."""

from __future__ import annotations

import json
import stat
import time
from collections.abc import Iterator
from email import message_from_bytes
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, text

from tests.server.test_automations import (
    SECRET,
    Receiver,
    add,
    call,
    put_run,
    summary,
    wait_for,
)
from wisp.testing import Server, free_port


@pytest.fixture
def rx() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.close()


def stored(db_url: str, sql: str) -> list[Any]:
    engine = create_engine(db_url)
    try:
        with engine.begin() as conn:
            res = conn.execute(text(sql))
            return list(res) if res.returns_rows else []
    finally:
        engine.dispose()


def test_secrets_are_stored_encrypted_and_still_sign(
    db_url: str, tmp_path: Path, rx: Receiver
) -> None:
    """The database holds a Fernet token, not the secret; the key file is made 0600 in the
    server's data dir; the webhook still gets a valid signature; answers never show it."""
    with Server(tmp_path / "srv", db=db_url, key_scope="admin") as srv:
        auto = add(srv, "summary.loss > 10", rx.url)
        put_run(srv, "r1")
        summary(srv, "r1", {"loss": 11}, 0)
        wait_for(lambda: rx.got)
        assert rx.events()[0]["automation"]["id"] == auto["id"]  # signature checked
        assert SECRET not in json.dumps(call(srv, "GET", "/projects/p/automations"))
    ((plain, token),) = stored(db_url, "SELECT secret, secret_enc FROM automations")
    assert plain is None and token.startswith("gAAAA") and SECRET not in token
    key = tmp_path / "srv" / "secrets.key"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600


def test_plain_secrets_of_an_older_server_are_encrypted_at_startup(
    db_url: str, tmp_path: Path, rx: Receiver
) -> None:
    """A plain secret in the table (as the server before 0016 stored it) is encrypted when
    the server starts, and deliveries keep signing with it."""
    srv = Server(tmp_path / "srv", db=db_url, key_scope="admin")
    with srv:
        auto = add(srv, "summary.loss > 10", rx.url)
    stored(db_url, f"UPDATE automations SET secret = '{SECRET}', secret_enc = NULL")
    with srv.start():
        wait_for(lambda: stored(db_url, "SELECT 1 FROM automations WHERE secret IS NULL"))
        put_run(srv, "r1")
        summary(srv, "r1", {"loss": 11}, 0)
        wait_for(lambda: rx.got)
        assert rx.events()[0]["automation"]["id"] == auto["id"]
        srv.stop()
    ((plain, token),) = stored(db_url, "SELECT secret, secret_enc FROM automations")
    assert plain is None and token


class Mailbox:
    """A loopback SMTP server (aiosmtpd) that keeps every message."""

    def __init__(self) -> None:
        from aiosmtpd.controller import Controller

        self.got: list[tuple[list[str], bytes]] = []
        outer = self

        class Handler:
            async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
                outer.got.append((list(envelope.rcpt_tos), bytes(envelope.content)))
                return "250 OK"

        self.port = free_port()
        self.controller = Controller(Handler(), hostname="127.0.0.1", port=self.port)
        self.controller.start()

    def close(self) -> None:
        self.controller.stop()


def test_the_email_action_sends_through_the_configured_smtp_server(
    db_url: str, tmp_path: Path
) -> None:
    """An automation with ``email`` instead of a webhook (added with ``wisp.Api``) mails the
    event once to its recipients through ``--smtp-url``; without an SMTP server such an
    automation is a 422."""
    box = Mailbox()
    smtp = ["--smtp-url", f"smtp://127.0.0.1:{box.port}", "--smtp-from", "wisp@example.com"]
    try:
        with Server(tmp_path / "srv", db=db_url, key_scope="admin", args=smtp) as srv:
            import wisp

            with wisp.Api(srv.url, srv.key) as api:
                auto = api.automations.add(
                    "p", "summary.loss > 10", email="a@example.com, b@example.com", name="too high"
                )
            body = {"when": "summary.loss > 10", "email": "a@example.com"}
            assert (auto["email"], auto["webhook"]) == ("a@example.com, b@example.com", None)
            put_run(srv, "r1")
            summary(srv, "r1", {"loss": 11}, 0)
            wait_for(lambda: box.got)
            time.sleep(2.5)
            ((rcpt, raw),) = box.got
            assert sorted(rcpt) == ["a@example.com", "b@example.com"]
            msg = message_from_bytes(raw)
            assert msg["Subject"] == "wisp: too high" and msg["From"] == "wisp@example.com"
            assert "summary.loss > 10" in msg.get_payload()
            log = call(srv, "GET", f"/projects/p/automations/{auto['id']}/deliveries")
            assert [(d["status"], d["response_code"]) for d in log["deliveries"]] == [("sent", 250)]
        with Server(tmp_path / "bare", db=db_url, key=srv.key) as bare:
            import urllib.error

            with pytest.raises(urllib.error.HTTPError) as e:
                call(bare, "POST", "/projects/p/automations", body)
            assert e.value.code == 422 and "SMTP" in str(e.value.__notes__)
    finally:
        box.close()


def test_online_alerts_are_delivered_by_the_server_once(
    db_url: str, tmp_path: Path, rx: Receiver
) -> None:
    """``wisp.alert()`` in an online run reaches the webhook of the project's alert automation
    once, signed, through the server's delivery log; an INFO alert does not match
    ``alert.level = ERROR``; the process itself posts nothing to its ``alert_webhook``."""
    import os
    import subprocess
    import sys

    direct = Receiver()
    try:
        with Server(tmp_path / "srv", db=db_url, key_scope="admin") as srv:
            auto = add(srv, "alert.level = ERROR", rx.url)
            script = (
                "import wisp\n"
                "run = wisp.init(project='p', id='train')\n"
                "run.log({'loss': 1.0})\n"
                "wisp.alert('diverged', 'loss is NaN', level='ERROR')\n"
                "wisp.alert('fyi', 'epoch done', level='INFO')\n"
                "run.finish()\n"
            )
            env = {
                **os.environ,
                "WISP_SERVER_URL": srv.url,
                "WISP_API_KEY": srv.key,
                "WISP_MODE": "online",
                "WISP_ALERT_WEBHOOK": direct.url,
                "WISP_DIR": str(tmp_path / "client"),
            }
            subprocess.run([sys.executable, "-c", script], env=env, cwd=tmp_path, check=True)
            wait_for(lambda: rx.got)
            time.sleep(2.5)
            (event,) = rx.events()
            assert (event["event"], event["run"]["id"]) == ("alert", "train")
            assert (event["alert"]["title"], event["alert"]["level"]) == ("diverged", "ERROR")
            assert event["text"].endswith("[ERROR] diverged: loss is NaN")
            log = call(srv, "GET", f"/projects/p/automations/{auto['id']}/deliveries")
            assert [(d["event"], d["status"]) for d in log["deliveries"]] == [("alert", "sent")]
        assert direct.got == []
    finally:
        direct.close()


def test_the_sealer_keeps_one_key_and_refuses_tokens_of_another(tmp_path: Path) -> None:
    """The key file is made once (0600) and reused; ``$WISP_SERVER_SECRETS_KEY`` wins over it;
    a token sealed with another key is a ``SecretError`` that names where the key comes from."""
    from cryptography.fernet import Fernet

    from wisp.server.automations.secrets import Sealer, SecretError

    path = tmp_path / "data" / "secrets.key"
    token = Sealer(path).seal("s3cret")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert Sealer(path).open(token) == "s3cret"  # a new process: the same key
    other = Sealer(path, key=Fernet.generate_key().decode())
    with pytest.raises(SecretError, match="cannot be decrypted") as e:
        other.open(token)
    assert str(path) in str(e.value)

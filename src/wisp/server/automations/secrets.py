"""Webhook secrets encrypted at rest: Fernet (``cryptography``, the ``server-secrets`` extra).

The key is ``$WISP_SERVER_SECRETS_KEY`` (a Fernet key: 32 url-safe base64 bytes), else the file
``--secrets-key-file`` (default ``<server data dir>/secrets.key``), created with mode 0600 on
first use.  Every process that delivers for one database needs the same key: give them the same
file or variable.  ``automations.secret_enc`` holds the token; ``secret`` (plain) only holds
what a server wrote before it could encrypt, and :func:`encrypt_plain` moves those at startup.
Nothing here is home-made cryptography: Fernet is AES-128-CBC with HMAC-SHA256, authenticated.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

from sqlalchemy import select, update

from wisp.errors import install_hint
from wisp.server.http.problem import Problem
from wisp.server.store import schema as S

__all__ = ["KEY_ENV", "Sealer", "SecretError", "encrypt_plain"]

KEY_ENV = "WISP_SERVER_SECRETS_KEY"
EXTRA = "server-secrets"
log = logging.getLogger("wisp.server.automations")


class SecretError(ValueError):
    """A stored secret cannot be decrypted with this server's key."""


def _read_or_create(path: Path, new_key: bytes) -> bytes:
    """The key in ``path``; a new one written there (mode 0600) if there is none yet."""
    try:
        return path.read_bytes().strip()
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # another process made it first
        return path.read_bytes().strip()
    with os.fdopen(fd, "wb") as f:
        f.write(new_key + b"\n")
    return new_key


class Sealer:
    """Encrypts and decrypts secrets with the server's key (loaded on first use)."""

    def __init__(self, key_file: str | Path, key: str | None = None) -> None:
        self.key_file = Path(key_file)
        self.key = key if key is not None else os.environ.get(KEY_ENV) or None
        self._fernet: Any = None

    @staticmethod
    def available() -> bool:
        try:
            import cryptography.fernet  # noqa: F401
        except ImportError:
            return False
        return True

    def fernet(self) -> Any:
        if self._fernet is None:
            try:
                from cryptography.fernet import Fernet
            except ImportError:
                raise SecretError(
                    f"the server stores secrets encrypted and needs {install_hint('server', EXTRA)}"
                ) from None
            if self.key:
                key = self.key.encode()
            else:
                key = _read_or_create(self.key_file, Fernet.generate_key())
            self._fernet = Fernet(key)
        return self._fernet

    def seal(self, secret: str) -> str:
        """The token of ``secret`` (a 422 naming ``secret`` without ``cryptography``)."""
        try:
            fernet = self.fernet()
        except SecretError as e:
            raise Problem(422, "invalid", f"secret: {e}", "secret") from None
        return str(fernet.encrypt(secret.encode()).decode())

    def open(self, token: str) -> str:
        """The secret of a token (``SecretError`` when this server cannot decrypt it)."""
        fernet = self.fernet()
        from cryptography.fernet import InvalidToken

        try:
            return str(fernet.decrypt(token.encode()).decode())
        except InvalidToken:
            raise SecretError(
                "the secret cannot be decrypted with this server's key "
                f"(${KEY_ENV} or {self.key_file})"
            ) from None


def encrypt_plain(store: Any, sealer: Sealer) -> int:
    """Encrypt the plain secrets a server stored before (into ``secret_enc``); how many.
    Without ``cryptography`` they stay plain, with a warning."""
    a = S.automations.c
    with store.db.read() as conn:
        rows = conn.execute(select(a.id, a.secret).where(a.secret.is_not(None))).all()
    if not rows:
        return 0
    if not sealer.available():
        log.warning(
            "automations: %d webhook secret(s) stored in plain: %s encrypts them",
            len(rows),
            install_hint("server", EXTRA),
        )
        return 0
    with store.db.tx() as conn:
        for aid, plain in rows:
            conn.execute(
                update(S.automations)
                .where(a.id == aid, a.secret == plain)
                .values(secret_enc=sealer.seal(plain), secret=None)
            )
    return len(rows)

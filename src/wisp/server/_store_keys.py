"""API keys: created with a scope, stored as sha256 hashes of the secret, revocable."""

from __future__ import annotations

import hashlib
import secrets
from typing import Any

from sqlalchemy import select, update

from wisp.server import _schema as S
from wisp.server._db import Db

__all__ = ["SCOPES", "KeyStore", "hash_key"]

SCOPES = ("read", "write", "admin")


def hash_key(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()


class KeyStore:
    def __init__(self, db: Db) -> None:
        self.db = db

    def create(self, scope: str, name: str = "") -> tuple[str, str]:
        """A new API key ``(key_id, secret)``; only the sha256 of the secret is stored."""
        if scope not in SCOPES:
            raise ValueError(f"scope must be one of {', '.join(SCOPES)}, got {scope!r}")
        key_id = secrets.token_hex(6)
        secret = f"wisp_{scope[0]}_{key_id}_{secrets.token_urlsafe(32)}"
        row = {
            "id": key_id,
            "key_hash": hash_key(secret),
            "scope": scope,
            "name": name,
            "created_at": self.db.clock(),
            "revoked_at": None,
        }
        with self.db.tx() as conn:
            conn.execute(S.api_keys.insert(), [row])
        return key_id, secret

    def all_keys(self) -> list[dict[str, Any]]:
        k = S.api_keys.c
        q = select(k.id, k.scope, k.name, k.created_at, k.revoked_at).order_by(k.created_at)
        with self.db.read() as conn:
            return [dict(r._mapping) for r in conn.execute(q)]

    def revoke(self, key_id: str) -> bool:
        k = S.api_keys.c
        with self.db.tx() as conn:
            res = conn.execute(
                update(S.api_keys)
                .where(k.id == key_id, k.revoked_at.is_(None))
                .values(revoked_at=self.db.clock())
            )
            return bool(res.rowcount)

    def scope(self, secret: str) -> str | None:
        """The scope of an active key, None for an unknown or revoked one."""
        k = S.api_keys.c
        with self.db.read() as conn:
            return conn.execute(
                select(k.scope).where(k.key_hash == hash_key(secret), k.revoked_at.is_(None))
            ).scalar()

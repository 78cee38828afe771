"""API keys: each belongs to a user, with a name, a scope, an optional expiry and a
last-used time; stored as sha256 hashes of the secret, revocable."""

from __future__ import annotations

import hashlib
import secrets
from typing import Any

from sqlalchemy import select, update

from wisp.server.store import schema as S
from wisp.server.store.db import Db

__all__ = ["SCOPES", "KeyStore", "hash_key"]

SCOPES = ("read", "write", "admin")
_TOUCH_EVERY = 60.0  # seconds between last-used updates of one key


def hash_key(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()


class KeyStore:
    def __init__(self, db: Db) -> None:
        self.db = db

    def create(
        self,
        scope: str,
        name: str = "",
        user_id: int | None = None,
        expires_at: float | None = None,
    ) -> tuple[str, str]:
        """A new API key ``(key_id, secret)`` of ``user_id``; only the secret's sha256 is stored."""
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
            "user_id": user_id,
            "expires_at": expires_at,
            "last_used_at": None,
        }
        with self.db.tx() as conn:
            conn.execute(S.api_keys.insert(), [row])
        return key_id, secret

    def all_keys(self, user_id: int | None = None) -> list[dict[str, Any]]:
        """Every key (or ``user_id``'s), with its user's name; never a secret."""
        k, u = S.api_keys.c, S.users.c
        q = (
            select(
                k.id,
                k.scope,
                k.name,
                k.created_at,
                k.revoked_at,
                k.expires_at,
                k.last_used_at,
                u.name.label("user"),
            )
            .join_from(S.api_keys, S.users, k.user_id == u.id, isouter=True)
            .order_by(k.created_at)
        )
        if user_id is not None:
            q = q.where(k.user_id == user_id)
        with self.db.read() as conn:
            return [dict(r._mapping) for r in conn.execute(q)]

    def revoke(self, key_id: str, user_id: int | None = None) -> bool:
        """Revoke a key (only ``user_id``'s when given); False if there was no such key."""
        k = S.api_keys.c
        cond = [k.id == key_id, k.revoked_at.is_(None)]
        if user_id is not None:
            cond.append(k.user_id == user_id)
        with self.db.tx() as conn:
            res = conn.execute(update(S.api_keys).where(*cond).values(revoked_at=self.db.clock()))
            return bool(res.rowcount)

    def lookup(self, secret: str) -> tuple[str, int | None, str] | None:
        """``(key_id, user_id, scope)`` of an active, unexpired key; notes its last use."""
        k = S.api_keys.c
        now = self.db.clock()
        with self.db.read() as conn:
            row = conn.execute(
                select(k.id, k.user_id, k.scope, k.expires_at, k.last_used_at).where(
                    k.key_hash == hash_key(secret), k.revoked_at.is_(None)
                )
            ).first()
        if row is None or (row.expires_at is not None and row.expires_at <= now):
            return None
        if row.last_used_at is None or row.last_used_at < now - _TOUCH_EVERY:
            with self.db.tx() as conn:
                conn.execute(update(S.api_keys).where(k.id == row.id).values(last_used_at=now))
        return str(row.id), row.user_id, str(row.scope)

    def scope(self, secret: str) -> str | None:
        """The scope of an active key, None for an unknown or revoked one."""
        k = S.api_keys.c
        with self.db.read() as conn:
            return conn.execute(
                select(k.scope).where(k.key_hash == hash_key(secret), k.revoked_at.is_(None))
            ).scalar()

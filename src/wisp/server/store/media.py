"""The media index: which blobs the server holds (``media_files``) and each run's media items.

The bytes live in a :class:`wisp.server.blobs.local.BlobStore`; this module only indexes them.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from wisp.server.store import schema as S
from wisp.server.store.db import Db

__all__ = ["MediaIndex"]


class MediaIndex:
    def __init__(self, db: Db) -> None:
        self.db = db

    def known(self, sha: str) -> dict[str, Any] | None:
        """``{size, suffix}`` of an uploaded blob, None when it was never recorded."""
        m = S.media_files.c
        with self.db.read() as conn:
            row = conn.execute(select(m.size, m.suffix).where(m.sha256 == sha)).first()
        return None if row is None else {"size": row[0], "suffix": row[1]}

    def add(self, sha: str, size: int, suffix: str) -> None:
        row = {"sha256": sha, "size": size, "suffix": suffix, "created_at": self.db.clock()}
        with self.db.tx() as conn:
            self.db.dialect.insert_ignore(conn, S.media_files, [row], ["sha256"])

    def items(self, run_id: str, key: str | None, limit: int) -> list[dict[str, Any]]:
        """A run's media items (of one key), in key, step, insertion order."""
        m = S.media_items.c
        q = select(m.key, m.step, m.type, m.data).where(m.run_id == run_id)
        if key is not None:
            q = q.where(m.key == key)
        q = q.order_by(m.key, m.step, m.id).limit(limit)
        with self.db.read() as conn:
            return [
                {**data, "key": k, "step": step, "type": ty}
                for k, step, ty, data in conn.execute(q)
            ]

"""The storage interface of the server: one :class:`Store` over SQLite or PostgreSQL.

``open_store(url)`` builds the engine (backend driver imported lazily, backend
differences in :mod:`wisp.server.store.dialect`), runs the Alembic migrations and returns a
:class:`Store`: a facade over the parts, one module each —

- :mod:`wisp.server.store.runs` (runs, projects, reported state),
- :mod:`store.records` (exactly-once ingestion; points and blocks via :mod:`series.points`),
- :mod:`wisp.server.store.batch` (many runs' run and record writes in one transaction),
- :mod:`store.media` (media index; the bytes are in a :mod:`blobs.local` store),
- :mod:`wisp.server.store.console` (console lines),
- :mod:`wisp.server.store.keys` (API keys of users),
- :mod:`wisp.server.store.users` (users, teams, members, sessions),
- :mod:`wisp.server.store.projects` (projects and their rights, the runs' write guard, media
  owners and references, the audit log),
- :mod:`store.artifacts` (artifacts, versions, aliases, lineage; bytes in :mod:`blobs.local`),
- :mod:`wisp.server.store.limits` (rate limits shared by every server process).

Nothing a request depends on is kept in a server process (sessions, rate limits, cursors
are rows; the one cache, metric-key ids, is keyed so it is never stale), so any number of
processes can serve one database.

All SQL is SQLAlchemy Core with bound parameters, except the bulk paths for
numeric points in :mod:`wisp.server.series.points` (also parameterised).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from sqlalchemy.engine import Engine

from wisp.server.store.artifacts import ArtifactStore
from wisp.server.store.console import ConsoleStore
from wisp.server.store.db import Db, make_engine, migrate
from wisp.server.store.dialect import Dialect
from wisp.server.store.ingest import Prepared
from wisp.server.store.keys import SCOPES, KeyStore, hash_key
from wisp.server.store.limits import RateLimits
from wisp.server.store.media import MediaIndex
from wisp.server.store.projects import ProjectStore
from wisp.server.store.records import RecordStore
from wisp.server.store.runs import RunStore
from wisp.server.store.stops import RunStops
from wisp.server.store.users import UserStore

if TYPE_CHECKING:
    from wisp.server.rights.matrix import Principal
    from wisp.server.store.batch import WriteBatch

__all__ = ["SCOPES", "Store", "hash_key", "open_store"]


def open_store(
    url: str,
    *,
    heartbeat_timeout: float = 300.0,
    clock: Callable[[], float] = time.time,
    run_migrations: bool = True,
) -> Store:
    """Open (and migrate) the database at ``url``: ``sqlite:///path`` or ``postgresql://...``."""
    engine = make_engine(url)
    if run_migrations:
        migrate(engine)
    return Store(engine, heartbeat_timeout=heartbeat_timeout, clock=clock)


class Store:
    """Runs, records, series, media index and API keys in one SQL database."""

    def __init__(self, engine: Engine, *, heartbeat_timeout: float, clock: Callable[[], float]):
        self.db = Db(engine, clock)
        self.access = ProjectStore(self.db)
        self.users = UserStore(self.db)
        self.runs = RunStore(self.db, heartbeat_timeout, self.access)
        self.records = RecordStore(self.db, self.runs)
        self.media = MediaIndex(self.db)
        self.console = ConsoleStore(self.db)
        self.keys = KeyStore(self.db)
        self.artifacts = ArtifactStore(self.db)
        self.limits = RateLimits(self.db)
        self.stops = RunStops(self.db)

    @property
    def engine(self) -> Engine:
        return self.db.engine

    @property
    def dialect(self) -> Dialect:
        return self.db.dialect

    @property
    def clock(self) -> Callable[[], float]:
        return self.db.clock

    @clock.setter
    def clock(self, clock: Callable[[], float]) -> None:
        self.db.clock = clock

    @property
    def heartbeat_timeout(self) -> float:
        return self.runs.heartbeat_timeout

    def close(self) -> None:
        self.db.engine.dispose()

    # -- runs ---------------------------------------------------------------------------------

    def state_expr(self) -> Any:
        return self.runs.state_expr()

    def duration_expr(self) -> Any:
        return self.runs.duration_expr()

    def run_dict(self, row: Any) -> dict[str, Any]:
        return self.runs.run_dict(row)

    def put_run(
        self, run_id: str, cols: dict[str, Any], by_project: bool = False
    ) -> dict[str, Any]:
        return self.runs.put(run_id, cols, by_project)

    def get_run(self, run_id: str) -> dict[str, Any] | None:
        return self.runs.get(run_id)

    def heartbeat(self, run_id: str) -> bool:
        return self.runs.heartbeat(run_id)

    def projects(self, readable: Collection[str] | None = None) -> list[dict[str, Any]]:
        """Projects with runs; only those named in ``readable`` when given (visibility)."""
        return self.runs.projects(readable)

    # -- ingestion ----------------------------------------------------------------------------

    def acked_seq(self, run_id: str, writer_id: str) -> int:
        return self.records.acked_seq(run_id, writer_id)

    def writers(self, run_id: str) -> dict[str, int]:
        """``{writer_id: acked seq}`` of the run with key ``run_id``."""
        return self.records.writers(run_id)

    def ingest(
        self, run_id: str, writer_id: str, first_seq: int, records: list[Prepared], **kw: Any
    ) -> int:
        """Apply ``records`` (seq ``first_seq + i``) exactly once; returns the acked seq.
        ``pause=``: called between records (reads go first: :mod:`wisp.server.readfirst`)."""
        return self.records.ingest(run_id, writer_id, first_seq, records, **kw)

    def write_batch(self, actor: Principal, addr: str = "") -> AbstractContextManager[WriteBatch]:
        """Many runs' ``PUT /runs/{id}`` + records in one transaction, as ``actor``
        (:mod:`wisp.server.store.batch`): ``with store.write_batch(p) as b: b.apply(write)``."""
        from wisp.server.store.batch import open_batch

        return open_batch(self.db, self.runs, self.records, self.access, actor, addr)

    # -- media, console -----------------------------------------------------------------------

    def media_known(self, sha: str) -> dict[str, Any] | None:
        return self.media.known(sha)

    def media_add(self, sha: str, size: int, suffix: str) -> None:
        self.media.add(sha, size, suffix)

    def media_items(self, run_id: str, key: str | None, limit: int) -> list[dict[str, Any]]:
        return self.media.items(run_id, key, limit)

    def console_lines(self, run_id: str, after: int, limit: int) -> list[dict[str, Any]]:
        return self.console.lines(run_id, after, limit)

    # -- API keys -----------------------------------------------------------------------------

    def create_key(
        self,
        scope: str,
        name: str = "",
        user_id: int | None = None,
        expires_at: float | None = None,
    ) -> tuple[str, str]:
        """A new API key ``(key_id, secret)`` of ``user_id`` (default: the site admin
        ``admin``, created if missing); only the sha256 of the secret is stored."""
        if user_id is None:
            user_id = self.users.admin_user()
        return self.keys.create(scope, name, user_id, expires_at)

    def list_keys(self, user_id: int | None = None) -> list[dict[str, Any]]:
        return self.keys.all_keys(user_id)

    def revoke_key(self, key_id: str, user_id: int | None = None) -> bool:
        return self.keys.revoke(key_id, user_id)

    def key_scope(self, secret: str) -> str | None:
        return self.keys.scope(secret)

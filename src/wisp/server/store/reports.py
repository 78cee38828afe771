"""Reports and every version of them (Alembic ``0008_reports``; docs/reports.md).

``reports``: one row per report of a project (its latest version number and title);
``report_versions``: the Markdown of each version with who saved it and when.  A version is
never changed or deleted (deleting a report deletes all of them); a revert is a new version
holding an old one's text.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy import (
    Column,
    Float,
    Index,
    Integer,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
    delete,
    select,
    update,
)
from sqlalchemy.exc import IntegrityError

from wisp.server.store.schema import metadata

__all__ = ["Conflict", "ReportStore", "report_versions", "reports"]

reports = Table(
    "reports",
    metadata,
    Column("project", String(128), nullable=False),
    Column("id", String(64), nullable=False),
    Column("title", Text, nullable=False),
    Column("version", Integer, nullable=False),
    Column("created_at", Float, nullable=False),
    Column("updated_at", Float, nullable=False),
    PrimaryKeyConstraint("project", "id"),
    Index("ix_reports_project_updated", "project", "updated_at"),
)

report_versions = Table(
    "report_versions",
    metadata,
    Column("project", String(128), nullable=False),
    Column("report_id", String(64), nullable=False),
    Column("version", Integer, nullable=False),
    Column("markdown", Text, nullable=False),
    Column("title", Text, nullable=False),
    Column("author_id", Integer, nullable=True),
    Column("author", String(200), nullable=True),
    Column("created_at", Float, nullable=False),
    PrimaryKeyConstraint("project", "report_id", "version"),
)

_TRIES = 5


class Conflict(Exception):
    """The latest version is not the one the writer based its text on."""

    def __init__(self, latest: int) -> None:
        super().__init__(latest)
        self.latest = latest


class ReportStore:
    """Queries on the two tables (``db``: the store's ``Db``)."""

    def __init__(self, db: Any) -> None:
        self.db = db

    def save(
        self,
        project: str,
        rid: str,
        markdown: str,
        title: str,
        author: tuple[int | None, str | None],
        base: int | None = None,
        check: Callable[[Any], None] | None = None,
    ) -> tuple[int, bool]:
        """Store ``markdown`` as the next version (the first creates the report); the same
        text as the latest version stores nothing.  Returns (version, whether new);
        ``Conflict`` when ``base`` is given and is not the latest version.  ``check(conn)``
        runs first in the transaction (the caller's right to write the project)."""
        r, v = reports.c, report_versions.c
        for attempt in range(_TRIES):
            try:
                with self.db.tx() as conn:
                    if check is not None:
                        check(conn)
                    row = conn.execute(
                        select(r.version).where(r.project == project, r.id == rid)
                    ).first()
                    latest = 0 if row is None else int(row[0])
                    if latest:
                        text = conn.execute(
                            select(v.markdown).where(
                                v.project == project, v.report_id == rid, v.version == latest
                            )
                        ).scalar_one()
                        if text == markdown:
                            return latest, False
                    if base is not None and base != latest:
                        raise Conflict(latest)
                    now = self.db.clock()
                    version = latest + 1
                    conn.execute(
                        report_versions.insert(),
                        [
                            {
                                "project": project,
                                "report_id": rid,
                                "version": version,
                                "markdown": markdown,
                                "title": title,
                                "author_id": author[0],
                                "author": author[1],
                                "created_at": now,
                            }
                        ],
                    )
                    values = {"title": title, "version": version, "updated_at": now}
                    if latest:
                        conn.execute(
                            update(reports)
                            .where(r.project == project, r.id == rid, r.version == latest)
                            .values(values)
                        )
                    else:
                        conn.execute(
                            reports.insert(),
                            [{"project": project, "id": rid, "created_at": now, **values}],
                        )
                    return version, True
            except IntegrityError:
                if attempt == _TRIES - 1:
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

    def get(self, project: str, rid: str, version: int | None = None) -> dict[str, Any] | None:
        """One version (the latest when None) with the report's row; None when absent."""
        r, v = reports.c, report_versions.c
        with self.db.read() as conn:
            head = conn.execute(select(reports).where(r.project == project, r.id == rid)).first()
            if head is None:
                return None
            want = head.version if version is None else version
            row = conn.execute(
                select(report_versions).where(
                    v.project == project, v.report_id == rid, v.version == want
                )
            ).first()
        if row is None:
            return None
        return {
            "id": rid,
            "project": project,
            "version": row.version,
            "latest": head.version,
            "title": row.title,
            "markdown": row.markdown,
            "author": row.author,
            "created_at": row.created_at,
            "updated_at": head.updated_at,
        }

    def versions(self, project: str, rid: str) -> list[dict[str, Any]]:
        """Every version of a report, oldest first (no Markdown: its length in characters)."""
        from sqlalchemy import func

        v = report_versions.c
        q = (
            select(v.version, v.title, v.author, v.created_at, func.length(v.markdown))
            .where(v.project == project, v.report_id == rid)
            .order_by(v.version)
        )
        with self.db.read() as conn:
            return [
                {"version": a, "title": b, "author": c, "created_at": d, "chars": e}
                for a, b, c, d, e in conn.execute(q)
            ]

    def of_project(self, project: str, limit: int = 1000) -> list[dict[str, Any]]:
        """A project's reports, most recently changed first."""
        r = reports.c
        q = (
            select(reports)
            .where(r.project == project)
            .order_by(r.updated_at.desc(), r.id)
            .limit(limit)
        )
        with self.db.read() as conn:
            return [dict(row._mapping) for row in conn.execute(q)]

    def delete(self, project: str, rid: str) -> bool:
        """Delete a report and all its versions; False when there was none."""
        r, v = reports.c, report_versions.c
        with self.db.tx() as conn:
            conn.execute(delete(report_versions).where(v.project == project, v.report_id == rid))
            gone = conn.execute(delete(reports).where(r.project == project, r.id == rid))
        return bool(gone.rowcount)

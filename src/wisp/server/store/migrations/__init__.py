"""Alembic migrations of the server database (tables: :mod:`wisp.server.store.schema`).

Each file in ``versions/`` is ``NNNN_<what>.py``, numbered in chain order, and its revision
id is its file name without ``.py`` (``tests/server/test_migrations.py`` checks both).  A
new migration takes the next number and names the newest one as its ``down_revision``.

Until the files were renamed (version 2 of this naming), the revision ids were those on the
left of :data:`RENAMED`; a database still stamped with one is restamped with its new id
before upgrading (:func:`wisp.server.store.db.migrate`), so existing databases keep
upgrading.
"""

from __future__ import annotations

__all__ = ["RENAMED"]

#: old revision id -> new revision id (the same migration, renamed in chain order)
RENAMED = {
    "0001": "0001_initial",
    "0002": "0002_sweeps",
    "a18_artifacts": "0003_artifacts",
    "0002_team": "0004_team",
    "0003_points": "0005_points",
    "0003_runkeys": "0006_runkeys",
    "0003_workspaces": "0007_workspaces",
    "0010_automations": "0010_automations",  # never renamed: listed so every file is here
}

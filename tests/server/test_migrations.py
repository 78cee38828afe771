"""The Alembic migrations: file names in chain order, and databases stamped before the rename."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

import wisp.server.store.db as db_mod

MIGRATIONS = Path(db_mod.__file__).with_name("migrations")


def _revisions() -> dict[str, tuple[str, str | None]]:
    """file stem -> (revision, down_revision), read from the files without importing them."""
    out = {}
    for path in (MIGRATIONS / "versions").glob("*.py"):
        values: dict[str, str | None] = {}
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        values[target.id] = node.value.value
        rev = values["revision"]
        assert isinstance(rev, str)
        out[path.stem] = (rev, values["down_revision"])
    return out


def test_migration_files_sort_in_chain_order() -> None:
    """Each file is named by its revision id, and sorting the names gives the upgrade chain."""
    revs = _revisions()
    assert all(stem == rev for stem, (rev, _) in revs.items())
    assert all(len(stem) <= 32 for stem in revs)  # alembic_version.version_num is VARCHAR(32)
    down_of = {rev: down for rev, down in revs.values()}
    chain: list[str] = []
    heads = [rev for rev in down_of if rev not in down_of.values()]
    assert len(heads) == 1, f"one head expected, got {heads}"
    at: str | None = heads[0]
    while at is not None:
        chain.append(at)
        at = down_of[at]
    assert chain[::-1] == sorted(revs)


def test_renamed_revisions_name_existing_files() -> None:
    """Every old revision id maps to a migration that exists, each one once."""
    from wisp.server.store.migrations import RENAMED

    assert len(set(RENAMED.values())) == len(RENAMED)
    assert set(RENAMED.values()) <= set(_revisions())  # revisions added since have no old id


@pytest.fixture(params=["sqlite", "postgresql"])
def fresh_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """An empty database (a new PostgreSQL database, not the session's shared one)."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'old.db'}"
        return
    from tests.server.conftest import PG_HOST
    from wisp.testing import temporary_postgres_database

    with temporary_postgres_database(PG_HOST) as url:
        yield url


def _upgrade_to(url: str, revision: str, stamp: str) -> None:
    from alembic import command
    from alembic.config import Config
    from sqlalchemy import text

    engine = db_mod.make_engine(url)
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, revision)
        conn.execute(text("UPDATE alembic_version SET version_num = :v"), {"v": stamp})
    engine.dispose()


def test_a_database_stamped_with_an_old_revision_id_keeps_upgrading(fresh_url: str) -> None:
    """A database at ``0004_team`` still stamped ``0002_team`` (its id before the rename) is
    restamped and upgraded to the head by ``open_store``, and a second open changes nothing."""
    from sqlalchemy import inspect, text

    from wisp.server import open_store

    _upgrade_to(fresh_url, "0004_team", stamp="0002_team")
    for _ in range(2):
        store = open_store(fresh_url)
        try:
            with store.engine.connect() as conn:
                got = conn.execute(text("SELECT version_num FROM alembic_version")).scalars().all()
                assert got == [max(_revisions())]
                assert inspect(conn).has_table("workspaces")
        finally:
            store.close()


def test_sweeps_keyed_by_project_after_0017(fresh_url: str) -> None:
    """Sweeps and trials from before 0017 keep their rows: a sweep of no project moves to
    ``uncategorized`` with its trials, and then another project may use the same sweep id."""
    from sqlalchemy import text

    from wisp.server import open_store

    _upgrade_to(fresh_url, "0013_run_stops", stamp="0013_run_stops")
    engine = db_mod.make_engine(fresh_url)
    sweep = "INSERT INTO sweeps (id, project, config, state, seed, created_at) VALUES "
    trial = (
        "INSERT INTO sweep_trials (sweep_id, number, run_id, internal, system_attrs, params, "
        "intermediate, state, created_at) VALUES "
    )
    with engine.begin() as conn:
        conn.execute(text(sweep + "('s1', 'p1', '{}', 'running', 0, 1.0)"))
        conn.execute(text(sweep + "('s2', NULL, '{}', 'running', 0, 2.0)"))
        for sid, n in (("s1", 0), ("s1", 1), ("s2", 0)):
            conn.execute(
                text(
                    trial + f"('{sid}', {n}, 'r', '{{}}', '{{}}', '{{}}', '{{}}', 'finished', 1.0)"
                )
            )
    engine.dispose()
    store = open_store(fresh_url)
    try:
        with store.engine.connect() as conn:
            got = conn.execute(text("SELECT project, id FROM sweeps ORDER BY id")).all()
            assert [tuple(r) for r in got] == [("p1", "s1"), ("uncategorized", "s2")]
            got = conn.execute(
                text("SELECT project, sweep_id, number FROM sweep_trials ORDER BY sweep_id, number")
            ).all()
            assert [tuple(r) for r in got] == [
                ("p1", "s1", 0),
                ("p1", "s1", 1),
                ("uncategorized", "s2", 0),
            ]
        with store.engine.begin() as conn:  # the id s1 in another project is another sweep
            conn.execute(
                text(
                    sweep.replace("(id, project", "(id, project")
                    + "('s1', 'p2', '{}', 'running', 0, 3.0)"
                )
            )
            conn.execute(
                text(
                    trial.replace("(sweep_id,", "(project, sweep_id,")
                    + "('p2', 's1', 0, 'r', '{}', '{}', '{}', '{}', 'running', 1.0)"
                )
            )
    finally:
        store.close()


def test_migration_0014_rewrites_saved_workspaces_and_back(fresh_url: str) -> None:
    """A workspace row saved before 0014 is rewritten into the report model by the upgrade
    and read back unchanged through the API's shape; the downgrade restores the old row."""
    from alembic import command
    from alembic.config import Config
    from sqlalchemy import select

    from tests.server.test_workspaces import SPEC
    from wisp.reports._workspace import from_stored
    from wisp.server.store import schema as S

    engine = db_mod.make_engine(fresh_url)
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    legacy = {**SPEC, "agg": "median", "runs": None}
    row = {"id": "w1", "project": "p", "name": "old", "owner_id": None, "shared": 1,
           "spec": legacy, "created_at": 1.0, "updated_at": 1.0}  # fmt: skip
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "0013_run_stops")
        conn.execute(S.workspaces.insert(), [row])
        command.upgrade(cfg, "0014_workspaces_as_reports")
        stored = conn.execute(select(S.workspaces.c.spec)).scalar_one()
        assert stored["report"] == 1 and stored["agg"] == "median"
        back = from_stored(stored)
        assert back["group_by"] == legacy["group_by"] and back["filter"] == legacy["filter"]
        assert [p["keys"] for p in back["panels"]] == [["loss"], ["acc", "val/acc"]]
        command.downgrade(cfg, "0013_run_stops")
        old = conn.execute(select(S.workspaces.c.spec)).scalar_one()
        assert old["panels"][1]["x"] == "epoch" and old["group_by"] == ["config.lr"]
    engine.dispose()

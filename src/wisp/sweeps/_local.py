"""Offline sweep state: one SQLite file per sweep, ``<dir>/wisp/sweeps/<sweep id>.db``.

Format version 1 (``PRAGMA user_version``).  Tables:

- ``sweep``  one row: id, project, name, config (JSON), state, seed, created_at.
- ``trials`` one row per trial, keyed by ``number`` (0, 1, ...): run_id, internal,
  system_attrs, params, intermediate (JSON), state, value, agent_id, agent_pid, host,
  created_at, heartbeat_at, finished_at.

Several agent processes share the file: WAL mode, every write in ``BEGIN IMMEDIATE``, and
the trial number is the primary key, so of two agents claiming the same number one fails
and samples again (see ``_controller.py``).
"""

from __future__ import annotations

import json
import os
import sqlite3

from wisp.errors import UsageError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["FORMAT_VERSION", "LocalStore", "sweep_db_path"]

FORMAT_VERSION = 1
_JSON = ("config", "internal", "system_attrs", "params", "intermediate")
_TRIAL_COLS = (
    "number",
    "run_id",
    "internal",
    "system_attrs",
    "params",
    "intermediate",
    "state",
    "value",
    "agent_id",
    "agent_pid",
    "host",
    "created_at",
    "heartbeat_at",
    "finished_at",
)
_SCHEMA = """
CREATE TABLE IF NOT EXISTS sweep (
    id TEXT PRIMARY KEY, project TEXT, name TEXT, config TEXT NOT NULL,
    state TEXT NOT NULL, seed INTEGER NOT NULL, created_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS trials (
    number INTEGER PRIMARY KEY, run_id TEXT NOT NULL, internal TEXT NOT NULL,
    system_attrs TEXT NOT NULL, params TEXT NOT NULL, intermediate TEXT NOT NULL,
    state TEXT NOT NULL, value REAL, agent_id TEXT, agent_pid INTEGER, host TEXT,
    created_at REAL NOT NULL, heartbeat_at REAL, finished_at REAL);
"""


def sweep_db_path(base_dir: str, sweep_id: str) -> str:
    """Where the offline sweep ``sweep_id`` lives under the directory holding ``wisp/``."""
    if not sweep_id or any(not (c.isalnum() or c in "-_") for c in sweep_id):
        raise UsageError(f"bad sweep id {sweep_id!r}: letters, digits, '-' or '_' only")
    return os.path.join(os.path.abspath(base_dir), "wisp", "sweeps", f"{sweep_id}.db")


class LocalStore:
    """A :class:`~wisp.sweeps._controller.SweepStore` over one SQLite file per sweep."""

    def __init__(self, base_dir: str) -> None:
        self.base_dir = os.path.abspath(base_dir)
        self._conns: dict[str, sqlite3.Connection] = {}

    def _conn(self, sweep_id: str, create: bool = False) -> sqlite3.Connection:
        conn = self._conns.get(sweep_id)
        if conn is not None:
            return conn
        path = sweep_db_path(self.base_dir, sweep_id)
        if not create and not os.path.exists(path):
            raise UsageError(f"no sweep {sweep_id!r} under {os.path.dirname(path)}")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        conn = sqlite3.connect(path, timeout=60.0, isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version not in (0, FORMAT_VERSION):
            raise UsageError(f"{path}: sweep file version {version}, this wisp reads 1")
        if version == 0:  # IF NOT EXISTS: two agents creating it at once is fine
            conn.executescript(
                f"BEGIN IMMEDIATE;{_SCHEMA}PRAGMA user_version={FORMAT_VERSION};COMMIT;"
            )
        self._conns[sweep_id] = conn
        return conn

    def close(self) -> None:
        for conn in self._conns.values():
            conn.close()
        self._conns.clear()

    def create_sweep(self, sweep: dict[str, Any]) -> None:
        conn = self._conn(sweep["id"], create=True)
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.execute(
                "INSERT INTO sweep VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    sweep["id"],
                    sweep.get("project"),
                    sweep.get("name"),
                    json.dumps(sweep["config"]),
                    sweep["state"],
                    sweep["seed"],
                    sweep["created_at"],
                ),
            )
        finally:
            conn.execute("COMMIT")

    def get_sweep(self, sweep_id: str) -> dict[str, Any]:
        conn = self._conn(sweep_id)
        row = conn.execute(
            "SELECT id, project, name, config, state, seed, created_at FROM sweep"
        ).fetchone()
        if row is None:
            raise UsageError(f"sweep {sweep_id!r}: its state file is empty")
        keys = ("id", "project", "name", "config", "state", "seed", "created_at")
        out = dict(zip(keys, row, strict=True))
        out["config"] = json.loads(out["config"])
        return out

    def set_sweep_state(self, sweep_id: str, state: str) -> None:
        conn = self._conn(sweep_id)
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.execute("UPDATE sweep SET state = ?", (state,))
        finally:
            conn.execute("COMMIT")

    def list_trials(self, sweep_id: str) -> list[dict[str, Any]]:
        conn = self._conn(sweep_id)
        rows = conn.execute(f"SELECT {', '.join(_TRIAL_COLS)} FROM trials ORDER BY number")
        out = []
        for row in rows:
            t = dict(zip(_TRIAL_COLS, row, strict=True))
            for k in _JSON:
                if k in t:
                    t[k] = json.loads(t[k])
            out.append(t)
        return out

    def add_trial(self, sweep_id: str, trial: dict[str, Any]) -> bool:
        conn = self._conn(sweep_id)
        values = [json.dumps(trial[c]) if c in _JSON else trial.get(c) for c in _TRIAL_COLS]
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.execute(
                f"INSERT INTO trials ({', '.join(_TRIAL_COLS)}) "
                f"VALUES ({', '.join('?' * len(_TRIAL_COLS))})",
                values,
            )
        except sqlite3.IntegrityError:
            conn.execute("ROLLBACK")
            return False
        conn.execute("COMMIT")
        return True

    def update_trial(
        self, sweep_id: str, number: int, fields: dict[str, Any], only_running: bool = False
    ) -> bool:
        bad = set(fields) - set(_TRIAL_COLS[1:])
        if bad:
            raise UsageError(f"unknown trial field(s) {sorted(bad)}")
        conn = self._conn(sweep_id)
        sets = ", ".join(f"{k} = ?" for k in fields)
        values = [json.dumps(v) if k in _JSON else v for k, v in fields.items()]
        where = "number = ?" + (" AND state = 'running'" if only_running else "")
        conn.execute("BEGIN IMMEDIATE")
        try:
            cur = conn.execute(f"UPDATE trials SET {sets} WHERE {where}", [*values, number])
        finally:
            conn.execute("COMMIT")
        return cur.rowcount > 0

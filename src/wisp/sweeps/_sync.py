"""``wisp sync --all`` for sweeps: copy offline sweeps (``<dir>/wisp/sweeps/*.db``) to a server.

``wisp ui`` does the same continuously with :class:`SweepPusher` (a sweep is pushed again
whenever its file changes), so the dashboard shows offline sweeps live.

The sweep is created on the server if missing; its trials are added, or updated to the
local state (the local file is the source of truth for an offline sweep).  The runs
themselves are uploaded by the ordinary sync; they carry ``sweep_id`` in their metadata.
"""

from __future__ import annotations

import glob
import os

from wisp.errors import FatalApiError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["SweepPusher", "push_local_sweeps"]

_MUTABLE = ("state", "value", "intermediate", "system_attrs", "heartbeat_at", "finished_at")


def push_local_sweeps(base_dir: str, server_url: str | None, api_key: str | None) -> int:
    """Push every offline sweep under ``base_dir``; returns how many were pushed."""
    from wisp._settings import Settings
    from wisp.sweeps._local import LocalStore
    from wisp.sweeps._remote import RemoteStore

    files = sorted(glob.glob(os.path.join(os.path.abspath(base_dir), "wisp", "sweeps", "*.db")))
    if not files:
        return 0
    s = Settings.resolve()
    url = server_url or s.server_url
    if not url:
        return 0
    local = LocalStore(base_dir)
    remote = RemoteStore(url, api_key or s.api_key)
    try:
        for path in files:
            _push(local, remote, os.path.basename(path)[: -len(".db")])
    finally:
        local.close()
        remote.close()
    return len(files)


def _push(local: Any, remote: Any, sweep_id: str) -> None:
    sweep = local.get_sweep(sweep_id)
    try:
        remote.create_sweep(sweep)
    except FatalApiError as exc:
        if exc.status != 409:
            raise
    remote.set_sweep_state(sweep_id, sweep["state"])
    there = {t["number"]: t for t in remote.list_trials(sweep_id)}
    for t in local.list_trials(sweep_id):
        other = there.get(t["number"])
        if other is None:
            remote.add_trial(sweep_id, t)
        elif any(other.get(k) != t.get(k) for k in _MUTABLE):
            remote.update_trial(sweep_id, t["number"], {k: t.get(k) for k in _MUTABLE})


def _sweep_files(root: str) -> list[str]:
    return sorted(glob.glob(os.path.join(os.path.abspath(root), "wisp", "sweeps", "*.db")))


class SweepPusher:
    """Pushes the offline sweeps under ``roots`` to a server each time their files change."""

    def __init__(self, roots: list[str], server_url: str, api_key: str | None) -> None:
        self.roots = roots
        self.server_url = server_url
        self.api_key = api_key
        self._seen: dict[str, tuple[float, float]] = {}
        self.errors = 0

    def poll(self) -> int:
        """Push the sweeps whose files changed since the last poll; returns how many."""
        import sqlite3

        from wisp._logging import logger
        from wisp.errors import ApiError
        from wisp.sweeps._local import LocalStore
        from wisp.sweeps._remote import RemoteStore

        pushed = 0
        for root in self.roots:
            changed = []
            for path in _sweep_files(root):
                stamp = (_mtime(path), _mtime(path + "-wal"))
                if self._seen.get(path) != stamp:
                    changed.append((path, stamp))
            if not changed:
                continue
            local = LocalStore(root)
            remote = RemoteStore(self.server_url, self.api_key)
            try:
                for path, stamp in changed:
                    try:
                        _push(local, remote, os.path.basename(path)[: -len(".db")])
                    except (ApiError, OSError, sqlite3.Error) as exc:
                        self.errors += 1
                        if self.errors <= 3:
                            logger().warning(
                                "wisp ui: pushing sweep %s failed (will retry): %s", path, exc
                            )
                        continue
                    self._seen[path] = stamp
                    pushed += 1
            finally:
                local.close()
                remote.close()
        return pushed


def _mtime(path: str) -> float:
    try:
        return os.stat(path).st_mtime
    except OSError:
        return 0.0

"""``wisp server users|teams|projects ...``: administration with database access.

These run as a trusted caller (no HTTP, no rights check): whoever can open the database
administers the server.  Passwords are never taken from argv: the CLI reads them from
``$WISP_PASSWORD``, a file, stdin or a prompt.
"""

from __future__ import annotations

from typing import Any

from wisp.server.settings import ServerSettings

__all__ = [
    "media_gc",
    "projects_set",
    "teams_add",
    "teams_list",
    "teams_member",
    "users_add",
    "users_disable",
    "users_list",
    "users_reset_password",
]


def _store(db: str | None) -> Any:
    from wisp.server.store.facade import open_store

    return open_store(ServerSettings(db=db or "").resolved().db)


def _run(db: str | None, fn: Any) -> Any:
    from wisp.errors import UsageError
    from wisp.server.http.problem import Problem

    store = _store(db)
    try:
        return fn(store)
    except Problem as p:
        raise UsageError(p.message) from None
    finally:
        store.close()


def users_add(
    name: str, password: str | None = None, admin: bool = False, db: str | None = None
) -> int:
    """Add a user (a site admin with ``admin``); returns its id."""
    return int(_run(db, lambda s: s.users.add_user(name, password, admin)))


def users_list(db: str | None = None) -> list[dict[str, Any]]:
    return list(_run(db, lambda s: s.users.users()))


def users_disable(name: str, enable: bool = False, db: str | None = None) -> None:
    """Disable a user (their keys and sessions stop working), or enable them again."""
    _run(db, lambda s: s.users.set_disabled(name, not enable))


def users_reset_password(name: str, password: str, db: str | None = None) -> None:
    """Set a user's password (and end their dashboard sessions)."""
    _run(db, lambda s: s.users.set_password(name, password))


def teams_add(name: str, db: str | None = None) -> int:
    return int(_run(db, lambda s: s.users.add_team(name)))


def teams_list(db: str | None = None) -> list[dict[str, Any]]:
    return list(_run(db, lambda s: s.users.teams()))


def teams_member(team: str, user: str, role: str | None, db: str | None = None) -> None:
    """Add ``user`` to ``team`` with ``role`` (viewer, member, admin); None removes them."""
    _run(db, lambda s: s.users.set_member(team, user, role))


def projects_set(
    name: str, owner: str | None = None, visibility: str | None = None, db: str | None = None
) -> dict[str, Any]:
    """Create or change a project: its owner (a user or team name) and visibility."""

    def go(s: Any) -> Any:
        from wisp.errors import UsageError

        ent = None
        if owner is not None:
            ent = s.users.entity(owner)
            if ent is None:
                raise UsageError(f"no user or team named {owner!r}")
        s.access.set_project(name, ent, visibility)
        return s.access.describe(name)

    return dict(_run(db, go))


def media_gc(
    db: str | None = None,
    media_dir: str | None = None,
    older_than_days: float = 1.0,
    dry_run: bool = False,
) -> tuple[int, int]:
    """Delete media no run refers to and artifact files no published version names, held
    for more than ``older_than_days`` (an upload is referenced shortly after it lands), in
    the local directory or the object store ``media_dir`` names, and uploads left
    unfinished as long; returns ``(files, bytes)``.

    Media and artifact files share one content-addressed store: bytes are deleted only
    once neither index holds their sha256."""
    from wisp.server.blobs import open_blob_store

    settings = ServerSettings(db=db or "", media_dir=media_dir or "").resolved()
    blobs = open_blob_store(settings.media_dir)

    def go(s: Any) -> tuple[int, int]:
        before = s.clock() - older_than_days * 86400
        media = s.access.orphan_media(before)
        files = s.artifacts.orphan_files(before)
        sizes = dict(media + files)
        media_shas, file_shas = {m for m, _ in media}, {f for f, _ in files}
        if dry_run:  # bytes the other index still holds stay
            keep = s.artifacts.files_known(sorted(media_shas - file_shas))
            keep |= {f for f in file_shas - media_shas if s.media_known(f) is not None}
        else:
            for sha in media_shas:
                s.access.forget_media(sha)
            dropped = {f for f in file_shas if s.artifacts.forget_file(f)}
            freed = media_shas | dropped
            keep = s.artifacts.files_known(sorted(freed))
            keep |= {m for m in freed if s.media_known(m) is not None}
            keep |= set(sizes) - freed
            for sha in sorted(set(sizes) - keep):
                blobs.delete(sha)
            blobs.abort_stale_uploads(before)  # uploads begun and never completed
        gone = [size for sha, size in sizes.items() if sha not in keep]
        return len(gone), sum(gone)

    out: tuple[int, int] = _run(db, go)
    return out

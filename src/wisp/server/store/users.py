"""People: users (argon2 password hashes), teams and their members, dashboard sessions.

Users and teams share one namespace of entity names (a project is owned by one of them).
Passwords are hashed with argon2id (``argon2-cffi``, the server extra); session tokens and
API keys are stored only as sha256 hashes.  :meth:`UserStore.principal` turns a user id
into the :class:`wisp.server.rights.matrix.Principal` every decision is made on.
"""

from __future__ import annotations

import hashlib
import secrets
from typing import Any

from sqlalchemy import delete, select, update
from sqlalchemy.engine import Connection

from wisp._protocol import ENTITY_RULE, entity_problem
from wisp.errors import UsageError, install_hint
from wisp.server.http.problem import Problem
from wisp.server.rights.matrix import ROLES, Principal
from wisp.server.store import schema as S
from wisp.server.store.db import Db

__all__ = [
    "NAME_RULE",
    "UserStore",
    "check_name",
    "entity_in",
    "hash_password",
    "verify_password",
]

NAME_RULE = ENTITY_RULE  # users and teams are the entities of "entity/project"
SESSION_SECONDS = 7 * 24 * 3600


def entity_in(conn: Connection, name: str) -> tuple[str, int] | None:
    """``("user", id)`` or ``("team", id)`` for an entity name, None if unknown (the two
    share one namespace: :meth:`UserStore.add_user` and :meth:`UserStore.add_team`)."""
    v = conn.execute(select(S.users.c.id).where(S.users.c.name == name)).scalar()
    if v is not None:
        return "user", int(v)
    v = conn.execute(select(S.teams.c.id).where(S.teams.c.name == name)).scalar()
    return None if v is None else ("team", int(v))


def check_name(name: Any, what: str = "name") -> str:
    if not isinstance(name, str) or entity_problem(name) is not None:
        raise Problem(422, "invalid", f"{what}: expected {NAME_RULE}", what)
    return name


def _hasher() -> Any:
    try:
        from argon2 import PasswordHasher
    except ImportError:  # pragma: no cover - depends on the install
        raise UsageError(f"passwords need the server extra: {install_hint('server')}") from None
    return PasswordHasher()


def hash_password(password: str) -> str:
    if not isinstance(password, str) or not 8 <= len(password) <= 1024:
        raise Problem(422, "invalid", "password: expected 8-1024 characters", "password")
    return str(_hasher().hash(password))


def verify_password(stored: str | None, password: str) -> bool:
    if not stored or not isinstance(password, str) or len(password) > 1024:
        _hasher().hash("x" * 12)  # same cost whether or not the user has a password
        return False
    from argon2.exceptions import InvalidHashError, VerificationError

    try:
        return bool(_hasher().verify(stored, password))
    except (VerificationError, InvalidHashError):
        return False


def _sha(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


class UserStore:
    def __init__(self, db: Db) -> None:
        self.db = db

    # -- users --------------------------------------------------------------------------------

    def _name_taken(self, conn: Any, name: str) -> bool:
        u, t = S.users.c, S.teams.c
        return (
            conn.execute(select(u.id).where(u.name == name)).first() is not None
            or conn.execute(select(t.id).where(t.name == name)).first() is not None
        )

    def add_user(self, name: str, password: str | None = None, admin: bool = False) -> int:
        check_name(name)
        row = {
            "name": name,
            "password_hash": hash_password(password) if password else None,
            "is_admin": 1 if admin else 0,
            "created_at": self.db.clock(),
        }
        with self.db.tx() as conn:
            if self._name_taken(conn, name):
                raise Problem(409, "name_taken", f"a user or team named {name!r} exists", "name")
            conn.execute(S.users.insert(), [row])
            return int(
                conn.execute(select(S.users.c.id).where(S.users.c.name == name)).scalar_one()
            )

    def user(self, name: str) -> dict[str, Any] | None:
        u = S.users.c
        with self.db.read() as conn:
            row = conn.execute(select(S.users).where(u.name == name)).first()
        return None if row is None else dict(row._mapping)

    def user_by_id(self, user_id: int) -> dict[str, Any] | None:
        with self.db.read() as conn:
            row = conn.execute(select(S.users).where(S.users.c.id == user_id)).first()
        return None if row is None else dict(row._mapping)

    def need_user(self, name: str) -> dict[str, Any]:
        got = self.user(name)
        if got is None:
            raise Problem(404, "user_not_found", f"no user {name!r}", "name")
        return got

    def users(self) -> list[dict[str, Any]]:
        u = S.users.c
        q = select(u.id, u.name, u.is_admin, u.created_at, u.disabled_at).order_by(u.name)
        with self.db.read() as conn:
            return [{**dict(r._mapping), "is_admin": bool(r.is_admin)} for r in conn.execute(q)]

    def set_password(self, name: str, password: str) -> None:
        h = hash_password(password)
        with self.db.tx() as conn:
            res = conn.execute(
                update(S.users).where(S.users.c.name == name).values(password_hash=h)
            )
            if not res.rowcount:
                raise Problem(404, "user_not_found", f"no user {name!r}", "name")
            uid = conn.execute(select(S.users.c.id).where(S.users.c.name == name)).scalar_one()
            conn.execute(delete(S.sessions).where(S.sessions.c.user_id == uid))

    def set_disabled(self, name: str, disabled: bool) -> None:
        """Disable (or enable) a user: their keys and sessions stop working at once."""
        with self.db.tx() as conn:
            res = conn.execute(
                update(S.users)
                .where(S.users.c.name == name)
                .values(disabled_at=self.db.clock() if disabled else None)
            )
            if not res.rowcount:
                raise Problem(404, "user_not_found", f"no user {name!r}", "name")
            if disabled:
                uid = conn.execute(select(S.users.c.id).where(S.users.c.name == name)).scalar_one()
                conn.execute(delete(S.sessions).where(S.sessions.c.user_id == uid))

    def admin_user(self) -> int:
        """The id of the site admin ``admin``, created (without a password) if missing."""
        got = self.user("admin")
        if got is not None:
            return int(got["id"])
        return self.add_user("admin", admin=True)

    def principal(
        self, user_id: int, scope: str, via: str, key_id: str | None = None
    ) -> Principal | None:
        """The principal of an enabled user (None for a disabled or deleted one)."""
        u, m = S.users.c, S.team_members.c
        with self.db.read() as conn:
            row = conn.execute(
                select(u.name, u.is_admin, u.disabled_at).where(u.id == user_id)
            ).first()
            if row is None or row.disabled_at is not None:
                return None
            teams = {
                t: r for t, r in conn.execute(select(m.team_id, m.role).where(m.user_id == user_id))
            }
        if via != "key" and row.is_admin:
            scope = "admin"  # a site admin signed in to the dashboard administers
        return Principal(user_id, row.name, bool(row.is_admin), scope, teams, key_id, via)

    def check_login(self, name: str, password: str) -> int | None:
        """The user id when ``password`` is right for an enabled user, else None."""
        got = self.user(name) if isinstance(name, str) and entity_problem(name) is None else None
        ok = verify_password(got["password_hash"] if got else None, password)
        if not ok or got is None or got["disabled_at"] is not None:
            return None
        return int(got["id"])

    # -- teams --------------------------------------------------------------------------------

    def add_team(self, name: str) -> int:
        check_name(name)
        with self.db.tx() as conn:
            if self._name_taken(conn, name):
                raise Problem(409, "name_taken", f"a user or team named {name!r} exists", "name")
            conn.execute(S.teams.insert(), [{"name": name, "created_at": self.db.clock()}])
            return int(
                conn.execute(select(S.teams.c.id).where(S.teams.c.name == name)).scalar_one()
            )

    def team_id(self, name: str) -> int | None:
        with self.db.read() as conn:
            v = conn.execute(select(S.teams.c.id).where(S.teams.c.name == name)).scalar()
        return None if v is None else int(v)

    def need_team(self, name: str) -> int:
        tid = self.team_id(name)
        if tid is None:
            raise Problem(404, "team_not_found", f"no team {name!r}", "team")
        return tid

    def team_rows(self) -> list[dict[str, Any]]:
        t = S.teams.c
        with self.db.read() as conn:
            return [dict(r._mapping) for r in conn.execute(select(t.id, t.name))]

    def teams(self) -> list[dict[str, Any]]:
        t, m, u = S.teams.c, S.team_members.c, S.users.c
        with self.db.read() as conn:
            teams = {
                r.id: {"name": r.name, "members": []} for r in conn.execute(select(t.id, t.name))
            }
            q = select(m.team_id, u.name, m.role).join_from(
                S.team_members, S.users, m.user_id == u.id
            )
            for tid, uname, role in conn.execute(q.order_by(u.name)):
                teams[tid]["members"].append({"user": uname, "role": role})
        return sorted(teams.values(), key=lambda x: str(x["name"]))

    def set_member(self, team: str, user: str, role: str | None) -> None:
        """Add a user to a team with ``role``, change it, or remove them (``role=None``)."""
        if role is not None and role not in ROLES:
            raise Problem(422, "invalid", f"role: expected one of {', '.join(ROLES)}", "role")
        tid = self.need_team(team)
        uid = int(self.need_user(user)["id"])
        m = S.team_members.c
        with self.db.tx() as conn:
            conn.execute(delete(S.team_members).where(m.team_id == tid, m.user_id == uid))
            if role is not None:
                conn.execute(
                    S.team_members.insert(), [{"team_id": tid, "user_id": uid, "role": role}]
                )

    def entity(self, name: str) -> tuple[str, int] | None:
        """``("user", id)`` or ``("team", id)`` for an entity name, None if unknown."""
        with self.db.read() as conn:
            return entity_in(conn, name)

    # -- sessions -----------------------------------------------------------------------------

    def new_session(self, user_id: int) -> tuple[str, str]:
        """A new dashboard session ``(token, csrf)``; only the token's sha256 is stored."""
        token, csrf = secrets.token_urlsafe(32), secrets.token_urlsafe(24)
        now = self.db.clock()
        row = {
            "token_hash": _sha(token),
            "user_id": user_id,
            "csrf": csrf,
            "created_at": now,
            "expires_at": now + SESSION_SECONDS,
        }
        with self.db.tx() as conn:
            conn.execute(delete(S.sessions).where(S.sessions.c.expires_at < now))
            conn.execute(S.sessions.insert(), [row])
        return token, csrf

    def session(self, token: str) -> tuple[int, str] | None:
        """``(user_id, csrf)`` of a live session."""
        s = S.sessions.c
        with self.db.read() as conn:
            row = conn.execute(
                select(s.user_id, s.csrf).where(
                    s.token_hash == _sha(token), s.expires_at > self.db.clock()
                )
            ).first()
        return None if row is None else (int(row[0]), str(row[1]))

    def end_session(self, token: str) -> None:
        with self.db.tx() as conn:
            conn.execute(delete(S.sessions).where(S.sessions.c.token_hash == _sha(token)))

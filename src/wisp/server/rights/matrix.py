"""Who may do what: the one allow/deny matrix of the server (docs/server.md, "Trust model").

Everything here is a pure decision over small values; the tables behind them are
:mod:`store.users`, the HTTP side is :mod:`http.auth` (reads, scopes, admin) and the store's
write guard (run creation, run ownership, writer ids) inside the write transaction.

- A :class:`Principal` is the caller: a user (through an API key, a dashboard session or a
  trusted proxy header) with the key's scope, or anonymous (``user_id is None``).
- A :class:`ProjectInfo` is a project: owned by a user or a team, with a visibility.

Read a project: site admins; anyone (anonymous included) for ``public-read``; the owning
user; for a team project every member (viewers included), except that a ``private`` team
project hides from viewers; for a ``team``-visibility user project, every member of a team
the owner belongs to.  Create runs in a project: site admins, the owning user, a team's
members and admins.  Administer a project (visibility, other people's run metadata): site
admins, the owning user, the team's admins.  Write to a run (records, heartbeats, state,
project): its owner only.  Create a project under an entity (``entity/name``, or give a
project to it): site admins, the user themself, a team's members and admins.  Scopes cap
all of it: a ``read`` key only reads, a ``write`` key reads and writes, ``admin`` adds site
administration (and only for site admins).
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass, field

from wisp.server.http.problem import Problem

__all__ = [
    "ACTOR",
    "ROLES",
    "SCOPES",
    "VISIBILITIES",
    "Principal",
    "ProjectInfo",
    "administers_people",
    "can_admin_project",
    "can_create_under",
    "can_read_project",
    "can_write_project",
    "need_scope",
]

SCOPES = ("read", "write", "admin")
ROLES = ("viewer", "member", "admin")
VISIBILITIES = ("private", "team", "public-read")
_LEVEL = {"read": 1, "write": 2, "admin": 3}


@dataclass(frozen=True)
class Principal:
    """The caller.  ``teams`` maps team id to the caller's role in it."""

    user_id: int | None
    name: str = ""
    is_admin: bool = False
    scope: str = "read"
    teams: dict[int, str] = field(default_factory=dict)
    key_id: str | None = None
    via: str = "anonymous"  # key | session | sso | anonymous | local

    @property
    def anonymous(self) -> bool:
        return self.user_id is None


ANONYMOUS = Principal(None)
# The principal the current request acts as, set by the auth middleware and read by the
# store's write guard inside its transaction.  No value (None): a trusted caller with
# database access (the CLI, tests driving the store directly).
ACTOR: ContextVar[Principal | None] = ContextVar("wisp_actor", default=None)


@dataclass(frozen=True)
class ProjectInfo:
    name: str
    owner_user: int | None
    owner_team: int | None
    visibility: str
    owner_user_teams: frozenset[int] = frozenset()


def need_scope(p: Principal, scope: str) -> None:
    """401 for an anonymous caller, 403 when the key's scope is below ``scope``."""
    if p.anonymous and not (scope == "read" and p.via == "local"):
        raise Problem(
            401, "unauthorized", "sign in or send an API key: Authorization: Bearer <key>"
        )
    if _LEVEL[p.scope] < _LEVEL[scope]:
        raise Problem(403, "forbidden", f"this needs a {scope} key, got a {p.scope} key")
    if scope == "admin" and not p.is_admin:
        raise Problem(403, "forbidden", f"only site admins may do this; {p.name!r} is not one")


def administers_people(p: Principal) -> bool:
    """Whether ``p`` acts on other users' accounts, keys and teams: a site admin with the
    ``admin`` scope (an admin key, or a dashboard session of a site admin)."""
    return p.is_admin and _LEVEL[p.scope] >= _LEVEL["admin"]


def can_read_project(p: Principal, proj: ProjectInfo) -> bool:
    if p.is_admin or proj.visibility == "public-read" or p.via == "local":
        return True
    if p.anonymous:
        return False
    if proj.owner_user is not None:
        if proj.owner_user == p.user_id:
            return True
        return proj.visibility == "team" and any(t in p.teams for t in proj.owner_user_teams)
    role = p.teams.get(proj.owner_team) if proj.owner_team is not None else None
    if role is None:
        return False
    return proj.visibility != "private" or role != "viewer"


def can_write_project(p: Principal, proj: ProjectInfo) -> bool:
    if p.anonymous or _LEVEL[p.scope] < 2:
        return False
    if p.is_admin or (proj.owner_user is not None and proj.owner_user == p.user_id):
        return True
    role = p.teams.get(proj.owner_team) if proj.owner_team is not None else None
    return role in ("member", "admin")


def can_create_under(p: Principal, owner: tuple[str, int]) -> bool:
    """Whether ``p`` may create (or give away) a project owned by ``owner`` (``("user"|"team",
    id)``): the project ``entity/name`` of a user or team is created by that user or a member."""
    if p.anonymous or _LEVEL[p.scope] < 2:
        return False
    if p.is_admin or owner == ("user", p.user_id):
        return True
    return owner[0] == "team" and p.teams.get(owner[1]) in ("member", "admin")


def can_admin_project(p: Principal, proj: ProjectInfo) -> bool:
    if p.anonymous or _LEVEL[p.scope] < 2:
        return False
    if p.is_admin or (proj.owner_user is not None and proj.owner_user == p.user_id):
        return True
    return proj.owner_team is not None and p.teams.get(proj.owner_team) == "admin"


def deny_read(p: Principal, what: str) -> Problem:
    if p.anonymous:
        return Problem(401, "unauthorized", f"{what} is not public: sign in or send an API key")
    return Problem(403, "forbidden", f"{p.name!r} may not read {what}")

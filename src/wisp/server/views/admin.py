"""People endpoints: sign-in, users, teams, API keys, project settings, the audit log.

Declared with :func:`~wisp.server.http.routes.endpoint` like every endpoint (shapes below;
a wrong field is a 422 naming it).  Identity comes from the auth middleware
(:func:`http.auth.principal_of`), which also refuses callers without the route's scope; the
finer rights (site admin, team admin, project admin, one's own keys) are checked here
through :mod:`wisp.server.rights.matrix`.  Every change is written to the audit log.
"""

from __future__ import annotations

import asyncio
from typing import Annotated, ClassVar

import msgspec
from msgspec import Meta
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from wisp._protocol import clean_text, project_entity
from wisp.server.blobs.base import BlobStore
from wisp.server.http.auth import CSRF_COOKIE, SESSION_COOKIE, login_csrf, principal_of
from wisp.server.http.body import json_response
from wisp.server.http.clientaddr import request_client
from wisp.server.http.problem import Problem, clean_str
from wisp.server.http.routes import In, endpoint
from wisp.server.rights.matrix import (
    SCOPES,
    Principal,
    administers_people,
    can_admin_project,
    can_create_under,
    can_read_project,
    need_scope,
)
from wisp.server.settings import ServerSettings
from wisp.server.store.facade import Store
from wisp.server.store.users import SESSION_SECONDS, check_name

__all__ = ["AdminApi"]

_FAIL_LIMIT = 10  # failed sign-ins per user name and address (5x per address) in _FAIL_WINDOW s
_FAIL_WINDOW = 600.0
_SLOW_AFTER = 10  # failed sign-ins per user name (any address) in _FAIL_WINDOW s before ...
_SLOW_MAX = 4.0  # ... each further attempt for that name waits, doubling up to this (seconds)


Text = Annotated[str, Meta(max_length=200)]
Name = Annotated[str, Meta(max_length=64)]


# -- request shapes ---------------------------------------------------------------------------


class LoginBody(msgspec.Struct, forbid_unknown_fields=True):
    name: Text
    password: Text


class NewUser(msgspec.Struct, forbid_unknown_fields=True):
    name: Name
    password: Text | None = None
    admin: bool = False


class NewTeam(msgspec.Struct, forbid_unknown_fields=True):
    name: Name


class Membership(msgspec.Struct, forbid_unknown_fields=True):
    role: Annotated[str, Meta(description="viewer, member or admin")]


class NewKey(msgspec.Struct, forbid_unknown_fields=True):
    name: Text = ""
    scope: Annotated[str, Meta(description="read, write or admin")] = "write"
    expires_in_days: float | None = None


class ProjectSettings(msgspec.Struct, forbid_unknown_fields=True):
    owner: Name | None = None
    visibility: Annotated[str, Meta(description="private, team or public-read")] | None = None


class UserPath(msgspec.Struct):
    name: Text


class MemberPath(msgspec.Struct):
    team: Text
    user: Text


class KeyPath(msgspec.Struct):
    key_id: Text


class ProjectPath(msgspec.Struct):
    project: Text


class KeysQuery(msgspec.Struct):
    all: Annotated[str, Meta(max_length=8, description="1: every key (site admins)")] = ""


class AuditQuery(msgspec.Struct):
    limit: Annotated[int, Meta(ge=1, le=1000)] = 100
    before: Annotated[int, Meta(ge=0, le=2**62)] = 0
    user: Name | None = None


# -- answers ----------------------------------------------------------------------------------


class SignedIn(msgspec.Struct):
    user: str
    csrf: str


class LoggedOut(msgspec.Struct):
    ok: bool


class TeamRole(msgspec.Struct):
    team: str
    role: str


class Me(msgspec.Struct):
    user: str | None
    is_admin: bool
    teams: list[TeamRole]
    csrf: str | None
    via: str
    auth_required: bool


class UserRow(msgspec.Struct):
    open_members: ClassVar[bool] = True
    id: int
    name: str
    is_admin: bool


class UserList(msgspec.Struct):
    users: list[UserRow]


class Named(msgspec.Struct):
    name: str


class UserDisabled(msgspec.Struct):
    name: str
    disabled: bool


class TeamMember(msgspec.Struct):
    user: str
    role: str


class TeamRow(msgspec.Struct):
    name: str
    members: list[TeamMember]


class TeamList(msgspec.Struct):
    teams: list[TeamRow]


class MemberSet(msgspec.Struct):
    team: str
    user: str
    role: str | None


class KeyRow(msgspec.Struct):
    open_members: ClassVar[bool] = True
    id: str
    scope: str
    name: str
    user: str | None


class KeyList(msgspec.Struct):
    keys: list[KeyRow]


class KeyCreated(msgspec.Struct):
    id: str
    key: Annotated[str, Meta(description="the secret, shown once")]
    scope: str


class KeyRevoked(msgspec.Struct):
    id: str
    revoked: bool


class ProjectOut(msgspec.Struct):
    name: str
    owner: str | None
    owner_kind: str | None
    visibility: str


class AuditRow(msgspec.Struct):
    open_members: ClassVar[bool] = True
    id: int
    ts: float
    actor: str
    action: str
    target: str
    status: int
    addr: str  # the client's address (through trusted proxies only)


class AuditPage(msgspec.Struct):
    audit: list[AuditRow]


class AdminApi:
    def __init__(self, store: Store, settings: ServerSettings, blobs: BlobStore) -> None:
        self.store = store
        self.settings = settings

    async def _log(self, request: Request, action: str, target: str, status: int = 200) -> None:
        await run_in_threadpool(
            self.store.access.audit,
            principal_of(request),
            action,
            target,
            status,
            request_client(request),
        )

    @staticmethod
    def _limit(key: str) -> tuple[float, float]:
        """(rate, burst) of the failed sign-ins bucket ``key``: ``ua:name|addr`` (a name from
        one address), ``a:addr`` (an address) or ``u:name`` (a name from anywhere: slows down)."""
        burst = float(_FAIL_LIMIT if key.startswith("ua:") else 5 * _FAIL_LIMIT)
        return burst / _FAIL_WINDOW, burst

    def _failed_too_often(self, keys: list[str]) -> bool:
        """Whether this name from this address, or this address, failed to sign in too often
        lately (the buckets are in the database: every server process counts the same)."""
        return any(self.store.limits.left(k, *self._limit(k)) < 1.0 for k in keys)

    def _slowdown(self, name_key: str) -> float:
        """Seconds to wait before checking a password for a name that failed often lately from
        anywhere: exponential, capped, and never a refusal (its owner still signs in)."""
        rate, burst = self._limit(name_key)
        over = burst - self.store.limits.left(name_key, rate, burst) - _SLOW_AFTER
        return 0.0 if over < 0 else min(_SLOW_MAX, 0.25 * 2.0 ** min(over, 8))

    def _failed(self, keys: list[str]) -> None:
        for k in keys:
            self.store.limits.take(k, *self._limit(k))

    def _secure(self, request: Request) -> bool:
        return self.settings.tls or request.url.scheme == "https"

    # -- sign-in ------------------------------------------------------------------------------

    @endpoint(
        "POST",
        "/auth/login",
        scope="public",
        summary="Sign in: sets the session and CSRF cookies",
        body=LoginBody,
        responses={200: SignedIn},
    )
    async def login(self, r: In) -> Response:
        request = r.request
        body = r.body
        addr = request_client(request)
        shown = clean_text(body.name[:64])  # storable in the limit and audit rows (no NUL)
        why = login_csrf(request.headers)
        if why is not None:
            await self._log(request, "auth.login_refused", shown, 403)
            raise Problem(403, "csrf", why)
        keys = [f"ua:{shown}|{addr}", f"a:{addr}"]
        if await run_in_threadpool(self._failed_too_often, keys):
            await self._log(request, "auth.login_refused", shown, 429)
            raise Problem(429, "rate_limited", "too many failed sign-ins: wait a few minutes")
        delay = await run_in_threadpool(self._slowdown, f"u:{shown}")
        if delay:
            await asyncio.sleep(delay)
        uid = await run_in_threadpool(self.store.users.check_login, body.name, body.password)
        if uid is None:
            await run_in_threadpool(self._failed, [*keys, f"u:{shown}"])
            await self._log(request, "auth.login_failed", shown, 401)
            raise Problem(401, "unauthorized", "wrong user name or password")
        token, csrf = await run_in_threadpool(self.store.users.new_session, uid)
        resp = json_response({"user": body.name, "csrf": csrf})
        secure = self._secure(request)
        resp.set_cookie(
            SESSION_COOKIE,
            token,
            max_age=SESSION_SECONDS,
            httponly=True,
            samesite="strict",
            secure=secure,
            path="/",
        )
        resp.set_cookie(
            CSRF_COOKIE,
            csrf,
            max_age=SESSION_SECONDS,
            httponly=False,
            samesite="strict",
            secure=secure,
            path="/",
        )
        p = Principal(uid, body.name, via="session")
        await run_in_threadpool(self.store.access.audit, p, "auth.login", body.name, 200, addr)
        return resp

    @endpoint(
        "POST",
        "/auth/logout",
        scope="public",
        summary="Sign out: ends the session",
        responses={200: LoggedOut},
    )
    async def logout(self, r: In) -> Response:
        request = r.request
        token = request.cookies.get(SESSION_COOKIE)
        if token and len(token) <= 200:
            await run_in_threadpool(self.store.users.end_session, token)
        resp = json_response({"ok": True})
        resp.delete_cookie(SESSION_COOKIE, path="/")
        resp.delete_cookie(CSRF_COOKIE, path="/")
        return resp

    @endpoint(
        "GET",
        "/auth/me",
        scope="public",
        summary="Who is calling (user, teams, CSRF token)",
        responses={200: Me},
    )
    async def me(self, r: In) -> Response:
        request = r.request
        p = principal_of(request)
        csrf = None
        token = request.cookies.get(SESSION_COOKIE)
        if p.via == "session" and token and len(token) <= 200:
            got = await run_in_threadpool(self.store.users.session, token)
            csrf = got[1] if got else None
        names = await run_in_threadpool(self._team_names)
        teams = [TeamRole(names.get(t, str(t)), role) for t, role in sorted(p.teams.items())]
        me = Me(
            p.name if p.user_id is not None else None,
            p.is_admin,
            teams,
            csrf,
            p.via,
            not self.settings.no_auth,
        )
        return Response(msgspec.json.encode(me), media_type="application/json")

    def _team_names(self) -> dict[int, str]:
        return {t["id"]: t["name"] for t in self.store.users.team_rows()}

    # -- users and teams ----------------------------------------------------------------------

    @endpoint(
        "GET",
        "/users",
        scope="read",
        summary="Users (any signed-in caller)",
        responses={200: UserList},
    )
    async def users(self, r: In) -> Response:
        request = r.request
        need_scope(principal_of(request), "read")
        return json_response({"users": await run_in_threadpool(self.store.users.users)})

    @endpoint(
        "POST",
        "/users",
        scope="admin",
        summary="Add a user (site admins)",
        body=NewUser,
        responses={201: Named},
    )
    async def add_user(self, r: In) -> Response:
        request = r.request
        need_scope(principal_of(request), "admin")
        body = r.body
        await run_in_threadpool(self.store.users.add_user, body.name, body.password, body.admin)
        await self._log(request, "user.add", body.name, 201)
        return json_response({"name": body.name}, 201)

    @endpoint(
        "POST",
        "/users/{name}/disable",
        scope="admin",
        summary="Disable a user (site admins)",
        path_params=UserPath,
        responses={200: UserDisabled},
    )
    async def disable_user(self, r: In) -> Response:
        request = r.request
        need_scope(principal_of(request), "admin")
        name = check_name(request.path_params["name"])
        await run_in_threadpool(self.store.users.set_disabled, name, True)
        await self._log(request, "user.disable", name)
        return json_response({"name": name, "disabled": True})

    @endpoint(
        "GET", "/teams", scope="read", summary="Teams and their members", responses={200: TeamList}
    )
    async def teams(self, r: In) -> Response:
        request = r.request
        need_scope(principal_of(request), "read")
        return json_response({"teams": await run_in_threadpool(self.store.users.teams)})

    @endpoint(
        "POST",
        "/teams",
        scope="write",
        summary="Add a team (the caller becomes its admin)",
        body=NewTeam,
        responses={201: Named},
    )
    async def add_team(self, r: In) -> Response:
        request = r.request
        p = principal_of(request)
        need_scope(p, "write")
        body = r.body
        await run_in_threadpool(self.store.users.add_team, body.name)
        if p.user_id is not None:  # the creator administers it
            await run_in_threadpool(self.store.users.set_member, body.name, p.name, "admin")
        await self._log(request, "team.add", body.name, 201)
        return json_response({"name": body.name}, 201)

    async def _need_team_admin(self, request: Request) -> tuple[str, str]:
        p = principal_of(request)
        need_scope(p, "write")
        team = check_name(request.path_params["team"], "team")
        user = check_name(request.path_params["user"], "user")
        tid = await run_in_threadpool(self.store.users.need_team, team)
        if not administers_people(p) and p.teams.get(tid) != "admin":
            raise Problem(
                403,
                "forbidden",
                f"only admins of team {team!r} (or a site admin's admin key) change its members",
            )
        return team, user

    @endpoint(
        "PUT",
        "/teams/{team}/members/{user}",
        scope="write",
        summary="Set a member's role (team admins)",
        path_params=MemberPath,
        body=Membership,
        responses={200: MemberSet},
    )
    async def set_member(self, r: In) -> Response:
        request = r.request
        team, user = await self._need_team_admin(request)
        body = r.body
        await run_in_threadpool(self.store.users.set_member, team, user, body.role)
        await self._log(request, "team.member", f"{team}/{user}={body.role}")
        return json_response({"team": team, "user": user, "role": body.role})

    @endpoint(
        "DELETE",
        "/teams/{team}/members/{user}",
        scope="write",
        summary="Remove a member (team admins)",
        path_params=MemberPath,
        responses={200: MemberSet},
    )
    async def del_member(self, r: In) -> Response:
        request = r.request
        team, user = await self._need_team_admin(request)
        await run_in_threadpool(self.store.users.set_member, team, user, None)
        await self._log(request, "team.member", f"{team}/{user}=none")
        return json_response({"team": team, "user": user, "role": None})

    # -- keys ---------------------------------------------------------------------------------

    @endpoint(
        "GET",
        "/keys",
        scope="read",
        summary="The caller's API keys (?all=1: every key, a site admin's admin key)",
        query=KeysQuery,
        responses={200: KeyList},
    )
    async def keys(self, r: In) -> Response:
        request = r.request
        p = principal_of(request)
        need_scope(p, "read")
        everyone = administers_people(p) and r.query.all in ("1", "true")
        keys = await run_in_threadpool(self.store.list_keys, None if everyone else p.user_id)
        return json_response({"keys": keys})

    @endpoint(
        "POST",
        "/keys",
        scope="write",
        summary="Create an API key of the caller (secret shown once)",
        body=NewKey,
        responses={201: KeyCreated},
    )
    async def add_key(self, r: In) -> Response:
        request = r.request
        p = principal_of(request)
        need_scope(p, "write")
        body = r.body
        if body.scope not in SCOPES:
            raise Problem(422, "invalid", f"scope: expected one of {', '.join(SCOPES)}", "scope")
        if body.scope == "admin" and not p.is_admin:
            raise Problem(403, "forbidden", "only site admins hold admin keys", "scope")
        if p.via == "key" and SCOPES.index(body.scope) > SCOPES.index(p.scope):
            raise Problem(403, "forbidden", f"a {p.scope} key cannot create a {body.scope} key")
        clean_str(body.name, "name", 200)  # storable text (no NUL: PostgreSQL refuses it)
        expires = None
        if body.expires_in_days is not None:
            if not 0 < body.expires_in_days <= 3660:
                raise Problem(422, "invalid", "expires_in_days: expected 0 < days <= 3660")
            expires = self.store.clock() + body.expires_in_days * 86400
        key_id, secret = await run_in_threadpool(
            self.store.create_key, body.scope, body.name, p.user_id, expires
        )
        await self._log(request, "key.create", f"{p.name}:{key_id}:{body.scope}", 201)
        return json_response({"id": key_id, "key": secret, "scope": body.scope}, 201)

    @endpoint(
        "DELETE",
        "/keys/{key_id}",
        scope="write",
        summary="Revoke one of the caller's keys",
        path_params=KeyPath,
        responses={200: KeyRevoked},
    )
    async def revoke_key(self, r: In) -> Response:
        request = r.request
        p = principal_of(request)
        need_scope(p, "write")
        key_id = request.path_params["key_id"][:32]
        owner = None if administers_people(p) else p.user_id
        if not await run_in_threadpool(self.store.revoke_key, key_id, owner):
            raise Problem(404, "key_not_found", f"no active key {key_id!r} of yours", "key_id")
        await self._log(request, "key.revoke", key_id)
        return json_response({"id": key_id, "revoked": True})

    # -- projects -----------------------------------------------------------------------------

    @endpoint(
        "GET",
        "/projects/{project}",
        scope="read",
        summary="A project's owner and visibility",
        path_params=ProjectPath,
        responses={200: ProjectOut},
    )
    async def project(self, r: In) -> Response:
        request = r.request
        p = principal_of(request)
        if not p.anonymous:  # anonymous callers read public-read projects' settings
            need_scope(p, "read")
        name = request.path_params["project"]
        info = await run_in_threadpool(self.store.access.project, name)
        if info is None or not can_read_project(p, info):
            raise Problem(404, "project_not_found", f"no project {name!r} you may read")
        return json_response(await run_in_threadpool(self.store.access.describe, name))

    @endpoint(
        "PUT",
        "/projects/{project}",
        scope="write",
        summary="Create or change a project (its admins)",
        path_params=ProjectPath,
        body=ProjectSettings,
        responses={200: ProjectOut},
    )
    async def set_project(self, r: In) -> Response:
        request = r.request
        p = principal_of(request)
        need_scope(p, "write")
        name = request.path_params["project"]
        body = r.body
        info = await run_in_threadpool(self.store.access.project, name)
        if info is not None and not can_admin_project(p, info):
            raise Problem(403, "forbidden", f"{p.name!r} does not administer project {name!r}")
        owner = None
        entity = project_entity(name)[0]
        given = body.owner if body.owner is not None or info is not None else entity or None
        if given is not None:
            ent = await run_in_threadpool(self.store.users.entity, check_name(given, "owner"))
            if ent is None:
                raise Problem(404, "entity_not_found", f"no user or team {given!r}", "owner")
            if not can_create_under(p, ent):
                raise Problem(403, "forbidden", f"{p.name!r} may not give projects to {given!r}")
            owner = ent
        elif info is None:
            owner = ("user", p.user_id) if p.user_id is not None else None
        await run_in_threadpool(self.store.access.set_project, name, owner, body.visibility)
        await self._log(request, "project.set", f"{name} owner={body.owner} vis={body.visibility}")
        return json_response(await run_in_threadpool(self.store.access.describe, name))

    # -- audit --------------------------------------------------------------------------------

    @endpoint(
        "GET",
        "/audit",
        scope="admin",
        summary="The audit log, newest first (site admins)",
        query=AuditQuery,
        responses={200: AuditPage},
    )
    async def audit(self, r: In) -> Response:
        request = r.request
        need_scope(principal_of(request), "admin")
        q: AuditQuery = r.query
        rows = await run_in_threadpool(
            self.store.access.audit_log, q.limit, q.before or None, q.user
        )
        return json_response({"audit": rows})

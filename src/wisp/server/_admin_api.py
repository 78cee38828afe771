"""People endpoints: sign-in, users, teams, API keys, project settings, the audit log.

Request bodies are msgspec Structs (a wrong field is a 422 naming it).  Identity comes from
the auth middleware (:func:`._auth.principal_of`); the finer rights (site admin, team
admin, project admin, one's own keys) are checked here through :mod:`._rights`.  Every
change is written to the audit log.
"""

from __future__ import annotations

import re
import time
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from wisp.server._auth import CSRF_COOKIE, SESSION_COOKIE, principal_of
from wisp.server._http import json_response, q_int, q_str, read_body
from wisp.server._problem import Problem
from wisp.server._rights import (
    SCOPES,
    Principal,
    can_admin_project,
    can_read_project,
    need_scope,
)
from wisp.server._settings import ServerSettings
from wisp.server._store import Store
from wisp.server._store_users import SESSION_SECONDS, check_name

__all__ = ["admin_openapi_paths", "admin_routes"]

_FAIL_LIMIT = 10  # failed sign-ins per user name (5x per address) within _FAIL_WINDOW s
_FAIL_WINDOW = 600.0


class LoginBody(msgspec.Struct, forbid_unknown_fields=True):
    name: str
    password: str


class NewUser(msgspec.Struct, forbid_unknown_fields=True):
    name: str
    password: str | None = None
    admin: bool = False


class NewTeam(msgspec.Struct, forbid_unknown_fields=True):
    name: str


class Membership(msgspec.Struct, forbid_unknown_fields=True):
    role: str


class NewKey(msgspec.Struct, forbid_unknown_fields=True):
    name: str = ""
    scope: str = "write"
    expires_in_days: float | None = None


class ProjectSettings(msgspec.Struct, forbid_unknown_fields=True):
    owner: str | None = None
    visibility: str | None = None


class Me(msgspec.Struct):
    user: str | None
    is_admin: bool
    teams: list[dict[str, str]]
    csrf: str | None
    via: str
    auth_required: bool


Handler = Callable[[Request], Awaitable[Response]]


async def _body(request: Request, typ: type[Any]) -> Any:
    raw = await read_body(request, 64 * 1024)
    try:
        return msgspec.json.decode(raw or b"{}", type=typ)
    except msgspec.ValidationError as e:
        raise Problem(422, "invalid", f"body: {e}", "body") from None
    except msgspec.DecodeError as e:
        raise Problem(400, "bad_json", f"request body is not valid JSON: {e}", "body") from None


_S = {"type": "string", "maxLength": 200}
_NAME = {"type": "string", "pattern": "^[a-z0-9][a-z0-9_.-]{0,63}$"}


def _obj(props: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    return (
        {
            "type": "object",
            "additionalProperties": False,
            "properties": props,
            "required": list(required),
        }
        if required
        else {"type": "object", "additionalProperties": False, "properties": props}
    )


# (method, path, handler name, summary, request body schema) - the routes and their OpenAPI
_TABLE: tuple[tuple[str, str, str, str, dict[str, Any] | None], ...] = (
    (
        "POST",
        "/auth/login",
        "login",
        "Sign in: sets the session and CSRF cookies",
        _obj({"name": _S, "password": _S}, ("name", "password")),
    ),
    ("POST", "/auth/logout", "logout", "Sign out: ends the session", None),
    ("GET", "/auth/me", "me", "Who is calling (user, teams, CSRF token)", None),
    ("GET", "/users", "users", "Users (any signed-in caller)", None),
    (
        "POST",
        "/users",
        "add_user",
        "Add a user (site admins)",
        _obj({"name": _NAME, "password": _S, "admin": {"type": "boolean"}}, ("name",)),
    ),
    ("POST", "/users/{name}/disable", "disable_user", "Disable a user (site admins)", None),
    ("GET", "/teams", "teams", "Teams and their members", None),
    (
        "POST",
        "/teams",
        "add_team",
        "Add a team (the caller becomes its admin)",
        _obj({"name": _NAME}, ("name",)),
    ),
    (
        "PUT",
        "/teams/{team}/members/{user}",
        "set_member",
        "Set a member's role (team admins)",
        _obj({"role": {"type": "string", "enum": ["viewer", "member", "admin"]}}, ("role",)),
    ),
    ("DELETE", "/teams/{team}/members/{user}", "del_member", "Remove a member (team admins)", None),
    ("GET", "/keys", "keys", "The caller's API keys (?all=1: every key, site admins)", None),
    (
        "POST",
        "/keys",
        "add_key",
        "Create an API key of the caller (secret shown once)",
        _obj(
            {
                "name": _S,
                "scope": {"type": "string", "enum": ["read", "write", "admin"]},
                "expires_in_days": {"type": "number"},
            }
        ),
    ),
    ("DELETE", "/keys/{key_id}", "revoke_key", "Revoke one of the caller's keys", None),
    ("GET", "/projects/{project}", "project", "A project's owner and visibility", None),
    (
        "PUT",
        "/projects/{project}",
        "set_project",
        "Create or change a project (its admins)",
        _obj(
            {
                "owner": _NAME,
                "visibility": {"type": "string", "enum": ["private", "team", "public-read"]},
            }
        ),
    ),
    ("GET", "/audit", "audit", "The audit log, newest first (site admins)", None),
)


def admin_routes(store: Store, settings: ServerSettings) -> list[Route]:
    """The routes of this module, bound to ``store``."""
    api = _AdminApi(store, settings)
    return [
        Route(f"/api/v1{path}", api.endpoint(getattr(api, name)), methods=[method])
        for method, path, name, _, _ in _TABLE
    ]


def admin_openapi_paths() -> dict[str, Any]:
    """The OpenAPI path items of these routes (merged into ``/api/openapi.json``)."""
    paths: dict[str, Any] = {}
    err = {"$ref": "#/components/responses/Error"}
    for method, path, _, summary, body in _TABLE:
        params = [
            {"name": n, "in": "path", "required": True, "schema": _S}
            for n in re.findall(r"{(\w+)}", path)
        ]
        if path == "/audit":
            params += [
                {"name": "limit", "in": "query", "schema": {"type": "integer"}},
                {"name": "before", "in": "query", "schema": {"type": "integer"}},
                {"name": "user", "in": "query", "schema": _S},
            ]
        op: dict[str, Any] = {
            "summary": summary,
            "parameters": params,
            "responses": {"200": {"description": "OK"}, "4XX": err},
            "security": [{"bearer": []}, {"session": []}],
        }
        if body is not None:
            op["requestBody"] = {
                "required": True,
                "content": {"application/json": {"schema": body}},
            }
        paths.setdefault(f"/api/v1{path}", {})[method.lower()] = op
    return paths


class _AdminApi:
    def __init__(self, store: Store, settings: ServerSettings) -> None:
        self.store = store
        self.settings = settings
        self.fails: dict[str, list[float]] = {}  # "u:name" / "a:addr" -> failed sign-ins

    def endpoint(self, fn: Handler) -> Handler:
        async def handle(request: Request) -> Response:
            try:
                return await fn(request)
            except Problem as p:
                return json_response(p.body(), p.status)

        handle.__name__ = fn.__name__
        return handle

    async def _log(self, request: Request, action: str, target: str, status: int = 200) -> None:
        addr = request.client.host if request.client else ""
        await run_in_threadpool(
            self.store.access.audit, principal_of(request), action, target, status, addr
        )

    def _failures(self, key: str, now: float) -> bool:
        """Whether ``key`` (a user name or an address) failed too often lately."""
        recent = [t for t in self.fails.get(key, ()) if t > now - _FAIL_WINDOW]
        if recent:
            self.fails[key] = recent
        else:
            self.fails.pop(key, None)
        limit = _FAIL_LIMIT if key.startswith("u:") else 5 * _FAIL_LIMIT
        return len(recent) >= limit

    def _secure(self, request: Request) -> bool:
        return self.settings.tls or request.url.scheme == "https"

    # -- sign-in ------------------------------------------------------------------------------

    async def login(self, request: Request) -> Response:
        origin = request.headers.get("origin")
        if origin is not None and origin.split("://", 1)[-1] != request.headers.get("host"):
            raise Problem(403, "csrf", "cross-site sign-in refused (Origin does not match Host)")
        body = await _body(request, LoginBody)
        addr = request.client.host if request.client else ""
        now = time.monotonic()
        tries = [k for k in (f"u:{body.name[:64]}", f"a:{addr}") if self._failures(k, now)]
        if tries:
            raise Problem(429, "rate_limited", "too many failed sign-ins: wait a few minutes")
        uid = await run_in_threadpool(self.store.users.check_login, body.name, body.password)
        if uid is None:
            for k in (f"u:{body.name[:64]}", f"a:{addr}"):
                self.fails.setdefault(k, []).append(now)
            await self._log(request, "auth.login_failed", body.name[:64], 401)
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

    async def logout(self, request: Request) -> Response:
        token = request.cookies.get(SESSION_COOKIE)
        if token and len(token) <= 200:
            await run_in_threadpool(self.store.users.end_session, token)
        resp = json_response({"ok": True})
        resp.delete_cookie(SESSION_COOKIE, path="/")
        resp.delete_cookie(CSRF_COOKIE, path="/")
        return resp

    async def me(self, request: Request) -> Response:
        p = principal_of(request)
        csrf = None
        token = request.cookies.get(SESSION_COOKIE)
        if p.via == "session" and token and len(token) <= 200:
            got = await run_in_threadpool(self.store.users.session, token)
            csrf = got[1] if got else None
        names = await run_in_threadpool(self._team_names)
        teams = [{"team": names.get(t, str(t)), "role": r} for t, r in sorted(p.teams.items())]
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

    async def users(self, request: Request) -> Response:
        need_scope(principal_of(request), "read")
        return json_response({"users": await run_in_threadpool(self.store.users.users)})

    async def add_user(self, request: Request) -> Response:
        need_scope(principal_of(request), "admin")
        body = await _body(request, NewUser)
        await run_in_threadpool(self.store.users.add_user, body.name, body.password, body.admin)
        await self._log(request, "user.add", body.name, 201)
        return json_response({"name": body.name}, 201)

    async def disable_user(self, request: Request) -> Response:
        need_scope(principal_of(request), "admin")
        name = check_name(request.path_params["name"])
        await run_in_threadpool(self.store.users.set_disabled, name, True)
        await self._log(request, "user.disable", name)
        return json_response({"name": name, "disabled": True})

    async def teams(self, request: Request) -> Response:
        need_scope(principal_of(request), "read")
        return json_response({"teams": await run_in_threadpool(self.store.users.teams)})

    async def add_team(self, request: Request) -> Response:
        p = principal_of(request)
        need_scope(p, "write")
        body = await _body(request, NewTeam)
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
        if not p.is_admin and p.teams.get(tid) != "admin":
            raise Problem(403, "forbidden", f"only admins of team {team!r} change its members")
        return team, user

    async def set_member(self, request: Request) -> Response:
        team, user = await self._need_team_admin(request)
        body = await _body(request, Membership)
        await run_in_threadpool(self.store.users.set_member, team, user, body.role)
        await self._log(request, "team.member", f"{team}/{user}={body.role}")
        return json_response({"team": team, "user": user, "role": body.role})

    async def del_member(self, request: Request) -> Response:
        team, user = await self._need_team_admin(request)
        await run_in_threadpool(self.store.users.set_member, team, user, None)
        await self._log(request, "team.member", f"{team}/{user}=none")
        return json_response({"team": team, "user": user, "role": None})

    # -- keys ---------------------------------------------------------------------------------

    async def keys(self, request: Request) -> Response:
        p = principal_of(request)
        need_scope(p, "read")
        everyone = p.is_admin and q_str(request, "all", "") in ("1", "true")
        keys = await run_in_threadpool(self.store.list_keys, None if everyone else p.user_id)
        return json_response({"keys": keys})

    async def add_key(self, request: Request) -> Response:
        p = principal_of(request)
        need_scope(p, "write")
        body = await _body(request, NewKey)
        if body.scope not in SCOPES:
            raise Problem(422, "invalid", f"scope: expected one of {', '.join(SCOPES)}", "scope")
        if body.scope == "admin" and not p.is_admin:
            raise Problem(403, "forbidden", "only site admins hold admin keys", "scope")
        if p.via == "key" and SCOPES.index(body.scope) > SCOPES.index(p.scope):
            raise Problem(403, "forbidden", f"a {p.scope} key cannot create a {body.scope} key")
        if len(body.name) > 200:
            raise Problem(422, "invalid", "name: at most 200 characters", "name")
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

    async def revoke_key(self, request: Request) -> Response:
        p = principal_of(request)
        need_scope(p, "write")
        key_id = request.path_params["key_id"][:32]
        owner = None if p.is_admin else p.user_id
        if not await run_in_threadpool(self.store.revoke_key, key_id, owner):
            raise Problem(404, "key_not_found", f"no active key {key_id!r} of yours", "key_id")
        await self._log(request, "key.revoke", key_id)
        return json_response({"id": key_id, "revoked": True})

    # -- projects -----------------------------------------------------------------------------

    async def project(self, request: Request) -> Response:
        p = principal_of(request)
        need_scope(p, "read")
        name = request.path_params["project"]
        info = await run_in_threadpool(self.store.access.project, name)
        if info is None or not can_read_project(p, info):
            raise Problem(404, "project_not_found", f"no project {name!r} you may read")
        return json_response(await run_in_threadpool(self.store.access.describe, name))

    async def set_project(self, request: Request) -> Response:
        p = principal_of(request)
        need_scope(p, "write")
        name = request.path_params["project"]
        body = await _body(request, ProjectSettings)
        info = await run_in_threadpool(self.store.access.project, name)
        if info is not None and not can_admin_project(p, info):
            raise Problem(403, "forbidden", f"{p.name!r} does not administer project {name!r}")
        owner = None
        if body.owner is not None:
            ent = await run_in_threadpool(self.store.users.entity, check_name(body.owner, "owner"))
            if ent is None:
                raise Problem(404, "entity_not_found", f"no user or team {body.owner!r}", "owner")
            ok = (
                p.is_admin
                or (ent == ("user", p.user_id))
                or (ent[0] == "team" and p.teams.get(ent[1]) in ("member", "admin"))
            )
            if not ok:
                raise Problem(
                    403, "forbidden", f"{p.name!r} may not give projects to {body.owner!r}"
                )
            owner = ent
        elif info is None:
            owner = ("user", p.user_id) if p.user_id is not None else None
        await run_in_threadpool(self.store.access.set_project, name, owner, body.visibility)
        await self._log(request, "project.set", f"{name} owner={body.owner} vis={body.visibility}")
        return json_response(await run_in_threadpool(self.store.access.describe, name))

    # -- audit --------------------------------------------------------------------------------

    async def audit(self, request: Request) -> Response:
        need_scope(principal_of(request), "admin")
        limit = q_int(request, "limit", 100, 1, 1000)
        before = q_int(request, "before", 0, 0, 2**62) or None
        user = q_str(request, "user", None, 64)
        rows = await run_in_threadpool(self.store.access.audit_log, limit, before, user)
        return json_response({"audit": rows})

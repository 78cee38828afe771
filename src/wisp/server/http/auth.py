"""Who is calling, and may they: the one ASGI middleware every request passes through.

In order: the ``Host`` allow-list (DNS rebinding); identity — an API key
(``Authorization: Bearer``), a dashboard session cookie, or a trusted proxy's user
header (only from configured proxy addresses), else anonymous; CSRF for cookie and proxy
sessions (the ``X-CSRF-Token`` header must equal the session's token, and a cross-site
``Origin`` is refused); then :data:`RULES`, a table of (method, route) -> (scope, what the
route touches) decided by :mod:`rights.matrix` — a run's project from the path, a project from
the path, the runs of ``?runs=``, a media or artifact blob (readable by its uploaders and
by readers of a run or artifact version naming it; ``HEAD`` on one the caller may not read
is a 404, so the client sends the bytes and so proves it has them).  Writes to runs are
checked again by the store inside its transaction (ownership, :mod:`wisp.server.store.projects`),
with the caller in :data:`rights.matrix.ACTOR`.  Media answers get ``nosniff``, a restrictive
CSP and ``attachment`` for non-media types; admin actions and run writes go to the audit log.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from http.cookies import SimpleCookie
from typing import Any

from starlette.concurrency import run_in_threadpool

from wisp._protocol import project_entity
from wisp.server.http.body import json_response
from wisp.server.http.clientaddr import is_trusted, scope_client
from wisp.server.http.problem import Problem, storable_params
from wisp.server.rights.matrix import (
    ACTOR,
    ANONYMOUS,
    Principal,
    can_admin_project,
    can_read_project,
    can_write_project,
    deny_read,
    need_scope,
)
from wisp.server.settings import MAX_FILE_BYTES, ServerSettings
from wisp.server.store.facade import Store

__all__ = [
    "CSRF_COOKIE",
    "RULES",
    "SESSION_COOKIE",
    "AuthMiddleware",
    "check_quota",
    "key_principal",
    "media_inline",
    "need_project_write",
    "need_runs_read",
    "principal_of",
    "readable_projects",
]

Scope = MutableMapping[str, Any]
ASGIApp = Callable[[Scope, Any, Any], Awaitable[None]]

SESSION_COOKIE = "wisp_session"
CSRF_COOKIE = "wisp_csrf"
_SAFE = ("GET", "HEAD", "OPTIONS")
_RUN = r"(?P<run_id>[^/]+)"
# a project by its name, or by entity and name (its full name is "entity/project")
_PROJECT = r"(?:/entities/(?P<entity>[^/]+))?/projects/(?P<project>[^/]+)"


@dataclass(frozen=True)
class Rule:
    methods: tuple[str, ...]
    path: re.Pattern[str]
    scope: str  # read | write | admin | public
    touches: str  # run | run_admin | project | project_write | sweep | runs_query | media | ...
    audit: str = ""  # the audit action name, "" to not log


def _r(methods: str, path: str, scope: str, touches: str, audit: str = "") -> Rule:
    return Rule(tuple(methods.split()), re.compile(f"/api/v1{path}"), scope, touches, audit)


# (method, route) -> what it needs.  Routes not listed under /api/v1 need a signed-in caller
# (read scope for GET/HEAD, write otherwise); the admin API checks finer rights itself.
RULES = (
    _r("GET HEAD", f"/runs/{_RUN}", "read", "run"),
    _r("PUT", f"/runs/{_RUN}", "write", "none", "run.put"),
    _r("POST", f"/runs/{_RUN}/records", "write", "none"),
    _r("POST", f"/runs/{_RUN}/heartbeat", "write", "none"),
    _r("POST", f"/runs/{_RUN}/stop", "write", "run_admin", "run.stop"),
    _r(
        "GET HEAD",
        f"/runs/{_RUN}/(writers/[^/]+|history|media|console|lineage|set-aside/[0-9]+/history)",
        "read",
        "run",
    ),
    _r("GET HEAD", r"/media/(?P<sha>[0-9a-f]{64})(\.[A-Za-z0-9]{1,10})?", "read", "media"),
    _r("PUT", r"/media/(?P<sha>[0-9a-f]{64})(\.[A-Za-z0-9]{1,10})?", "write", "upload"),
    _r("GET HEAD", "/projects", "read", "none"),
    # a project's settings: the handler (404 for one the caller may not read, even anonymous)
    _r("GET HEAD", f"{_PROJECT}", "read", "handler"),
    _r("GET HEAD", f"{_PROJECT}/(runs(/[^/]+)?|forks)", "read", "project"),
    _r("GET HEAD", "/series", "read", "runs_query"),
    _r("GET HEAD", "/filter/parse", "read", "none"),
    _r("PATCH DELETE", f"/runs/{_RUN}", "write", "run_admin", "run.edit"),
    _r("POST", f"/runs/{_RUN}/set-aside/[0-9]+/restore", "write", "run_admin", "run.restore"),
    _r("GET HEAD", f"/runs/{_RUN}/files", "read", "run"),
    # the runs of the body / the listed sweeps: the handler (anonymous callers: public-read)
    _r("POST", "/export/histories", "read", "handler"),
    _r("GET HEAD", "/sweeps", "read", "handler"),
    # a sweep is its project's: made by whoever may write to (or create) it, read by its readers
    _r("POST", f"{_PROJECT}/sweeps", "write", "project_write"),
    _r("GET HEAD", f"{_PROJECT}/sweeps/[^/]+(/trials|/importance|/runs)?", "read", "sweep"),
    _r("PATCH", f"{_PROJECT}/sweeps/[^/]+", "write", "sweep_write"),
    _r("POST", f"{_PROJECT}/sweeps/[^/]+/trials", "write", "sweep_write"),
    _r("PATCH", f"{_PROJECT}/sweeps/[^/]+/trials/[^/]+", "write", "sweep_write"),
    _r("GET HEAD", f"{_PROJECT}/artifacts(/.*)?", "read", "project"),
    _r(
        "POST",
        f"{_PROJECT}/artifacts/[^/]+/(versions|usage)",
        "write",
        "project_write",
    ),
    _r(
        "PUT",
        f"{_PROJECT}/artifacts/[^/]+/aliases/[^/]+",
        "write",
        "project_write",
    ),
    _r("GET HEAD", f"/runs/{_RUN}/artifacts", "read", "run"),
    # artifact file bytes: readable by their uploaders and by whoever may read a version that
    # names them (knowing the sha256 is not enough); uploads count against the quota
    _r("POST", f"{_PROJECT}/series/grouped", "read", "project"),
    _r("GET HEAD", f"{_PROJECT}/workspaces(/[^/]+)?", "read", "project"),
    # saving a view: a signed-in writer who reads the project (the handler checks the rest:
    # shared workspaces need write rights on the project), or the local no-auth caller
    _r("POST", f"{_PROJECT}/workspaces", "read", "workspace", "workspace.save"),
    _r(
        "PUT DELETE",
        f"{_PROJECT}/workspaces/[^/]+",
        "read",
        "workspace",
        "workspace.save",
    ),
    _r("GET HEAD", f"{_PROJECT}/reports(/[^/]+(/versions|/diff|/data|/html)?)?", "read", "project"),
    _r("POST", f"{_PROJECT}/report-preview", "read", "project"),
    # saving a report: write rights on the project, or the local no-auth caller (wisp ui)
    _r("PUT DELETE", f"{_PROJECT}/reports/[^/]+", "read", "report_write", "report.save"),
    _r("POST", f"{_PROJECT}/reports/[^/]+/(revert|freeze)", "read", "report_write", "report.save"),
    # automations: readers list them and their deliveries; project admins change them
    _r("GET HEAD", f"{_PROJECT}/automations(/[^/]+(/deliveries)?)?", "read", "project"),
    _r("POST", f"{_PROJECT}/automations", "write", "project_admin", "automation.add"),
    _r(
        "PATCH DELETE",
        f"{_PROJECT}/automations/[^/]+",
        "write",
        "project_admin",
        "automation.change",
    ),
    _r("POST", f"{_PROJECT}/automations/[^/]+/test", "write", "project_admin"),
    _r("POST", "/artifact-files/missing", "write", "none"),
    _r("PUT", r"/artifact-files/(?P<sha>[0-9a-f]{64})", "write", "upload"),
    _r("GET HEAD", r"/artifact-files/(?P<sha>[0-9a-f]{64})", "read", "blob"),
    # direct uploads: the plan checks the declared size against the quota (the handler);
    # a completed upload is the caller's, as a PUT of the bytes is
    _r("POST", r"/uploads/(?P<sha>[0-9a-f]{64})", "write", "none"),
    _r("POST", r"/uploads/(?P<sha>[0-9a-f]{64})/complete", "write", "uploaded"),
    _r("POST", "/auth/login", "public", "none"),
    _r("POST", "/auth/logout", "public", "none"),
    _r("GET HEAD", "/auth/me", "public", "none"),
)


def key_principal(store: Store, token: str) -> Principal:
    """Who calls with the API key ``token`` (401 for an unknown, revoked or expired key, or
    a disabled user)."""
    got = store.keys.lookup(token)
    if got is None:
        raise Problem(401, "unauthorized", "the API key is not valid, expired or was revoked")
    key_id, user_id, scope = got
    if user_id is None:
        user_id = store.users.admin_user()
    p = store.users.principal(user_id, scope, "key", key_id)
    if p is None:
        raise Problem(401, "unauthorized", "the API key's user is disabled")
    return p


def principal_of(request: Any) -> Principal:
    """The caller of a request that passed the middleware."""
    p = request.scope.get("wisp_principal")
    return p if isinstance(p, Principal) else ANONYMOUS


def _match(method: str, path: str) -> tuple[Rule | None, dict[str, str]]:
    for rule in RULES:
        if method in rule.methods:
            m = rule.path.fullmatch(path)
            if m is not None:
                params = m.groupdict()
                entity = params.pop("entity", None)
                if entity is not None:
                    params["project"] = f"{entity}/{params['project']}"
                return rule, params
    return None, {}


def _routed(scope: Scope) -> bool:
    """Whether a route other than the catch-all answers this path (else it is a 404)."""
    from starlette.routing import Match

    app = scope.get("app")
    for route in getattr(getattr(app, "router", None), "routes", []):
        if getattr(route, "path", "").startswith("/api/{"):
            return False
        if route.matches({**scope, "type": "http"})[0] != Match.NONE:
            return True
    return False


def _headers(scope: Scope) -> dict[str, str]:
    out: dict[str, str] = {}
    for k, v in scope.get("headers", []):
        out.setdefault(k.decode("latin-1").lower(), v.decode("latin-1"))
    return out


def _cookies(headers: dict[str, str]) -> dict[str, str]:
    c: SimpleCookie = SimpleCookie()
    try:
        c.load(headers.get("cookie", ""))
    except Exception:  # noqa: BLE001 - a malformed cookie header is just no cookie
        return {}
    return {k: m.value for k, m in c.items()}


class AuthMiddleware:
    def __init__(self, app: ASGIApp, store: Store, settings: ServerSettings) -> None:
        self.app = app
        self.store = store
        self.settings = settings
        self.hosts = settings.host_allow_list()
        self.proxies = settings.trusted_proxy_networks()

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = _headers(scope)
        rule, params = _match(scope["method"], scope["path"])
        principal = ANONYMOUS
        try:
            scope_client(scope, self.proxies)  # who is calling, once (audit, sign-in limits)
            self._check_request(scope, headers)
            self._check_host(headers)
            principal = await run_in_threadpool(self._admit, scope, headers, rule, params)
        except Problem as p:
            # a session refused for CSRF, else who was identified before the refusal
            principal = scope.get("wisp_refused", scope.get("wisp_principal", principal))
            await json_response(p.body(), p.status)(scope, receive, send)
            if rule is not None and rule.audit:  # refused writes are audited too
                await self._audit(scope, principal, rule.audit, scope["path"], p.status)
            return
        status = 0
        is_media = rule is not None and rule.touches == "media"

        async def send_wrapped(message: MutableMapping[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                if is_media:
                    message["headers"] = _media_headers(list(message.get("headers", [])))
                sha = scope.get("wisp_proven")  # the handler checked the bytes: body.proven
                if sha and 200 <= status < 300 and principal.user_id is not None:
                    # recorded before the answer leaves: the caller's next read may rely on it
                    await run_in_threadpool(
                        self.store.access.add_media_owner, sha, principal.user_id
                    )
            await send(message)

        token = ACTOR.set(principal)
        try:
            await self.app(scope, receive, send_wrapped)
        finally:
            ACTOR.reset(token)
        if rule is not None and rule.audit and status:
            await self._audit(scope, principal, rule.audit, scope["path"], status)

    async def _audit(
        self, scope: Scope, principal: Principal, action: str, target: str, status: int
    ) -> None:
        addr = scope_client(scope, self.proxies)
        await run_in_threadpool(self.store.access.audit, principal, action, target, status, addr)

    def _throttle(self, key_id: str) -> None:
        """A token bucket per API key, in the database (every server process shares it):
        ``key_rate`` requests a second, bursts of twice that."""
        rate = self.settings.key_rate
        if rate > 0 and not self.store.limits.take_leased(f"k:{key_id}", rate, 2.0 * rate):
            raise Problem(429, "rate_limited", f"more than {rate:g} requests a second with one key")

    # -- the steps ----------------------------------------------------------------------------

    def _check_request(self, scope: Scope, headers: dict[str, str]) -> None:
        """Malformed paths are a 400, and a declared body over the route's limit a 413 before
        a byte of it is read."""
        path = scope["path"]
        if "\x00" in path or "\ufffd" in path:
            raise Problem(400, "bad_path", "the request path holds a NUL or undecodable bytes")
        declared = headers.get("content-length")
        if declared is None:
            return
        if not declared.isdigit():
            raise Problem(400, "bad_content_length", "Content-Length must be a number")
        if path.startswith("/api/v1/media/"):
            limit = self.settings.max_media_bytes
        elif path.startswith("/api/v1/artifact-files/"):
            limit = MAX_FILE_BYTES
        else:
            limit = self.settings.max_body_bytes
        if int(declared) > limit:
            raise Problem(413, "too_large", f"request body is larger than {limit} bytes")

    def _check_host(self, headers: dict[str, str]) -> None:
        if self.hosts is None:
            return
        host = headers.get("host", "")
        name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
        if name.lower() not in self.hosts:
            raise Problem(
                421, "host_not_allowed", f"Host {host[:100]!r} is not one this server answers to"
            )

    def _admit(
        self, scope: Scope, headers: dict[str, str], rule: Rule | None, params: dict[str, str]
    ) -> Principal:
        """Who calls, and may they: one trip to the thread pool and one database connection
        for every read of it (each trip and each connection is a wait for a thread, the GIL
        and the database, which under load cost more than the reads themselves)."""
        with self.store.db.reading():
            principal = self._identify(scope, headers)
            scope["wisp_principal"] = principal
            scope["wisp_auth"] = self
            if principal.key_id is not None:
                self._throttle(principal.key_id)
            self._authorize(scope, principal, rule, params, headers)
        return principal

    def _identify(self, scope: Scope, headers: dict[str, str]) -> Principal:
        kind, _, token = headers.get("authorization", "").partition(" ")
        token = token.strip()
        if token:  # an empty "Bearer " is no key at all
            if kind.lower() != "bearer":
                raise Problem(401, "unauthorized", "expected Authorization: Bearer <key>")
            if len(token) > 200 or not token.isascii():
                raise Problem(401, "unauthorized", "the API key is not valid")
            return self._key_principal(token)
        addr = (scope.get("client") or ("", 0))[0]
        sso = self.settings.sso_header.lower()
        if sso and headers.get(sso) and is_trusted(addr, self.proxies):  # the peer itself
            p = self._sso_principal(headers[sso].strip())
            self._check_csrf(scope, headers, None)
            return p
        cookies = _cookies(headers)
        sess = cookies.get(SESSION_COOKIE)
        if sess and len(sess) <= 200:
            got = self.store.users.session(sess)
            if got is not None:
                uid, csrf = got
                user = self._session_principal(uid)
                if user is not None:
                    scope["wisp_refused"] = user
                    self._check_csrf(scope, headers, csrf)
                    del scope["wisp_refused"]
                    return user
        if self.settings.no_auth:
            return Principal(None, "local", scope="read", via="local")
        return ANONYMOUS

    def _session_principal(self, uid: int) -> Principal | None:
        return self.store.users.principal(uid, "write", "session")

    def _key_principal(self, token: str) -> Principal:
        return key_principal(self.store, token)

    def _sso_principal(self, name: str) -> Principal:
        got = self.store.users.user(name[:64])
        p = None
        if got is not None:
            p = self.store.users.principal(int(got["id"]), "write", "sso")
        if p is None:
            raise Problem(
                403, "forbidden", f"the proxy's user {name[:64]!r} has no enabled account"
            )
        return p

    def _check_csrf(self, scope: Scope, headers: dict[str, str], csrf: str | None) -> None:
        if scope["method"] in _SAFE:
            return
        origin = headers.get("origin")
        if origin is not None and origin.split("://", 1)[-1] != headers.get("host", ""):
            raise Problem(403, "csrf", "cross-site request refused (Origin does not match Host)")
        got = headers.get("x-csrf-token", "")
        if not got or (csrf is not None and got != csrf):
            raise Problem(403, "csrf", "missing or wrong X-CSRF-Token header for this session")

    def _authorize(
        self,
        scope: Scope,
        p: Principal,
        rule: Rule | None,
        params: dict[str, str],
        headers: dict[str, str],
    ) -> None:
        path = scope["path"]
        if rule is None:
            if path.startswith("/api/v1/") and _routed(scope):  # deny by default
                need_scope(p, "read" if scope["method"] in _SAFE else "write")
            return
        if rule.scope == "public":
            return
        from urllib.parse import unquote

        storable_params({k: unquote(v) for k, v in params.items()})  # 422 before any lookup
        if not (p.anonymous and rule.scope == "read" and rule.touches != "none"):
            need_scope(p, rule.scope)  # anonymous reads: public-read projects only (below)
        if rule.touches == "run":
            self._need_run_read(p, params["run_id"])
        elif rule.touches == "run_admin":
            self._need_run_admin(p, params["run_id"])
        elif rule.touches in ("sweep", "sweep_write"):
            project, write = unquote(params["project"]), rule.touches == "sweep_write"
            self._need_sweep(p, project, write)
        elif rule.touches in ("project", "project_write"):
            project = unquote(params["project"])
            if rule.touches == "project":
                self._need_project_read(p, project)
            else:
                self.need_project_write(p, project)
        elif rule.touches == "report_write":
            if p.via != "local":
                need_scope(p, "write")
            self.need_project_write(p, unquote(params["project"]))
        elif rule.touches == "project_admin":
            project = unquote(params["project"])
            self.need_project_admin(p, project)
        elif rule.touches == "workspace":
            from urllib.parse import unquote

            if p.via != "local":
                need_scope(p, "write")
            self._need_project_read(p, unquote(params["project"]))
        elif rule.touches == "runs_query":
            from urllib.parse import parse_qs

            qs = parse_qs(scope.get("query_string", b"").decode("latin-1"))
            ids = [r for v in qs.get("runs", []) for r in v.split(",") if r][:1000]
            self._need_runs_read(p, ids)
        elif rule.touches in ("media", "blob"):
            if not self.store.access.can_read_media(p, params["sha"]):
                if scope["method"] == "HEAD" and not p.anonymous:  # the client sends the bytes
                    raise Problem(404, "not_found", f"no readable file {params['sha']}", "sha256")
                raise deny_read(p, f"file {params['sha']}")
        elif rule.touches == "upload":
            declared = headers.get("content-length", "0")
            more = int(declared) if declared.isdigit() else 0
            self.check_quota(p, more)
        if path in ("/api/v1/projects", "/api/v1/sweeps") and scope["method"] in _SAFE:
            scope["wisp_readable"] = self.store.access.readable(p)

    def need_project_write(self, p: Principal, project: str) -> None:
        """Write rights on ``project`` (site admins and local callers pass; an unknown project
        passes unless it is named after a user or team the caller may not create under)."""
        info = self.store.access.project(project)
        if p.via == "local":
            return
        if info is None:  # created now (its rights hold from the first object in it)
            self.store.access.ensure_project(p, project)
            return
        if not p.is_admin and not can_write_project(p, info):
            raise Problem(403, "forbidden", f"{p.name!r} may not write to project {project!r}")

    def need_project_admin(self, p: Principal, project: str) -> None:
        """Admin rights on ``project`` (site admins and local callers pass; a project without
        runs yet: whoever may create it)."""
        if p.is_admin or p.via == "local":
            return
        info = self.store.access.project(project)
        if info is None:
            self.store.access.may_create(p, project)
            return
        if not can_read_project(p, info):
            raise deny_read(p, f"project {project!r}")
        if not can_admin_project(p, info):
            raise Problem(403, "forbidden", f"{p.name!r} is not an admin of project {project!r}")

    def _need_project_read(self, p: Principal, project: str) -> None:
        info = self.store.access.project(project)
        if info is not None and not can_read_project(p, info):
            raise deny_read(p, f"project {project!r}")

    def _need_run_admin(self, p: Principal, run_id: str) -> None:
        """Editing or deleting a run: its owner, or an admin of its project."""
        if p.is_admin or p.via == "local":
            return
        got = self.store.access.run_owner(run_id)
        if got is None:
            return  # the handler answers 404
        owner, project = got
        if owner is not None and owner == p.user_id:
            return
        info = self.store.access.project(project)
        if info is not None and can_admin_project(p, info):
            return
        if info is None or not can_read_project(p, info):
            raise deny_read(p, f"run {run_id!r}")
        raise Problem(
            403, "forbidden", f"only the owner or a project admin may change run {run_id!r}"
        )

    def _need_sweep(self, p: Principal, project: str, write: bool) -> None:
        """A sweep has its project's rights: read to see it, write to change it or add trials
        (whether the sweep exists is the handler's 404, after this: a name discloses nothing)."""
        if p.is_admin or p.via == "local":
            return
        info = self.store.access.project(project)
        if info is None:  # made before its project (by an older server): its creators only
            if p.anonymous or not project_entity(project)[0]:
                # a plain name is anyone's to create, and the sweep no one's: site admins only
                # until the project exists (a run or a new sweep in it makes it)
                raise deny_read(p, f"the sweeps of {project!r} (a project not made yet)")
            self.store.access.may_create(p, project)
            return
        if not can_read_project(p, info):
            raise deny_read(p, f"the sweeps of {project!r}")
        if write and not can_write_project(p, info):
            raise Problem(403, "forbidden", f"{p.name!r} may not change sweeps of {project!r}")

    def _need_run_read(self, p: Principal, run_id: str) -> None:
        self._need_runs_read(p, [run_id])

    def _need_runs_read(self, p: Principal, run_ids: list[str]) -> None:
        if p.is_admin or p.via == "local" or not run_ids:
            return
        for run_id, project in self.store.access.run_projects(run_ids):
            info = self.store.access.project(project)
            if info is None or not can_read_project(p, info):
                raise deny_read(p, f"run {run_id!r}")

    def check_quota(self, p: Principal, more: int) -> None:
        """Refuse (413) an upload of ``more`` bytes past the caller's media quota."""
        quota = self.settings.media_quota_bytes
        if not quota or p.user_id is None or p.is_admin:
            return
        used = self.store.access.media_usage(p.user_id)
        if used + more > quota:
            raise Problem(
                413, "quota", f"media quota of {quota} bytes reached ({used} used by {p.name!r})"
            )


def login_csrf(headers: Any) -> str | None:
    """Why a sign-in request may come from another site (login CSRF), or None.  A browser
    sends ``Origin`` (and ``Sec-Fetch-Site``) with every POST: they must say same-origin.
    Without either, only a JSON body is taken: a cross-site form cannot send one."""
    origin = headers.get("origin")
    if origin is not None and origin.split("://", 1)[-1] != headers.get("host"):
        return "cross-site sign-in refused (Origin does not match Host)"
    site = headers.get("sec-fetch-site")
    if site is not None and site not in ("same-origin", "none"):
        return f"cross-site sign-in refused (Sec-Fetch-Site: {site[:40]})"
    ctype = headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if origin is None and site is None and ctype != "application/json":
        return "sign in with a JSON body (Content-Type: application/json)"
    return None


def need_runs_read(request: Any, run_ids: list[str]) -> None:
    """For handlers whose runs come in the body (export): the caller must read every one."""
    mw = request.scope.get("wisp_auth")
    if isinstance(mw, AuthMiddleware):
        mw._need_runs_read(principal_of(request), run_ids)


def need_project_write(request: Any, project: str) -> None:
    """For handlers that decide on project write rights themselves (a shared workspace)."""
    mw = request.scope.get("wisp_auth")
    if isinstance(mw, AuthMiddleware):
        mw.need_project_write(principal_of(request), project)


def check_quota(request: Any, size: int) -> None:
    """For handlers whose upload size comes in the body (a planned upload)."""
    mw = request.scope.get("wisp_auth")
    if isinstance(mw, AuthMiddleware):
        mw.check_quota(principal_of(request), size)


def readable_projects(request: Any) -> Any:
    """The project names the caller may list (None: all), computed by the middleware."""
    return request.scope.get("wisp_readable")


_MEDIA_INLINE = ("image/", "audio/", "video/", "text/html")  # html: sandboxed by the CSP


def media_inline(ctype: str) -> bool:
    """Whether a media type may be shown inline (with ``nosniff``): images (not SVG), audio,
    video; HTML only under the sandboxing CSP, so only as served by this server."""
    c = ctype.lower()
    return c.startswith(_MEDIA_INLINE) and "svg" not in c


def _media_headers(headers: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """Media answers: ``nosniff``, a sandboxing CSP (kept when the route set its own), and
    ``attachment`` for anything that is not an image, audio or video (SVG included)."""
    names = {k.lower() for k, _ in headers}
    ctype = b""
    for k, v in headers:
        if k.lower() == b"content-type":
            ctype = v.lower()
    out = list(headers)
    if b"x-content-type-options" not in names:
        out.append((b"x-content-type-options", b"nosniff"))
    if b"content-security-policy" not in names:
        out.append((b"content-security-policy", b"default-src 'none'; sandbox"))
    inline = media_inline(ctype.decode("latin-1"))
    if not inline and b"content-disposition" not in names:
        out.append((b"content-disposition", b"attachment"))
    return out

"""Artifact endpoints of API v1 (docs/http-api.md, "Artifacts"); shapes as msgspec Structs.

Files are blobs named by sha256 in the server's :class:`._blobs.BlobStore` (shared with
media); versions, aliases and lineage are in :mod:`._store_artifacts`.  A version is
published only when every file its manifest names is held (409 ``missing_files``
otherwise), so a reader never sees a version whose bytes are not all there.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import FileResponse, Response, StreamingResponse
from starlette.routing import Route

from wisp.artifacts._manifest import check_manifest, check_name, manifest_digest
from wisp.server._http import json_response, read_body
from wisp.server._problem import Problem, check_id, clean_json, invalid
from wisp.server._store_artifacts import TypeMismatch

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from wisp.server._blobs import BlobStore
    from wisp.server._settings import ServerSettings
    from wisp.server._store import Store

__all__ = [
    "AliasRequest",
    "ArtifactApi",
    "CommitRequest",
    "MissingRequest",
    "UseRequest",
    "routes",
]

MAX_FILE_BYTES = 1 << 40  # one artifact file: 1 TiB
_SHA = re.compile(r"[0-9a-f]{64}")
_VERSION = re.compile(r"v[0-9]{1,9}")


class MissingRequest(msgspec.Struct, forbid_unknown_fields=True):
    """``POST /artifact-files/missing``: which of these blobs does the server lack?"""

    sha256: list[str]


class MissingResponse(msgspec.Struct):
    missing: list[str]


class CommitRequest(msgspec.Struct, forbid_unknown_fields=True):
    """``POST /projects/{project}/artifacts/{name}/versions``: publish a manifest."""

    type: str
    manifest: dict[str, Any]
    description: str = ""
    metadata: dict[str, Any] = {}
    aliases: list[str] = []
    run_id: str | None = None


class UseRequest(msgspec.Struct, forbid_unknown_fields=True):
    """``POST /projects/{project}/artifacts/{name}/usage``: a run consumed a version."""

    digest: str
    run_id: str


class AliasRequest(msgspec.Struct, forbid_unknown_fields=True):
    """``PUT /projects/{project}/artifacts/{name}/aliases/{alias}``: point it at a version."""

    version: str


def _decode(body: bytes, typ: type[Any]) -> Any:
    try:
        return msgspec.json.decode(body, type=typ)
    except msgspec.ValidationError as exc:
        path = str(exc).rpartition("at `$.")[2].rstrip("`") or "body"
        raise invalid(path.split("[")[0] or "body", str(exc)) from None
    except msgspec.DecodeError as exc:
        raise Problem(400, "bad_json", f"request body is not valid JSON: {exc}", "body") from None


def _name(value: str, field: str) -> str:
    why = check_name(value, field)
    if why:
        raise invalid(field, why)
    return value


class ArtifactApi:
    def __init__(self, store: Store, blobs: BlobStore, settings: ServerSettings) -> None:
        self.art = store.artifacts
        self.blobs = blobs
        self.settings = settings

    def _path(self, request: Request) -> tuple[str, str]:
        from wisp.server._ingest import check_project

        project = check_project(request.path_params["project"], "project")
        return project, _name(request.path_params["name"], "name")

    async def _json(self, request: Request, typ: type[Any]) -> Any:
        return _decode(await read_body(request, self.settings.max_body_bytes), typ)

    # -- files -----------------------------------------------------------------------------

    def _sha(self, request: Request) -> str:
        sha = request.path_params["sha256"]
        if not _SHA.fullmatch(sha):
            raise invalid("sha256", "expected 64 lowercase hex digits")
        return str(sha)

    async def missing(self, request: Request) -> Response:
        req = await self._json(request, MissingRequest)
        if len(req.sha256) > 100_000:
            raise invalid("sha256", "at most 100000 digests per request")
        for s in req.sha256:
            if not _SHA.fullmatch(s):
                raise invalid("sha256", f"expected 64 lowercase hex digits, got {s[:80]!r}")
        known = await run_in_threadpool(self.art.files_known, req.sha256)

        def lacking() -> list[str]:
            return [
                s for s in dict.fromkeys(req.sha256) if s not in known or not self.blobs.exists(s)
            ]

        out = MissingResponse(await run_in_threadpool(lacking))
        return Response(msgspec.json.encode(out), media_type="application/json")

    async def put_file(self, request: Request) -> Response:
        sha = self._sha(request)
        if await run_in_threadpool(self.blobs.exists, sha) and (
            await run_in_threadpool(self.art.file_size, sha) is not None
        ):
            return json_response({"sha256": sha, "stored": False}, 200)
        if request.headers.get("content-encoding", "identity").lower() not in ("identity", ""):
            raise Problem(415, "unsupported_encoding", "artifact files are sent as raw bytes")
        with self.blobs.writer(sha, MAX_FILE_BYTES) as blob:  # 422 on a wrong hash
            async for chunk in request.stream():
                blob.write(chunk)
            size = await run_in_threadpool(blob.commit)
        await run_in_threadpool(self.art.file_add, sha, size)
        return json_response({"sha256": sha, "stored": True}, 201)

    async def get_file(self, request: Request) -> Response:
        sha = self._sha(request)
        size = await run_in_threadpool(self.art.file_size, sha)
        head = await run_in_threadpool(self.blobs.head, sha)
        if size is None or head is None:
            raise Problem(404, "file_not_found", f"no artifact file {sha}", "sha256")
        name = request.query_params.get("name", sha)
        disp = {"content-disposition": f'attachment; filename="{name.rpartition("/")[2][:200]}"'}
        path = await run_in_threadpool(self.blobs.local_path, sha)
        if path is not None:
            return FileResponse(path, media_type="application/octet-stream", headers=disp)
        headers = {"content-length": str(head.size), **disp}
        return StreamingResponse(
            self.blobs.iter_bytes(sha), media_type="application/octet-stream", headers=headers
        )

    # -- versions --------------------------------------------------------------------------

    async def commit(self, request: Request) -> Response:
        project, name = self._path(request)
        req = await self._json(request, CommitRequest)
        _name(req.type, "type")
        for a in req.aliases:
            _name(a, "aliases")
            if _VERSION.fullmatch(a):
                raise invalid("aliases", f"{a!r} is a version number, not an alias")
        if req.run_id is not None:
            check_id(req.run_id, "run_id")
        why = check_manifest(req.manifest)
        if why:
            raise invalid("manifest", why)
        meta = clean_json(req.metadata, "metadata")
        if len(req.description) > 100_000:
            raise invalid("description", "longer than 100000 characters")
        entries = req.manifest["entries"]
        shas = sorted({e["digest"] for e in entries.values() if e.get("ref") is None})

        def lacking() -> list[str]:
            known = self.art.files_known(shas)
            return [s for s in shas if s not in known or not self.blobs.exists(s)]

        missing = await run_in_threadpool(lacking)
        if missing:
            raise Problem(
                409,
                "missing_files",
                f"{len(missing)} file(s) of the manifest are not uploaded",
                "manifest",
                {"missing": missing[:1000]},
            )
        digest = manifest_digest(entries)

        def commit() -> tuple[dict[str, Any], bool]:
            return self.art.commit(
                project,
                name,
                req.type,
                req.manifest,
                digest,
                description=req.description,
                metadata=meta,
                aliases=list(dict.fromkeys(req.aliases)),
                run_id=req.run_id,
            )

        try:
            version, created = await run_in_threadpool(commit)
        except TypeMismatch as exc:
            raise Problem(409, "type_mismatch", str(exc), "type") from None
        return json_response({"version": version, "created": created}, 201 if created else 200)

    async def list(self, request: Request) -> Response:
        from wisp.server._ingest import check_project

        project = check_project(request.path_params["project"], "project")
        return json_response(
            {"artifacts": await run_in_threadpool(self.art.list_artifacts, project)}
        )

    async def versions(self, request: Request) -> Response:
        project, name = self._path(request)
        doc = await run_in_threadpool(self.art.versions, project, name)
        if doc is None:
            raise Problem(404, "artifact_not_found", f"no artifact {project}/{name}", "name")
        return json_response(doc)

    async def version(self, request: Request) -> Response:
        project, name = self._path(request)
        ref = _name(request.path_params["ref"], "ref")
        doc = await run_in_threadpool(self.art.version, project, name, ref)
        if doc is None:
            raise Problem(404, "version_not_found", f"no version {project}/{name}:{ref}", "ref")
        return json_response(doc)

    async def set_alias(self, request: Request) -> Response:
        project, name = self._path(request)
        alias = _name(request.path_params["alias"], "alias")
        if _VERSION.fullmatch(alias):
            raise invalid("alias", f"{alias!r} is a version number, not an alias")
        req = await self._json(request, AliasRequest)
        if not _VERSION.fullmatch(req.version):
            raise invalid("version", "expected vN")
        ok = await run_in_threadpool(self.art.set_alias, project, name, req.version, alias)
        if not ok:
            raise Problem(404, "version_not_found", f"no version {project}/{name}:{req.version}")
        doc = await run_in_threadpool(
            lambda: self.art.version(project, name, req.version, manifest=False)
        )
        return json_response(doc)

    async def use(self, request: Request) -> Response:
        project, name = self._path(request)
        req = await self._json(request, UseRequest)
        check_id(req.run_id, "run_id")
        if not _SHA.fullmatch(req.digest):
            raise invalid("digest", "expected 64 lowercase hex digits")
        v = await run_in_threadpool(self.art.use, project, name, req.digest, req.run_id)
        if v is None:
            raise Problem(
                404, "version_not_found", f"no version of {project}/{name} with that digest"
            )
        return json_response({"version": v})

    async def run_lineage(self, request: Request) -> Response:
        run_id = check_id(request.path_params["run_id"], "run_id")
        return json_response(await run_in_threadpool(self.art.run_lineage, run_id))


def routes(
    store: Store,
    blobs: BlobStore,
    settings: ServerSettings,
    endpoint: Callable[[str, Any], Any],
) -> list[Route]:
    """The artifact routes, each wrapped by ``endpoint(scope, handler)`` (auth, problems)."""
    api = ArtifactApi(store, blobs, settings)
    p = "/api/v1/projects/{project}/artifacts"
    f = "/api/v1/artifact-files"
    return [
        Route(f"{f}/missing", endpoint("write", api.missing), methods=["POST"]),
        Route(f"{f}/{{sha256}}", endpoint("write", api.put_file), methods=["PUT"]),
        Route(f"{f}/{{sha256}}", endpoint("read", api.get_file), methods=["GET"]),
        Route(p, endpoint("read", api.list), methods=["GET"]),
        Route(f"{p}/{{name}}/versions", endpoint("write", api.commit), methods=["POST"]),
        Route(f"{p}/{{name}}/versions", endpoint("read", api.versions), methods=["GET"]),
        Route(f"{p}/{{name}}/versions/{{ref}}", endpoint("read", api.version), methods=["GET"]),
        Route(f"{p}/{{name}}/aliases/{{alias}}", endpoint("write", api.set_alias), methods=["PUT"]),
        Route(f"{p}/{{name}}/usage", endpoint("write", api.use), methods=["POST"]),
        Route(
            "/api/v1/runs/{run_id}/artifacts", endpoint("read", api.run_lineage), methods=["GET"]
        ),
    ]


def _body(typ: type[Any]) -> dict[str, Any]:
    schema = msgspec.json.schema(typ)
    inner = schema.get("$defs", {}).get(typ.__name__, schema)
    return {"required": True, "content": {"application/json": {"schema": inner}}}


def _operation(
    summary: str, params: list[tuple[str, dict[str, Any]]], scope: str, body: Any = None
) -> dict[str, Any]:
    op: dict[str, Any] = {
        "summary": summary,
        "parameters": [{"name": n, "in": "path", "required": True, "schema": s} for n, s in params],
        "responses": {
            "200": {"description": "OK"},
            "4XX": {"$ref": "#/components/responses/Error"},
        },
        "security": [{"bearer": []}],
        "x-wisp-scope": scope,
    }
    if body is not None:
        op["requestBody"] = _body(body)
    return op


def openapi_paths() -> dict[str, Any]:
    """The OpenAPI paths of the artifact routes (merged into ``/api/openapi.json``)."""
    name: dict[str, Any] = {"type": "string", "pattern": "^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,127}$"}
    project: dict[str, Any] = {"type": "string", "minLength": 1, "maxLength": 128}
    sha = {"type": "string", "pattern": "^[0-9a-f]{64}$"}
    pn: list[tuple[str, dict[str, Any]]] = [("project", project), ("name", name)]
    p = "/api/v1/projects/{project}/artifacts"
    f = "/api/v1/artifact-files"
    return {
        f"{f}/missing": {
            "post": _operation("Which blobs the server lacks", [], "write", MissingRequest)
        },
        f"{f}/{{sha256}}": {
            "put": {
                **_operation("Upload one artifact file (raw bytes)", [("sha256", sha)], "write"),
                "requestBody": {
                    "required": True,
                    "content": {"application/octet-stream": {"schema": {"type": "string"}}},
                },
            },
            "get": _operation("Download one artifact file", [("sha256", sha)], "read"),
        },
        p: {"get": _operation("Artifacts of a project", [("project", project)], "read")},
        f"{p}/{{name}}/versions": {
            "post": _operation("Publish a version (manifest last)", pn, "write", CommitRequest),
            "get": _operation("Versions of an artifact, newest first", pn, "read"),
        },
        f"{p}/{{name}}/versions/{{ref}}": {
            "get": _operation("One version by vN or alias", [*pn, ("ref", name)], "read")
        },
        f"{p}/{{name}}/aliases/{{alias}}": {
            "put": _operation("Move an alias", [*pn, ("alias", name)], "write", AliasRequest)
        },
        f"{p}/{{name}}/usage": {
            "post": _operation("Record that a run consumed a version", pn, "write", UseRequest)
        },
        "/api/v1/runs/{run_id}/artifacts": {
            "get": _operation(
                "Lineage of a run: versions produced and consumed",
                [("run_id", {"type": "string", "pattern": "^[A-Za-z0-9_-]{1,64}$"})],
                "read",
            )
        },
    }

"""Artifact endpoints of API v1 (docs/http-api.md, "Artifacts"); types in ``schemas.artifacts``.

Files are blobs named by sha256 in the server's :class:`blobs.local.BlobStore` (shared with
media); versions, aliases and lineage are in :mod:`wisp.server.store.artifacts`.  A version is
published only when every file its manifest names is held (409 ``missing_files``
otherwise), so a reader never sees a version whose bytes are not all there.
"""

from __future__ import annotations

import re
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.responses import FileResponse, Response, StreamingResponse

from wisp.artifacts._manifest import check_manifest, check_name, manifest_digest
from wisp.server.blobs.base import BlobStore
from wisp.server.http.auth import principal_of
from wisp.server.http.body import (
    check_possession,
    json_response,
    presigned_redirect,
    proven,
    require_raw,
    stream_blob,
)
from wisp.server.http.problem import Problem, check_id, clean_json, invalid
from wisp.server.http.routes import RAW, In, endpoint
from wisp.server.schemas import artifacts as A
from wisp.server.schemas import runs as T
from wisp.server.settings import MAX_FILE_BYTES, ServerSettings
from wisp.server.store.artifacts import TypeMismatch
from wisp.server.store.facade import Store
from wisp.server.store.ingest import check_project

__all__ = ["ArtifactApi"]

_SHA = re.compile(r"[0-9a-f]{64}")
_VERSION = re.compile(r"v[0-9]{1,9}")
_FILE_BYTES = {"application/octet-stream": {"type": "string", "format": "binary"}}


def _name(value: str, field: str) -> str:
    why = check_name(value, field)
    if why:
        raise invalid(field, why)
    return value


def _disposition(name: str) -> str:
    """An attachment header naming the file's last path part, quoted safely."""
    base = name.rpartition("/")[2][:200]
    safe = (
        "".join(c if c.isascii() and c.isprintable() and c not in '"\\' else "_" for c in base)
        or "file"
    )
    return f'attachment; filename="{safe}"'


class ArtifactApi:
    """The artifact handlers (types: ``server.schemas.artifacts``; prose: docs/http-api.md)."""

    def __init__(self, store: Store, settings: ServerSettings, blobs: BlobStore) -> None:
        self.art = store.artifacts
        self.access = store.access
        self.runs = store.runs
        self.blobs = blobs
        self.settings = settings

    @staticmethod
    def _path(p: Any) -> tuple[str, str]:
        return check_project(p.project, "project"), _name(p.name, "name")

    def _run_key(self, project: str, run_id: str) -> str:
        """The key of the run with id ``run_id`` in ``project`` (lineage names runs by key);
        ``run_id`` itself when that project has no such run (a run of another project)."""
        return self.runs.key_of(project, run_id) or run_id

    # -- files -----------------------------------------------------------------------------

    @endpoint(
        "POST",
        "/artifact-files/missing",
        scope="write",
        summary="Which artifact files the server lacks",
        body=A.ArtifactMissingBody,
        responses={200: A.ArtifactsMissing},
    )
    async def artifact_files_missing(self, r: In) -> Response:
        req: A.ArtifactMissingBody = r.body
        if len(req.sha256) > 100_000:
            raise invalid("sha256", "at most 100000 digests per request")
        for s in req.sha256:
            if not _SHA.fullmatch(s):
                raise invalid("sha256", f"expected 64 lowercase hex digits, got {s[:80]!r}")
        return json_response({"missing": await run_in_threadpool(self._lacking, r, req.sha256)})

    def _lacking(self, r: In, shas: list[str]) -> list[str]:
        """Those of ``shas`` the server lacks, or holds but the caller may not read (it sends
        them, proving it has the bytes: see ``http.body.check_possession``)."""
        known = self.art.files_known(shas)
        readable = self.access.readable_blobs(
            principal_of(r.request), [s for s in shas if s in known]
        )
        return [s for s in dict.fromkeys(shas) if s not in readable or not self.blobs.exists(s)]

    @endpoint(
        "PUT",
        "/artifact-files/{sha256}",
        scope="write",
        summary="Upload one artifact file (raw bytes) by its sha256",
        path_params=A.ArtifactFilePath,
        body=RAW,
        body_content="application/octet-stream",
        responses={200: A.ArtifactFileStored, 201: A.ArtifactFileStored},
    )
    async def put_artifact_file(self, r: In) -> Response:
        sha = r.path.sha256
        request = r.request
        require_raw(request, "artifact files")
        if await run_in_threadpool(self.blobs.exists, sha) and (
            await run_in_threadpool(self.art.file_size, sha) is not None
        ):
            await check_possession(request, sha, MAX_FILE_BYTES)
            return json_response({"sha256": sha, "stored": False}, 200)
        size = await stream_blob(request, self.blobs, sha, MAX_FILE_BYTES)
        await run_in_threadpool(self.art.file_add, sha, size)
        proven(request, sha)
        return json_response({"sha256": sha, "stored": True}, 201)

    @endpoint(
        "GET",
        "/artifact-files/{sha256}",
        scope="read",
        summary="Download one artifact file",
        path_params=A.ArtifactFilePath,
        query=A.ArtifactFileQuery,
        responses={200: _FILE_BYTES, 307: None},
    )
    async def get_artifact_file(self, r: In) -> Response:
        sha = r.path.sha256
        size = await run_in_threadpool(self.art.file_size, sha)
        head = await run_in_threadpool(self.blobs.head, sha)
        if size is None or head is None:
            raise Problem(404, "file_not_found", f"no artifact file {sha}", "sha256")
        disp = {"content-disposition": _disposition(r.query.name or sha)}
        moved = await presigned_redirect(
            self.blobs, r.request, sha, "application/octet-stream", disp["content-disposition"]
        )
        if moved is not None:
            return moved
        path = await run_in_threadpool(self.blobs.local_path, sha)
        if path is not None:
            return FileResponse(path, media_type="application/octet-stream", headers=disp)
        headers = {"content-length": str(head.size), **disp}
        return StreamingResponse(
            self.blobs.iter_bytes(sha), media_type="application/octet-stream", headers=headers
        )

    # -- versions --------------------------------------------------------------------------

    @endpoint(
        "POST",
        "/projects/{project}/artifacts/{name}/versions",
        scope="write",
        summary="Publish a version (409 until every file of its manifest is uploaded)",
        path_params=A.ArtifactPath,
        body=A.ArtifactCommitBody,
        responses={200: A.ArtifactCommitted, 201: A.ArtifactCommitted},
    )
    async def commit_artifact_version(self, r: In) -> Response:
        project, name = self._path(r.path)
        req: A.ArtifactCommitBody = r.body
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
        if "\x00" in req.description:
            raise invalid("description", "contains a NUL character")
        entries = req.manifest["entries"]
        shas = sorted({e["digest"] for e in entries.values() if e.get("ref") is None})

        missing = await run_in_threadpool(self._lacking, r, shas)
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
                run_id=None if req.run_id is None else self._run_key(project, req.run_id),
            )

        try:
            version, created = await run_in_threadpool(commit)
        except TypeMismatch as exc:
            raise Problem(409, "type_mismatch", str(exc), "type") from None
        return json_response({"version": version, "created": created}, 201 if created else 200)

    @endpoint(
        "GET",
        "/projects/{project}/artifacts",
        scope="read",
        summary="Artifacts of a project",
        path_params=A.ArtifactProjectPath,
        responses={200: A.ArtifactList},
    )
    async def project_artifacts(self, r: In) -> Response:
        project = check_project(r.path.project, "project")
        return json_response(
            {"artifacts": await run_in_threadpool(self.art.list_artifacts, project)}
        )

    @endpoint(
        "GET",
        "/projects/{project}/artifacts/{name}/versions",
        scope="read",
        summary="Versions of an artifact, newest first",
        path_params=A.ArtifactPath,
        responses={200: A.ArtifactVersionList},
    )
    async def artifact_versions(self, r: In) -> Response:
        project, name = self._path(r.path)
        doc = await run_in_threadpool(self.art.versions, project, name)
        if doc is None:
            raise Problem(404, "artifact_not_found", f"no artifact {project}/{name}", "name")
        return json_response(doc)

    @endpoint(
        "GET",
        "/projects/{project}/artifacts/{name}/versions/{ref}",
        scope="read",
        summary="One version by vN or alias, with its manifest and lineage",
        path_params=A.ArtifactVersionPath,
        responses={200: A.ArtifactVersion},
    )
    async def artifact_version(self, r: In) -> Response:
        project, name = self._path(r.path)
        ref = _name(r.path.ref, "ref")
        doc = await run_in_threadpool(self.art.version, project, name, ref)
        if doc is None:
            raise Problem(404, "version_not_found", f"no version {project}/{name}:{ref}", "ref")
        return json_response(doc)

    @endpoint(
        "PUT",
        "/projects/{project}/artifacts/{name}/aliases/{alias}",
        scope="write",
        summary="Point an alias at a version (moves it)",
        path_params=A.ArtifactAliasPath,
        body=A.ArtifactAliasBody,
        responses={200: A.ArtifactVersion},
    )
    async def set_artifact_alias(self, r: In) -> Response:
        project, name = self._path(r.path)
        alias = _name(r.path.alias, "alias")
        if _VERSION.fullmatch(alias):
            raise invalid("alias", f"{alias!r} is a version number, not an alias")
        req: A.ArtifactAliasBody = r.body
        if not _VERSION.fullmatch(req.version):
            raise invalid("version", "expected vN")
        ok = await run_in_threadpool(self.art.set_alias, project, name, req.version, alias)
        if not ok:
            raise Problem(404, "version_not_found", f"no version {project}/{name}:{req.version}")
        doc = await run_in_threadpool(
            lambda: self.art.version(project, name, req.version, manifest=False)
        )
        return json_response(doc)

    @endpoint(
        "POST",
        "/projects/{project}/artifacts/{name}/usage",
        scope="write",
        summary="Record that a run consumed a version",
        path_params=A.ArtifactPath,
        body=A.ArtifactUseBody,
        responses={200: A.ArtifactUsed},
    )
    async def use_artifact(self, r: In) -> Response:
        project, name = self._path(r.path)
        req: A.ArtifactUseBody = r.body
        check_id(req.run_id, "run_id")
        if not _SHA.fullmatch(req.digest):
            raise invalid("digest", "expected 64 lowercase hex digits")
        key = await run_in_threadpool(self._run_key, project, req.run_id)
        v = await run_in_threadpool(self.art.use, project, name, req.digest, key)
        if v is None:
            raise Problem(
                404, "version_not_found", f"no version of {project}/{name} with that digest"
            )
        return json_response({"version": v})

    @endpoint(
        "GET",
        "/runs/{run_id}/artifacts",
        scope="read",
        summary="Lineage of a run: versions it produced and consumed",
        path_params=T.RunPath,
        responses={200: A.RunArtifacts},
    )
    async def run_artifacts(self, r: In) -> Response:
        run_id = check_id(r.path.run_id, "run_id")
        return json_response(await run_in_threadpool(self.art.run_lineage, run_id))

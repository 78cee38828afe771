"""Direct uploads (docs/http-api.md, "Uploads"): where the bytes of a blob go.

With the local store the answer is ``direct``: the client PUTs the bytes to this server
(``/media/{sha256}`` or ``/artifact-files/{sha256}``) as before.  With an object store it
is ``presigned``: part URLs the client PUTs to itself, so the bytes never pass through
this process; ``complete`` then has the store check the size and sha256 before the blob
is recorded.  Asking again for a blob whose upload was interrupted lists only the parts
still missing (resumable).  Rights: write scope; the declared size counts against the
caller's media quota (``_auth.check_quota``).  Only a finished upload of the bytes
(or a PUT of them) makes the caller one of the blob's uploaders (``http.body.proven``):
``complete`` on a blob the server held already proves nothing (409 ``upload_not_proven``).
"""

from __future__ import annotations

from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.responses import Response

from wisp.server.blobs.base import BlobStore
from wisp.server.http.auth import check_quota, principal_of
from wisp.server.http.body import json_response, proven
from wisp.server.http.problem import Problem
from wisp.server.http.routes import In, endpoint
from wisp.server.schemas import uploads as U
from wisp.server.settings import MAX_FILE_BYTES, ServerSettings
from wisp.server.store.facade import Store

__all__ = ["UploadApi"]


class UploadApi:
    """The upload handlers (types: ``server.schemas.uploads``)."""

    def __init__(self, store: Store, settings: ServerSettings, blobs: BlobStore) -> None:
        self.store = store
        self.blobs = blobs
        self.settings = settings

    def _limit(self, kind: str) -> int:
        return self.settings.max_media_bytes if kind == "media" else MAX_FILE_BYTES

    def _recorded(self, kind: str, sha: str) -> bool:
        """Whether the blob is indexed for ``kind`` and its bytes are held."""
        if kind == "media":
            known = self.store.media_known(sha) is not None
        else:
            known = self.store.artifacts.file_size(sha) is not None
        return known and self.blobs.exists(sha)

    @staticmethod
    def _url(b: U.UploadBody | U.UploadCompleteBody, sha: str) -> str:
        """Where a ``direct`` upload PUTs the bytes."""
        if b.kind == "media":
            return f"/api/v1/media/{sha}{b.suffix}"
        return f"/api/v1/artifact-files/{sha}"

    def _record(self, kind: str, sha: str, size: int, suffix: str) -> None:
        if kind == "media":
            self.store.media_add(sha, size, suffix)
        else:
            self.store.artifacts.file_add(sha, size)

    @endpoint(
        "POST",
        "/uploads/{sha256}",
        scope="write",
        summary="Plan the upload of a blob: held already, send it here, or presigned part URLs",
        path_params=U.UploadPath,
        body=U.UploadBody,
        responses={200: U.UploadPlanned},
    )
    async def plan_upload(self, r: In) -> Response:
        sha: str = r.path.sha256
        b: U.UploadBody = r.body
        limit = self._limit(b.kind)
        if b.size > limit:
            raise Problem(413, "too_large", f"{b.kind} larger than {limit} bytes", "size")
        p = principal_of(r.request)
        readable = await run_in_threadpool(self.store.access.can_read_media, p, sha)
        if readable and await run_in_threadpool(self._recorded, b.kind, sha):
            return json_response({"sha256": sha, "method": "stored"})
        if not readable and await run_in_threadpool(self.blobs.exists, sha):
            # held, but not the caller's to read: it proves it has the bytes by sending them
            # through this server (hashed, not stored again: ``http.body.check_possession``)
            return json_response({"sha256": sha, "method": "direct", "url": self._url(b, sha)})
        await run_in_threadpool(check_quota, r.request, b.size)
        if b.size == 0:  # nothing to send: the server stores the empty blob itself
            await run_in_threadpool(self.blobs.put, sha, [b""], limit)  # 422 on a wrong hash
            await run_in_threadpool(self._record, b.kind, sha, 0, b.suffix)
            proven(r.request, sha)  # the empty blob's bytes are known to all
            return json_response({"sha256": sha, "method": "stored"})
        plan = await run_in_threadpool(self.blobs.plan_upload, sha, b.size)
        if plan is None:
            return json_response({"sha256": sha, "method": "direct", "url": self._url(b, sha)})
        out: dict[str, Any] = {
            "sha256": sha,
            "method": "presigned",
            "upload_id": plan.upload_id,
            "part_size": plan.part_size,
            "parts": plan.parts,
            "expires_in": plan.expires_in,
        }
        return json_response(out)

    @endpoint(
        "POST",
        "/uploads/{sha256}/complete",
        scope="write",
        summary="Finish a presigned upload: the server checks size and sha256, then records it",
        path_params=U.UploadPath,
        body=U.UploadCompleteBody,
        responses={200: U.UploadDone, 201: U.UploadDone},
    )
    async def complete_upload(self, r: In) -> Response:
        sha: str = r.path.sha256
        b: U.UploadCompleteBody = r.body
        if b.size > self._limit(b.kind):
            raise Problem(413, "too_large", f"{b.kind} larger than {self._limit(b.kind)} bytes")
        p = principal_of(r.request)
        readable = await run_in_threadpool(self.store.access.can_read_media, p, sha)
        if readable and await run_in_threadpool(self._recorded, b.kind, sha):
            return json_response({"sha256": sha, "stored": False}, 200)  # nothing gained
        if not readable and await run_in_threadpool(self.blobs.exists, sha):
            # held already: completing "an upload" proves nothing about the caller's bytes
            raise Problem(
                409,
                "upload_not_proven",
                f"the server holds this blob: send its bytes (PUT {self._url(b, sha)}) to "
                "prove you have them",
                "upload_id",
            )
        # 409 while parts are missing; 422 (and the object deleted) on a wrong size or hash
        size = await run_in_threadpool(self.blobs.finish_upload, sha, b.size, b.upload_id)
        await run_in_threadpool(self._record, b.kind, sha, size, b.suffix)
        proven(r.request, sha)  # the store checked the bytes this upload sent
        return json_response({"sha256": sha, "stored": True}, 201)

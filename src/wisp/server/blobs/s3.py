"""Blobs in an S3-compatible object store (``s3://bucket/prefix``): :class:`S3BlobStore`.

The client library is boto3 (the ``s3`` server extra), configured the standard way:
``AWS_ENDPOINT_URL`` (any S3-compatible server; path-style addressing is used when it is
set), ``AWS_ACCESS_KEY_ID`` / ``AWS_SECRET_ACCESS_KEY``, ``AWS_REGION``.

``s3://bucket/prefix?part_size=<bytes>`` sets the size of upload parts (default 64 MiB,
at least S3's 5 MiB).

Layout: ``<prefix>/blobs/<sha[:2]>/<sha>``, the same content-addressed names as the local
store.  Bytes normally go between the clients and the store directly:

* an upload is an S3 multipart upload to the blob's own key, whose part URLs the server
  presigns (:meth:`S3BlobStore.plan_upload`; asking again for the same blob resumes the
  pending upload and lists only the parts still missing).  Only the server completes it
  (:meth:`S3BlobStore.finish_upload`), with ``If-None-Match: *`` so an existing blob is
  never overwritten, then reads the object back to check its size and sha256; a wrong one
  is deleted.  A client holds no URL that can write the key once the upload is complete.
* a download is a short-lived presigned GET, with the ``Content-Type`` and
  ``Content-Disposition`` the server chose as response-header overrides
  (:meth:`S3BlobStore.download_url`).

Bytes sent through the server (``PUT /media``, older clients) are streamed to a multipart
upload that is completed only once their sha256 matched, so no wrong blob ever appears.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from types import TracebackType
from typing import Any, BinaryIO, cast
from urllib.parse import parse_qsl, unquote, urlsplit

from wisp.errors import UsageError, install_hint
from wisp.server.blobs.base import CHUNK, BlobInfo, UploadPlan, check_sha, put_chunks
from wisp.server.http.problem import Problem

__all__ = ["MIN_PART", "S3BlobStore", "part_size_for"]

MIN_PART = 64 << 20  # bytes per part (S3's floor is 5 MiB; fewer, larger parts go faster)
MAX_PARTS = 10_000  # S3's ceiling
UPLOAD_EXPIRES = 3600  # seconds a presigned part URL is valid
_VERIFY_CHUNK = 8 << 20
_WRITER_PART = 16 << 20


def part_size_for(size: int, min_part: int = MIN_PART) -> int:
    """The part size of a ``size``-byte upload: ``min_part``, or more to stay under 10000."""
    per = -(-size // MAX_PARTS)
    return max(min_part, -(-per // (1 << 20)) * (1 << 20))


def _boto3() -> Any:
    try:
        import boto3
    except ImportError:
        raise UsageError(f"an s3:// media store needs boto3: {install_hint('s3')}") from None
    return boto3


class _NoBotocore(Exception):
    """Never raised: what ``except _client_error()`` catches when botocore is missing."""


def _client_error() -> type[Exception]:
    """botocore's ClientError, for ``except`` clauses.  Without boto3 the client was never
    made (``_boto3()`` raised the UsageError with the install hint): nothing to catch, and
    no ModuleNotFoundError raised while that error propagates, burying its hint."""
    try:
        from botocore.exceptions import ClientError
    except ImportError:
        return _NoBotocore
    return cast("type[Exception]", ClientError)


def _code(exc: Exception) -> str:
    return str(getattr(exc, "response", {}).get("Error", {}).get("Code", ""))


def _status(exc: Exception) -> int:
    meta = getattr(exc, "response", {}).get("ResponseMetadata", {})
    return int(meta.get("HTTPStatusCode") or 0)


class _S3Writer:
    """A streamed upload through the server: parts are sent as they fill, completed only
    when the bytes hash to the blob's name (then never over an existing blob)."""

    def __init__(self, store: S3BlobStore, sha256: str, max_bytes: int | None) -> None:
        self.store = store
        self.sha = sha256
        self.key = store.key(sha256)
        self.max_bytes = max_bytes
        self.h = hashlib.sha256()
        self.size = 0
        self.buf = bytearray()
        self.parts: list[dict[str, Any]] = []
        self.upload_id: str | None = None
        self.done = False

    def _flush(self) -> None:
        c = self.store.client
        if self.upload_id is None:
            got = c.create_multipart_upload(Bucket=self.store.bucket, Key=self.key)
            self.upload_id = str(got["UploadId"])
        n = len(self.parts) + 1
        r = c.upload_part(
            Bucket=self.store.bucket,
            Key=self.key,
            UploadId=self.upload_id,
            PartNumber=n,
            Body=bytes(self.buf),
        )
        self.parts.append({"PartNumber": n, "ETag": r["ETag"]})
        self.buf.clear()

    def write(self, chunk: bytes) -> None:
        if self.done:
            raise ValueError("blob writer is closed")
        self.size += len(chunk)
        if self.max_bytes is not None and self.size > self.max_bytes:
            raise Problem(413, "too_large", f"media larger than {self.max_bytes} bytes")
        self.h.update(chunk)
        self.buf += chunk
        if len(self.buf) >= _WRITER_PART:
            self._flush()

    def commit(self) -> int:
        if self.done:
            raise ValueError("blob writer is closed")
        if self.h.hexdigest() != self.sha:
            raise Problem(
                422, "hash_mismatch", "the body's sha256 does not match the URL", "sha256"
            )
        if self.upload_id is None:  # small: one conditional PUT
            self.done = True
            self.store._put_new(self.key, bytes(self.buf))
            return self.size
        if self.buf or not self.parts:
            self._flush()
        self.done = True
        self.store._complete(self.key, self.upload_id, self.parts)
        self.upload_id = None
        return self.size

    def abort(self) -> None:
        self.done = True
        if self.upload_id is not None:
            self.store._abort(self.key, self.upload_id)
            self.upload_id = None

    def __enter__(self) -> _S3Writer:
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.abort()


class S3BlobStore:
    """Blobs as objects under ``s3://bucket/prefix`` (see the module docstring)."""

    def __init__(self, url: str, client: Any = None) -> None:
        parts = urlsplit(url)
        if parts.scheme.lower() != "s3" or not parts.netloc:
            raise UsageError(f"an object store URL is s3://bucket/prefix, got {url!r}")
        self.bucket = parts.netloc
        self.prefix = unquote(parts.path).strip("/")
        self.url = f"s3://{self.bucket}/{self.prefix}".rstrip("/")
        self.min_part = MIN_PART
        for name, value in parse_qsl(parts.query, keep_blank_values=True):
            if name != "part_size" or not value.isdigit() or int(value) < 5 << 20:
                raise UsageError(
                    f"{url!r}: the only option of an s3:// URL is part_size=<bytes>, >= 5 MiB"
                )
            self.min_part = int(value)
        self._client = client

    @property
    def client(self) -> Any:
        """The boto3 S3 client (made on first use, from the standard AWS variables)."""
        if self._client is None:
            boto3 = _boto3()
            from botocore.config import Config

            custom = bool(
                os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
            )
            cfg = Config(
                signature_version="s3v4",
                s3={"addressing_style": "path" if custom else "auto"},
                retries={"max_attempts": 5, "mode": "standard"},
            )
            region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
            self._client = boto3.session.Session().client(
                "s3", region_name=region or "us-east-1", config=cfg
            )
        return self._client

    def key(self, sha256: str) -> str:
        sha = check_sha(sha256)
        return f"{self.prefix}/blobs/{sha[:2]}/{sha}" if self.prefix else f"blobs/{sha[:2]}/{sha}"

    def _root(self) -> str:
        return f"{self.prefix}/blobs/" if self.prefix else "blobs/"

    def check(self) -> None:
        """Fail early, with a clear message, when the bucket cannot be reached."""
        try:
            self.client.head_bucket(Bucket=self.bucket)
        except _client_error() as exc:
            raise UsageError(f"cannot use bucket {self.bucket!r}: {exc}") from None

    # -- the BlobStore interface ------------------------------------------------------------

    def writer(self, sha256: str, max_bytes: int | None = None) -> _S3Writer:
        return _S3Writer(self, check_sha(sha256), max_bytes)

    def put(self, sha256: str, chunks: Iterable[bytes], max_bytes: int | None = None) -> int:
        """Store the bytes of ``chunks`` as blob ``sha256``; returns the size."""
        return put_chunks(self, sha256, chunks, max_bytes)

    def head(self, sha256: str) -> BlobInfo | None:
        try:
            got = self.client.head_object(Bucket=self.bucket, Key=self.key(sha256))
        except _client_error() as exc:
            if _status(exc) == 404 or _code(exc) in ("404", "NoSuchKey", "NotFound"):
                return None
            raise
        return BlobInfo(int(got["ContentLength"]), None)

    def exists(self, sha256: str) -> bool:
        return self.head(sha256) is not None

    def open(self, sha256: str) -> BinaryIO:
        try:
            got = self.client.get_object(Bucket=self.bucket, Key=self.key(sha256))
        except _client_error() as exc:
            if _code(exc) in ("NoSuchKey", "404"):
                raise FileNotFoundError(sha256) from None
            raise
        return cast("BinaryIO", got["Body"])

    def iter_bytes(self, sha256: str, chunk_size: int = CHUNK) -> Iterator[bytes]:
        body = self.open(sha256)
        try:
            while chunk := body.read(chunk_size):
                yield chunk
        finally:
            body.close()

    def local_path(self, sha256: str) -> Path | None:
        return None

    def delete(self, sha256: str) -> bool:
        if not self.exists(sha256):
            return False
        self.client.delete_object(Bucket=self.bucket, Key=self.key(sha256))
        return True

    def iterate(self) -> Iterator[str]:
        pages = self.client.get_paginator("list_objects_v2").paginate(
            Bucket=self.bucket, Prefix=self._root()
        )
        for page in pages:
            for obj in page.get("Contents", []):
                name = str(obj["Key"]).rpartition("/")[2]
                try:
                    yield check_sha(name)
                except ValueError:
                    continue

    # -- direct transfers -------------------------------------------------------------------

    def plan_upload(self, sha256: str, size: int) -> UploadPlan:
        """Presigned part URLs for a ``size``-byte blob; resumes a pending upload of it."""
        key = self.key(sha256)
        c = self.client
        psize = part_size_for(size, self.min_part)
        count = max(1, -(-size // psize))
        upload_id, done = self._pending(key, psize, size)
        if upload_id is None:
            upload_id = str(c.create_multipart_upload(Bucket=self.bucket, Key=key)["UploadId"])
        parts = []
        for n in range(1, count + 1):
            if n in done:
                continue
            offset = (n - 1) * psize
            url = c.generate_presigned_url(
                "upload_part",
                Params={"Bucket": self.bucket, "Key": key, "UploadId": upload_id, "PartNumber": n},
                ExpiresIn=UPLOAD_EXPIRES,
            )
            parts.append(
                {"number": n, "offset": offset, "size": min(psize, size - offset), "url": url}
            )
        return UploadPlan(upload_id, psize, parts, UPLOAD_EXPIRES)

    def _pending(self, key: str, psize: int, size: int) -> tuple[str | None, set[int]]:
        """A pending upload of ``key`` and its parts already sent at the right sizes."""
        got = self.client.list_multipart_uploads(Bucket=self.bucket, Prefix=key)
        for u in got.get("Uploads", []):
            if u.get("Key") != key:
                continue
            upload_id = str(u["UploadId"])
            done = set()
            for p in self._parts(key, upload_id):
                n, psz = int(p["PartNumber"]), int(p["Size"])
                if psz == min(psize, size - (n - 1) * psize):
                    done.add(n)
            return upload_id, done
        return None, set()

    def _parts(self, key: str, upload_id: str) -> list[dict[str, Any]]:
        pages = self.client.get_paginator("list_parts").paginate(
            Bucket=self.bucket, Key=key, UploadId=upload_id
        )
        return [p for page in pages for p in page.get("Parts", [])]

    def finish_upload(self, sha256: str, size: int, upload_id: str) -> int:
        """Complete a client's upload and check it (size, then sha256); returns the size.

        ``Problem`` 409 ``incomplete_upload`` while parts are missing, 404 for an unknown
        upload, 422 ``hash_mismatch`` / ``size_mismatch`` (the object is deleted)."""
        key = self.key(sha256)
        try:
            parts = self._parts(key, upload_id)
        except _client_error() as exc:
            if _code(exc) == "NoSuchUpload" or _status(exc) == 404:
                if self.verify(sha256, size):  # completed before (an answer that was lost)
                    return size
                raise Problem(404, "upload_not_found", "no such upload", "upload_id") from None
            raise
        psize = part_size_for(size, self.min_part)
        count = max(1, -(-size // psize))
        have = {int(p["PartNumber"]): p for p in parts}
        missing = [n for n in range(1, count + 1) if n not in have]
        if missing:
            raise Problem(
                409,
                "incomplete_upload",
                f"{len(missing)} of {count} part(s) not uploaded",
                "upload_id",
                {"missing_parts": missing[:1000]},
            )
        got = sum(int(have[n]["Size"]) for n in range(1, count + 1))
        if got != size or any(n > count for n in have):
            self._abort(key, upload_id)
            raise Problem(422, "size_mismatch", f"{got} bytes uploaded, {size} declared", "size")
        done = [{"PartNumber": n, "ETag": have[n]["ETag"]} for n in range(1, count + 1)]
        ours = self._complete(key, upload_id, done)
        if self.verify(sha256, size):
            return size
        if not ours:  # another upload of the blob was being checked, and failed: send again
            raise Problem(409, "upload_conflict", "another upload of this blob failed; retry")
        raise Problem(
            422, "hash_mismatch", "the uploaded bytes do not hash to the blob's name", "sha256"
        )

    def verify(self, sha256: str, size: int) -> bool:
        """Whether the stored object is ``size`` bytes hashing to ``sha256``; a wrong one is
        deleted.  The bytes are read back in bounded chunks (constant memory)."""
        info = self.head(sha256)
        if info is None:
            return False
        h = hashlib.sha256()
        n = 0
        if info.size == size:
            for chunk in self.iter_bytes(sha256, _VERIFY_CHUNK):
                h.update(chunk)
                n += len(chunk)
        if n == size and h.hexdigest() == sha256:
            return True
        self.client.delete_object(Bucket=self.bucket, Key=self.key(sha256))
        return False

    def download_url(
        self, sha256: str, content_type: str, disposition: str, expires: int = 300
    ) -> str:
        """A presigned GET answering with these ``Content-Type``/``Content-Disposition``."""
        return str(
            self.client.generate_presigned_url(
                "get_object",
                Params={
                    "Bucket": self.bucket,
                    "Key": self.key(sha256),
                    "ResponseContentType": content_type,
                    "ResponseContentDisposition": disposition,
                    "ResponseCacheControl": f"private, max-age={expires}",
                },
                ExpiresIn=expires,
            )
        )

    def abort_stale_uploads(self, before: float) -> int:
        """Abort uploads started before ``before`` (a Unix time) and never completed."""
        n = 0
        pages = self.client.get_paginator("list_multipart_uploads").paginate(
            Bucket=self.bucket, Prefix=self._root()
        )
        for page in pages:
            for u in page.get("Uploads", []):
                if u["Initiated"].timestamp() < before:
                    self._abort(str(u["Key"]), str(u["UploadId"]))
                    n += 1
        return n

    # -- helpers ----------------------------------------------------------------------------

    def _put_new(self, key: str, data: bytes) -> None:
        try:
            self.client.put_object(Bucket=self.bucket, Key=key, Body=data, IfNoneMatch="*")
        except _client_error() as exc:
            if _status(exc) != 412:  # 412: the blob is there already (same name, same bytes)
                raise

    def _complete(self, key: str, upload_id: str, parts: list[dict[str, Any]]) -> bool:
        """Publish the upload unless a blob of that name exists (then it is dropped: False)."""
        try:
            self.client.complete_multipart_upload(
                Bucket=self.bucket,
                Key=key,
                UploadId=upload_id,
                MultipartUpload={"Parts": parts},
                IfNoneMatch="*",
            )
        except _client_error() as exc:
            if _status(exc) != 412:
                raise
            self._abort(key, upload_id)  # a blob of that name is there already: keep it
            return False
        return True

    def _abort(self, key: str, upload_id: str) -> None:
        try:
            self.client.abort_multipart_upload(Bucket=self.bucket, Key=key, UploadId=upload_id)
        except _client_error() as exc:
            if _code(exc) != "NoSuchUpload" and _status(exc) != 404:
                raise

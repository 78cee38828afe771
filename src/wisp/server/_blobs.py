"""Content-addressed blob storage for media (and later artifacts): the :class:`BlobStore` seam.

A blob is named by the sha256 of its bytes (64 lowercase hex digits).  ``put`` is
streamed and verified: bytes are written to a temporary object as they arrive and
become visible under their name only when their sha256 matches (a
``Problem(422, "hash_mismatch")`` otherwise; ``Problem(413, "too_large")`` past
``max_bytes``), so a reader never sees a partial or wrong blob.

:func:`open_blob_store` chooses the implementation from a URL, as
:func:`wisp.server.open_store` does for the database: a plain path or
``file:///path`` is a :class:`LocalBlobStore`; other schemes (``s3://``) are for
``s3://bucket/prefix`` is an :class:`._blobs_s3.S3BlobStore` (the ``s3`` extra).

A store that can hand out presigned URLs answers :meth:`BlobStore.plan_upload` and
:meth:`BlobStore.download_url` (clients then move the bytes themselves); the local store
answers None: the bytes go through the server.

Local layout (version 1, unchanged since the first server): ``<root>/<sha[:2]>/<sha>``,
temporary files in ``<root>/tmp/``.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, BinaryIO, NamedTuple, Protocol

from wisp.errors import UsageError
from wisp.server._problem import Problem

__all__ = [
    "BlobInfo",
    "BlobStore",
    "BlobWriter",
    "LocalBlobStore",
    "UploadPlan",
    "open_blob_store",
]

_SHA = re.compile(r"[0-9a-f]{64}")
CHUNK = 1 << 16


class BlobInfo(NamedTuple):
    size: int
    content_type: str | None  # None where the store does not keep one (the local store)


@dataclass
class UploadPlan:
    """Where a client sends a blob itself: presigned part URLs of one multipart upload."""

    upload_id: str
    part_size: int
    parts: list[dict[str, Any]]  # [{number, offset, size, url}] still to send
    expires_in: int


class BlobWriter(Protocol):
    """One streamed upload: ``write`` chunks, then ``commit``; leaving without commit aborts."""

    def write(self, chunk: bytes) -> None: ...

    def commit(self) -> int: ...

    def abort(self) -> None: ...

    def __enter__(self) -> BlobWriter: ...

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None: ...


class BlobStore(Protocol):
    """Where blob bytes live; the database keeps only the index (``media_files``)."""

    url: str

    def writer(self, sha256: str, max_bytes: int | None = None) -> BlobWriter: ...

    def put(self, sha256: str, chunks: Iterable[bytes], max_bytes: int | None = None) -> int: ...

    def head(self, sha256: str) -> BlobInfo | None: ...

    def exists(self, sha256: str) -> bool: ...

    def open(self, sha256: str) -> BinaryIO: ...

    def iter_bytes(self, sha256: str, chunk_size: int = CHUNK) -> Iterator[bytes]: ...

    def local_path(self, sha256: str) -> Path | None: ...

    def delete(self, sha256: str) -> bool: ...

    def iterate(self) -> Iterator[str]: ...

    def check(self) -> None:
        """Fail (``UsageError``) when the store cannot be used; at server start."""

    def plan_upload(self, sha256: str, size: int) -> UploadPlan | None:
        """Presigned URLs for a client's upload; None: send the bytes to the server."""

    def finish_upload(self, sha256: str, size: int, upload_id: str) -> int:
        """Complete and check a planned upload; returns the size (``Problem`` otherwise)."""

    def download_url(
        self, sha256: str, content_type: str, disposition: str, expires: int = 300
    ) -> str | None:
        """A short-lived URL the client fetches the bytes from; None: from the server."""

    def abort_stale_uploads(self, before: float) -> int:
        """Drop unfinished uploads started before ``before``; how many."""


def check_sha(sha256: str) -> str:
    if not isinstance(sha256, str) or _SHA.fullmatch(sha256) is None:
        raise ValueError(f"a blob name is 64 lowercase hex digits, got {sha256!r}")
    return sha256


class _LocalWriter:
    def __init__(self, store: LocalBlobStore, sha256: str, max_bytes: int | None) -> None:
        self.store = store
        self.sha = sha256
        self.max_bytes = max_bytes
        tmpdir = store.root / "tmp"
        tmpdir.mkdir(parents=True, exist_ok=True)
        fd, self.tmp = tempfile.mkstemp(dir=tmpdir)
        self.f: BinaryIO | None = os.fdopen(fd, "wb")
        self.h = hashlib.sha256()
        self.size = 0

    def write(self, chunk: bytes) -> None:
        if self.f is None:
            raise ValueError("blob writer is closed")
        self.size += len(chunk)
        if self.max_bytes is not None and self.size > self.max_bytes:
            raise Problem(413, "too_large", f"media larger than {self.max_bytes} bytes")
        self.h.update(chunk)
        self.f.write(chunk)

    def commit(self) -> int:
        """Publish the blob under its name; refuses (422) bytes whose sha256 differs."""
        if self.f is None:
            raise ValueError("blob writer is closed")
        self.f.close()
        self.f = None
        if self.h.hexdigest() != self.sha:
            raise Problem(
                422, "hash_mismatch", "the body's sha256 does not match the URL", "sha256"
            )
        path = self.store.path(self.sha)
        path.parent.mkdir(parents=True, exist_ok=True)
        os.replace(self.tmp, path)
        return self.size

    def abort(self) -> None:
        if self.f is not None:
            self.f.close()
            self.f = None
        if os.path.exists(self.tmp):
            os.unlink(self.tmp)

    def __enter__(self) -> _LocalWriter:
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.abort()  # after commit() the temporary file is gone: nothing to do


class LocalBlobStore:
    """Blobs as files under a directory (see the module docstring for the layout)."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root).expanduser().resolve()
        self.root.mkdir(parents=True, exist_ok=True)
        self.url = self.root.as_uri()

    def path(self, sha256: str) -> Path:
        sha = check_sha(sha256)
        return self.root / sha[:2] / sha

    def writer(self, sha256: str, max_bytes: int | None = None) -> _LocalWriter:
        return _LocalWriter(self, check_sha(sha256), max_bytes)

    def put(self, sha256: str, chunks: Iterable[bytes], max_bytes: int | None = None) -> int:
        """Store the bytes of ``chunks`` as blob ``sha256``; returns the size."""
        with self.writer(sha256, max_bytes) as w:
            for chunk in chunks:
                w.write(chunk)
            return w.commit()

    def head(self, sha256: str) -> BlobInfo | None:
        try:
            st = self.path(sha256).stat()
        except FileNotFoundError:
            return None
        return BlobInfo(st.st_size, None)

    def exists(self, sha256: str) -> bool:
        return self.path(sha256).is_file()

    def open(self, sha256: str) -> BinaryIO:
        """The blob for reading (``FileNotFoundError`` when absent)."""
        return self.path(sha256).open("rb")

    def iter_bytes(self, sha256: str, chunk_size: int = CHUNK) -> Iterator[bytes]:
        with self.open(sha256) as f:
            while chunk := f.read(chunk_size):
                yield chunk

    def local_path(self, sha256: str) -> Path | None:
        """The file of a stored blob, so it can be served with sendfile; None when absent."""
        path = self.path(sha256)
        return path if path.is_file() else None

    def delete(self, sha256: str) -> bool:
        try:
            self.path(sha256).unlink()
        except FileNotFoundError:
            return False
        return True

    def iterate(self) -> Iterator[str]:
        """The names of all stored blobs (temporary files of unfinished uploads excluded)."""
        for sub in sorted(self.root.iterdir()):
            if len(sub.name) != 2 or not sub.is_dir():
                continue
            for f in sorted(sub.iterdir()):
                if _SHA.fullmatch(f.name) and f.name[:2] == sub.name and f.is_file():
                    yield f.name

    def check(self) -> None:
        """The directory was made (or found) when the store was opened."""

    # -- direct transfers: not for local files (the server reads and writes them) ----------

    def plan_upload(self, sha256: str, size: int) -> UploadPlan | None:
        return None

    def finish_upload(self, sha256: str, size: int, upload_id: str) -> int:
        raise Problem(404, "upload_not_found", "this server takes media bytes itself", "upload_id")

    def download_url(
        self, sha256: str, content_type: str, disposition: str, expires: int = 300
    ) -> str | None:
        return None

    def abort_stale_uploads(self, before: float) -> int:
        """Temporary files of uploads that never finished (a killed server), by age."""
        n = 0
        for f in (self.root / "tmp").glob("*"):
            try:
                if f.stat().st_mtime < before:
                    f.unlink()
                    n += 1
            except FileNotFoundError:
                continue
        return n


def open_blob_store(url: str) -> BlobStore:
    """The blob store at ``url``: a directory path or ``file:///path`` (local files), or
    ``s3://bucket/prefix`` (an S3-compatible object store)."""
    if "://" not in url:
        return LocalBlobStore(url)
    scheme, _, rest = url.partition("://")
    if scheme.lower() == "file":
        if rest and not rest.startswith("/"):
            raise UsageError(f"a file:// media store URL needs an absolute path, got {url!r}")
        from urllib.parse import unquote

        return LocalBlobStore(unquote(rest))
    if scheme.lower() == "s3":
        from wisp.server._blobs_s3 import S3BlobStore

        return S3BlobStore(url)
    raise UsageError(
        f"unsupported media store URL scheme {scheme!r}: "
        "use a directory path, file:///path or s3://bucket/prefix"
    )

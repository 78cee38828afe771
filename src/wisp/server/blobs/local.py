"""Blobs in a directory: :class:`LocalBlobStore` (the seam is :class:`.base.BlobStore`).

A blob is named by the sha256 of its bytes; ``put`` is streamed and verified (see
:mod:`.base`).  The local store hands out no presigned URLs: the bytes go through the
server.

Local layout (version 1, unchanged since the first server): ``<root>/<sha[:2]>/<sha>``,
temporary files in ``<root>/tmp/``.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from types import TracebackType
from typing import BinaryIO

from wisp.server.blobs.base import CHUNK, SHA, BlobInfo, UploadPlan, check_sha, put_chunks
from wisp.server.http.problem import Problem

__all__ = ["LocalBlobStore"]


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
        return put_chunks(self, sha256, chunks, max_bytes)

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
                if SHA.fullmatch(f.name) and f.name[:2] == sub.name and f.is_file():
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

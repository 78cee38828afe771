"""The blob store seam: :class:`BlobStore` (and its writer), the names and shapes stores share.

A blob is named by the sha256 of its bytes (64 lowercase hex digits).  ``put`` is
streamed and verified: bytes are written to a temporary object as they arrive and
become visible under their name only when their sha256 matches (a
``Problem(422, "hash_mismatch")`` otherwise; ``Problem(413, "too_large")`` past
``max_bytes``), so a reader never sees a partial or wrong blob.

A store that can hand out presigned URLs answers :meth:`BlobStore.plan_upload` and
:meth:`BlobStore.download_url` (clients then move the bytes themselves); the local store
(:mod:`.local`) answers None: the bytes go through the server; :mod:`.s3` is the other.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, BinaryIO, NamedTuple, Protocol

__all__ = [
    "CHUNK",
    "SHA",
    "BlobInfo",
    "BlobStore",
    "BlobWriter",
    "UploadPlan",
    "check_sha",
    "put_chunks",
]

SHA = re.compile(r"[0-9a-f]{64}")
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
    if not isinstance(sha256, str) or SHA.fullmatch(sha256) is None:
        raise ValueError(f"a blob name is 64 lowercase hex digits, got {sha256!r}")
    return sha256


def put_chunks(
    store: BlobStore, sha256: str, chunks: Iterable[bytes], max_bytes: int | None
) -> int:
    """``store.put``: the bytes of ``chunks`` through one :meth:`BlobStore.writer`; the size."""
    with store.writer(sha256, max_bytes) as w:
        for chunk in chunks:
            w.write(chunk)
        return w.commit()

"""Content-addressed blob storage: the :class:`~wisp.server.blobs.base.BlobStore` seam
(``base``), a directory (``local``), an S3-compatible bucket (``s3``, the ``s3`` extra).

:func:`open_blob_store` chooses the implementation from a URL, as
:func:`wisp.server.open_store` does for the database.  Importing this package loads nothing
else: the store modules load when a store is opened.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from wisp.server.blobs.base import BlobStore

__all__ = ["open_blob_store"]


def open_blob_store(url: str) -> BlobStore:
    """The blob store at ``url``: a directory path or ``file:///path`` (local files), or
    ``s3://bucket/prefix`` (an S3-compatible object store)."""
    from wisp.errors import UsageError
    from wisp.server.blobs.local import LocalBlobStore

    if "://" not in url:
        return LocalBlobStore(url)
    scheme, _, rest = url.partition("://")
    if scheme.lower() == "file":
        if rest and not rest.startswith("/"):
            raise UsageError(f"a file:// media store URL needs an absolute path, got {url!r}")
        from urllib.parse import unquote

        return LocalBlobStore(unquote(rest))
    if scheme.lower() == "s3":
        from wisp.server.blobs.s3 import S3BlobStore

        return S3BlobStore(url)
    raise UsageError(
        f"unsupported media store URL scheme {scheme!r}: "
        "use a directory path, file:///path or s3://bucket/prefix"
    )

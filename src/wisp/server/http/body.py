"""HTTP plumbing: bounded body reading (413), JSON parsing (400), JSON answers.

Query parameters and bodies are checked against declared types in :mod:`.routes`; a
blob's presigned download is a redirect (:func:`presigned_redirect`).
"""

from __future__ import annotations

import json
import math
import zlib
from typing import TYPE_CHECKING, Any, NamedTuple

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from wisp.server.http.problem import Problem

if TYPE_CHECKING:
    from wisp.server.blobs.base import BlobStore

__all__ = [
    "Encoded",
    "check_possession",
    "decode_batch",
    "json_response",
    "loads",
    "presigned_redirect",
    "proven",
    "read_body",
    "read_encoded",
    "read_json",
    "require_raw",
    "stream_blob",
]


def _dumps(obj: Any) -> bytes:
    try:
        s = json.dumps(obj, separators=(",", ":"), allow_nan=False)
    except ValueError:  # a non-finite float slipped into a value: JSON has no token for it
        s = json.dumps(_finite(obj), separators=(",", ":"), allow_nan=False)
    return s.encode("utf-8", "surrogatepass")


def _finite(v: Any) -> Any:
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, dict):
        return {k: _finite(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_finite(x) for x in v]
    return v


def json_response(obj: Any, status: int = 200) -> Response:
    return Response(_dumps(obj), status_code=status, media_type="application/json")


class _Inflater:
    """Bounded gzip decoding, chunk by chunk: 413 past ``limit`` decoded bytes, 400 for a
    stream that is bad, truncated or followed by other bytes."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.size = 0
        self._dec = zlib.decompressobj(wbits=31)

    def feed(self, chunk: bytes | bytearray) -> bytes:
        try:
            out = self._dec.decompress(chunk, self.limit + 1 - self.size)
        except zlib.error as e:
            raise Problem(400, "bad_gzip", f"gzip body could not be decoded: {e}") from None
        self.size += len(out)
        if self._dec.unconsumed_tail or self.size > self.limit:
            raise Problem(413, "too_large", f"decoded body is larger than {self.limit} bytes")
        return out

    def end(self) -> bytes:
        if not self._dec.eof:
            raise Problem(400, "bad_gzip", "gzip body is truncated")
        if self._dec.unused_data:
            raise Problem(400, "bad_gzip", "bytes after the end of the gzip stream")
        tail = self._dec.flush()
        self.size += len(tail)
        if self.size > self.limit:
            raise Problem(413, "too_large", f"decoded body is larger than {self.limit} bytes")
        return tail


class Encoded(NamedTuple):
    """A request body as it came (:func:`read_encoded`), decoded where it is used: in a
    thread or an ingest process, not on the event loop."""

    data: bytes | bytearray
    gzip: bool
    limit: int  # the most decoded bytes it may give

    def decoded(self) -> bytes | bytearray:
        """The body's bytes (413 past ``limit``, 400 for bad gzip)."""
        if not self.gzip:
            return self.data
        inflater = _Inflater(self.limit)
        out, tail = inflater.feed(self.data), inflater.end()
        return out + tail if tail else out


def _gzipped(request: Request, limit: int) -> bool:
    """Whether the body is gzip (415 for another encoding, 413 for a declared length over
    ``limit``, encoded or not)."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise Problem(413, "too_large", f"request body is larger than {limit} bytes")
    enc = request.headers.get("content-encoding", "identity").strip().lower()
    if enc not in ("identity", "gzip", ""):
        raise Problem(415, "unsupported_encoding", f"Content-Encoding {enc!r}: use gzip")
    return enc == "gzip"


async def _read_raw(request: Request, limit: int, inflater: _Inflater | None) -> bytearray:
    parts = bytearray()  # one buffer, no join: the body is held once
    size = 0  # as sent
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise Problem(413, "too_large", f"request body is larger than {limit} bytes")
        parts += chunk if inflater is None else inflater.feed(chunk)
    if inflater is not None:
        parts += inflater.end()
    return parts


async def read_body(request: Request, limit: int) -> bytearray:
    """The request body, refusing (413) more than ``limit`` bytes after gzip decoding."""
    gz = _gzipped(request, limit)
    return await _read_raw(request, limit, _Inflater(limit) if gz else None)


async def read_encoded(request: Request, limit: int) -> Encoded:
    """The request body as sent (at most ``limit`` bytes, gzip or not), to decode with
    :meth:`Encoded.decoded` off the event loop: a record batch's gzip decoding was most of
    a busy server's event-loop time, which reads wait behind."""
    gz = _gzipped(request, limit)
    return Encoded(await _read_raw(request, limit, None), gz, limit)


async def check_possession(request: Request, sha: str, limit: int) -> None:
    """The body of a PUT of a blob the server holds already: hashed, not stored.  The caller
    proves it has the bytes before it is counted among the blob's uploaders (who may read
    it): knowing a sha256 is not a right to its bytes.  422 when the bytes differ."""
    import hashlib

    h, n = hashlib.sha256(), 0
    async for chunk in request.stream():
        n += len(chunk)
        if n > limit:
            raise Problem(413, "too_large", f"body larger than {limit} bytes")
        h.update(chunk)
    if h.hexdigest() != sha:
        raise Problem(422, "hash_mismatch", "the body's sha256 does not match the URL", "sha256")
    proven(request, sha)


def require_raw(request: Request, what: str) -> None:
    """415 unless the body comes as it is (no ``Content-Encoding``): a blob's bytes are
    hashed as sent (``what``: the blobs, as the message names them)."""
    if request.headers.get("content-encoding", "identity").lower() not in ("identity", ""):
        raise Problem(415, "unsupported_encoding", f"{what} are sent as raw bytes")


async def stream_blob(request: Request, blobs: BlobStore, sha: str, limit: int) -> int:
    """The request body streamed into blob ``sha`` of ``blobs``; its size (413 past
    ``limit``, 422 on a wrong hash: the store's writer checks both)."""
    with blobs.writer(sha, limit) as blob:
        async for chunk in request.stream():
            blob.write(chunk)
        return await run_in_threadpool(blob.commit)


def proven(request: Request, sha: str) -> None:
    """The caller sent the bytes of blob ``sha`` (hashed and checked): on a 2xx answer the
    auth middleware counts them among its uploaders, who may read it.  The one way to
    gain a right to a blob by uploading; naming a sha256 anywhere gains none."""
    request.scope["wisp_proven"] = sha


def loads(body: bytes | bytearray) -> Any:
    """Parse a JSON body exactly as :func:`json.loads` does, with msgspec as a fast path.

    msgspec (the server extra) is several times faster on big record batches and
    agrees with the standard library on every document it accepts (arbitrary
    precision integers included); what it refuses (``NaN``/``Infinity`` tokens,
    lone surrogates, UTF-16 bodies, ...) is parsed by :mod:`json` as before.
    """
    try:
        import msgspec
    except ImportError:  # pragma: no cover - depends on the install
        return json.loads(body)
    try:
        return msgspec.json.decode(body)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return json.loads(body)


_INLINE_PARSE = 64 * 1024  # bigger bodies are parsed in the thread pool, off the event loop


async def read_json(request: Request, limit: int) -> Any:
    body = await read_body(request, limit)
    try:
        if len(body) <= _INLINE_PARSE:
            return loads(body)
        from starlette.concurrency import run_in_threadpool

        return await run_in_threadpool(loads, body)
    except (ValueError, RecursionError) as e:
        msg = "nested too deeply" if isinstance(e, RecursionError) else str(e)
        raise Problem(400, "bad_json", f"request body is not valid JSON: {msg}", "body") from None


def decode_batch(body: bytes | bytearray) -> Any:
    """A record batch's body decoded, each record still raw JSON.

    Decoding a whole 64 MiB batch into Python objects costs several times its size; here
    the envelope is decoded and each record stays a slice of the body (``msgspec.Raw``),
    decoded one at a time by :func:`store.ingest.prepare_records`, so memory stays near the
    body plus its prepared columns.  Anything msgspec will not split this way (not an
    object, ``NaN`` tokens, ...) is parsed whole by :func:`read_json`'s rules.
    """
    try:
        import msgspec
    except ImportError:  # pragma: no cover - depends on the install
        return _loads_or_400(body)
    try:
        env = msgspec.json.decode(body, type=_batch_type())
        return {"writer_id": env.writer_id, "first_seq": env.first_seq, "records": env.records}
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return _loads_or_400(body)


def _loads_or_400(body: bytes | bytearray) -> Any:
    try:
        return loads(body)
    except (ValueError, RecursionError) as e:
        msg = "nested too deeply" if isinstance(e, RecursionError) else str(e)
        raise Problem(400, "bad_json", f"request body is not valid JSON: {msg}", "body") from None


_BATCH: Any = None


def _batch_type() -> Any:
    global _BATCH
    if _BATCH is None:
        import msgspec

        fields = [("writer_id", Any, None), ("first_seq", Any, None)]
        _BATCH = msgspec.defstruct("Batch", [*fields, ("records", list[msgspec.Raw] | None, None)])
    return _BATCH


GET_URL_SECONDS = 300  # how long a presigned download URL (a redirect's target) is valid


async def presigned_redirect(
    blobs: BlobStore, request: Any, sha: str, ctype: str, disposition: str
) -> Response | None:
    """A 307 to a short-lived presigned GET of the blob, answering with ``ctype`` and
    ``disposition``; None where the store has no such URLs, or for the dashboard's
    ``fetch()`` calls (``Sec-Fetch-Mode: cors``), which a bucket without CORS rules would
    refuse: those bytes are streamed by the server."""
    if request.headers.get("sec-fetch-mode", "").lower() == "cors":
        return None
    url = await run_in_threadpool(blobs.download_url, sha, ctype, disposition, GET_URL_SECONDS)
    if url is None:
        return None
    return RedirectResponse(url, 307, headers={"cache-control": "private, no-store"})

"""The media blob store (src/wisp/server/blobs/local.py): streamed, verified, content-addressed."""

from __future__ import annotations

import hashlib
import io
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

import pytest

from wisp.errors import UsageError
from wisp.server.blobs import open_blob_store
from wisp.server.blobs.base import BlobInfo
from wisp.server.blobs.local import LocalBlobStore
from wisp.server.http.problem import Problem

DATA = b"\x89PNG" + bytes(range(256)) * 300
SHA = hashlib.sha256(DATA).hexdigest()


def _chunks(data: bytes, size: int = 1000) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


def test_put_head_read_iterate_delete(tmp_path: Path) -> None:
    """A streamed put is readable whole and in chunks, listed, and gone after delete."""
    blobs = LocalBlobStore(tmp_path / "media")
    assert blobs.head(SHA) is None and not blobs.exists(SHA)
    assert blobs.put(SHA, _chunks(DATA)) == len(DATA)
    info = blobs.head(SHA)
    assert info is not None and info.size == len(DATA)
    assert blobs.exists(SHA)
    with blobs.open(SHA) as f:
        assert f.read() == DATA
    assert b"".join(blobs.iter_bytes(SHA, 4096)) == DATA
    assert blobs.local_path(SHA) == tmp_path / "media" / SHA[:2] / SHA  # layout version 1
    other = b"second"
    other_sha = hashlib.sha256(other).hexdigest()
    blobs.put(other_sha, [other])
    assert list(blobs.iterate()) == sorted([SHA, other_sha])
    assert blobs.delete(SHA) is True
    assert blobs.delete(SHA) is False
    assert not blobs.exists(SHA) and blobs.local_path(SHA) is None
    assert list(blobs.iterate()) == [other_sha]


def test_wrong_hash_or_too_large_leaves_nothing_behind(tmp_path: Path) -> None:
    """Bytes that do not hash to the name (422) or exceed max_bytes (413) never become a blob."""
    blobs = LocalBlobStore(tmp_path)
    with pytest.raises(Problem) as e:
        blobs.put(SHA, _chunks(DATA[:-1]))
    assert (e.value.status, e.value.code) == (422, "hash_mismatch")
    with pytest.raises(Problem) as e:
        blobs.put(SHA, _chunks(DATA), max_bytes=len(DATA) - 1)
    assert (e.value.status, e.value.code) == (413, "too_large")
    assert blobs.put(SHA, _chunks(DATA), max_bytes=len(DATA)) == len(DATA)
    assert list(blobs.iterate()) == [SHA]
    assert list((tmp_path / "tmp").iterdir()) == []


def test_writer_left_without_commit_aborts(tmp_path: Path) -> None:
    """A writer whose upload fails midway removes its temporary file and publishes nothing."""
    blobs = LocalBlobStore(tmp_path)
    with pytest.raises(ConnectionError), blobs.writer(SHA) as w:
        w.write(DATA[:10])
        raise ConnectionError("client went away")
    assert not blobs.exists(SHA)
    assert list((tmp_path / "tmp").iterdir()) == []


def test_names_must_be_sha256_hex(tmp_path: Path) -> None:
    """Only 64 lowercase hex digits name a blob: no path can escape the store's directory."""
    blobs = LocalBlobStore(tmp_path)
    for bad in ["../" * 3 + "etc/passwd", SHA.upper(), SHA[:-1], SHA + "0", ""]:
        with pytest.raises(ValueError, match="64 lowercase hex"):
            blobs.head(bad)


def test_open_blob_store_by_path_or_url(tmp_path: Path) -> None:
    """A path or file:/// URL opens a local store on the same files; unknown schemes are refused."""
    a = open_blob_store(str(tmp_path / "m"))
    a.put(SHA, [DATA])
    b = open_blob_store((tmp_path / "m").as_uri())
    assert isinstance(b, LocalBlobStore) and b.exists(SHA) and b.url == a.url
    with pytest.raises(UsageError, match="'gs'"):
        open_blob_store("gs://bucket/media")
    with pytest.raises(UsageError, match="absolute path"):
        open_blob_store("file://relative/dir")


class _MemoryBlobs:
    """A second BlobStore, in memory and with no local files, to prove the API needs no paths."""

    url = "memory://"

    def __init__(self) -> None:
        self.blobs: dict[str, bytes] = {}

    def writer(self, sha256: str, max_bytes: int | None = None) -> Any:
        store = self

        class W:
            def __init__(self) -> None:
                self.parts: list[bytes] = []

            def write(self, chunk: bytes) -> None:
                self.parts.append(chunk)
                if max_bytes is not None and sum(map(len, self.parts)) > max_bytes:
                    raise Problem(413, "too_large", "too large")

            def commit(self) -> int:
                data = b"".join(self.parts)
                if hashlib.sha256(data).hexdigest() != sha256:
                    raise Problem(422, "hash_mismatch", "mismatch", "sha256")
                store.blobs[sha256] = data
                return len(data)

            def abort(self) -> None:
                self.parts = []

            def __enter__(self) -> W:
                return self

            def __exit__(self, *exc: Any) -> None:
                self.abort()

        return W()

    def put(self, sha256: str, chunks: Iterable[bytes], max_bytes: int | None = None) -> int:
        with self.writer(sha256, max_bytes) as w:
            for c in chunks:
                w.write(c)
            return int(w.commit())

    def head(self, sha256: str) -> BlobInfo | None:
        data = self.blobs.get(sha256)
        return None if data is None else BlobInfo(len(data), None)

    def exists(self, sha256: str) -> bool:
        return sha256 in self.blobs

    def open(self, sha256: str) -> BinaryIO:
        return io.BytesIO(self.blobs[sha256])

    def iter_bytes(self, sha256: str, chunk_size: int = 65536) -> Iterator[bytes]:
        data = self.blobs[sha256]
        return iter([data[i : i + chunk_size] for i in range(0, len(data), chunk_size)])

    def local_path(self, sha256: str) -> Path | None:
        return None

    def delete(self, sha256: str) -> bool:
        return self.blobs.pop(sha256, None) is not None

    def iterate(self) -> Iterator[str]:
        return iter(sorted(self.blobs))

    def check(self) -> None:
        pass

    def plan_upload(self, sha256: str, size: int) -> None:
        return None  # clients send the bytes to the server

    def finish_upload(self, sha256: str, size: int, upload_id: str) -> int:
        raise Problem(404, "upload_not_found", "none", "upload_id")

    def download_url(
        self, sha256: str, content_type: str, disposition: str, expires: int = 300
    ) -> None:
        return None

    def abort_stale_uploads(self, before: float) -> int:
        return 0


def test_media_endpoints_work_on_any_blob_store(settings: Any, store: Any, tmp_path: Path) -> None:
    """Media PUT/HEAD/GET go through the BlobStore interface only: a store without files serves."""
    from starlette.testclient import TestClient

    from wisp.server import create_app

    blobs = _MemoryBlobs()
    _, key = store.create_key("write")
    client = TestClient(create_app(settings, store=store, blobs=blobs))
    h = {"Authorization": f"Bearer {key}"}
    assert client.head(f"/api/v1/media/{SHA}", headers=h).status_code == 404
    assert client.put(f"/api/v1/media/{SHA}.png", content=DATA[:-1], headers=h).status_code == 422
    assert client.put(f"/api/v1/media/{SHA}.png", content=DATA, headers=h).status_code == 201
    assert client.put(f"/api/v1/media/{SHA}.png", content=DATA, headers=h).status_code == 200
    assert list(blobs.iterate()) == [SHA]
    head = client.head(f"/api/v1/media/{SHA}", headers=h)
    assert head.status_code == 200 and head.headers["content-length"] == str(len(DATA))
    got = client.get(f"/api/v1/media/{SHA}", headers=h)
    assert got.status_code == 200 and got.content == DATA
    assert got.headers["content-type"] == "image/png"
    assert not (Path(settings.media_dir) / SHA[:2]).exists()  # nothing went to local files


def test_upload_plan_on_the_local_store_is_direct(settings: Any, store: Any) -> None:
    """With local files the plan says to PUT the bytes to this server; a held blob is
    ``stored``; the empty blob is stored by the plan itself."""
    from starlette.testclient import TestClient

    from wisp.server import create_app

    _, key = store.create_key("write")
    client = TestClient(create_app(settings, store=store))
    h = {"Authorization": f"Bearer {key}"}
    body = {"kind": "media", "size": len(DATA), "suffix": ".png"}
    plan = client.post(f"/api/v1/uploads/{SHA}", json=body, headers=h).json()
    assert plan == {"sha256": SHA, "method": "direct", "url": f"/api/v1/media/{SHA}.png"}
    assert client.put(plan["url"], content=DATA, headers=h).status_code == 201
    again = client.post(f"/api/v1/uploads/{SHA}", json=body, headers=h).json()
    assert again["method"] == "stored"
    art = client.post(f"/api/v1/uploads/{SHA}", json={**body, "kind": "artifact"}, headers=h)
    assert art.json()["url"] == f"/api/v1/artifact-files/{SHA}"
    done = {"kind": "artifact", "size": 3, "upload_id": "x"}
    assert (
        client.post(f"/api/v1/uploads/{'1' * 64}/complete", json=done, headers=h).status_code == 404
    )
    empty = hashlib.sha256(b"").hexdigest()
    got = client.post(f"/api/v1/uploads/{empty}", json={"kind": "artifact", "size": 0}, headers=h)
    assert got.json()["method"] == "stored"
    assert client.post(f"/api/v1/uploads/{SHA}", json=body).status_code == 401


def test_blob_puts_take_raw_bytes_only(settings: Any, store: Any) -> None:
    """Media and artifact-file PUTs refuse an encoded body (415, nothing stored) and stream
    a raw one into the blob store (201)."""
    from starlette.testclient import TestClient

    from wisp.server import create_app

    blobs = _MemoryBlobs()
    _, key = store.create_key("write")
    client = TestClient(create_app(settings, store=store, blobs=blobs))
    h = {"Authorization": f"Bearer {key}"}
    gz = {**h, "Content-Encoding": "gzip"}
    for path in (f"/api/v1/media/{SHA}.png", f"/api/v1/artifact-files/{SHA}"):
        r = client.put(path, content=DATA, headers=gz)
        assert (r.status_code, r.json()["error"]["code"]) == (415, "unsupported_encoding"), path
    assert list(blobs.iterate()) == []
    assert client.put(f"/api/v1/artifact-files/{SHA}", content=DATA, headers=h).status_code == 201
    assert list(blobs.iterate()) == [SHA]

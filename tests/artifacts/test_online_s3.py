"""Artifacts with the server's bytes in an S3-compatible object store, on SQLite and
PostgreSQL: files go up in presigned parts and come down by presigned redirects."""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

import wisp

PG_HOST = os.environ.get("WISP_TEST_PG", "postgresql://postgres@127.0.0.1:5432")
MiB = 1 << 20


@pytest.fixture(params=["sqlite", "postgresql"])
def s3_online(
    request: pytest.FixtureRequest, tmp_path: Path, s3_url: str, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Any]:
    """Runs online against a real server whose bytes go to a fresh bucket."""
    import psycopg

    from wisp.testing import Server, temporary_postgres_database

    with contextlib.ExitStack() as stack:
        db = None
        if request.param == "postgresql":
            try:
                db = stack.enter_context(temporary_postgres_database(PG_HOST))
            except psycopg.OperationalError as e:
                pytest.fail(f"PostgreSQL at {PG_HOST} is required: {e}")
        srv = stack.enter_context(Server(tmp_path / "srv", db=db, media_url=s3_url))
        monkeypatch.setenv("WISP_SERVER_URL", srv.url)
        monkeypatch.setenv("WISP_API_KEY", srv.key)
        monkeypatch.setenv("WISP_MODE", "online")
        srv.s3_url = s3_url
        yield srv


def test_multipart_round_trip_through_the_bucket(
    s3_online: Any, s3_server: Any, tmp_path: Path
) -> None:
    """A file of several parts, a small one and an empty one go to the bucket directly and
    come back identical into an empty cache; the server's disk holds no bytes."""
    data = tmp_path / "data"
    data.mkdir()
    big = os.urandom(11 * MiB + 123)
    (data / "big.bin").write_bytes(big)
    (data / "small.txt").write_text("hello\n")
    (data / "empty").write_bytes(b"")
    run = wisp.init(project="p")
    art = wisp.Artifact("ds", type="dataset")
    art.add_dir(str(data))
    run.log_artifact(art)
    art.wait(120)
    assert art.version == "v0"
    run.finish()
    bucket = urlsplit(s3_online.s3_url).netloc
    keys = {
        o["Key"].rpartition("/")[2]
        for o in s3_server.client().list_objects_v2(Bucket=bucket)["Contents"]
    }
    assert hashlib.sha256(big).hexdigest() in keys
    assert not (tmp_path / "srv" / "server-media").exists()

    os.environ["WISP_CACHE_DIR"] = str(tmp_path / "fresh-cache")
    run2 = wisp.init(project="p")
    got = run2.use_artifact("ds:latest")
    out = Path(got.download(str(tmp_path / "out")))
    assert got.last_download["fetched"] == 3
    assert (out / "big.bin").read_bytes() == big
    assert (out / "small.txt").read_text() == "hello\n" and (out / "empty").read_bytes() == b""
    run2.finish()


def test_an_interrupted_upload_resumes(s3_online: Any, tmp_path: Path) -> None:
    """Parts sent before a failure are not sent again: the next plan lists only the rest."""
    from wisp._upload import _direct
    from wisp.artifacts._client import ArtifactClient

    path = tmp_path / "f.bin"
    blob = os.urandom(12 * MiB)
    path.write_bytes(blob)
    sha = hashlib.sha256(blob).hexdigest()
    client = ArtifactClient(s3_online.url, s3_online.key)
    sent: list[int] = []
    real = _direct._put_part

    def flaky(url: str, source: Any, offset: int, size: int, timeout: float) -> None:
        if offset // (5 * MiB) == 1 and not sent:
            sent.append(-1)
            raise wisp.errors.RetryableApiError("connection lost")
        real(url, source, offset, size, timeout)
        sent.append(offset // (5 * MiB) + 1)

    _direct._put_part = flaky  # type: ignore[assignment]
    try:
        with pytest.raises(wisp.errors.RetryableApiError):
            client.put_file(sha, str(path), len(blob))
        before = sorted(n for n in sent if n > 0)
        sent.clear()
        sent.append(0)  # no more failures
        client.put_file(sha, str(path), len(blob))
    finally:
        _direct._put_part = real  # type: ignore[assignment]
    assert before and set(before).isdisjoint(n for n in sent if n > 0)
    assert sorted([*before, *(n for n in sent if n > 0)]) == [1, 2, 3]
    assert client.missing([sha]) == []
    client.close()

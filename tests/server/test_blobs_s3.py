"""The object-store blob store against a real S3-speaking server on loopback."""

from __future__ import annotations

import hashlib
import os
import sys
import time
import urllib.error
import urllib.request
from typing import Any

import pytest

from wisp.errors import UsageError
from wisp.server.blobs import open_blob_store
from wisp.server.http.problem import Problem

MiB = 1 << 20


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _put(url: str, data: bytes) -> int:
    req = urllib.request.Request(
        url, data=data, method="PUT", headers={"Content-Type": "application/octet-stream"}
    )
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return int(resp.status)
    except urllib.error.HTTPError as e:
        e.close()  # its socket now, not at a later test's garbage collection
        raise


def _send(plan: Any, data: bytes, skip: tuple[int, ...] = ()) -> None:
    for p in plan.parts:
        if p["number"] not in skip:
            assert _put(p["url"], data[p["offset"] : p["offset"] + p["size"]]) == 200


def test_open_blob_store_dispatches_s3_urls(s3_url: str) -> None:
    """``s3://bucket/prefix`` opens the object store; a bad option is refused clearly."""
    store = open_blob_store(s3_url)
    assert store.url.startswith("s3://wisp-") and store.url.endswith("/wisp")
    store.check()
    with pytest.raises(UsageError, match="part_size"):
        open_blob_store("s3://b/p?part_size=10")
    with pytest.raises(UsageError, match="cannot use bucket"):
        open_blob_store("s3://no-such-bucket-here/p").check()


def test_missing_boto3_gives_an_install_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the client library the store names the extra to install."""
    monkeypatch.setitem(sys.modules, "boto3", None)
    store = open_blob_store("s3://bucket/prefix")
    with pytest.raises(UsageError, match=r"pip install 'wisp-tracker\[s3\]'"):
        store.exists("0" * 64)


def test_put_head_read_iterate_delete(s3_url: str) -> None:
    """Bytes sent through the server become a blob only with the right hash."""
    store = open_blob_store(s3_url)
    data = os.urandom(3000)
    sha = _sha(data)
    assert store.put(sha, [data[:1000], data[1000:]]) == 3000
    assert store.head(sha) is not None and store.head(sha).size == 3000  # type: ignore[union-attr]
    assert b"".join(store.iter_bytes(sha)) == data and list(store.iterate()) == [sha]
    with pytest.raises(Problem) as e:
        store.put(_sha(b"other"), [data])
    assert e.value.code == "hash_mismatch" and list(store.iterate()) == [sha]
    assert store.local_path(sha) is None
    assert store.delete(sha) and not store.exists(sha) and not store.delete(sha)


def test_large_put_streams_multipart_and_checks_the_hash(s3_url: str) -> None:
    """A body larger than one part goes up in parts; a wrong hash leaves no object."""
    store = open_blob_store(s3_url)
    data = os.urandom(17 * MiB + 5)
    assert store.put(_sha(data), [data[i : i + MiB] for i in range(0, len(data), MiB)]) == len(data)
    assert store.exists(_sha(data))
    with pytest.raises(Problem):
        store.put("0" * 64, [data[i : i + MiB] for i in range(0, len(data), MiB)])
    assert not store.exists("0" * 64)
    assert store.client.list_multipart_uploads(Bucket=store.bucket).get("Uploads", []) == []


def test_presigned_upload_resumes_and_is_checked(s3_url: str) -> None:
    """Parts go straight to the store; asking again lists only missing parts; completing
    checks the parts, then size and sha256, before the blob exists."""
    store = open_blob_store(s3_url)
    data = os.urandom(12 * MiB)
    sha = _sha(data)
    plan = store.plan_upload(sha, len(data))
    assert plan is not None and [p["number"] for p in plan.parts] == [1, 2, 3]
    _send(plan, data, skip=(2,))
    with pytest.raises(Problem) as e:
        store.finish_upload(sha, len(data), plan.upload_id)
    assert e.value.status == 409 and e.value.extra == {"missing_parts": [2]}
    again = store.plan_upload(sha, len(data))
    assert again is not None and again.upload_id == plan.upload_id
    assert [p["number"] for p in again.parts] == [2]
    _send(again, data)
    assert not store.exists(sha)  # nothing is visible before the server completes it
    assert store.finish_upload(sha, len(data), plan.upload_id) == len(data)
    assert b"".join(store.iter_bytes(sha)) == data
    assert store.finish_upload(sha, len(data), plan.upload_id) == len(data)  # a retried call


def test_wrong_bytes_are_deleted_and_never_overwrite(s3_url: str) -> None:
    """Bytes that do not hash to the name are deleted on completion; a completed blob is
    never replaced by a later upload of the same name."""
    store = open_blob_store(s3_url)
    good = os.urandom(6 * MiB)
    sha = _sha(good)
    bad = os.urandom(len(good))
    plan = store.plan_upload(sha, len(bad))
    assert plan is not None
    _send(plan, bad)
    with pytest.raises(Problem) as e:
        store.finish_upload(sha, len(bad), plan.upload_id)
    assert e.value.code == "hash_mismatch" and not store.exists(sha)
    with pytest.raises(Problem) as e:  # a size other than declared
        p2 = store.plan_upload(sha, len(good) + 1)
        assert p2 is not None
        _send(p2, good + b"")
        store.finish_upload(sha, len(good) + 1, p2.upload_id)
    assert e.value.status in (409, 422) and not store.exists(sha)
    honest = store.plan_upload(sha, len(good))
    late = store.plan_upload(sha, len(good))
    assert honest is not None and late is not None and late.upload_id == honest.upload_id
    _send(honest, good)
    assert store.finish_upload(sha, len(good), honest.upload_id) == len(good)
    for p in honest.parts:  # the part URLs are dead once the upload is complete
        with pytest.raises(urllib.error.HTTPError):
            _put(p["url"], bad[: p["size"]])
    assert b"".join(store.iter_bytes(sha)) == good


def test_download_url_sets_type_and_disposition(s3_url: str) -> None:
    """A presigned GET answers with the content type and disposition the server chose."""
    store = open_blob_store(s3_url)
    data = b"\x89PNG not really"
    store.put(_sha(data), [data])
    url = store.download_url(_sha(data), "image/png", "inline", 60)
    assert url is not None
    with urllib.request.urlopen(url, timeout=10) as resp:
        assert resp.read() == data
        assert resp.headers["content-type"] == "image/png"
        assert resp.headers["content-disposition"] == "inline"


def test_stale_uploads_are_aborted(s3_url: str) -> None:
    """Uploads begun before the cutoff and never completed are dropped (the age itself is
    the store's ``Initiated`` time, which the loopback server does not keep)."""
    store = open_blob_store(s3_url)
    store.plan_upload("1" * 64, 10)
    assert store.abort_stale_uploads(time.time() + 60) == 1
    assert store.client.list_multipart_uploads(Bucket=store.bucket).get("Uploads", []) == []


def test_server_start_without_boto3_says_the_install_hint_only(tmp_path: Any) -> None:
    """`wisp server --media-url s3://...` without boto3 exits 2 with the hint `pip install 'wisp-tracker[s3]'`, no botocore traceback burying it."""
    import subprocess

    from wisp.testing import free_port

    hide = tmp_path / "hide"
    hide.mkdir()
    for name in ("boto3", "botocore"):  # as if the s3 extra were not installed
        (hide / f"{name}.py").write_text("raise ImportError('not installed')\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(hide), *sys.path])}
    cmd = [sys.executable, "-m", "wisp.cli", "server", "--port", str(free_port())]
    cmd += ["--db", f"sqlite:///{tmp_path / 'db'}", "--media-url", "s3://bucket/prefix"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=60, env=env, cwd=tmp_path)
    assert out.returncode == 2, out.stderr
    assert out.stderr.splitlines()[0] == (
        "wisp: error: an s3:// media store needs boto3: pip install 'wisp-tracker[s3]'"
    )
    assert "Traceback" not in out.stderr and "botocore" not in out.stderr

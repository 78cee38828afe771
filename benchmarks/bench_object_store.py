"""A large artifact file through presigned URLs vs a direct copy to the same object store.

On loopback: an S3-speaking server (:class:`wisp.testing.S3Server`), a wisp server with
``--media-url s3://...`` (SQLite), and one generated file (default 2 GB).

1. direct copy: boto3 ``upload_file`` then ``download_file`` of the file (64 MiB parts,
   4 threads: the same part size and concurrency as the wisp client);
2. wisp: ``ArtifactClient.put_file`` (plan, presigned parts, complete: the server checks
   size and sha256 by reading the object back) then ``get_file`` (a presigned redirect,
   the bytes hashed as they arrive);
3. the API process's RSS before and after (after a 1 MiB warm-up through the same path,
   which loads the server's S3 client), and its peak (``VmHWM``).

Prints MB/s of each step and wisp's share of the direct copy's throughput (target >= 70 %).

    python benchmarks/bench_object_store.py            # 2048 MB
    python benchmarks/bench_object_store.py --mb 256
"""

from __future__ import annotations

import argparse
import hashlib
import os
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit


def rss(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM of a process, in MiB."""
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            out[name] = int(value.split()[0]) // 1024
    return out


def make_file(path: Path, mb: int) -> str:
    h = hashlib.sha256()
    block = os.urandom(1 << 20)
    with open(path, "wb") as f:
        for i in range(mb):
            chunk = i.to_bytes(8, "little") + block[8:]
            h.update(chunk)
            f.write(chunk)
    return h.hexdigest()


def timed(fn):  # type: ignore[no-untyped-def]
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=int, default=2048)
    args = ap.parse_args()
    from boto3.s3.transfer import TransferConfig

    from wisp.artifacts._client import ArtifactClient
    from wisp.testing import S3Server, Server

    with tempfile.TemporaryDirectory(prefix="wisp-bench-s3-") as tmp:
        work = Path(tmp)
        src = work / "big.bin"
        sha = make_file(src, args.mb)
        size = src.stat().st_size
        with S3Server(work) as s3:
            os.environ.update(s3.env)
            url = s3.bucket()
            bucket = urlsplit(url).netloc
            with Server(work / "srv", media_url=url) as srv:
                assert srv.proc is not None
                pid = srv.proc.pid
                client = s3.client()
                cfg = TransferConfig(multipart_chunksize=64 << 20, max_concurrency=4)
                t_up0 = timed(lambda: client.upload_file(str(src), bucket, "direct", Config=cfg))
                t_dn0 = timed(
                    lambda: client.download_file(bucket, "direct", str(work / "d0"), Config=cfg)
                )
                (work / "d0").unlink()
                client.delete_object(Bucket=bucket, Key="direct")
                art = ArtifactClient(srv.url, srv.key, timeout=600)
                warm = work / "warm.bin"  # the server's first S3 calls load boto3's models
                warm_sha = make_file(warm, 1)
                art.put_file(warm_sha, str(warm), warm.stat().st_size)
                with open(work / "w1", "wb") as out:
                    art.get_file(warm_sha, out)
                before = rss(pid)
                t_up1 = timed(lambda: art.put_file(sha, str(src), size))
                with open(work / "d1", "wb") as out:
                    t_dn1 = timed(lambda: art.get_file(sha, out))
                art.close()
                after = rss(pid)
                assert (work / "d1").stat().st_size == size

    mb = size / 1e6

    def row(name: str, t: float) -> None:
        print(f"{name:<44} {t:8.2f} s {mb / t:9.1f} MB/s")

    print(f"object store, {size / 2**20:.0f} MiB file, loopback S3 server (moto)")
    row("direct copy: upload (boto3)", t_up0)
    row("direct copy: download (boto3)", t_dn0)
    row("wisp: upload (presigned parts + checked)", t_up1)
    row("wisp: download (presigned redirect)", t_dn1)
    direct, wisp_t = t_up0 + t_dn0, t_up1 + t_dn1
    print(f"{'upload share of direct':<44} {t_up0 / t_up1:8.0%}")
    print(f"{'download share of direct':<44} {t_dn0 / t_dn1:8.0%}")
    print(f"{'round trip share of direct (target >= 70%)':<44} {direct / wisp_t:8.0%}")
    print(
        f"API process RSS: {before['VmRSS']} MiB before, {after['VmRSS']} MiB after, "
        f"peak {after['VmHWM']} MiB (peak before: {before['VmHWM']} MiB)"
    )


if __name__ == "__main__":
    main()

"""Artifacts at disk speed, side by side with the real wandb (offline) in the same run.

On a generated directory (default 2 GB in 10,000 files; smaller with arguments):

1. hashing: ``sha256sum`` (one process) over the files vs wisp's thread-pool hashing;
2. wandb offline: ``add_dir`` + ``log_artifact`` caller time, ``finish()`` time;
3. wisp online against a local server (SQLite): ``add_dir`` time, ``log_artifact``
   caller time (p50/p99 over repeats of a small artifact too), time until stored and
   bytes uploaded; re-logging the unchanged directory (time, bytes uploaded); changing one
   file (files uploaded);
4. ``download()`` into an empty folder with an empty cache (from the server), then again
   into another empty folder (a cache hit), vs ``cp -r`` of the same data.

    python benchmarks/bench_artifacts.py                    # 2048 MB, 10000 files
    python benchmarks/bench_artifacts.py --mb 200 --files 1000
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import wisp


def generate(root: Path, total_mb: int, files: int) -> list[str]:
    size = max(1, total_mb * 1024 * 1024 // files)
    block = os.urandom(1 << 20)
    paths = []
    for i in range(files):
        d = root / f"shard{i % 100:03d}"
        d.mkdir(parents=True, exist_ok=True)
        p = d / f"part{i:05d}.bin"
        head = i.to_bytes(8, "little") + os.urandom(56)
        with open(p, "wb") as f:
            f.write(head)
            left = size - len(head)
            while left > 0:
                n = min(left, len(block))
                off = (i * 4099) % (len(block) - n + 1)
                f.write(block[off : off + n])
                left -= n
        paths.append(str(p))
    old = time.time() - 120  # outside the stat index's racy-clean window
    for p in paths:
        os.utime(p, (old, old))
    return paths


def timed(fn):  # type: ignore[no-untyped-def]
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def sha256sum(root: Path) -> float:
    cmd = f"find {root} -type f -print0 | xargs -0 -n 100000 sha256sum > /dev/null"
    return timed(lambda: subprocess.run(cmd, shell=True, check=True))[0]


def bench_wandb(root: Path, work: Path) -> dict[str, float]:
    os.environ["WANDB_MODE"] = "offline"
    os.environ["WANDB_SILENT"] = "true"
    os.environ["WANDB_CACHE_DIR"] = str(work / "wandb-cache")
    os.environ["WANDB_DATA_DIR"] = str(work / "wandb-data")
    import wandb

    run = wandb.init(project="bench", dir=str(work))
    art = wandb.Artifact("ds", type="dataset")
    t_add, _ = timed(lambda: art.add_dir(str(root)))
    t_log, _ = timed(lambda: run.log_artifact(art))
    t_fin, _ = timed(run.finish)
    return {"add_dir": t_add, "log_artifact": t_log, "finish": t_fin}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=int, default=2048)
    ap.add_argument("--files", type=int, default=10_000)
    ap.add_argument("--no-wandb", action="store_true")
    args = ap.parse_args()
    from wisp.artifacts._hashing import hash_files, workers
    from wisp.testing import Server

    with tempfile.TemporaryDirectory(prefix="wisp-bench-art-") as tmp:
        work = Path(tmp)
        root = work / "data"
        print(f"generating {args.mb} MB in {args.files} files ...", flush=True)
        paths = generate(root, args.mb, args.files)
        total = sum(os.path.getsize(p) for p in paths)
        mb = total / 1e6
        sha256sum(root)  # warm the page cache
        t_sum = sha256sum(root)
        t_hash, _ = timed(lambda: hash_files(paths))
        t_hash1, _ = timed(lambda: hash_files(paths, n=1))
        print(f"\n== {mb:.0f} MB in {len(paths)} files ==")
        print(f"sha256sum (1 process)   {t_sum:7.2f} s  {mb / t_sum:7.0f} MB/s")
        print(f"wisp hashing (1 thread)  {t_hash1:7.2f} s  {mb / t_hash1:7.0f} MB/s")
        print(
            f"wisp hashing ({workers()} threads) {t_hash:7.2f} s  {mb / t_hash:7.0f} MB/s  "
            f"-> {t_sum / t_hash:.2f}x sha256sum (target >= 1.5x)"
        )

        if not args.no_wandb:
            w = bench_wandb(root, work)
            print(
                f"wandb offline: add_dir {w['add_dir']:.2f} s (hashes on the caller), "
                f"log_artifact {w['log_artifact'] * 1e3:.0f} ms, finish {w['finish']:.2f} s"
            )

        os.environ["WISP_CACHE_DIR"] = str(work / "wisp-cache")
        os.environ["WISP_DIR"] = str(work)
        with Server(work / "server") as srv:
            settings = {"server_url": srv.url, "api_key": srv.key}
            run = wisp.init(project="bench", mode="online", settings=settings)
            art = wisp.Artifact("ds", type="dataset")
            t_add, _ = timed(lambda: art.add_dir(str(root)))
            t_log, _ = timed(lambda: run.log_artifact(art))
            t_wait, _ = timed(lambda: art.wait(3600))
            st = art.upload_stats
            print(
                f"wisp online: add_dir {t_add:.2f} s (secures files), log_artifact "
                f"{t_log * 1e3:.1f} ms (target <= 50 ms), stored after {t_wait:.2f} s more, "
                f"{st.get('bytes_uploaded', 0) / 1e6:.0f} MB uploaded"
            )
            small = []
            logged = []
            for i in range(20):
                a = wisp.Artifact("small", type="model")
                with a.new_file("w.txt", mode="w") as f:
                    f.write(str(i))
                small.append(timed(lambda a=a: run.log_artifact(a))[0] * 1e3)
                logged.append(a)
            for a in logged:
                a.wait(600)
            q = statistics.quantiles(small, n=100)
            print(f"log_artifact (1 file) caller time: p50 {q[49]:.2f} ms, p99 {q[98]:.2f} ms")

            callers = [t_log]

            def relog() -> wisp.Artifact:
                b = wisp.Artifact("ds", type="dataset")
                b.add_dir(str(root))
                callers.append(timed(lambda: run.log_artifact(b))[0])
                return b.wait(3600)

            t_re, b = timed(relog)
            print(
                f"re-log unchanged dir: {t_re:.3f} s (target <= 0.5 s), "
                f"{b.upload_stats.get('bytes_uploaded', 0)} bytes uploaded, version {b.version}"
            )
            with open(paths[0], "r+b") as f:
                f.write(b"changed!")
            t_one, c = timed(relog)
            print(
                f"re-log with one file changed: {t_one:.3f} s, "
                f"{c.upload_stats.get('files_uploaded', 0)} file(s) uploaded, version {c.version}"
            )
            print(
                "log_artifact caller time, whole directory (first, re-log, one changed): "
                + ", ".join(f"{c * 1e3:.1f} ms" for c in callers)
            )
            run.finish()

            os.environ["WISP_CACHE_DIR"] = str(work / "empty-cache")
            run2 = wisp.init(project="bench", mode="online", settings=settings)
            got = run2.use_artifact("ds:v0")
            t_dl1, _ = timed(lambda: got.download(str(work / "dl1")))
            first = dict(got.last_download)
            t_dl2, _ = timed(lambda: got.download(str(work / "dl2")))
            second = dict(got.last_download)
            run2.finish()
            t_cp, _ = timed(
                lambda: subprocess.run(["cp", "-r", str(root), str(work / "cp")], check=True)
            )
            print(
                f"download from server (empty cache): {t_dl1:.2f} s {mb / t_dl1:.0f} MB/s "
                f"({first['fetched']} fetched)"
            )
            print(
                f"download again (cache hit, {second['from_cache']}/{second['files']} from "
                f"cache): {t_dl2:.2f} s {mb / t_dl2:.0f} MB/s; cp -r {t_cp:.2f} s "
                f"{mb / t_cp:.0f} MB/s -> {t_cp / t_dl2 * 100:.0f}% of cp -r (target >= 70%)"
            )
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

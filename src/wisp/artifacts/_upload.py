"""Logging artifacts in the background: jobs, the pipeline and the per-run worker.

A *job* is one JSON file in the run directory's ``artifacts/`` folder (format version 1)::

    {"version": 1, "kind": "log" | "use", "id": ..., "project": ..., "run_id": ...,
     "name": ..., "type": ..., "description": ..., "metadata": {...}, "aliases": [...],
     "entries": {path: entry}, "state": "pending" | "local" | "published" | "failed",
     "digest": ..., "error": ..., "server_version": "vN"}

An entry still to be hashed carries ``src`` (its secured copy or link in the cache's
staging area), ``mode`` (``reflink``, ``copy``, ``link``, ``owned`` or ``direct``),
``origin`` (the user's path) and ``stat`` (``[size, mtime_ns, inode]`` when added).
The pipeline (:func:`process`) hashes and caches every such entry (a ``link`` or
``direct`` entry whose size or mtime changed is reported by name and the version is not
published), writes the manifest to the cache (state ``local``: usable offline), then
online uploads the blobs the server lacks and publishes the manifest last (state
``published``).  A job left ``pending`` or ``local`` by a crash, a timeout or an offline
run is finished by ``wisp sync`` (:func:`sync_run_dir`), which skips files the server
already holds.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import sys
import threading
import time
import uuid

from wisp._rundir import ARTIFACTS_DIR
from wisp.artifacts._cache import Cache
from wisp.artifacts._hashing import parallel, sha256_file
from wisp.artifacts._manifest import make_manifest, manifest_digest
from wisp.errors import ApiError, ArtifactError, FatalApiError, RetryableApiError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from wisp._run import Run
    from wisp._wire import ArtifactCommitBody
    from wisp.artifacts._artifact import Artifact
    from wisp.artifacts._client import ArtifactClient

__all__ = ["JOB_VERSION", "new_job", "process", "sync_run_dir"]

JOB_VERSION = 1
log = logging.getLogger("wisp")


# -- job files ---------------------------------------------------------------------------------


def save_job(path: str, job: dict[str, Any]) -> None:
    tmp = f"{path}.tmp"
    data = json.dumps(job, separators=(",", ":"))  # the C encoder: json.dump is ~10x slower
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(data)
    os.replace(tmp, path)


def load_jobs(run_dir: str) -> list[tuple[str, dict[str, Any]]]:
    d = os.path.join(run_dir, ARTIFACTS_DIR)
    out = []
    for fn in sorted(os.listdir(d)) if os.path.isdir(d) else []:
        if not fn.endswith(".json"):
            continue
        try:
            with open(os.path.join(d, fn), encoding="utf-8") as f:
                job = json.load(f)
        except (OSError, ValueError):
            continue
        if isinstance(job, dict) and job.get("version") == JOB_VERSION:
            out.append((os.path.join(d, fn), job))
    return out


def new_job(
    job_dir: str, kind: str, project: str, run_id: str | None, body: dict[str, Any]
) -> tuple[str, dict[str, Any]]:
    """Write a new job file; (its path, the job)."""
    os.makedirs(job_dir, exist_ok=True)
    job_id = f"{time.time_ns():020d}-{kind}-{uuid.uuid4().hex[:8]}"
    job = {"version": JOB_VERSION, "kind": kind, "id": job_id, "project": project}
    job.update(run_id=run_id, state="pending", error=None, **body)
    path = os.path.join(job_dir, f"{job_id}.json")
    save_job(path, job)
    return path, job


# -- the pipeline ------------------------------------------------------------------------------


def _changed(path: str, e: dict[str, Any], was: list[int], st: Any) -> ArtifactError:
    what = e.get("origin") or e.get("src")
    return ArtifactError(
        f"file {path!r} ({what}) changed between log_artifact and upload "
        f"(size {was[0]} -> {st.st_size}, mtime_ns {was[1]} -> {st.st_mtime_ns}); "
        "the version was not published: log it again once the file is final"
    )


def _hash_entry(cache: Cache, path: str, e: dict[str, Any]) -> None:
    if "ref" in e:
        if e.pop("pending_checksum", False):
            e["digest"] = _ref_checksum(e["ref"])
        return
    src = e.get("src")
    if src is None:
        return
    mode, rec = e["mode"], e["stat"]
    try:
        st = os.stat(src)
    except FileNotFoundError:
        if e.get("digest") and cache.has(e["digest"]):
            return  # hashed and cached before a crash: nothing left to do
        raise ArtifactError(
            f"file {path!r} ({e.get('origin') or src}) was deleted before it was uploaded; "
            "the version was not published"
        ) from None
    if mode in ("link", "direct"):
        if [st.st_size, st.st_mtime_ns] != rec[:2]:
            raise _changed(path, e, rec, st)
        digest, size = cache.ingest_copy(src)
        st2 = os.stat(src)
        if (st2.st_size, st2.st_mtime_ns) != (st.st_size, st.st_mtime_ns) or size != rec[0]:
            raise _changed(path, e, rec, st2)
    else:
        digest, size = sha256_file(src)
        cache.adopt_link(src, digest)
    if e.get("origin") and mode != "owned":
        cache.index.put(e["origin"], rec, digest)
    e["digest"], e["size"] = digest, size


def _ref_checksum(uri: str) -> str:
    if uri.startswith("file://"):
        from urllib.parse import unquote, urlsplit

        return sha256_file(unquote(urlsplit(uri).path))[0]
    if uri.startswith(("http://", "https://")):
        import urllib.request

        req = urllib.request.Request(uri, method="HEAD")
        try:
            with urllib.request.urlopen(req, timeout=10) as resp:
                return str(resp.headers.get("ETag") or "").strip('"')
        except OSError:
            return ""
    return ""  # s3:// without a checksum: recorded by URI alone


def stage(job: dict[str, Any], path: str, cache: Cache) -> None:
    """Hash and cache every entry, write the manifest: the job becomes ``local``."""
    entries: dict[str, dict[str, Any]] = job["entries"]
    todo = [(p, e) for p, e in entries.items() if "src" in e or e.get("pending_checksum")]
    parallel(lambda item: _hash_entry(cache, item[0], item[1]), todo)
    staging = {os.path.dirname(e["src"]) for _, e in todo if e.get("mode") not in (None, "direct")}
    for e in entries.values():
        for k in ("src", "mode", "origin", "stat"):
            e.pop(k, None)
    manifest = make_manifest(job["type"], entries)
    digest = manifest_digest(entries)
    cache.save_manifest(digest, manifest)
    job["entries"] = manifest["entries"]
    job["digest"] = digest
    job["state"] = "local"
    save_job(path, job)
    cache.index.save()
    for d in staging:
        shutil.rmtree(d, ignore_errors=True)
    meta = {
        "type": job["type"],
        "description": job.get("description", ""),
        "metadata": job.get("metadata") or {},
        "created_at": time.time(),
    }
    cache.remember(
        job["project"], job["name"], digest, ["latest", *job.get("aliases", [])], meta=meta
    )


def upload(job: dict[str, Any], path: str, cache: Cache, client: ArtifactClient) -> dict[str, int]:
    """Send the blobs the server lacks, then publish the manifest: the job is ``published``."""
    files: dict[str, int] = {}
    for e in job["entries"].values():
        if "ref" not in e:
            files[e["digest"]] = e["size"]
    stats = {"files_uploaded": 0, "bytes_uploaded": 0, "files_skipped": 0}
    body: ArtifactCommitBody = {
        "type": job["type"],
        "description": job.get("description", ""),
        "metadata": job.get("metadata") or {},
        "aliases": job.get("aliases", []),
        "run_id": job.get("run_id"),
        "manifest": make_manifest(job["type"], job["entries"]),
    }
    if job["digest"] in cache.names(job["project"], job["name"])["versions"].values():
        # published before (from this machine): the server most likely holds every file, so
        # commit at once; it answers 409 missing_files if not (another server, lost blobs)
        try:
            _published(job, path, cache, client.commit(job["project"], job["name"], body))
            stats["files_skipped"] = len(files)
            return stats
        except FatalApiError as exc:
            if exc.status != 409:
                raise
    missing = client.missing(sorted(files))
    stats["files_skipped"] = len(files) - len(missing)
    for d in missing:
        if not cache.has(d):
            raise ArtifactError(
                f"artifact {job['name']!r}: file {d[:12]} is neither in the cache nor on the "
                "server; the version cannot be published"
            )

    def send(d: str) -> None:
        client.put_file(d, cache.path(d), files[d])

    try:
        parallel(send, missing, n=4)
    finally:
        client.close()
    stats["files_uploaded"] = len(missing)
    stats["bytes_uploaded"] = sum(files[d] for d in missing)
    _published(job, path, cache, client.commit(job["project"], job["name"], body))
    return stats


def _published(job: dict[str, Any], path: str, cache: Cache, doc: dict[str, Any]) -> None:
    version = doc["version"]["version"]
    job["state"] = "published"
    job["server_version"] = version
    job["created"] = bool(doc.get("created"))
    save_job(path, job)
    cache.remember(job["project"], job["name"], job["digest"], [], version=version)


class JobBusy(Exception):
    """Another process (the run itself, ``wisp sync``, ``wisp ui``) is working on the job."""


def process(
    job: dict[str, Any], path: str, cache: Cache, client: ArtifactClient | None
) -> dict[str, int]:
    """Take one job as far as it can go (``local`` offline, ``published`` online), holding
    the job's lock (``<job>.lock``, released by the kernel if the process dies); raises
    :class:`JobBusy` when another process holds it."""
    import fcntl

    with open(path + ".lock", "a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise JobBusy(path) from None
        try:
            with open(path, encoding="utf-8") as f:
                job.update(json.load(f))  # the newest state: another process may have advanced it
        except (OSError, ValueError):
            pass
        return _process(job, path, cache, client)


def _process(
    job: dict[str, Any], path: str, cache: Cache, client: ArtifactClient | None
) -> dict[str, int]:
    stats: dict[str, int] = {}
    if job["kind"] == "use":
        if client is not None and job["state"] != "published":
            client.use(job["project"], job["name"], job["digest"], job["run_id"])
            job["state"] = "published"
            save_job(path, job)
        return stats
    try:
        if job["state"] == "pending":
            stage(job, path, cache)
        if client is not None and job["state"] == "local":
            stats = upload(job, path, cache, client)
    except ArtifactError as exc:
        job["state"], job["error"] = "failed", str(exc)
        save_job(path, job)
        raise
    return stats


# -- the per-run worker ------------------------------------------------------------------------


class Worker:
    """The ``"artifacts"`` part of a run: one thread working through its jobs in order."""

    def __init__(self, run: Run, client: ArtifactClient | None, cache: Cache) -> None:
        self.run = run
        self.client = client
        self.cache = cache
        self.cond = threading.Condition()
        self.queue: list[tuple[str, dict[str, Any], Artifact | None]] = []
        self.busy = 0
        self.names: dict[tuple[str, str], int] = {}  # (project, name) -> jobs not done
        self.failed: list[str] = []
        self.closed = False
        self.thread = threading.Thread(target=self._main, name="wisp-artifacts", daemon=True)
        self.thread.start()

    def submit(self, path: str, job: dict[str, Any], art: Artifact | None) -> None:
        with self.cond:
            self.queue.append((path, job, art))
            self.busy += 1
            key = (job["project"], job["name"])
            self.names[key] = self.names.get(key, 0) + 1
            self.cond.notify_all()

    def pending(self) -> int:
        with self.cond:
            return self.busy

    def wait_for(self, project: str, name: str, timeout: float) -> None:
        """Wait up to ``timeout`` s until no job of ``project/name`` is queued or running
        (``use_artifact`` right after ``log_artifact`` resolves the version just logged)."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while self.names.get((project, name)) and not self.closed:
                left = deadline - time.monotonic()
                if left <= 0:
                    return
                self.cond.wait(left)

    def close(self) -> None:
        """Let the thread end after its current job; queued jobs stay for `wisp sync`."""
        with self.cond:
            self.closed = True
            self.cond.notify_all()

    def _main(self) -> None:
        while True:
            with self.cond:
                while not self.queue and not self.closed:
                    self.cond.wait()
                if self.closed:
                    return
                path, job, art = self.queue.pop(0)
            try:
                self._one(path, job, art)
            except Exception as exc:  # noqa: BLE001 - one job's bug must not stop the others
                msg = f"artifact {job.get('name')!r}: {type(exc).__name__}: {exc}"
                self.failed.append(msg)
                self.run.count_failure("artifacts")
                log.warning("wisp: %s", msg)
                if art is not None:
                    art._finish("failed", msg)
            finally:
                with self.cond:
                    self.busy -= 1
                    key = (job["project"], job["name"])
                    self.names[key] -= 1
                    if not self.names[key]:
                        del self.names[key]
                    self.cond.notify_all()

    def _one(self, path: str, job: dict[str, Any], art: Artifact | None) -> None:
        delay = 1.0
        deadline = time.monotonic() + 600.0
        while True:
            try:
                stats = process(job, path, self.cache, self.client)
                if art is not None:
                    art.upload_stats = stats
                break
            except ArtifactError as exc:
                self.failed.append(str(exc))
                self.run.count_failure("artifacts")
                log.warning("wisp: artifact %r not logged: %s", job["name"], exc)
                if art is not None:
                    art._finish("failed", str(exc))
                return
            except JobBusy:  # `wisp sync` or `wisp ui` has it: they will finish it
                break
            except RetryableApiError as exc:
                if time.monotonic() > deadline:
                    log.warning(
                        "wisp: artifact %r: %s; `wisp sync` will finish it", job["name"], exc
                    )
                    break
                time.sleep(delay)
                delay = min(delay * 2, 30.0)
            except (ApiError, OSError) as exc:
                self.failed.append(f"artifact {job['name']!r}: {exc}")
                self.run.count_failure("artifacts")
                log.warning("wisp: artifact %r: %s; `wisp sync` may finish it", job["name"], exc)
                break
        if art is not None and job["kind"] == "log":
            art._set_manifest(make_manifest(job["type"], job["entries"]), job.get("digest"))
            art.version = job.get("server_version")
            art._finish(job["state"], job.get("error"))

    def wait(self, timeout: float, stream: Any = None) -> bool:
        """Wait up to ``timeout`` s for every job, showing progress after a second."""
        out = stream if stream is not None else sys.stderr
        start = time.monotonic()
        shown = False
        with self.cond:
            while self.busy:
                left = start + timeout - time.monotonic()
                if left <= 0:
                    out.write(
                        f"wisp: {self.busy} artifact(s) not stored within {timeout:.0f}s; "
                        "`wisp sync` will finish them\n"
                    )
                    return False
                if not shown and time.monotonic() - start > 1.0:
                    out.write(
                        f"wisp: storing {self.busy} artifact(s), waiting up to {timeout:.0f}s\n"
                    )
                    shown = True
                self.cond.wait(min(0.25, left))
        for msg in self.failed:
            out.write(f"wisp: artifact not logged: {msg}\n")
        return True


def worker_for(run: Run) -> Worker:
    """The run's artifact worker, attached (and started) on first use."""
    w: Worker | None = run.part("artifacts")
    if w is None:
        s = run.settings
        client = None
        if s.mode == "online" and s.server_url:
            from wisp.artifacts._client import ArtifactClient

            client = ArtifactClient(s.server_url, s.api_key)
        w = Worker(run, client, Cache())

        def stop(w: Worker = w) -> None:
            w.wait(run.upload_wait()[0])
            w.close()
            if w.client is not None:
                w.client.close()

        run.attach("artifacts", w, stop)
    return w


# -- sync --------------------------------------------------------------------------------------


def sync_run_dir(
    run_dir: str,
    client: ArtifactClient,
    cache: Cache | None = None,
    on_job: Callable[[dict[str, Any]], None] | None = None,
    kinds: tuple[str, ...] = ("log", "use"),
) -> dict[str, Any]:
    """Finish every job of ``run_dir`` (of ``kinds``) that is not published; counts and
    errors.  A use of a version the server does not know yet (its producer not synced)
    stays pending and is counted in ``pending``; so are jobs another process holds."""
    cache = cache or Cache()
    total: dict[str, Any] = {
        "pending": 0,
        "busy": 0,
        "jobs": 0,
        "files_uploaded": 0,
        "bytes_uploaded": 0,
        "files_skipped": 0,
        "errors": [],
    }
    for path, job in load_jobs(run_dir):
        if job["state"] in ("published", "failed") or job["kind"] not in kinds:
            continue
        total["jobs"] += 1
        try:
            stats = process(job, path, cache, client)
        except JobBusy:
            total["busy"] += 1
            total["pending"] += 1
            continue
        except FatalApiError as exc:
            if job["kind"] != "use" or exc.status != 404:
                raise
            total["pending"] += 1  # the version is not on the server yet: next time
            continue
        except ArtifactError as exc:
            total["errors"].append(str(exc))
            continue
        for k, v in stats.items():
            total[k] += v
        if on_job is not None:
            on_job(job)
    with contextlib.suppress(OSError):
        cache.index.save()
    return total

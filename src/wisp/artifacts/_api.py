"""``run.log_artifact``, ``run.use_artifact`` and the run-less forms the CLI uses."""

from __future__ import annotations

import contextlib
import os
import tempfile

from wisp.artifacts._artifact import Artifact
from wisp.artifacts._cache import Cache
from wisp.artifacts._manifest import check_name
from wisp.artifacts._upload import new_job, process, worker_for
from wisp.errors import ApiError, ArtifactError, UsageError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from wisp._run import Run
    from wisp.artifacts._client import ArtifactClient

__all__ = ["log_artifact", "parse_ref", "publish", "use_artifact"]


def parse_ref(ref: str, default_project: str | None) -> tuple[str, str, str]:
    """``[project/]name[:alias|:vN]`` -> (project, name, alias or version; default latest)."""
    if not isinstance(ref, str) or not ref:
        raise UsageError(f"expected 'name:alias' or 'name:vN', got {ref!r}")
    head, _, tag = ref.partition(":")
    project, _, name = head.rpartition("/")
    project = project or default_project or ""
    tag = tag or "latest"
    why = check_name(name, "artifact name") or check_name(tag, "alias")
    if why:
        raise UsageError(f"{ref!r}: {why}")
    if not project:
        raise UsageError(f"{ref!r}: which project? write 'project/name:alias'")
    return project, name, tag


def _check_aliases(aliases: Any) -> list[str]:
    if aliases is None:
        return []
    if isinstance(aliases, str):
        aliases = [aliases]
    out = []
    for a in aliases:
        why = check_name(a, "alias")
        if why:
            raise UsageError(f"log_artifact(aliases=...): {why}")
        if a.startswith("v") and a[1:].isdigit():
            raise UsageError(f"log_artifact(aliases=...): {a!r} looks like a version number")
        out.append(a)
    return list(dict.fromkeys(out))


def _as_artifact(obj: Any, name: str | None, type_: str | None) -> Artifact:
    if isinstance(obj, Artifact):
        return obj
    if isinstance(obj, (str, os.PathLike)):
        path = os.fspath(obj)
        art = Artifact(name or os.path.basename(os.path.abspath(path)), type_ or "unspecified")
        if os.path.isdir(path):
            art.add_dir(path)
        else:
            art.add_file(path)
        return art
    raise UsageError(f"log_artifact: expected a wisp.Artifact or a path, got {type(obj)!r}")


def _body(art: Artifact, aliases: list[str]) -> dict[str, Any]:
    return {
        "name": art.name,
        "type": art.type,
        "description": art.description,
        "metadata": art.metadata,
        "aliases": aliases,
        "entries": {p: dict(e) for p, e in art._entries.items()},
    }


def log_artifact(
    run: Run,
    artifact: Any,
    name: str | None = None,
    type: str | None = None,  # noqa: A002 - wandb's name
    aliases: list[str] | None = None,
    tags: list[str] | None = None,
) -> Artifact:
    """Log ``artifact`` (or a file/dir path) as produced by ``run``; returns at once.

    Hashing, caching and uploading go on in the background; ``artifact.wait()`` blocks
    until the version is stored, and ``run.finish()`` waits for every pending artifact."""
    art = _as_artifact(artifact, name, type)
    al = _check_aliases(aliases)
    if art.state != "draft":
        raise ArtifactError(f"artifact {art.name!r} was already logged or used")
    if not art._entries:
        raise UsageError(f"artifact {art.name!r} is empty: add files before logging it")
    art.project = art.project or run.project_path
    art.aliases = ["latest", *al]
    art.state = "pending"
    if run.dir is None:  # a disabled run stores nothing
        art._finish("local")
        return art
    from wisp._rundir import ARTIFACTS_DIR

    job_dir = os.path.join(run.dir, ARTIFACTS_DIR)
    path, job = new_job(job_dir, "log", art.project, run.id, _body(art, al))
    art._cache = art._cache or Cache()
    worker_for(run).submit(path, job, art)
    return art


def use_artifact(
    run: Run | None,
    artifact_or_name: Any,
    type: str | None = None,  # noqa: A002
    aliases: list[str] | None = None,
    use_as: str | None = None,
    *,
    client: ArtifactClient | None = None,
    project: str | None = None,
) -> Artifact:
    """Declare that ``run`` consumes an artifact version and return it (files are fetched
    by ``download()``).  Online the server resolves the name; offline, or when the server
    cannot be reached, the local cache does, and ``wisp sync`` records the use later."""
    if isinstance(artifact_or_name, Artifact):
        art = artifact_or_name.wait()
        proj, name, digest = art.project or "", art.name, art.digest or ""
    else:
        default = project or (run.project_path if run is not None else None)
        proj, name, tag = parse_ref(artifact_or_name, default)
        worker = run.part("artifacts") if run is not None else None
        if worker is not None:  # versions of this name logged by the run come first
            assert run is not None
            worker.wait_for(proj, name, run.upload_wait()[0])
        cache = Cache()
        if client is None and run is not None:
            s = run.settings
            if s.mode == "online" and s.server_url:
                from wisp.artifacts._client import ArtifactClient

                client = ArtifactClient(s.server_url, s.api_key)
        doc = None
        if client is not None:
            try:
                doc = client.version(proj, name, tag)
            except ApiError:
                if run is None:
                    raise
                doc = None  # unreachable: fall back on the cache
            finally:
                client.close()
        art = Artifact(f"{proj}/{name}", (doc or {}).get("type") or "unspecified")
        art._cache = cache
        art._client = client
        if doc is not None:
            cache.save_manifest(doc["digest"], doc["manifest"])
            cache.remember(
                proj, name, doc["digest"], doc.get("aliases", []), version=doc["version"]
            )
            art._set_manifest(doc["manifest"], doc["digest"])
            art.version, art.aliases = doc["version"], list(doc.get("aliases", []))
            art.description, art.metadata = doc.get("description", ""), doc.get("metadata") or {}
        else:
            digest_ = cache.resolve(proj, name, tag)
            manifest = cache.load_manifest(digest_) if digest_ else None
            if manifest is None:
                where = "on the server or in" if client is not None else "in"
                raise ArtifactError(
                    f"artifact {proj}/{name}:{tag} not found {where} the cache ({cache.root})"
                )
            art._set_manifest(manifest, digest_)
            art.type = manifest.get("type", art.type)
            names = cache.names(proj, name)
            art.version = next((v for v, d in names["versions"].items() if d == digest_), None)
            art.aliases = [a for a, d in names["aliases"].items() if d == digest_]
            meta = names["meta"].get(digest_) or {}
            art.description, art.metadata = meta.get("description", ""), meta.get("metadata") or {}
        art.state = "published" if doc is not None else "local"
        art._done.set()
        digest = art.digest or ""
    if type is not None and art.type != type:
        raise ArtifactError(f"artifact {proj}/{name} has type {art.type!r}, not {type!r}")
    if run is not None and run.dir is not None:
        from wisp._rundir import ARTIFACTS_DIR

        body = {"name": name, "digest": digest}
        path, job = new_job(os.path.join(run.dir, ARTIFACTS_DIR), "use", proj, run.id, body)
        if client is not None:
            with contextlib.suppress(ApiError):  # the job stays: `wisp sync` sends it
                process(job, path, Cache(), client)
            client.close()
    return art


def publish(
    art: Artifact, project: str, aliases: list[str] | None, client: ArtifactClient | None
) -> Artifact:
    """Log ``art`` with no run, in this thread (``wisp artifact put``)."""
    al = _check_aliases(aliases)
    if not art._entries:
        raise UsageError(f"artifact {art.name!r} is empty")
    art.project = project
    art.aliases = ["latest", *al]
    art._cache = art._cache or Cache()
    with tempfile.TemporaryDirectory(prefix="wisp-put-") as d:
        path, job = new_job(d, "log", project, None, _body(art, al))
        process(job, path, art._cache, client)
    from wisp.artifacts._manifest import make_manifest

    art._set_manifest(make_manifest(job["type"], job["entries"]), job["digest"])
    art.version = job.get("server_version")
    art._client = client
    art._finish(job["state"])
    return art

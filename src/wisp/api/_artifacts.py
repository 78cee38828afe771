"""Artifacts from ``wisp.Api()``: ``api.artifact("project/name:alias")``, ``api.artifacts``,
``api.artifact_collections``, ``run.logged_artifacts()``, ``run.used_artifacts()``.

Versions come back as ``wisp.Artifact`` objects (``download()``, ``files()``, ``verify()``,
docs/artifacts.md), resolved by the server over a server and by the local artifact cache
over a local folder (what this machine logged or downloaded).  Reading records no use.
"""

from __future__ import annotations

from typing import Any

from wisp._protocol import project_entity, project_path
from wisp.api._objects import resolve_project
from wisp.errors import ArtifactError, NotFoundError, UsageError

__all__ = ["ArtifactCollection", "artifact", "collections", "run_artifacts", "versions"]


class ArtifactCollection:
    """A named artifact of a project and its versions: ``name``, ``type``, ``project``,
    ``entity``, ``versions()``, ``aliases``."""

    def __init__(self, api: Any, project: str, name: str, type_: str) -> None:
        self._api = api
        self.entity, self.project = project_entity(project)
        self._project = project
        self.name = name
        self.type = type_

    def versions(self) -> list[Any]:
        return versions(self._api, self.type, f"{self._project}/{self.name}")

    artifacts = versions

    @property
    def aliases(self) -> list[str]:
        return sorted({a for v in self.versions() for a in v.aliases})

    def __repr__(self) -> str:
        return f"<ArtifactCollection {self._project}/{self.name} ({self.type})>"


def _split(api: Any, ref: str) -> tuple[str, str, str]:
    """``[entity/][project/]name[:tag]`` -> (project path as stored, name, tag)."""
    if not isinstance(ref, str) or not ref.strip("/"):
        raise UsageError(f"expected 'project/name:alias', got {ref!r}")
    head, _, tag = ref.strip("/").partition(":")
    project, _, name = head.rpartition("/")
    if not project:
        project = api.settings.get("project") or ""
        if api.settings.get("entity") and project:
            project = f"{api.settings['entity']}/{project}"
    if not project:
        raise UsageError(f"{ref!r}: which project? write 'project/name:alias'")
    return resolve_project(api._backend, project), name, tag or "latest"


def _client(api: Any) -> Any:
    if api.server_url is None:
        return None
    from wisp.artifacts._client import ArtifactClient

    http = api._backend.http
    return ArtifactClient(api.server_url, http.api_key, timeout=http.timeout)


def artifact(api: Any, ref: str, type_: str | None) -> Any:
    """The version ``ref`` names; NotFoundError when there is none."""
    from wisp.artifacts._api import use_artifact

    project, name, tag = _split(api, ref)
    client = _client(api)
    try:
        return use_artifact(None, f"{project}/{name}:{tag}", type_, client=client, project=project)
    except ArtifactError as exc:
        if "not found" in str(exc):
            raise NotFoundError(str(exc)) from None
        raise
    finally:
        if client is not None:
            client.close()


def versions(api: Any, type_: str | None, ref: str) -> list[Any]:
    """Every version of ``[entity/]project/name``, newest first."""
    project, name, _ = _split(api, ref.partition(":")[0])
    if api.server_url is None:
        from wisp.artifacts._cache import Cache

        known = Cache().names(project, name)["versions"]
        tags = sorted(known, key=lambda v: int(v[1:]) if v[1:].isdigit() else -1, reverse=True)
    else:
        path = f"{project_path(project)}/artifacts/{_q(name)}/versions"
        doc = api._backend.http.json("GET", path)
        if type_ is not None and doc.get("type") != type_:
            raise NotFoundError(f"artifact {project}/{name} has type {doc.get('type')!r}")
        tags = [v["version"] for v in doc.get("versions", [])]
    return [artifact(api, f"{project}/{name}:{t}", type_) for t in tags]


def collections(api: Any, project: str, type_: str | None) -> list[ArtifactCollection]:
    """The named artifacts of ``project`` (of ``type_`` when given)."""
    project = resolve_project(api._backend, project)
    if api.server_url is not None:
        doc = api._backend.http.json("GET", f"{project_path(project)}/artifacts")
        found = [(a["name"], a["type"]) for a in doc.get("artifacts", [])]
    else:
        found = _cached_names(project)
    return [ArtifactCollection(api, project, n, t) for n, t in found if type_ is None or t == type_]


def _cached_names(project: str) -> list[tuple[str, str]]:
    import os

    from wisp.artifacts._cache import Cache

    cache = Cache()
    folder = os.path.join(cache.root, "names", project)
    out = []
    for fn in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
        if fn.endswith(".json"):
            name = fn[: -len(".json")]
            digests = list(cache.names(project, name)["versions"].values())
            manifest = cache.load_manifest(digests[-1]) if digests else None
            out.append((name, str((manifest or {}).get("type", "unspecified"))))
    return out


def run_artifacts(backend: Any, project: str, run_id: str, kind: str) -> list[Any]:
    """The versions a run logged (``kind="logged"``) or used (``"used"``)."""
    from wisp.artifacts._api import use_artifact

    refs: list[tuple[str, str, str]] = []  # (project, name, version or alias)
    if hasattr(backend, "http"):
        from wisp.api._http import q

        run = backend.get_run(run_id, project)
        doc = backend.http.json("GET", f"/runs/{q(str(run.get('key') or run_id))}/artifacts")
        side = "produced" if kind == "logged" else "consumed"
        refs = [(a["project"], a["name"], a["version"]) for a in doc.get(side, [])]
        client = None
        from wisp.artifacts._client import ArtifactClient

        client = ArtifactClient(backend.http.server_url, backend.http.api_key)
    else:
        refs = _local_refs(backend, project, run_id, "log" if kind == "logged" else "use")
        client = None
    try:
        return [use_artifact(None, f"{p}/{n}:{t}", client=client, project=p) for p, n, t in refs]
    finally:
        if client is not None:
            client.close()


def _local_refs(backend: Any, project: str, run_id: str, kind: str) -> list[tuple[str, str, str]]:
    """(project, name, tag) of the run's artifact jobs of ``kind`` the cache can resolve."""
    from wisp.artifacts._cache import Cache
    from wisp.artifacts._upload import load_jobs

    data = backend._find(run_id, project)
    cache = Cache()
    out = []
    for _, job in load_jobs(data.dir):
        if job.get("kind") != kind or job.get("state") in ("pending", "failed"):
            continue
        proj, name, digest = job["project"], job["name"], job.get("digest")
        names = cache.names(proj, name)
        tag = job.get("server_version") or next(
            (v for v, d in names["versions"].items() if d == digest), None
        )
        tag = tag or next((a for a, d in names["aliases"].items() if d == digest), None)
        if tag is not None and (proj, name, tag) not in out:
            out.append((proj, name, tag))
    return out


def _q(s: str) -> str:
    from urllib.parse import quote

    return quote(s, safe="")

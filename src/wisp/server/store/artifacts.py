"""Artifacts in the database: names, versions, aliases, manifests, lineage, the file index.

Tables (schema part "artifacts", Alembic revision ``0003_artifacts``):

- ``artifacts``          one row per (project, name): its type and when it last changed.
- ``artifact_versions``  one row per version: ``version_index`` (``v0``, ``v1``, ...), the
                         manifest digest (unique per artifact: identical content is the same
                         version), the manifest as JSON text, description, metadata, size,
                         file count, and the run that first produced it.
- ``artifact_aliases``   (artifact, alias) -> version: an alias names one version at a time;
                         ``latest`` is moved to each newly created version.
- ``artifact_edges``     lineage: (version, run, ``produced`` | ``consumed``).
- ``artifact_files``     the blobs held for artifacts (sha256, size); the bytes are in the
                         blob store (:mod:`wisp.server.blobs.local`).
- ``artifact_file_refs`` (sha256, version): which versions' manifests name a blob, so its
                         bytes are readable by whoever may read one of those versions'
                         projects (revision ``0006_runkeys``).

A version is created inside one write transaction that locks the artifact row (``SELECT
... FOR UPDATE`` on PostgreSQL, ``BEGIN IMMEDIATE`` on SQLite), so concurrent writers of
one name get distinct version numbers and no alias update is lost.
"""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Column,
    Float,
    Index,
    Integer,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
    UniqueConstraint,
    func,
    select,
)
from sqlalchemy.dialects.postgresql import JSONB

from wisp.server.store import schema as S
from wisp.server.store.db import Db

__all__ = ["ArtifactStore", "TypeMismatch"]

_JSONT = JSON().with_variant(JSONB(), "postgresql")

artifacts = Table(
    "artifacts",
    S.metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("project", String(128), nullable=False),
    Column("name", String(128), nullable=False),
    Column("type", String(128), nullable=False),
    Column("created_at", Float, nullable=False),
    Column("updated_at", Float, nullable=False),
    UniqueConstraint("project", "name", name="uq_artifacts_project_name"),
)

artifact_versions = Table(
    "artifact_versions",
    S.metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("artifact_id", Integer, nullable=False),
    Column("version_index", Integer, nullable=False),
    Column("digest", String(64), nullable=False),
    Column("manifest", Text, nullable=False),
    Column("description", Text, nullable=False),
    Column("meta", _JSONT, nullable=False),
    Column("size", BigInteger, nullable=False),
    Column("file_count", Integer, nullable=False),
    Column("run_id", String(64), nullable=True),
    Column("created_at", Float, nullable=False),
    UniqueConstraint("artifact_id", "version_index", name="uq_artifact_versions_index"),
    UniqueConstraint("artifact_id", "digest", name="uq_artifact_versions_digest"),
)

artifact_aliases = Table(
    "artifact_aliases",
    S.metadata,
    Column("artifact_id", Integer, nullable=False),
    Column("alias", String(128), nullable=False),
    Column("version_id", Integer, nullable=False),
    PrimaryKeyConstraint("artifact_id", "alias"),
)

artifact_edges = Table(
    "artifact_edges",
    S.metadata,
    Column("version_id", Integer, nullable=False),
    Column("run_id", String(64), nullable=False),
    Column("kind", String(16), nullable=False),
    Column("created_at", Float, nullable=False),
    PrimaryKeyConstraint("version_id", "run_id", "kind"),
    Index("ix_artifact_edges_run", "run_id"),
)

artifact_files = Table(
    "artifact_files",
    S.metadata,
    Column("sha256", String(64), primary_key=True),
    Column("size", BigInteger, nullable=False),
    Column("created_at", Float, nullable=False),
)


artifact_file_refs = Table(
    "artifact_file_refs",
    S.metadata,
    Column("sha256", String(64), nullable=False),
    Column("version_id", Integer, nullable=False),
    PrimaryKeyConstraint("sha256", "version_id"),
)


def manifest_blobs(manifest: dict[str, Any]) -> set[str]:
    """The sha256 of the stored files a manifest names (references to elsewhere excluded)."""
    entries = manifest.get("entries") if isinstance(manifest, dict) else None
    if not isinstance(entries, dict):
        return set()
    return {
        e["digest"]
        for e in entries.values()
        if isinstance(e, dict) and e.get("ref") is None and isinstance(e.get("digest"), str)
    }


class TypeMismatch(Exception):
    """An artifact name is logged with a type other than the one it has."""


def _vname(i: int) -> str:
    return f"v{i}"


class ArtifactStore:
    def __init__(self, db: Db) -> None:
        self.db = db

    # -- files -----------------------------------------------------------------------------

    def files_known(self, shas: list[str]) -> set[str]:
        f = artifact_files.c
        out: set[str] = set()
        with self.db.read() as conn:
            for i in range(0, len(shas), 500):
                rows = conn.execute(select(f.sha256).where(f.sha256.in_(shas[i : i + 500])))
                out.update(r[0] for r in rows)
        return out

    def file_size(self, sha: str) -> int | None:
        f = artifact_files.c
        with self.db.read() as conn:
            row = conn.execute(select(f.size).where(f.sha256 == sha)).first()
        return None if row is None else int(row[0])

    def file_add(self, sha: str, size: int) -> None:
        row = {"sha256": sha, "size": size, "created_at": self.db.clock()}
        with self.db.tx() as conn:
            self.db.dialect.insert_ignore(conn, artifact_files, [row], ["sha256"])

    def orphan_files(self, before: float) -> list[tuple[str, int]]:
        """``(sha256, size)`` of artifact files held since before ``before`` that no published
        version names (uploads whose version was never committed)."""
        f, r = artifact_files.c, artifact_file_refs.c
        q = select(f.sha256, f.size).where(
            f.created_at < before, ~select(r.sha256).where(r.sha256 == f.sha256).exists()
        )
        with self.db.read() as conn:
            return [(str(a), int(b)) for a, b in conn.execute(q)]

    def forget_file(self, sha: str) -> bool:
        """Drop a file from the index unless a version came to name it meanwhile; returns
        whether it was dropped (the caller then deletes its bytes)."""
        f, r = artifact_files.c, artifact_file_refs.c
        with self.db.tx() as conn:
            named = select(r.sha256).where(r.sha256 == sha).exists()
            res = conn.execute(artifact_files.delete().where(f.sha256 == sha, ~named))
            return bool(res.rowcount)

    # -- versions --------------------------------------------------------------------------

    def commit(
        self,
        project: str,
        name: str,
        type_: str,
        manifest: dict[str, Any],
        digest: str,
        *,
        description: str,
        metadata: dict[str, Any],
        aliases: list[str],
        run_id: str | None,
    ) -> tuple[dict[str, Any], bool]:
        """Publish a version (or find the one with this digest); move its aliases."""
        a, v = artifacts.c, artifact_versions.c
        now = self.db.clock()
        entries = manifest["entries"]
        size = sum(e.get("size") or 0 for e in entries.values())
        d = self.db.dialect
        with self.db.tx() as conn:
            row = {"project": project, "name": name, "type": type_, "created_at": now}
            d.insert_ignore(conn, artifacts, [{**row, "updated_at": now}], ["project", "name"])
            q = select(a.id, a.type).where(a.project == project, a.name == name)
            art_id, have_type = conn.execute(d.for_update(q)).one()
            if have_type != type_:
                raise TypeMismatch(f"artifact {name!r} has type {have_type!r}, not {type_!r}")
            found = conn.execute(
                select(v.id).where(v.artifact_id == art_id, v.digest == digest)
            ).first()
            created = found is None
            if found is None:
                top = conn.execute(
                    select(func.max(v.version_index)).where(v.artifact_id == art_id)
                ).scalar()
                res = conn.execute(
                    artifact_versions.insert().values(
                        artifact_id=art_id,
                        version_index=0 if top is None else top + 1,
                        digest=digest,
                        manifest=json.dumps(manifest, separators=(",", ":")),
                        description=description,
                        meta=metadata,
                        size=size,
                        file_count=len(entries),
                        run_id=run_id,
                        created_at=now,
                    )
                )
                pk = res.inserted_primary_key
                assert pk is not None
                vid = pk[0]
                refs = [{"sha256": x, "version_id": vid} for x in sorted(manifest_blobs(manifest))]
                if refs:
                    d.insert_ignore(conn, artifact_file_refs, refs, ["sha256", "version_id"])
            else:
                vid = found[0]
            moved = (["latest"] if created else []) + [x for x in aliases if x != "latest"]
            event = {"project": project, "name": name, "type": type_, "run_id": run_id}
            if created:
                self._event(conn, event, vid, "version", None)
            if moved:
                for x in moved:
                    self._event(conn, event, vid, "alias", x, art_id)
                d.upsert(
                    conn,
                    artifact_aliases,
                    [{"artifact_id": art_id, "alias": x, "version_id": vid} for x in moved],
                    ["artifact_id", "alias"],
                )
            if run_id:
                self._edge(conn, vid, run_id, "produced")
            conn.execute(artifacts.update().where(a.id == art_id).values(updated_at=now))
        got = self.version(project, name, f"v{self._index_of(vid)}", manifest=False)
        assert got is not None
        return got, created

    def _event(
        self,
        conn: Any,
        event: dict[str, Any],
        vid: int,
        kind: str,
        alias: str | None,
        art_id: int | None = None,
    ) -> None:
        """Write an artifact event for automations (``S.artifact_events``), in the change's own
        transaction; an alias that already names ``vid`` is no event."""
        if alias is not None:
            al = artifact_aliases.c
            q = select(al.version_id).where(al.artifact_id == art_id, al.alias == alias)
            if conn.execute(q).scalar() == vid:
                return
        v = artifact_versions.c
        index = conn.execute(select(v.version_index).where(v.id == vid)).scalar_one()
        row = {**event, "kind": kind, "version": _vname(index), "alias": alias}
        conn.execute(S.artifact_events.insert(), {**row, "created_at": self.db.clock()})

    def _edge(self, conn: Any, vid: int, run_id: str, kind: str) -> None:
        row = {"version_id": vid, "run_id": run_id, "kind": kind, "created_at": self.db.clock()}
        self.db.dialect.insert_ignore(conn, artifact_edges, [row], ["version_id", "run_id", "kind"])

    def _index_of(self, vid: int) -> int:
        v = artifact_versions.c
        with self.db.read() as conn:
            return int(conn.execute(select(v.version_index).where(v.id == vid)).scalar_one())

    def _artifact(self, conn: Any, project: str, name: str) -> Any:
        a = artifacts.c
        return conn.execute(
            select(a.id, a.type).where(a.project == project, a.name == name)
        ).first()

    def _aliases(self, conn: Any, art_id: int) -> dict[int, list[str]]:
        al = artifact_aliases.c
        out: dict[int, list[str]] = {}
        rows = conn.execute(
            select(al.version_id, al.alias).where(al.artifact_id == art_id).order_by(al.alias)
        )
        for vid, alias in rows:
            out.setdefault(vid, []).append(alias)
        return out

    def _vdict(self, r: Any, aliases: dict[int, list[str]], manifest: bool) -> dict[str, Any]:
        doc = {
            "version": _vname(r.version_index),
            "digest": r.digest,
            "aliases": aliases.get(r.id, []),
            "description": r.description,
            "metadata": r.meta,
            "size": r.size,
            "file_count": r.file_count,
            "run_id": r.run_id,
            "created_at": r.created_at,
        }
        if manifest:
            doc["manifest"] = json.loads(r.manifest)
        return doc

    def version(
        self, project: str, name: str, ref: str, *, manifest: bool = True
    ) -> dict[str, Any] | None:
        """A version by ``vN`` or alias, with its manifest and lineage; None if unknown."""
        v, al = artifact_versions.c, artifact_aliases.c
        with self.db.read() as conn:
            art = self._artifact(conn, project, name)
            if art is None:
                return None
            q = select(artifact_versions).where(v.artifact_id == art.id)
            if ref[:1] == "v" and ref[1:].isdigit():
                q = q.where(v.version_index == int(ref[1:]))
            else:
                sub = select(al.version_id).where(al.artifact_id == art.id, al.alias == ref)
                q = q.where(v.id.in_(sub))
            r = conn.execute(q).first()
            if r is None:
                return None
            doc = self._vdict(r, self._aliases(conn, art.id), manifest=manifest)
            doc.update(project=project, name=name, type=art.type)
            doc["lineage"] = self._lineage(conn, r.id)
            return doc

    def _lineage(self, conn: Any, vid: int) -> dict[str, list[str]]:
        e = artifact_edges.c
        out: dict[str, list[str]] = {"produced_by": [], "consumed_by": []}
        rows = conn.execute(
            select(e.run_id, e.kind).where(e.version_id == vid).order_by(e.created_at, e.run_id)
        )
        for run_id, kind in rows:
            out["produced_by" if kind == "produced" else "consumed_by"].append(run_id)
        return out

    def versions(self, project: str, name: str) -> dict[str, Any] | None:
        v = artifact_versions.c
        with self.db.read() as conn:
            art = self._artifact(conn, project, name)
            if art is None:
                return None
            aliases = self._aliases(conn, art.id)
            rows = conn.execute(
                select(artifact_versions)
                .where(v.artifact_id == art.id)
                .order_by(v.version_index.desc())
            )
            out = [self._vdict(r, aliases, manifest=False) for r in rows]
        return {"project": project, "name": name, "type": art.type, "versions": out}

    def list_artifacts(self, project: str) -> list[dict[str, Any]]:
        a, v = artifacts.c, artifact_versions.c
        q = (
            select(a.id, a.name, a.type, a.updated_at, func.count(v.id), func.sum(v.size))
            .select_from(artifacts.outerjoin(artifact_versions, v.artifact_id == a.id))
            .where(a.project == project)
            .group_by(a.id, a.name, a.type, a.updated_at)
            .order_by(a.name)
        )
        with self.db.read() as conn:
            rows = conn.execute(q).all()
            out = []
            for art_id, name, type_, updated, count, size in rows:
                aliases = self._aliases(conn, art_id)
                latest = next((x for x, al in aliases.items() if "latest" in al), None)
                idx = None
                if latest is not None:
                    idx = conn.execute(select(v.version_index).where(v.id == latest)).scalar()
                out.append(
                    {
                        "name": name,
                        "type": type_,
                        "versions": int(count),
                        "size": int(size or 0),
                        "latest": None if idx is None else _vname(idx),
                        "updated_at": updated,
                    }
                )
        return out

    def set_alias(self, project: str, name: str, version: str, alias: str) -> bool:
        """Point ``alias`` at ``version`` (``vN``); False when there is no such version."""
        a, v = artifacts.c, artifact_versions.c
        d = self.db.dialect
        with self.db.tx() as conn:
            q = select(a.id, a.type).where(a.project == project, a.name == name)
            art = conn.execute(d.for_update(q)).first()
            if art is None:
                return False
            vid = conn.execute(
                select(v.id).where(v.artifact_id == art[0], v.version_index == int(version[1:]))
            ).scalar()
            if vid is None:
                return False
            event = {"project": project, "name": name, "type": art[1], "run_id": None}
            self._event(conn, event, vid, "alias", alias, art[0])
            row = {"artifact_id": art[0], "alias": alias, "version_id": vid}
            d.upsert(conn, artifact_aliases, [row], ["artifact_id", "alias"])
        return True

    def use(self, project: str, name: str, digest: str, run_id: str) -> str | None:
        """Record that ``run_id`` consumed the version with ``digest``; its ``vN`` or None."""
        a, v = artifacts.c, artifact_versions.c
        with self.db.tx() as conn:
            r = conn.execute(
                select(v.id, v.version_index)
                .select_from(artifact_versions.join(artifacts, a.id == v.artifact_id))
                .where(a.project == project, a.name == name, v.digest == digest)
            ).first()
            if r is None:
                return None
            self._edge(conn, r[0], run_id, "consumed")
        return _vname(r[1])

    def run_lineage(self, run_id: str) -> dict[str, list[dict[str, Any]]]:
        """The versions a run produced and consumed."""
        a, v, e = artifacts.c, artifact_versions.c, artifact_edges.c
        q = (
            select(a.project, a.name, a.type, v.version_index, v.digest, e.kind)
            .select_from(
                artifact_edges.join(artifact_versions, v.id == e.version_id).join(
                    artifacts, a.id == v.artifact_id
                )
            )
            .where(e.run_id == run_id)
            .order_by(e.created_at, a.name, v.version_index)
        )
        out: dict[str, list[dict[str, Any]]] = {"produced": [], "consumed": []}
        with self.db.read() as conn:
            for project, name, type_, idx, digest, kind in conn.execute(q):
                out[kind].append(
                    {
                        "project": project,
                        "name": name,
                        "type": type_,
                        "version": _vname(idx),
                        "digest": digest,
                    }
                )
        return out

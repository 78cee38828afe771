"""Artifact endpoints (src/wisp/server/views/artifacts.py): answers match their declared Structs."""

from __future__ import annotations

import hashlib
from typing import Any

import msgspec

from wisp.artifacts._manifest import manifest_digest
from wisp.server.schemas import artifacts as A

V1 = "/api/v1"


def _decode(resp: Any, typ: type) -> Any:
    return msgspec.json.decode(resp.content, type=typ)


def test_publish_read_alias_and_use_answer_the_declared_types(api: Any) -> None:
    """A version is refused (409) until its file is uploaded; every answer decodes as declared."""
    data = b"weights"
    sha = hashlib.sha256(data).hexdigest()
    entries = {"w.bin": {"digest": sha, "size": len(data)}}
    body = {
        "type": "model",
        "manifest": {"version": 1, "type": "model", "entries": entries},
        "aliases": ["best"],
    }
    base = f"{V1}/projects/p/artifacts/m"
    r = api.post(f"{V1}/artifact-files/missing", json={"sha256": [sha]})
    assert _decode(r, A.ArtifactsMissing).missing == [sha]
    r = api.post(f"{base}/versions", json=body)
    assert r.status_code == 409 and r.json()["error"]["code"] == "missing_files"
    r = api.put(f"{V1}/artifact-files/{sha}", content=data)
    assert r.status_code == 201 and _decode(r, A.ArtifactFileStored).stored
    r = api.post(f"{base}/versions", json=body)
    assert r.status_code == 201
    made = _decode(r, A.ArtifactCommitted)
    assert made.created and made.version.version == "v0" and "best" in made.version.aliases
    r = api.post(f"{base}/versions", json=body)  # the same files: the same version
    assert r.status_code == 200 and not _decode(r, A.ArtifactCommitted).created
    v = _decode(api.get(f"{base}/versions/best"), A.ArtifactVersion)
    assert v.manifest is not None and v.digest == manifest_digest(entries)
    assert _decode(api.get(f"{base}/versions"), A.ArtifactVersionList).versions[0].version == "v0"
    listed = _decode(api.get(f"{V1}/projects/p/artifacts"), A.ArtifactList)
    assert [a.name for a in listed.artifacts] == ["m"]
    r = api.put(f"{base}/aliases/prod", json={"version": "v0"})
    assert "prod" in _decode(r, A.ArtifactVersion).aliases
    r = api.post(f"{base}/usage", json={"digest": v.digest, "run_id": "r2"})
    assert _decode(r, A.ArtifactUsed).version == "v0"
    lineage = _decode(api.get(f"{V1}/runs/r2/artifacts"), A.RunArtifacts)
    assert [x.name for x in lineage.consumed] == ["m"] and lineage.produced == []
    r = api.get(f"{V1}/artifact-files/{sha}", params={"name": 'dir/"w\u00e9".bin'})
    assert r.content == data and "attachment" in r.headers["content-disposition"]


def test_bad_names_and_digests_are_4xx(api: Any) -> None:
    """A malformed name, digest or alias is a 422 naming the field, never a 500."""
    base = f"{V1}/projects/p/artifacts"
    r = api.get(f"{base}/.hidden/versions")
    assert r.status_code == 422 and r.json()["error"]["field"] == "name"
    r = api.put(f"{V1}/artifact-files/abc", content=b"x")
    assert r.status_code == 422 and r.json()["error"]["field"] == "sha256"
    r = api.put(f"{base}/m/aliases/v3", json={"version": "v0"})
    assert r.status_code == 422 and r.json()["error"]["field"] == "alias"
    r = api.post(f"{base}/m/usage", json={"digest": "zz", "run_id": "r1"})
    assert r.status_code == 422 and r.json()["error"]["field"] == "digest"

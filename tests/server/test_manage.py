"""`wisp server gc` (src/wisp/server/manage.py) over the artifact file index."""

from __future__ import annotations

import hashlib
import time
from pathlib import Path

from wisp.server import media_gc
from wisp.server.blobs import open_blob_store
from wisp.server.store.facade import open_store
from wisp.server.store.ingest import prepare_records


def test_gc_frees_artifact_files_no_version_names(tmp_path: Path) -> None:
    """Artifact bytes uploaded for a version never published are freed; a published
    version's files, and bytes a run refers to as media, stay."""
    url, media = f"sqlite:///{tmp_path / 'gc.db'}", str(tmp_path / "media")
    store, blobs = open_store(url), open_blob_store(media)
    named, stray, shared = b"in-a-version", b"never-published", b"also-media"
    sha = {d: hashlib.sha256(d).hexdigest() for d in (named, stray, shared)}
    for data, h in sha.items():
        blobs.put(h, [data])
        store.artifacts.file_add(h, len(data))
    store.media_add(sha[shared], len(shared), ".bin")
    image = {"img": {"_type": "image", "sha256": sha[shared]}}
    recs = [{"type": 1, "data": {"project": "p"}}, {"type": 3, "data": {"rows": [[0, 1.0, image]]}}]
    store.ingest("r1", "w", 0, prepare_records(recs))
    manifest = {"entries": {"a.txt": {"digest": sha[named], "size": len(named)}}}
    store.artifacts.commit(
        "p", "ds", "dataset", manifest, "d" * 64,
        description="", metadata={}, aliases=[], run_id=None,
    )  # fmt: skip
    store.close()
    time.sleep(0.01)
    assert media_gc(url, media, older_than_days=0, dry_run=True) == (1, len(stray))
    assert all(blobs.exists(h) for h in sha.values())
    assert media_gc(url, media, older_than_days=0) == (1, len(stray))
    assert blobs.exists(sha[named]) and blobs.exists(sha[shared]) and not blobs.exists(sha[stray])
    assert media_gc(url, media, older_than_days=0) == (0, 0)

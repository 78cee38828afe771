"""Writing a version's files out (from the cache, fetching what it lacks) and verifying them."""

from __future__ import annotations

import logging
import os
import shutil
import urllib.parse

from wisp._localpath import local_path
from wisp.artifacts._cache import Cache
from wisp.artifacts._hashing import parallel, sha256_file
from wisp.artifacts._manifest import is_sha256
from wisp.errors import ArtifactError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from wisp.artifacts._artifact import Artifact
    from wisp.artifacts._client import ArtifactClient

__all__ = ["download", "verify"]

log = logging.getLogger("wisp")


def default_client() -> ArtifactClient | None:
    """A client for the configured server (settings / environment), or None offline."""
    from wisp._settings import Settings

    s = Settings.resolve()
    if s.mode in ("offline", "disabled") or not s.server_url:
        return None
    from wisp.artifacts._client import ArtifactClient

    return ArtifactClient(s.server_url, s.api_key)


def download(art: Artifact, root: str, only: list[str] | None) -> str:
    cache = art._cache or Cache()
    entries = {p: e for p, e in art._entries.items() if only is None or p in only}
    # Entry names and digests come from the server: each lands under root, or nothing is written.
    dests = {p: local_path(root, p, what=f"artifact {art.name!r} entry") for p in entries}
    for p, e in entries.items():
        if "ref" not in e and not is_sha256(e.get("digest")):
            raise ArtifactError(f"artifact {art.name!r} entry {p!r}: digest is not a sha256")
    files = {e["digest"] for e in entries.values() if "ref" not in e}
    need = sorted(d for d in files if not cache.has(d))
    if need:
        client = art._client or default_client()
        if client is None:
            raise ArtifactError(
                f"artifact {art.name!r}: {len(need)} file(s) are not in the cache "
                f"({cache.root}) and no server is configured to fetch them from"
            )

        def fetch(d: str) -> None:
            with cache.receive(d) as f:
                client.get_file(d, f)

        try:
            parallel(fetch, need, n=4)
        finally:
            client.close()

    def write(item: tuple[str, dict[str, Any]]) -> None:
        path, e = item
        dst = dests[path]
        if "ref" in e:
            _fetch_ref(e["ref"], dst)
            return
        try:
            st = os.stat(dst)
        except OSError:
            st = None
        if (
            st is not None
            and st.st_size == e["size"]
            and cache.index.lookup(dst, st) == e["digest"]
        ):
            return  # already there, unchanged since written
        cache.copy_out(e["digest"], dst)
        st = os.stat(dst)
        cache.index.put(dst, [st.st_size, st.st_mtime_ns, st.st_ino], e["digest"])

    os.makedirs(root, exist_ok=True)
    parallel(write, sorted(entries.items()))
    cache.index.save()
    art.last_download = {
        "files": len(files),
        "from_cache": len(files) - len(need),
        "fetched": len(need),
    }
    return root


def _fetch_ref(uri: str, dst: str) -> None:
    os.makedirs(os.path.dirname(dst) or ".", exist_ok=True)
    if uri.startswith("file://"):
        shutil.copyfile(urllib.parse.unquote(urllib.parse.urlsplit(uri).path), dst)
    elif uri.startswith(("http://", "https://")):
        from urllib.request import urlopen

        with urlopen(uri, timeout=60) as resp, open(dst, "wb") as f:
            shutil.copyfileobj(resp, f, 1 << 20)
    else:
        log.warning("wisp: reference %s is recorded only (no s3 client): not downloaded", uri)


def verify(art: Artifact, root: str | None) -> None:
    cache = art._cache or Cache()
    items = [(p, e) for p, e in sorted(art._entries.items()) if "ref" not in e]

    def check(item: tuple[str, dict[str, Any]]) -> str | None:
        path, e = item
        if root:
            where = local_path(root, path, what=f"artifact {art.name!r} entry")
        elif is_sha256(e.get("digest")):
            where = cache.path(e["digest"])
        else:
            return f"{path}: digest is not a sha256"
        try:
            digest, size = sha256_file(where)
        except FileNotFoundError:
            return f"{path}: missing ({where})"
        if digest != e["digest"] or size != e["size"]:
            want = f"{e['digest'][:12]}.. size {e['size']}"
            return f"{path}: sha256 {digest[:12]}.. size {size}, expected {want} ({where})"
        return None

    bad = [b for b in parallel(check, items) if b]
    if bad:
        shown = "; ".join(bad[:20]) + (f"; and {len(bad) - 20} more" if len(bad) > 20 else "")
        raise ArtifactError(
            f"artifact {art.name!r}: {len(bad)} file(s) failed verification: {shown}"
        )

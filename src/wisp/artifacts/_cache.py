"""The artifact cache: file bytes by sha256, shared by every run of the user on this machine.

Layout (version 1) under ``$WISP_CACHE_DIR`` (default ``$XDG_CACHE_HOME/wisp`` or
``~/.cache/wisp``), in ``artifacts-v1/``:

- ``files/<sha[:2]>/<sha>``        file bytes, named by their sha256 (written once, renamed in)
- ``staging/<uuid>/<n>``           files secured by ``add_file``/``add_dir`` until hashed
- ``manifests/<digest>.json``      every manifest this machine logged or downloaded
- ``names/<project>/<name>.json``  ``{"aliases": {alias: digest}, "versions": {"v3": digest}}``:
                                   what ``use_artifact`` resolves offline
- ``index.json``                   the stat index (:mod:`._index`)

Files enter by reflink (copy-on-write) where the filesystem allows, by a copy otherwise;
a hard link is used only to *secure* a file quickly (staging), never as the cached copy,
so editing a file in place later cannot change the cache.  Downloads leave the cache by
reflink or copy for the same reason.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import uuid

from wisp.artifacts._hashing import copy_hashing
from wisp.artifacts._index import StatIndex

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

__all__ = ["CACHE_LAYOUT", "Cache", "cache_dir", "clone", "secure"]

CACHE_LAYOUT = "artifacts-v1"
_FICLONE = 0x40049409  # linux/fs.h: reflink the whole file


def cache_dir() -> str:
    """Where the shared cache lives: ``$WISP_CACHE_DIR`` or the user's cache folder."""
    base = os.environ.get("WISP_CACHE_DIR")
    if not base:
        xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        base = os.path.join(xdg, "wisp")
    return os.path.join(os.path.abspath(base), CACHE_LAYOUT)


def clone(src: str, dst: str) -> bool:
    """Reflink ``src`` to a new file ``dst``; False where the filesystem cannot."""
    try:
        fi = os.open(src, os.O_RDONLY)
    except OSError:
        return False
    try:
        fo = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except OSError:
        os.close(fi)
        return False
    try:
        fcntl.ioctl(fo, _FICLONE, fi)
        ok = True
    except OSError:
        ok = False
    finally:
        os.close(fi)
        os.close(fo)
    if not ok:
        os.unlink(dst)
    return ok


def secure(src: str, dst: str) -> str:
    """Keep the bytes of ``src`` at ``dst`` before the caller can delete it: ``"reflink"``
    (an independent copy-on-write copy), ``"link"`` (a hard link: survives deletion, not
    an edit in place, which hashing detects) or ``"copy"``."""
    if clone(src, dst):
        return "reflink"
    try:
        os.link(src, dst)
        return "link"
    except OSError:
        shutil.copyfile(src, dst)
        return "copy"


class Cache:
    def __init__(self, root: str | None = None) -> None:
        self.root = root or cache_dir()
        self.index = StatIndex(os.path.join(self.root, "index.json"))

    # -- file bytes ------------------------------------------------------------------------

    def path(self, digest: str) -> str:
        return os.path.join(self.root, "files", digest[:2], digest)

    def has(self, digest: str) -> bool:
        return os.path.exists(self.path(digest))

    def staging_dir(self) -> str:
        d = os.path.join(self.root, "staging", uuid.uuid4().hex)
        os.makedirs(d, exist_ok=True)
        return d

    def _tmp(self) -> str:
        d = os.path.join(self.root, "tmp")
        os.makedirs(d, exist_ok=True)
        return os.path.join(d, uuid.uuid4().hex)

    def _install(self, tmp: str, digest: str) -> None:
        dst = self.path(digest)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        os.replace(tmp, dst)

    def adopt(self, owned: str, digest: str) -> None:
        """Move a file this process owns (a copy or reflink) into the cache as ``digest``."""
        if self.has(digest):
            os.unlink(owned)
        else:
            self._install(owned, digest)

    def adopt_link(self, owned: str, digest: str) -> None:
        """Give the cache the bytes of a file this process owns, keeping ``owned`` (a hard
        link where possible) until the caller removes it."""
        if self.has(digest):
            return
        tmp = self._tmp()
        try:
            os.link(owned, tmp)
        except OSError:
            shutil.copyfile(owned, tmp)
        self._install(tmp, digest)

    def ingest_copy(self, src: str) -> tuple[str, int]:
        """Copy ``src`` into the cache, hashing in the same pass: (sha256, size)."""
        tmp = self._tmp()
        try:
            digest, size = copy_hashing(src, tmp)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        self.adopt(tmp, digest)
        return digest, size

    def put_bytes(self, data: bytes, digest: str) -> None:
        if self.has(digest):
            return
        tmp = self._tmp()
        with open(tmp, "wb") as f:
            f.write(data)
        self._install(tmp, digest)

    def copy_out(self, digest: str, dst: str) -> None:
        """Write the cached bytes of ``digest`` to ``dst`` (reflink, else copy)."""
        d = os.path.dirname(dst)
        if d:
            os.makedirs(d, exist_ok=True)
        tmp = f"{dst}.wisp-{uuid.uuid4().hex[:8]}"
        if not clone(self.path(digest), tmp):
            shutil.copyfile(self.path(digest), tmp)
        os.replace(tmp, dst)

    def receive(self, digest: str) -> Any:
        """A context manager giving a binary file to write the bytes of ``digest`` into;
        installed under its name on a clean exit (the caller checks the hash)."""
        return _Receive(self, digest)

    # -- manifests and names ---------------------------------------------------------------

    def save_manifest(self, digest: str, manifest: dict[str, Any]) -> None:
        path = os.path.join(self.root, "manifests", f"{digest}.json")
        if os.path.exists(path):
            return
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = self._tmp()
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(manifest, f, separators=(",", ":"))
        os.replace(tmp, path)

    def load_manifest(self, digest: str) -> dict[str, Any] | None:
        try:
            with open(
                os.path.join(self.root, "manifests", f"{digest}.json"), encoding="utf-8"
            ) as f:
                doc = json.load(f)
        except (OSError, ValueError):
            return None
        return doc if isinstance(doc, dict) else None

    def _names_path(self, project: str, name: str) -> str:
        return os.path.join(self.root, "names", project, f"{name}.json")

    @contextlib.contextmanager
    def _names(self, project: str, name: str) -> Iterator[dict[str, Any]]:
        path = self._names_path(project, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path + ".lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            doc = self.names(project, name)
            yield doc
            tmp = self._tmp()
            with open(tmp, "w", encoding="utf-8") as f:
                json.dump(doc, f)
            os.replace(tmp, path)

    def names(self, project: str, name: str) -> dict[str, Any]:
        try:
            with open(self._names_path(project, name), encoding="utf-8") as f:
                doc = json.load(f)
        except (OSError, ValueError):
            doc = {}
        if not isinstance(doc, dict):
            doc = {}
        doc.setdefault("aliases", {})
        doc.setdefault("versions", {})
        doc.setdefault("meta", {})
        return doc

    def remember(
        self,
        project: str,
        name: str,
        digest: str,
        aliases: list[str],
        version: str | None = None,
        meta: dict[str, Any] | None = None,
    ) -> None:
        """Record locally that ``digest`` carries ``aliases`` (and is ``version``)."""
        with self._names(project, name) as doc:
            for a in aliases:
                doc["aliases"][a] = digest
            if version is not None:
                doc["versions"] = {v: d for v, d in doc["versions"].items() if d != digest}
                doc["versions"][version] = digest
            if meta is not None:
                doc["meta"][digest] = meta

    def resolve(self, project: str, name: str, ref: str) -> str | None:
        """The digest of ``name:ref`` (an alias or ``vN``) known on this machine, or None."""
        doc = self.names(project, name)
        got = doc["versions"].get(ref) or doc["aliases"].get(ref)
        return got if isinstance(got, str) else None


class _Receive:
    def __init__(self, cache: Cache, digest: str) -> None:
        self.cache = cache
        self.digest = digest
        self.tmp = cache._tmp()
        self.f: Any = None

    def __enter__(self) -> Any:
        self.f = open(self.tmp, "wb")
        return self.f

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        self.f.close()
        if exc_type is None:
            self.cache.adopt(self.tmp, self.digest)
        else:
            with contextlib.suppress(OSError):
                os.unlink(self.tmp)

"""``wisp.Artifact``: a versioned set of files (and references) with lineage.

Building an artifact secures every file at once (reflink, hard link or copy into the
cache's staging area, :func:`._cache.secure`), so the caller may delete its folder as
soon as ``log_artifact`` returns; hashing, copying into the cache and uploading happen
on background threads (:mod:`._upload`).  A file already known to the stat index with a
digest already in the cache is not staged at all: an unchanged directory costs a stat
per file.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import threading
import urllib.parse

from wisp.artifacts._cache import Cache, secure
from wisp.artifacts._hashing import parallel
from wisp.artifacts._manifest import (
    REF_SCHEMES,
    check_entry_path,
    check_name,
    make_manifest,
    manifest_digest,
)
from wisp.errors import ArtifactError, UsageError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import IO, Any

__all__ = ["Artifact", "ArtifactEntry"]


class ArtifactEntry:
    """One path of an artifact version: a stored file or a reference."""

    def __init__(self, artifact: Artifact, path: str, entry: dict[str, Any]) -> None:
        self._artifact = artifact
        self.path = path
        self.digest: str = entry.get("digest") or ""
        self.size: int | None = entry.get("size")
        self.ref: str | None = entry.get("ref")
        self.extra: dict[str, Any] = entry.get("extra") or {}

    def download(self, root: str | None = None) -> str:
        """Write this entry under ``root`` (default: the artifact's folder); its path."""
        root = self._artifact.download(root, only=[self.path])
        return os.path.join(root, self.path)

    def __repr__(self) -> str:
        what = self.ref or f"sha256:{self.digest[:12]}"
        return f"<ArtifactEntry {self.path} {what} {self.size}>"


class Artifact:
    """A dataset, model or any set of files, logged as a version of ``name``.

    ``wisp.Artifact("mnist", type="dataset", description=..., metadata={...})``; fill it
    with :meth:`add_file`, :meth:`add_dir`, :meth:`new_file`, :meth:`add` and
    :meth:`add_reference`, then ``run.log_artifact(art, aliases=["best"])``.
    """

    def __init__(
        self,
        name: str,
        type: str,  # noqa: A002 - wandb's name
        description: str | None = None,
        metadata: dict[str, Any] | None = None,
        incremental: bool = False,
        use_as: str | None = None,
    ) -> None:
        project, _, short = name.rpartition("/")
        why = check_name(short, "artifact name") or check_name(type, "artifact type")
        if why:
            raise UsageError(f"wisp.Artifact: {why}")
        if description is not None and not isinstance(description, str):
            raise UsageError("wisp.Artifact(description=...) must be a string")
        if metadata is not None:
            if not isinstance(metadata, dict):
                raise UsageError("wisp.Artifact(metadata=...) must be a dict")
            try:
                json.dumps(metadata, allow_nan=False)
            except (TypeError, ValueError) as exc:
                raise UsageError(f"wisp.Artifact(metadata=...) is not JSON: {exc}") from None
        self.name = short
        self.project: str | None = project or None
        self.type = type
        self.description = description or ""
        self.metadata: dict[str, Any] = dict(metadata or {})
        self.aliases: list[str] = []
        self.version: str | None = None  # "vN" once the server published it
        self.state = "draft"  # draft, pending, local, published, failed
        self._entries: dict[str, dict[str, Any]] = {}
        self._staging: str | None = None
        self._cache: Cache | None = None
        self._counter = itertools.count()
        self._done = threading.Event()
        self._error: str | None = None
        self._digest: str | None = None
        self._client: Any = None  # set by use_artifact online: where to fetch files from
        self.last_download: dict[str, int] = {}  # files, from_cache, fetched
        self.upload_stats: dict[str, int] = {}  # files_uploaded, bytes_uploaded, files_skipped

    # -- building --------------------------------------------------------------------------

    def _draft(self, what: str) -> Cache:
        if self.state != "draft":
            raise ArtifactError(f"artifact {self.name!r} was logged: {what} needs a new Artifact")
        if self._cache is None:
            self._cache = Cache()
        return self._cache

    def _stage_dir(self) -> str:
        if self._staging is None:
            self._staging = self._draft("staging").staging_dir()
        return self._staging

    def _name_for(self, name: str, overwrite: bool) -> str:
        why = check_entry_path(name)
        if why:
            raise UsageError(f"artifact {self.name!r}: {why}")
        if name in self._entries and not overwrite:
            raise ArtifactError(
                f"artifact {self.name!r} already has {name!r}: pass overwrite=True to replace it"
            )
        return name

    def _secure(self, src: str, name: str, policy: str) -> None:
        """Record ``src`` as ``name``: a stat-index hit with a cached digest costs nothing;
        otherwise the file is secured in staging now and hashed in the background."""
        cache = self._draft("add_file")
        st = os.stat(src)
        stat = [st.st_size, st.st_mtime_ns, st.st_ino]
        digest = cache.index.lookup(src, st)
        if digest is not None and cache.has(digest):
            self._entries[name] = {"digest": digest, "size": st.st_size}
            return
        if policy == "immutable":
            self._entries[name] = {"src": src, "origin": src, "mode": "direct", "stat": stat}
            return
        staged = os.path.join(self._stage_dir(), str(next(self._counter)))
        mode = secure(src, staged)
        self._entries[name] = {"src": staged, "origin": src, "mode": mode, "stat": stat}

    def add_file(
        self,
        local_path: str | os.PathLike[str],
        name: str | None = None,
        is_tmp: bool | None = False,
        skip_cache: bool | None = False,
        policy: str = "mutable",
        overwrite: bool = False,
    ) -> ArtifactEntry:
        """Add one file as ``name`` (default: its base name).  ``policy="immutable"``
        promises the file will not change until uploaded: it is not secured, only read."""
        src = os.path.abspath(os.fspath(local_path))
        if not os.path.isfile(src):
            raise UsageError(f"add_file: {src!r} is not a file")
        if policy not in ("mutable", "immutable"):
            raise UsageError("add_file(policy=...) must be 'mutable' or 'immutable'")
        key = self._name_for(name or os.path.basename(src), overwrite)
        self._secure(src, key, policy)
        return ArtifactEntry(self, key, self._entries[key])

    def add_dir(
        self,
        local_path: str | os.PathLike[str],
        name: str | None = None,
        skip_cache: bool | None = False,
        policy: str = "mutable",
        merge: bool = False,
    ) -> None:
        """Add every file under ``local_path``, as ``name/relative/path`` (or at the root)."""
        root = os.path.abspath(os.fspath(local_path))
        if not os.path.isdir(root):
            raise UsageError(f"add_dir: {root!r} is not a directory")
        if policy not in ("mutable", "immutable"):
            raise UsageError("add_dir(policy=...) must be 'mutable' or 'immutable'")
        prefix = (name.strip("/") + "/") if name else ""
        found: list[tuple[str, str]] = []
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames.sort()
            rel_dir = os.path.relpath(dirpath, root)
            for fn in sorted(filenames):
                src = os.path.join(dirpath, fn)
                if not os.path.isfile(src):
                    continue
                rel = fn if rel_dir == "." else f"{rel_dir}/{fn}".replace(os.sep, "/")
                found.append((src, self._name_for(prefix + rel, merge)))
        self._stage_dir()
        parallel(lambda item: self._secure(item[0], item[1], policy), found)

    @contextlib.contextmanager
    def new_file(
        self, name: str, mode: str = "x", encoding: str | None = None
    ) -> Iterator[IO[Any]]:
        """Write a new file ``name`` into the artifact: ``with art.new_file("a.txt") as f:``."""
        if mode not in ("x", "w", "xb", "wb"):
            raise UsageError("new_file(mode=...) must be 'x', 'w', 'xb' or 'wb'")
        key = self._name_for(name, overwrite=mode.startswith("w"))
        path = os.path.join(self._stage_dir(), f"new-{next(self._counter)}")
        binary = mode.endswith("b")
        with open(path, "xb" if binary else "x", encoding=None if binary else encoding) as f:
            yield f
        st = os.stat(path)
        self._entries[key] = {
            "src": path,
            "mode": "owned",
            "stat": [st.st_size, st.st_mtime_ns, st.st_ino],
        }

    def add(self, obj: Any, name: str, overwrite: bool = False) -> ArtifactEntry:
        """Add a wisp media object (``wisp.Table``, ``wisp.Image``, ...) as ``name``
        (``.<type>.json`` is appended, wandb style; an image's pixels go next to it)."""
        from wisp._deferred import Deferred

        if not isinstance(obj, Deferred):
            raise UsageError(f"add(obj, name): expected a wisp media object, got {type(obj)!r}")
        stage = self._stage_dir()
        saved: list[tuple[str, str]] = []
        counter = self._counter

        class _Ctx:
            media_dir = stage

            def save_media(self, data: bytes, suffix: str) -> str:
                path = os.path.join(stage, f"media-{next(counter)}")
                with open(path, "xb") as f:
                    f.write(data)
                rel = f"media/{sha256_bytes(data)}{suffix}"
                saved.append((path, rel))
                return rel

        value = obj.at_log(name).resolve(_Ctx())
        kind = value.get("_type", "object") if isinstance(value, dict) else "object"
        key = self._name_for(f"{name}.{kind}.json", overwrite)
        data = json.dumps(value, allow_nan=True).encode()
        own = (
            [i for i, (_p, rel) in enumerate(saved) if value.get("path") == rel]
            if (isinstance(value, dict) and str(value.get("path", "")).endswith(f".{kind}.json"))
            else []
        )
        if own:  # the object is a JSON document (a table): it is the entry, not a copy of it
            path, _rel = saved.pop(own[0])
            with open(path, "rb") as doc:
                data = doc.read()
            os.unlink(path)
        with self.new_file(key, mode="wb" if overwrite else "xb") as f:
            f.write(data)
        for path, rel in saved:
            rel_key = f"{os.path.dirname(key) + '/' if '/' in key else ''}{rel}"
            st = os.stat(path)
            self._entries[rel_key] = {
                "src": path,
                "mode": "owned",
                "stat": [st.st_size, st.st_mtime_ns, st.st_ino],
            }
        return ArtifactEntry(self, key, self._entries[key])

    def __setitem__(self, name: str, obj: Any) -> None:
        self.add(obj, name, overwrite=True)

    def add_reference(
        self,
        uri: str,
        name: str | None = None,
        checksum: bool | str = True,
        max_objects: int | None = None,
    ) -> list[ArtifactEntry]:
        """Record ``uri`` (``file://``, ``http(s)://``, ``s3://``) without copying it.

        ``checksum``: a string is recorded as the checksum/ETag; ``True`` computes one
        where this machine can (sha256 of a ``file://`` file, the ETag from an HTTP
        ``HEAD``), in the background; ``False`` records the URI alone."""
        self._draft("add_reference")
        if not isinstance(uri, str) or not uri.startswith(REF_SCHEMES):
            raise UsageError(
                f"add_reference: expected a file://, http(s):// or s3:// URI, got {uri!r}"
            )
        parsed = urllib.parse.urlsplit(uri)
        if uri.startswith("file://"):
            path = urllib.parse.unquote(parsed.path)
            if os.path.isdir(path):
                out = []
                for dirpath, _dirs, files in os.walk(path):
                    for fn in sorted(files):
                        full = os.path.join(dirpath, fn)
                        rel = os.path.relpath(full, path).replace(os.sep, "/")
                        sub = f"{name.rstrip('/')}/{rel}" if name else rel
                        out += self.add_reference("file://" + full, sub, checksum)
                        if max_objects is not None and len(out) >= max_objects:
                            return out
                return out
        default = os.path.basename(parsed.path.rstrip("/")) or parsed.netloc
        key = self._name_for(name or default, overwrite=False)
        entry: dict[str, Any] = {
            "ref": uri,
            "digest": checksum if isinstance(checksum, str) else "",
        }
        if uri.startswith("file://"):
            try:
                entry["size"] = os.stat(urllib.parse.unquote(parsed.path)).st_size
            except OSError:
                raise UsageError(f"add_reference: {uri!r} does not exist") from None
        if checksum is True:
            entry["pending_checksum"] = True
        self._entries[key] = entry
        return [ArtifactEntry(self, key, entry)]

    # -- reading ---------------------------------------------------------------------------

    @property
    def digest(self) -> str | None:
        """The manifest digest (known once every file is hashed)."""
        return self._digest

    @property
    def manifest(self) -> dict[str, Any]:
        return make_manifest(self.type, self._clean_entries())

    def _clean_entries(self) -> dict[str, dict[str, Any]]:
        keep = ("digest", "size", "ref", "extra")
        return {p: {k: e[k] for k in keep if k in e} for p, e in self._entries.items()}

    def _set_manifest(self, manifest: dict[str, Any], digest: str | None = None) -> None:
        self._entries = {p: dict(e) for p, e in manifest["entries"].items()}
        self._digest = digest or manifest_digest(self._entries)

    def get_entry(self, name: str) -> ArtifactEntry:
        """The entry at path ``name``; KeyError if the artifact has none."""
        e = self._entries.get(name)
        if e is None:
            raise KeyError(f"artifact {self.name!r} has no entry {name!r}")
        return ArtifactEntry(self, name, e)

    get_path = get_entry

    def files(self) -> list[ArtifactEntry]:
        """Every entry, in path order."""
        return [ArtifactEntry(self, p, e) for p, e in sorted(self._entries.items())]

    @property
    def size(self) -> int:
        return sum(e.get("size") or 0 for e in self._entries.values())

    def wait(self, timeout: float | None = None) -> Artifact:
        """Block until the logged version is stored (published online, cached offline).

        Raises :class:`ArtifactError` naming the file when logging failed."""
        if self.state == "draft":
            raise ArtifactError(f"artifact {self.name!r} was not logged: log_artifact() first")
        if not self._done.wait(timeout):
            raise ArtifactError(f"artifact {self.name!r} not stored after {timeout}s")
        if self._error:
            raise ArtifactError(self._error)
        return self

    def _finish(self, state: str, error: str | None = None) -> None:
        self.state = state
        self._error = error
        self._done.set()

    def download(
        self, root: str | None = None, *, only: list[str] | None = None, skip_cache: bool = False
    ) -> str:
        """Write the version's files under ``root`` (default ``./artifacts/<name>-<version>``)
        from the cache, fetching what it lacks from the server; returns ``root``."""
        from wisp.artifacts._download import download

        if self.state in ("draft", "pending"):
            self.wait() if self.state == "pending" else None
            if self.state == "draft":
                raise ArtifactError(f"artifact {self.name!r} is a draft: log or use it first")
        if root is None:
            tag = self.version or (self._digest or "")[:12]
            root = os.path.join("artifacts", f"{self.name}-{tag}")
        return download(self, os.path.abspath(root), only)

    def verify(self, root: str | None = None) -> None:
        """Check every stored file against its sha256: in ``root`` when given (a download),
        in the cache otherwise.  Raises :class:`ArtifactError` naming each bad file."""
        from wisp.artifacts._download import verify

        verify(self, root)

    def __repr__(self) -> str:
        tag = self.version or (self._digest or "")[:12] or self.state
        return f"<wisp.Artifact {self.name}:{tag} type={self.type} files={len(self._entries)}>"


def sha256_bytes(data: bytes) -> str:
    import hashlib

    return hashlib.sha256(data).hexdigest()

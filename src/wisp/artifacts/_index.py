"""The stat index: (path, size, mtime_ns, inode) -> sha256, as git's index does, so an
unchanged directory is logged again by ``stat`` alone.

Format (version 1), one JSON file ``index.json`` in the cache: ``{"version": 1,
"files": {"/abs/path": [size, mtime_ns, inode, "sha256"]}}``.  An entry counts only when
all three stat fields match; a file whose mtime is within 2 s of when it was indexed is
not trusted (it could change again within the filesystem's timestamp granularity), as
git does for "racily clean" entries.  Writers merge into the newest file on disk and
replace it atomically, so concurrent processes lose at most each other's newest hints.
"""

from __future__ import annotations

import json
import os
import threading
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["INDEX_VERSION", "StatIndex"]

INDEX_VERSION = 1
_RACY_NS = 2_000_000_000
_MAX_ENTRIES = 1_000_000


class StatIndex:
    def __init__(self, path: str) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._files: dict[str, list[Any]] | None = None
        self._new: dict[str, list[Any]] = {}

    def _load(self) -> dict[str, list[Any]]:
        try:
            with open(self.path, encoding="utf-8") as f:
                doc = json.load(f)
        except (OSError, ValueError):
            return {}
        if not isinstance(doc, dict) or doc.get("version") != INDEX_VERSION:
            return {}
        files = doc.get("files")
        return files if isinstance(files, dict) else {}

    def lookup(self, path: str, st: os.stat_result) -> str | None:
        """The digest recorded for ``path`` if its size, mtime and inode still match."""
        with self._lock:
            if self._files is None:
                self._files = self._load()
            e = self._new.get(path) or self._files.get(path)
        if (
            isinstance(e, list)
            and len(e) == 4
            and e[0] == st.st_size
            and e[1] == st.st_mtime_ns
            and e[2] == st.st_ino
            and isinstance(e[3], str)
        ):
            return e[3]
        return None

    def put(self, path: str, stat: list[int], digest: str, now_ns: int | None = None) -> None:
        """Remember ``digest`` for ``path`` whose ``[size, mtime_ns, inode]`` were taken
        before it was hashed."""
        now = time.time_ns() if now_ns is None else now_ns
        if now - stat[1] < _RACY_NS:
            return  # racily clean: the file may change again within the mtime granularity
        with self._lock:
            self._new[path] = [stat[0], stat[1], stat[2], digest]

    def save(self) -> None:
        """Merge what this process learned into the file on disk (atomic replace)."""
        with self._lock:
            if not self._new:
                return
            new, self._new = self._new, {}
        files = self._load()
        files.update(new)
        if len(files) > _MAX_ENTRIES:
            files = dict(list(files.items())[-_MAX_ENTRIES:])
        tmp = f"{self.path}.{os.getpid()}.{threading.get_ident()}.tmp"
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump({"version": INDEX_VERSION, "files": files}, f, separators=(",", ":"))
        os.replace(tmp, self.path)
        with self._lock:
            self._files = files

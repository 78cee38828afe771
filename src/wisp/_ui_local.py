"""What lets ``wisp ui`` open 10,000 local runs quickly: a stat index and an in-process transport.

**Stat index** (``ui-index.json`` in the ui's data directory, format version 1)::

    {"version": 1, "runs": {"<run dir>": [<run.wisp size>, <run.wisp mtime_ns>], ...}}

A run directory is listed once the server holds its whole run file (the upload is
done) at that size and modification time.  On the next start a run whose ``run.wisp``
still has the same size and mtime is not opened at all; a new or grown run is
uploaded as usual (from its ``upload.json`` cursor).  The index belongs to the
database next to it: a ui started on a new database starts a new index.

**In-process transport**: the ui's uploaders talk to the server's own ASGI app in
the same process (the same routes, validation and store calls as over HTTP), without
a TCP connection, HTTP parsing or a thread hop per request.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import os
import threading
from typing import Any
from urllib.parse import urlsplit

from wisp._asgi import call_asgi
from wisp._rundir import RUN_FILE
from wisp._upload._transport import Response

__all__ = ["INDEX_FILE", "InProcessTransport", "StatIndex", "scan_runs"]

INDEX_FILE = "ui-index.json"
INDEX_VERSION = 1


def scan_runs(roots: list[str]) -> dict[str, tuple[int, int]]:
    """``{run dir: (run.wisp size, mtime_ns)}`` of the run directories in ``roots``
    (each a run directory's parent or the folder holding ``wisp/``)."""
    out: dict[str, tuple[int, int]] = {}
    for root in roots:
        for parent in (root, os.path.join(root, "wisp")):
            try:
                entries = sorted(os.scandir(parent), key=lambda e: e.name)
            except OSError:
                continue
            for e in entries:
                if not e.is_dir():
                    continue
                try:
                    st = os.stat(os.path.join(e.path, RUN_FILE))
                except OSError:
                    continue
                out.setdefault(os.path.abspath(e.path), (st.st_size, st.st_mtime_ns))
    return out


class StatIndex:
    """Run files the server holds completely, by size and mtime (see the module doc)."""

    def __init__(self, path: str, *, fresh: bool = False) -> None:
        self.path = path
        self.runs: dict[str, tuple[int, int]] = {}
        self.dirty = False
        if fresh:
            return
        try:
            with open(path, encoding="utf-8") as f:
                doc = json.load(f)
            if doc.get("version") == INDEX_VERSION:
                for d, st in doc["runs"].items():
                    self.runs[d] = (int(st[0]), int(st[1]))
        except (OSError, ValueError, KeyError, TypeError, AttributeError, IndexError):
            self.runs = {}

    def current(self, run_dir: str, stat: tuple[int, int]) -> bool:
        return self.runs.get(run_dir) == stat

    def mark(self, run_dir: str, stat: tuple[int, int]) -> None:
        self.runs[run_dir] = stat
        self.dirty = True

    def forget(self, run_dir: str) -> None:
        if self.runs.pop(run_dir, None) is not None:
            self.dirty = True

    def save(self) -> None:
        if not self.dirty:
            return
        doc = {"version": INDEX_VERSION, "runs": {d: list(st) for d, st in self.runs.items()}}
        tmp = f"{self.path}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(doc, f, separators=(",", ":"))
        os.replace(tmp, self.path)
        self.dirty = False


class InProcessTransport:
    """A :class:`~wisp._upload._transport.Transport` that calls an ASGI app directly.

    Requests run on an event loop of its own in a thread (whose long-lived main task
    keeps the app's worker threads alive between requests); any thread may call
    :meth:`request`.  ``close()`` is a no-op (it is shared by every uploader),
    :meth:`shutdown` ends it.
    """

    def __init__(self, app: Any, base_url: str) -> None:
        self.app = app
        parts = urlsplit(base_url)
        self.server = (parts.hostname or "127.0.0.1", parts.port or 80)
        self.loop = asyncio.new_event_loop()
        self._stop: asyncio.Event | None = None
        started = threading.Event()

        async def main() -> None:
            self._stop = asyncio.Event()
            started.set()
            await self._stop.wait()

        self._thread = threading.Thread(
            target=self.loop.run_until_complete, args=(main(),), name="wisp-ui-asgi", daemon=True
        )
        self._thread.start()
        started.wait()

    def request(
        self, method: str, path: str, body: bytes | None, headers: dict[str, str], timeout: float
    ) -> Response:
        coro = self._call(method, path, body or b"", headers)
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        try:
            return future.result(timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise TimeoutError(f"{method} {path}: no answer within {timeout}s") from None

    async def _call(
        self, method: str, target: str, body: bytes, headers: dict[str, str]
    ) -> Response:
        return await call_asgi(self.app, self.server, method, target, body, headers)

    def close(self) -> None:
        pass

    def shutdown(self) -> None:
        if self._stop is not None:
            self.loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)
        if not self._thread.is_alive():
            self.loop.close()

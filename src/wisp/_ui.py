"""``wisp ui``: the dashboard for one machine.

Starts the wisp server on SQLite in the user's data directory (``WISP_DATA_DIR``, else
``$XDG_DATA_HOME/wisp`` or ``~/.local/share/wisp``), bound to loopback and without
login, then imports and follows the local run directories (``./wisp`` and ``WISP_DIR``)
through the same ingestion API remote uploads use (``PUT /api/v1/runs/{id}``,
``POST /api/v1/runs/{id}/records``, ``PUT /api/v1/media/{sha256}``), and returns the URL.

Records are sent with ``seq`` = the record's ordinal in its run file, so restarting
``wisp ui`` re-sends nothing the server already acknowledged twice: the server skips
records at or below its acknowledged sequence.
"""

from __future__ import annotations

import glob
import gzip
import json
import logging
import os
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable
from typing import Any

from wisp._runfile import RecordTail, RecordType

__all__ = ["LocalImporter", "data_dir", "run_dirs", "ui"]

log = logging.getLogger("wisp")

RUN_FILE = "run.wisp"
BATCH = 2000
_RUN_FIELDS = ("project", "name", "tags", "notes", "group", "job_type", "created_at")


def data_dir() -> str:
    """Where ``wisp ui`` keeps its database and media."""
    env = os.environ.get("WISP_DATA_DIR")
    if env:
        return env
    home = os.path.expanduser("~")
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(home, ".local", "share")
    return os.path.join(base, "wisp")


def run_dirs(roots: Iterable[str]) -> list[str]:
    """Run directories (holding ``run.wisp``) directly under each root's ``wisp/`` or root."""
    found: list[str] = []
    for root in roots:
        for base in (os.path.join(root, "wisp"), root):
            for path in sorted(glob.glob(os.path.join(base, "*", RUN_FILE))):
                d = os.path.dirname(os.path.abspath(path))
                if d not in found:
                    found.append(d)
    return found


Transport = Callable[[str, str, bytes | None, dict[str, str]], tuple[int, bytes]]


def http_transport(base_url: str, api_key: str | None = None, timeout: float = 30.0) -> Transport:
    """A urllib transport: ``(method, path, body, headers) -> (status, body)``."""
    auth = {"Authorization": f"Bearer {api_key}"} if api_key else {}

    def send(
        method: str, path: str, body: bytes | None, headers: dict[str, str]
    ) -> tuple[int, bytes]:
        req = urllib.request.Request(
            base_url + path, data=body, method=method, headers={**auth, **headers}
        )
        try:
            with urllib.request.urlopen(req, timeout=timeout) as res:
                return int(res.status), bytes(res.read())
        except urllib.error.HTTPError as e:
            return int(e.code), bytes(e.read())

    return send


def _media_refs(value: Any, out: set[str]) -> None:
    """Collect ``sha256`` fields of typed values anywhere in a payload."""
    if isinstance(value, dict):
        sha = value.get("sha256")
        if isinstance(sha, str) and len(sha) == 64:
            out.add(sha)
        for v in value.values():
            _media_refs(v, out)
    elif isinstance(value, list):
        for v in value:
            _media_refs(v, out)


class _Follow:
    """One run file being followed: its tail, record ordinal and current writer segment."""

    def __init__(self, run_dir: str) -> None:
        self.dir = run_dir
        self.tail = RecordTail(os.path.join(run_dir, RUN_FILE))
        self.seq = 0  # ordinal of the next record in the file
        self.run_id: str | None = None
        self.writer_id: str | None = None
        self.acked = -1
        self.finished = False
        self.sent_media: set[str] = set()


class LocalImporter:
    """Imports local run directories into a server through its HTTP ingestion API."""

    def __init__(self, roots: list[str], send: Transport) -> None:
        self.roots = roots
        self.send = send
        self.follows: dict[str, _Follow] = {}
        self.errors = 0

    def _json(self, method: str, path: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body, allow_nan=False).encode()
        headers = {"Content-Type": "application/json"}
        if data is not None and len(data) > 64 * 1024:
            data = gzip.compress(data, 1)
            headers["Content-Encoding"] = "gzip"
        status, raw = self.send(method, path, data, headers)
        if status >= 400:
            raise RuntimeError(f"{method} {path} -> {status}: {raw[:300]!r}")
        return json.loads(raw) if raw else {}

    def poll(self) -> int:
        """Import what is new in every run directory; returns the number of records sent."""
        for d in run_dirs(self.roots):
            if d not in self.follows:
                self.follows[d] = _Follow(d)
        sent = 0
        for d, f in list(self.follows.items()):
            try:
                sent += self._poll_one(f)
            except (OSError, RuntimeError, ValueError) as e:
                # Start this file over next time: the server skips what it already acknowledged.
                self.follows[d] = _Follow(d)
                self.errors += 1
                if self.errors <= 3:
                    log.warning("wisp ui: importing %s failed (will retry): %s", f.dir, e)
        return sent

    def _poll_one(self, f: _Follow) -> int:
        recs = f.tail.read()
        batch: list[dict[str, Any]] = []
        first = f.seq
        sent = 0
        for rec in recs:
            seq = f.seq
            f.seq += 1
            data = _decode(rec.payload)
            if rec.type == RecordType.RUN:
                sent += self._flush(f, first, batch)
                batch = []
                self._start_segment(f, data)
                first = seq
            if f.run_id is None or seq <= f.acked:
                first = f.seq
                continue
            if rec.type == RecordType.FINISH:
                f.finished = True
            if not batch:
                first = seq
            self._upload_media(f, data)
            batch.append({"type": rec.type, "data": data})
            if len(batch) >= BATCH:
                sent += self._flush(f, first, batch)
                batch = []
        sent += self._flush(f, first, batch)
        if f.run_id and not f.finished and not recs:
            self.send("POST", f"/api/v1/runs/{f.run_id}/heartbeat", b"", {})
        return sent

    def _start_segment(self, f: _Follow, data: dict[str, Any]) -> None:
        f.run_id = str(data["run_id"])
        f.writer_id = str(data.get("writer_id") or "local")
        body = {k: data.get(k) for k in _RUN_FIELDS if data.get(k) is not None}
        body["metadata"] = {k: v for k, v in data.items() if k not in _RUN_FIELDS}
        self._json("PUT", f"/api/v1/runs/{f.run_id}", body)
        ack = self._json("GET", f"/api/v1/runs/{f.run_id}/writers/{f.writer_id}")
        f.acked = int(ack.get("acked_seq", -1))

    def _flush(self, f: _Follow, first: int, batch: list[dict[str, Any]]) -> int:
        if not batch or f.run_id is None:
            return 0
        body = {"writer_id": f.writer_id, "first_seq": first, "records": batch}
        res = self._json("POST", f"/api/v1/runs/{f.run_id}/records", body)
        f.acked = int(res.get("acked_seq", f.acked))
        return len(batch)

    def _upload_media(self, f: _Follow, data: Any) -> None:
        shas: set[str] = set()
        _media_refs(data, shas)
        for sha in shas - f.sent_media:
            files = glob.glob(os.path.join(f.dir, "media", f"{sha}*"))
            if not files:
                continue
            status, _ = self.send("HEAD", f"/api/v1/media/{sha}", None, {})
            if status == 404:
                with open(files[0], "rb") as fh:
                    blob = fh.read()
                suffix = os.path.splitext(files[0])[1]
                headers = {"Content-Type": "application/octet-stream", "X-Wisp-Suffix": suffix}
                self.send("PUT", f"/api/v1/media/{sha}", blob, headers)
            f.sent_media.add(sha)


def _decode(payload: bytes) -> Any:
    """Run-file payloads allow NaN/Infinity tokens; the wire uses null for them."""
    return _finite(json.loads(payload))


def _finite(v: Any) -> Any:
    if isinstance(v, float) and v - v != 0.0:
        return None
    if isinstance(v, dict):
        return {k: _finite(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_finite(x) for x in v]
    return v


def _free_port(host: str) -> int:
    import socket

    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


class _LocalServer:
    """The real wisp server (``wisp.server.create_app``) under uvicorn in a thread."""

    def __init__(self, db: str, media_dir: str, host: str, port: int) -> None:
        try:
            import uvicorn

            from wisp.server._app import create_app
            from wisp.server._settings import ServerSettings
            from wisp.server._store import open_store
        except ImportError as e:
            raise ImportError(
                f"wisp ui needs the server extra: pip install 'wisp[server]' ({e})"
            ) from e
        if host not in ("127.0.0.1", "localhost", "::1"):
            raise ValueError(f"wisp ui binds to loopback only, got host={host!r}")
        settings = ServerSettings(db=db, media_dir=media_dir, host=host, port=port, no_auth=True)
        # Reads are open on loopback; the importer writes with a key that lives as long as we do.
        self._store = open_store(db)
        self._key_id, self.write_key = self._store.create_key("write", "wisp ui importer")
        app = create_app(settings, store=self._store)
        config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="off")
        self._server = uvicorn.Server(config)
        self.url = f"http://{host}:{port}"
        self._thread = threading.Thread(target=self._server.run, name="wisp-ui-server", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 30
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"the wisp server did not start on {self.url}")
            time.sleep(0.02)

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(10)
        self._store.revoke_key(self._key_id)
        self._store.close()


def ui(
    host: str = "127.0.0.1",
    port: int = 8642,
    dir: str | None = None,  # noqa: A002 - same name as wisp.init(dir=)
    open_browser: bool = False,
    *,
    data: str | None = None,
    poll_interval: float = 1.0,
    stop: threading.Event | None = None,
    ready: Callable[[str], None] | None = None,
) -> None:
    """Serve the dashboard on this machine until ``stop`` is set (or Ctrl-C)."""
    store_dir = data or data_dir()
    os.makedirs(store_dir, exist_ok=True)
    server = _LocalServer(
        f"sqlite:///{os.path.join(store_dir, 'wisp.db')}",
        os.path.join(store_dir, "media"),
        host,
        port or _free_port(host),
    )
    url = server.url
    roots = [dir or os.getcwd()]
    env_dir = os.environ.get("WISP_DIR")
    if env_dir and env_dir not in roots:
        roots.append(env_dir)
    importer = LocalImporter(roots, http_transport(url, server.write_key))
    stop = stop or threading.Event()
    try:
        importer.poll()
        if ready is not None:
            ready(url)
        else:
            print(f"wisp dashboard: {url}", flush=True)
        if open_browser:
            import webbrowser

            webbrowser.open(url)
        while not stop.wait(poll_interval):
            importer.poll()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()


def main() -> None:  # pragma: no cover - thin CLI for `make demo`
    import argparse

    ap = argparse.ArgumentParser(description="Serve the wisp dashboard on local runs.")
    ap.add_argument("--port", type=int, default=int(os.environ.get("WISP_UI_PORT", "8642")))
    ap.add_argument("--dir", default=None)
    ns = ap.parse_args()
    ui(port=ns.port, dir=ns.dir)


if __name__ == "__main__":  # pragma: no cover
    main()

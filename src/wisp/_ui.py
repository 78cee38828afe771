"""``wisp ui``: the dashboard for one machine.

Starts the wisp server on SQLite in the user's data directory (``WISP_DATA_DIR``, else
``$XDG_DATA_HOME/wisp`` or ``~/.local/share/wisp``), bound to loopback and without
login, then imports and follows the local run directories (``./wisp`` and ``WISP_DIR``)
through the same ingestion API remote uploads use (``PUT /api/v1/runs/{id}``,
``POST /api/v1/runs/{id}/records``, ``PUT /api/v1/media/{sha256}``), and returns the URL.

Each run directory is uploaded exactly as ``wisp sync`` would (the same uploader and
cursor), so restarting ``wisp ui`` re-sends nothing the server already acknowledged.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable

from wisp._upload._sync import find_run_dirs, writer_gone
from wisp._upload._transport import ApiClient
from wisp._upload._uploader import Uploader
from wisp.errors import ApiError, FatalApiError

__all__ = ["LocalImporter", "data_dir", "ui"]

log = logging.getLogger("wisp")

HEARTBEAT = 15.0  # seconds: a live run stays "running" on the server while it is quiet


def data_dir() -> str:
    """Where ``wisp ui`` keeps its database and media."""
    env = os.environ.get("WISP_DATA_DIR")
    if env:
        return env
    home = os.path.expanduser("~")
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(home, ".local", "share")
    return os.path.join(base, "wisp")


def _finished(up: Uploader, run_dir: str) -> Callable[[], bool]:
    return lambda: up.finish_seen or writer_gone(run_dir)


class LocalImporter:
    """Imports and follows local run directories through the upload path remote runs use.

    One :class:`~wisp._upload._uploader.Uploader` per run directory (cursor in its
    ``upload.json``), all driven from the ui's loop, a bounded amount of work each.
    """

    def __init__(self, roots: list[str], client_factory: Callable[[], ApiClient]) -> None:
        self.roots = roots
        self.client_factory = client_factory
        self.uploaders: dict[str, Uploader] = {}
        self.errors = 0

    def poll(self) -> int:
        """Send what is new in every run directory; returns the number of batches sent."""
        for d in find_run_dirs(r for r in self.roots if os.path.isdir(r)):
            if d not in self.uploaders:
                up = Uploader(d, self.client_factory(), heartbeat_interval=HEARTBEAT)
                up.crashed = writer_gone(d)
                self.uploaders[d] = up
        sent = 0
        for d, up in self.uploaders.items():
            if up.done.is_set() or up.error is not None:
                continue
            try:
                sent += up.pump(_finished(up, d))
            except (ApiError, OSError) as exc:
                if isinstance(exc, FatalApiError):
                    up.error = exc
                self.errors += 1
                if self.errors <= 3:
                    log.warning("wisp ui: importing %s failed (will retry): %s", d, exc)
            if up.done.is_set() or up.error is not None:
                up.client.close()
        return sent

    def close(self) -> None:
        for up in self.uploaders.values():
            up.client.close()


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
            from wisp.server._conn import uvicorn_options
            from wisp.server._settings import LOOPBACK_NAMES, ServerSettings
            from wisp.server._store import open_store
        except ImportError as e:
            raise ImportError(
                f"wisp ui needs the server extra: pip install 'wisp[server]' ({e})"
            ) from e
        if host not in ("127.0.0.1", "localhost", "::1"):
            raise ValueError(f"wisp ui binds to loopback only, got host={host!r}")
        settings = ServerSettings(
            db=db,
            media_dir=media_dir,
            host=host,
            port=port,
            no_auth=True,
            allowed_hosts=list(LOOPBACK_NAMES),  # no DNS rebinding onto the open local server
        )
        # Reads are open on loopback; the importer writes with a key that lives as long as we do.
        self._store = open_store(db)
        self._key_id, self.write_key = self._store.create_key("write", "wisp ui importer")
        app = create_app(settings, store=self._store)
        config = uvicorn.Config(
            app,
            host=host,
            port=port,
            log_level="warning",
            lifespan="off",
            **uvicorn_options(settings),
        )
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
    importer = LocalImporter(roots, lambda: ApiClient(url, server.write_key))
    stop = stop or threading.Event()
    try:
        importer.poll()
        if ready is not None:
            ready(url)
        if open_browser:
            import webbrowser

            webbrowser.open(url)
        while not stop.wait(poll_interval):
            importer.poll()
    except KeyboardInterrupt:
        pass
    finally:
        importer.close()
        server.stop()


def main() -> None:  # pragma: no cover - thin CLI for `make demo`
    import argparse

    ap = argparse.ArgumentParser(description="Serve the wisp dashboard on local runs.")
    ap.add_argument("--port", type=int, default=int(os.environ.get("WISP_UI_PORT", "8642")))
    ap.add_argument("--dir", default=None)
    ns = ap.parse_args()
    ui(port=ns.port, dir=ns.dir, ready=lambda url: print(f"wisp dashboard: {url}", flush=True))


if __name__ == "__main__":  # pragma: no cover
    main()

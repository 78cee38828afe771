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

import itertools
import logging
import os
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, TextIO

from wisp._rundir import RUN_FILE, read_meta
from wisp._ui_local import INDEX_FILE, InProcessTransport, StatIndex, scan_runs
from wisp._upload._sync import writer_gone
from wisp._upload._transport import ApiClient
from wisp._upload._uploader import Uploader
from wisp.errors import ApiError, FatalApiError, UsageError, install_hint

if TYPE_CHECKING:
    from wisp._ui_batch import BatchImporter, SmallRun

__all__ = ["LocalImporter", "data_dir", "ui"]

log = logging.getLogger("wisp")

HEARTBEAT = 15.0  # seconds: a live run stays "running" on the server while it is quiet
BATCH_RUNS = 200  # small runs to a write transaction (a fraction of a second of work)


def data_dir() -> str:
    """Where ``wisp ui`` keeps its database and media."""
    env = os.environ.get("WISP_DATA_DIR")
    if env:
        return env
    home = os.path.expanduser("~")
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(home, ".local", "share")
    return os.path.join(base, "wisp")


def folder_data_dir(folder: str) -> str:
    """Where ``wisp ui DIR`` keeps the database of one folder: only that folder's runs."""
    import hashlib

    path = os.path.realpath(folder)
    return os.path.join(data_dir(), "folders", hashlib.sha256(path.encode()).hexdigest()[:16])


def ui_roots(dir: str | None, only: bool = False) -> list[str]:  # noqa: A002
    """The folders ``wisp ui`` follows: ``dir`` (default: here), and ``$WISP_DIR`` unless
    ``only`` (``wisp ui DIR``: that folder alone)."""
    roots = [os.path.abspath(dir or os.getcwd())]
    env_dir = os.environ.get("WISP_DIR")
    if env_dir and not only and os.path.abspath(env_dir) not in roots:
        roots.append(os.path.abspath(env_dir))
    return roots


def _finished(up: Uploader, run_dir: str) -> Callable[[], bool]:
    return lambda: up.finish_seen or writer_gone(run_dir)


def _crashed(run_dir: str) -> bool:
    """A run that ended without a finish record: its process is gone and its run.json does
    not say it finished (a finished, failed or killed run wrote a finish record, so telling
    the server again that it is over would only cost a request)."""
    state = read_meta(run_dir).get("state")
    return state not in ("finished", "failed", "killed") and writer_gone(run_dir)


class LocalImporter:
    """Imports and follows local run directories through the upload path remote runs use.

    One :class:`~wisp._upload._uploader.Uploader` per run directory (cursor in its
    ``upload.json``), all driven from the ui's loop, a bounded amount of work each.
    With a :class:`~wisp._ui_local.StatIndex`, a run whose file the server already
    holds whole (same size and mtime) is not opened, and finished uploads are dropped.
    With a :class:`~wisp._ui_batch.BatchImporter`, new runs are first offered to it,
    :data:`BATCH_RUNS` to a transaction; those it does not take (or the store refuses)
    get an uploader.
    """

    def __init__(
        self,
        roots: list[str],
        client_factory: Callable[[], ApiClient],
        *,
        index: StatIndex | None = None,
        clock: Callable[[], float] = time.monotonic,
        scan_interval: float = 1.0,
        batch: BatchImporter | None = None,
    ) -> None:
        self.roots = roots
        self.batch = batch
        self._queue: dict[str, None] = {}  # new run directories for the batch importer
        self.client_factory = client_factory
        self.index = index
        self.clock = clock
        self.scan_interval = scan_interval
        self.uploaders: dict[str, Uploader] = {}
        self.errors = 0
        self.opened = 0  # run directories read since start (new or grown)
        self.imported = 0  # of those, complete on the server
        self.batched = 0  # of those, imported by the batch importer
        self.busy = False  # the last poll stopped at its time budget
        self._last_scan: float | None = None
        self.artifacts: tuple[str, str | None] | None = None  # (server, key): sync artifacts
        self._artifacts_seen: dict[str, int] = {}

    def _scan(self) -> None:
        if self._queue:
            return  # runs found earlier are still being imported: look for more after
        now = self.clock()
        if self._last_scan is not None and now - self._last_scan < self.scan_interval:
            return
        self._last_scan = now
        index = self.index
        found = scan_runs([r for r in self.roots if os.path.isdir(r)])
        if index is not None:  # run directories deleted since: forget them
            parents = {os.path.dirname(d) for d in found}
            for gone in [d for d in index.runs if os.path.dirname(d) in parents]:
                if gone not in found:
                    index.forget(gone)
        for d, st in found.items():
            if d in self.uploaders or d in self._queue:
                continue
            if index is not None and index.current(d, st):
                continue
            self.opened += 1
            if self.batch is not None:
                self._queue[d] = None
            else:
                self._upload(d)

    def _upload(self, run_dir: str) -> None:
        if self.batch is not None:
            self.batch.wait()  # a cursor saved late must not overwrite the uploader's
        up = Uploader(run_dir, self.client_factory(), heartbeat_interval=HEARTBEAT)
        up.crashed = _crashed(run_dir)
        self.uploaders[run_dir] = up

    def _drain(self, start: float, budget: float | None) -> int:
        """Offer queued run directories to the batch importer, a transaction at a time,
        until the queue is empty or the budget spent (sets :attr:`busy`)."""
        assert self.batch is not None
        sent = 0
        while self._queue:
            chunk = list(itertools.islice(self._queue, BATCH_RUNS))
            for d in chunk:
                del self._queue[d]
            small = []
            for d in chunk:
                run = self.batch.read(d)
                if run is None:
                    self._upload(d)
                else:
                    small.append(run)
            if small:
                sent += self._import_batch(small)
            if budget is not None and self.clock() - start > budget:
                self.busy = True
                break
        return sent

    def _import_batch(self, small: list[SmallRun]) -> int:
        from sqlalchemy.exc import SQLAlchemyError

        assert self.batch is not None
        try:
            done, refused = self.batch.import_runs(small)
        except (SQLAlchemyError, OSError) as exc:
            n = len(small)
            log.warning("wisp ui: importing %d runs at once failed (%s); one by one now", n, exc)
            for r in small:
                self._upload(r.run_dir)
            return 0
        for r, why in refused:
            log.warning("wisp ui: the server refused %s (%s); uploading it alone", r.run_dir, why)
            self._upload(r.run_dir)  # the uploader sets refused records aside, or says why not
        self.imported += len(done)
        self.batched += len(done)
        if self.index is not None:
            for r in done:
                self.index.mark(r.run_dir, r.stat)
        return 1 if done else 0

    def poll(self, budget: float | None = None) -> int:
        """Send what is new in every run directory; returns the number of batches sent.

        With a ``budget`` (seconds) it returns once that much time is spent and sets
        :attr:`busy`; the next poll goes on where it stopped.
        """
        start = self.clock()
        self._scan()
        self.busy = False
        sent = self._drain(start, budget) if self._queue else 0
        for d, up in list(self.uploaders.items()):
            self._sync_artifacts(d)
            if up.done.is_set() and self.index is not None and self._artifacts_settled(d):
                self._remember(d, up)  # kept while its artifacts were still to publish
            if up.done.is_set() or up.error is not None:
                continue
            if budget is not None and self.busy:
                break  # out of time: after at least one run, so every poll makes progress
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
            if up.done.is_set():
                self.imported += 1
                if self.index is not None:
                    self._remember(d, up)
            if budget is not None and self.clock() - start > budget:
                self.busy = True
        if self.index is not None:
            self.index.save()
        return sent

    def _remember(self, run_dir: str, up: Uploader) -> None:
        """A finished upload: index the run file (if it did not grow since) and drop it."""
        assert self.index is not None
        if not self._artifacts_settled(run_dir):
            return  # indexed only once its artifacts are published too
        del self.uploaders[run_dir]
        try:
            st = os.stat(os.path.join(run_dir, RUN_FILE))
        except OSError:
            return
        if st.st_size == up.cursor.offset:
            self.index.mark(run_dir, (st.st_size, st.st_mtime_ns))

    @property
    def pending(self) -> int:
        """Run directories found and not complete on the server yet."""
        busy = sum(1 for u in self.uploaders.values() if not u.done.is_set() and u.error is None)
        return busy + len(self._queue)

    def _artifacts_mark(self, run_dir: str) -> int | None:
        """The mtime of the run's artifact job folder; None when there is nothing to sync."""
        from wisp._rundir import ARTIFACTS_DIR

        if self.artifacts is None:
            return None
        try:
            return os.stat(os.path.join(run_dir, ARTIFACTS_DIR)).st_mtime_ns
        except OSError:
            return None

    def _artifacts_settled(self, run_dir: str) -> bool:
        """Whether every artifact job of the run seen so far is published."""
        mark = self._artifacts_mark(run_dir)
        return mark is None or self._artifacts_seen.get(run_dir) == mark

    def _sync_artifacts(self, run_dir: str) -> None:
        """Publish the run's pending artifacts (wisp.artifacts) when its job folder changed."""
        mark = self._artifacts_mark(run_dir)
        if mark is None or self.artifacts is None or self._artifacts_seen.get(run_dir) == mark:
            return
        from wisp.artifacts._client import ArtifactClient
        from wisp.artifacts._upload import sync_run_dir

        client = ArtifactClient(*self.artifacts)
        try:
            for _ in range(3):  # publishing rewrites the job files: one more pass, which
                got = sync_run_dir(run_dir, client)  # changes nothing, settles the mark
                for e in got["errors"][:3]:
                    log.warning("wisp ui: artifact of %s not imported: %s", run_dir, e)
                if got["pending"]:  # a job still being worked on, or waiting: look again later
                    break
                after = self._artifacts_mark(run_dir)
                if after is None:
                    break
                if after == mark:
                    self._artifacts_seen[run_dir] = mark
                    break
                mark = after
        except (ApiError, OSError) as exc:
            log.warning("wisp ui: artifacts of %s not imported (will retry): %s", run_dir, exc)
        finally:
            client.close()

    def close(self) -> None:
        if self.batch is not None:
            self.batch.close()
        for up in self.uploaders.values():
            up.client.close()
        if self.index is not None:
            self.index.save()


def _show_progress(importer: LocalImporter, stream: TextIO, began: float, shown: bool) -> bool:
    """One progress line while a batch of runs imports; returns whether one is on screen."""
    if not importer.busy and not shown:
        return False
    rate = importer.imported / max(time.monotonic() - began, 1e-9)
    line = (
        f"wisp ui: imported {importer.imported} of {importer.opened} new or grown runs "
        f"({rate:.0f}/s)"
    )
    tty = bool(getattr(stream, "isatty", lambda: False)())
    if importer.busy:
        if tty:
            stream.write("\r" + line)
        elif not shown or importer.imported % 1000 < 50:
            stream.write(line + "\n")
    else:
        stream.write(("\r" if tty else "") + line + ", done\n")
    stream.flush()
    return importer.busy


def _free_port(host: str) -> int:
    import socket

    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


class _LocalServer:
    """The real wisp server (``wisp.server.create_app``) under uvicorn in a thread."""

    def __init__(
        self, db: str, media_dir: str, host: str, port: int, folders: list[str] | None = None
    ) -> None:
        try:
            import uvicorn

            from wisp.server.app import create_app
            from wisp.server.conn import uvicorn_options
            from wisp.server.settings import LOOPBACK_NAMES, ServerSettings, port_problem
            from wisp.server.store.facade import open_store
        except ImportError as e:
            raise ImportError(
                f"wisp ui needs the server extra: {install_hint('server')} ({e})"
            ) from e
        if host not in ("127.0.0.1", "localhost", "::1"):
            raise UsageError(
                f"wisp ui binds to loopback only (127.0.0.1, localhost, ::1), got host={host!r}; "
                "`wisp server` serves other hosts"
            )
        problem = port_problem(host, port)
        if problem is not None:
            raise UsageError(
                f"cannot start the dashboard: {problem}; pick another with --port (0: any free)"
            )
        settings = ServerSettings(
            db=db,
            media_dir=media_dir,
            host=host,
            port=port,
            no_auth=True,
            allowed_hosts=list(LOOPBACK_NAMES),  # no DNS rebinding onto the open local server
            ui_folders=list(folders or []),  # named on the dashboard's landing page
        )
        # Reads are open on loopback; the importer writes with a key that lives as long as we do.
        self._store = open_store(db)
        self._key_id, self.write_key = self._store.create_key("write", "wisp ui importer")
        self.app = app = create_app(settings, store=self._store)
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
                raise OSError(f"the wisp server did not start on {self.url}")
            time.sleep(0.02)

    def batch_importer(self) -> BatchImporter:
        """Imports small local runs straight into this server's store (``wisp._ui_batch``)."""
        from wisp._ui_batch import BatchImporter

        return BatchImporter(self._store, self.write_key, self.url)

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
    progress: TextIO | None = None,
    first_budget: float | None = None,
    only: bool = False,
) -> None:
    """Serve the dashboard on this machine until ``stop`` is set (or Ctrl-C).

    Local runs are imported in slices of at most a second, so the dashboard answers (and
    shows runs as they arrive) while a large import goes on; ``progress`` gets a line
    about it.  ``ready(url)`` is called once the server is up and every local run is
    imported, or after ``first_budget`` seconds of importing (``wisp ui`` passes 2 s).
    ``only``: follow ``dir`` alone, not ``$WISP_DIR`` too (:func:`ui_roots`).
    """
    store_dir = data or data_dir()
    os.makedirs(store_dir, exist_ok=True)
    db_path = os.path.join(store_dir, "wisp.db")
    fresh = not os.path.exists(db_path)
    roots = ui_roots(dir, only)
    server = _LocalServer(
        f"sqlite:///{db_path}",
        os.path.join(store_dir, "media"),
        host,
        port or _free_port(host),
        folders=roots,
    )
    url = server.url
    transport = InProcessTransport(server.app, url)
    index = StatIndex(os.path.join(store_dir, INDEX_FILE), fresh=fresh)
    importer = LocalImporter(
        roots,
        lambda: ApiClient(url, server.write_key, transport=transport),
        index=index,
        batch=server.batch_importer(),
    )
    from wisp.sweeps._sync import SweepPusher  # offline sweeps under the roots (docs/sweeps.md)

    sweeps = SweepPusher(roots, url, server.write_key)
    importer.artifacts = (url, server.write_key)
    stop = stop or threading.Event()
    began = time.monotonic()
    shown = False
    try:
        importer.poll(budget=first_budget if first_budget is not None else 1.0)
        sweeps.poll()
        while first_budget is None and importer.busy and not stop.is_set():
            if progress is not None:
                shown = _show_progress(importer, progress, began, shown)
            importer.poll(budget=1.0)
        if ready is not None:
            ready(url)
        if open_browser:
            import webbrowser

            webbrowser.open(url)
        while True:
            if progress is not None:
                shown = _show_progress(importer, progress, began, shown)
            if stop.wait(0 if importer.busy else poll_interval):
                break
            importer.poll(budget=1.0)
            sweeps.poll()
    except KeyboardInterrupt:
        pass
    finally:
        importer.close()
        server.stop()
        transport.shutdown()

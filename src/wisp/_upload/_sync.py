"""``wisp.sync()``: upload run directories written offline (or left behind) to a server.

Each run is uploaded by an :class:`~wisp._upload._uploader.Uploader` on the calling
thread, from its saved cursor (``upload.json``), so a second sync sends nothing
that the server already acknowledged.  A run still being written is followed
until its finish record appears or its process is gone.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterable
from typing import Any, NamedTuple

from wisp._meta import process_alive
from wisp._rundir import (
    META_FILE,
    RUN_FILE,
    read_meta,
    read_rejected,
    run_dirs_under,
    sync_status,
    with_parents,
)
from wisp._upload._live import human_size, unreachable
from wisp._upload._uploader import Uploader
from wisp.errors import ApiError, UsageError

__all__ = ["SyncResult", "find_run_dirs", "sync", "writer_gone"]


class SyncResult(NamedTuple):
    """What ``sync()`` did for one run directory."""

    run_dir: str
    run_id: str | None
    records: int  # records sent by this sync
    bytes: int  # run-file bytes sent by this sync
    media: int  # media files uploaded by this sync
    done: bool  # the whole run is on the server
    skipped: str | None  # why nothing was tried (e.g. "up to date")
    error: str | None
    rejected: int = 0  # records the server refused, set aside in rejected.jsonl (all so far)


def find_run_dirs(paths: Iterable[str | os.PathLike[str]]) -> list[str]:
    """Run directories in ``paths``: each a run dir, a ``run.wisp``, or a folder holding them;
    a fork's parents come before it (added when not named: ``_rundir.with_parents``)."""
    try:
        return with_parents(run_dirs_under(paths))
    except ValueError as exc:
        raise UsageError(f"sync(): {exc}") from None


#: seconds a run file without run.json is taken for one whose process is starting: its
#: writer thread writes run.json and the RUN record first, moments after creating the file
STARTING_GRACE = 10.0

#: SyncResult.skipped of a run file that holds no RUN record yet
NOT_STARTED = "no run record yet (its process has only just started it?): sync it again later"


def writer_gone(run_dir: str) -> bool:
    """True when no process will append to this run file any more."""
    meta = read_meta(run_dir, META_FILE)
    if not meta:
        try:  # no run.json: a run being created now, or one its process left long ago
            age = time.time() - os.path.getmtime(os.path.join(run_dir, RUN_FILE))
        except OSError:
            return True
        return not 0 <= age < STARTING_GRACE
    if meta.get("state") != "running":
        return True
    pid, host = meta.get("pid"), meta.get("host")
    if type(pid) is not int or host != os.uname().nodename:
        return True  # another machine's run: upload what is there, don't wait for it
    return pid != os.getpid() and not process_alive(pid, host)


class _Progress:
    def __init__(self, stream: Any, enabled: bool) -> None:
        self.stream = stream
        self.enabled = enabled
        self.last = 0.0

    def __call__(self, up: Uploader) -> None:
        now = time.monotonic()
        if not self.enabled or now - self.last < 0.2:
            return
        self.last = now
        try:
            total = os.path.getsize(up.path)
        except OSError:
            return
        done = up.cursor.offset
        pct = 100.0 * done / total if total else 100.0
        width = 30
        fill = int(width * pct / 100)
        name = os.path.basename(up.run_dir)
        self.stream.write(
            f"\r{name[-40:]:40} [{'#' * fill}{'.' * (width - fill)}] {pct:5.1f}% "
            f"{human_size(done)}/{human_size(total)}"
        )
        self.stream.flush()

    def end(self, line: str) -> None:
        if self.enabled:
            self.stream.write("\r" + line.ljust(100)[:100].rstrip() + "\n")
            self.stream.flush()


def _sync_artifacts(
    run_dir: str,
    server: str,
    key: str | None,
    transport: Any,
    bar: _Progress,
    kinds: tuple[str, ...],
) -> list[str]:
    """Finish the run's pending artifacts (wisp.artifacts); the errors, one line each."""
    from wisp._rundir import ARTIFACTS_DIR

    if not os.path.isdir(os.path.join(run_dir, ARTIFACTS_DIR)):
        return []
    from wisp.artifacts._client import ArtifactClient
    from wisp.artifacts._upload import sync_run_dir

    client = ArtifactClient(server, key, transport=transport)
    try:
        got = sync_run_dir(run_dir, client, kinds=kinds)
    except ApiError as exc:
        return [f"{run_dir}: {exc}"]
    finally:
        client.close()
    if got["pending"] and "use" in kinds:
        return [f"{run_dir}: {got['pending']} artifact job(s) could not be finished yet"]
    if got["jobs"] and "log" in kinds:
        bar.end(
            f"{os.path.basename(run_dir)}: {got['jobs']} artifact job(s), "
            f"{got['files_uploaded']} files sent ({human_size(got['bytes_uploaded'])}), "
            f"{got['files_skipped']} already on the server"
        )
    return [f"{run_dir}: {e}" for e in got["errors"]]


def sync(
    paths: Iterable[str | os.PathLike[str]] | str | os.PathLike[str] | None = None,
    all: bool = True,  # noqa: A002 - the public name: every run found
    follow: bool = True,
    server_url: str | None = None,
    api_key: str | None = None,
    *,
    give_up_after: float = 60.0,
    progress: bool | None = None,
    transport: Any = None,
    retry_rejected: bool = False,
    recheck: bool = False,
) -> list[SyncResult]:
    """Upload run directories to a server; resumes each from its cursor.

    ``paths``: run directories, run files, or folders holding them.  Without
    ``paths`` and with ``all=True``, every run under ``./wisp`` and ``$WISP_DIR/wisp``.
    ``follow``: keep uploading a run still being written until it finishes or its
    process dies.  ``give_up_after``: seconds without progress (server unreachable)
    before a run is given up; once the server has not answered a run at all (nothing
    listening), the runs after it get one attempt each instead of that wait.  Raises
    :class:`~wisp.errors.ApiError` naming every run that could not be uploaded, after
    trying them all; returns one
    :class:`SyncResult` per run otherwise.  A record the server refuses (422) is set
    aside in the run's ``rejected.jsonl`` and the rest uploaded, as a live run does;
    ``retry_rejected`` sends the set-aside records again (after a server upgrade) and
    keeps only those still refused.  A run whose cursor says the server holds all of it is
    skipped without asking; ``recheck`` asks the server (one request a run) and sends again
    what it lacks — after its database was restored from a backup or started anew.  (Any
    run that is uploaded at all is checked so: its cursor is compared with what the server
    holds when it registers.)
    """
    from wisp._settings import Settings
    from wisp._upload._transport import ApiClient

    settings = Settings.resolve()
    server = server_url or settings.server_url
    key = api_key if api_key is not None else settings.api_key
    if not server:
        raise UsageError("sync() needs a server: pass server_url= or set WISP_SERVER_URL")
    if paths is None:
        if not all:
            raise UsageError("sync() needs paths=[run directories] or all=True")
        roots = [os.getcwd()]
        if settings.dir:
            roots.append(settings.dir)
        paths = [r for r in dict.fromkeys(os.path.abspath(r) for r in roots)]
        run_dirs = find_run_dirs(p for p in paths if os.path.isdir(p))
    else:
        if isinstance(paths, (str, os.PathLike)):
            paths = [paths]
        run_dirs = find_run_dirs(paths)
    stream = sys.stderr
    show = progress if progress is not None else bool(getattr(stream, "isatty", bool)())
    bar = _Progress(stream, show)
    results: list[SyncResult] = []
    server = server.rstrip("/")
    artifact_errors: list[str] = []
    for kinds in (("log",), ("use",)):  # versions first, then the runs that used them
        for run_dir in run_dirs:
            artifact_errors += _sync_artifacts(run_dir, server, key, transport, bar, kinds)
    silent = False  # the server never answered a run of this sync: the next ones fail fast
    for run_dir in run_dirs:
        up_to_date = sync_status(run_dir, server)[0] and not recheck
        if up_to_date and not (retry_rejected and read_rejected(run_dir)):
            results.append(SyncResult(run_dir, None, 0, 0, 0, True, "up to date", None))
            continue
        client = ApiClient(server, key, transport=transport)
        up = Uploader(run_dir, client)
        up.retry_rejected = retry_rejected
        up.crashed = writer_gone(run_dir)  # a run file without finish record: crashed

        def final(up: Uploader = up, run_dir: str = run_dir) -> bool:
            return not follow or up.finish_seen or writer_gone(run_dir)

        error: str | None = None
        done = False
        try:
            done = up.run(final, give_up_after=0.0 if silent else give_up_after, on_progress=bar)
        except BlockingIOError:
            error = "its own process is uploading it (try again after it finishes)"
        except ApiError as exc:
            error = f"{type(exc).__name__}: {exc}"
        silent = unreachable(up)
        if error is None and not done and not up.registered.is_set():
            bar.end(f"{os.path.basename(run_dir)}: skipped, {NOT_STARTED}")
            results.append(SyncResult(run_dir, None, 0, 0, 0, False, NOT_STARTED, None))
            continue
        rejected = len(read_rejected(run_dir))
        status = "uploaded" if done else f"failed: {error}"
        if rejected:
            status += f", {rejected} record(s) refused by the server set aside in rejected.jsonl"
        bar.end(
            f"{os.path.basename(run_dir)}: {status} ({up.records_sent} records, "
            f"{human_size(up.bytes_sent)})"
        )
        results.append(
            SyncResult(
                run_dir,
                up.run_id,
                up.records_sent,
                up.bytes_sent,
                up.media_sent,
                done,
                None,
                error,
                rejected,
            )
        )
    failed = [r for r in results if r.error]
    if artifact_errors:
        raise ApiError("sync: artifacts not uploaded: " + "; ".join(artifact_errors))
    if failed:
        raise ApiError(
            f"sync: {len(failed)} of {len(results)} runs not uploaded: "
            + "; ".join(f"{r.run_dir}: {r.error}" for r in failed)
        )
    return results

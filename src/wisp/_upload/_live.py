"""Online runs: the hooks ``init()`` and ``Run.finish()`` call around an :class:`Uploader`.

``check_settings`` refuses ``mode="online"`` without a server; ``attach`` starts a run's
uploader and waits for it to register (at most ``init_timeout``, and not at all once the
server has refused the run); ``finish_upload`` waits for it at ``finish()``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import time
from typing import TYPE_CHECKING, Any

from wisp._upload._transport import ApiClient
from wisp._upload._uploader import Uploader
from wisp.errors import FatalApiError, RetryableApiError, UsageError

if TYPE_CHECKING:
    from wisp._run import Run

__all__ = [
    "attach",
    "check_settings",
    "finish_upload",
    "human_size",
    "refusal",
    "run_page_url",
    "unreachable",
]

log = logging.getLogger("wisp")

#: Seconds ``finish()`` (and the exit hook) wait for uploads while the server has never
#: answered: nothing could be uploaded, the run is on disk and ``wisp sync`` sends it later.
UNREACHABLE_WAIT = 2.0
#: at finish(), a server that answered before and has refused every attempt for this long
#: (nothing listening: it died or was stopped) is not waited for any longer
GONE_WAIT = 5.0


# -- online runs: the hooks called by init() and Run.finish() --------------------------------


def check_settings(settings: Any) -> None:
    """Refuse ``mode="online"`` without a server before any run directory exists."""
    if not settings.server_url:
        raise UsageError(
            "mode 'online' needs a server: set WISP_SERVER_URL (and WISP_API_KEY) or pass "
            "settings={'server_url': ..., 'api_key': ...}"
        )
    from wisp._upload._transport import HttpTransport

    HttpTransport(settings.server_url)  # checks the URL


def run_page_url(server_url: str, project: str, run_id: str) -> str:
    """The dashboard's page of a run (the hash route ``#/p/<project>/r/<run>`` of
    web/src/router.ts)."""
    from urllib.parse import quote

    return f"{server_url.rstrip('/')}/#/p/{quote(project, safe='')}/r/{quote(run_id, safe='')}"


def unreachable(up: Uploader) -> bool:
    """True while the server has never answered this uploader: no registration, and the
    last attempt found nothing listening (a connection error or timeout, not an HTTP status:
    a 503 from a server that is starting up is an answer)."""
    err = up.last_error
    return not up.registered.is_set() and isinstance(err, RetryableApiError) and err.status is None


def never_answered(up: Uploader) -> bool:
    """:func:`unreachable`, or still silent after ``init()`` waited ``init_timeout`` for it
    (a host that drops packets, a server that accepts and hangs): ``finish()`` then waits
    the short bound, as for nothing listening, not the request's whole timeout."""
    return unreachable(up) or (up.silent_at_init and not up.registered.is_set())


def gone(up: Uploader) -> bool:
    """True when a server that answered before has refused connections for ``GONE_WAIT``
    s: nothing listens there any more, so nothing can be sent (``finish()`` stops waiting)."""
    err, since = up.last_error, up.failing_since
    return (
        up.registered.is_set()
        and since is not None
        and isinstance(err, RetryableApiError)
        and err.status is None
        and isinstance(err.__cause__, ConnectionRefusedError)
        and up.clock() - since >= GONE_WAIT
    )


def stop_requested(run: Run) -> None:
    """Someone asked the server to stop this run (``wisp.Api`` ``run.stop()``, the MCP tool
    ``stop_run``, the dashboard): say so, and interrupt the main thread as Ctrl+C would, so
    the program's own handlers run and the run finishes as ``killed`` (wandb's remote stop
    does the same)."""
    import _thread

    log.warning("wisp: run %s was asked to stop from the server; stopping it (as Ctrl+C)", run.id)
    _thread.interrupt_main()


def attach(run: Run) -> None:
    """Start uploading a new online run; wait at most ``init_timeout`` for it to register.

    The uploader is attached to the run as its ``"uploader"`` part: ``finish()``
    waits for it (:func:`finish_upload`) once the run file is closed.  A server that
    refuses the run (a refused API key: 401, 403; a URL that is no wisp server: 404)
    raises :class:`~wisp.errors.FatalApiError` here with its reason; the caller closes the
    run.  A server that cannot be reached is said once; the run goes on, on disk.
    """
    s = run.settings
    assert run.dir is not None
    deadline = time.monotonic() + s.init_timeout
    client = ApiClient(s.server_url, s.api_key, timeout=10.0)
    up = Uploader(run.dir, client, heartbeat_interval=s.heartbeat_interval)
    up.defer_refusal = True  # a refusal while init() waits is raised here, not logged
    up.on_stop = lambda: stop_requested(run)
    refused = False

    def stop() -> None:
        if refused:
            return  # init() raised: nothing was ever going to be uploaded
        wait, why = run.upload_wait()
        finish_upload(run, wait, limit=why)

    run.attach("uploader", up, stop, after_close=True)
    run.barrier(s.init_timeout)  # the run record is on disk: register from it
    up.start()
    run.url = run_page_url(client.server_url, run.project_path, run.id)
    # registered, refused (401/403/404 end the thread at once) or nothing listening: never
    # wait out init_timeout for an answer that has come
    while not up.registered.is_set() and not up.ended.is_set() and not unreachable(up):
        left = deadline - time.monotonic()
        if left <= 0:
            break
        up.registered.wait(min(left, 0.02))
    up.defer_refusal = False  # from now on the thread reports a refusal itself
    if up.registered.is_set():
        # the server's key for the run (its id, unless another project had the id first)
        run.url = run_page_url(client.server_url, run.project_path, up.key or run.id)
        return
    if isinstance(up.error, FatalApiError):
        refused = True
        run.url = None
        raise refusal(s.server_url, run.id, up.error)
    if up.error is not None:
        import warnings

        from wisp.errors import WispWarning

        run.mode = "offline"
        run.url = None
        warnings.warn(
            f"wisp: uploading run {run.id} to {s.server_url} failed ({up.error}); the run is "
            f"recorded offline in {run.dir}: fix the cause, then `wisp sync {run.dir}` "
            "uploads it",
            WispWarning,
            stacklevel=4,
        )
    elif unreachable(up):
        log.warning(
            "wisp: cannot reach the server %s (%s); training goes on, the run is kept on disk "
            "and uploads if the server comes back",
            s.server_url,
            _cause(up.last_error),
        )
    else:
        up.silent_at_init = True
        log.warning(
            "wisp: the server %s did not answer within init_timeout=%ss; training goes on, "
            "uploads will catch up",
            s.server_url,
            s.init_timeout,
        )


def _cause(exc: BaseException | None) -> str:
    """The root cause of a connection error, e.g. ``ConnectionRefusedError: ...``."""
    root = exc.__cause__ if exc is not None and exc.__cause__ is not None else exc
    return f"{type(root).__name__}: {root}" if root is not None else "no answer"


def refusal(server_url: str, run_id: str, exc: FatalApiError) -> FatalApiError:
    """The error ``init()`` raises when the server refuses a run, with its reason and a fix."""
    if " is not a wisp server: " in str(exc):  # what answered, and the fix, are said already
        return FatalApiError(str(exc), status=exc.status)
    if exc.status in (403, 404) and "(field 'project')" in str(exc):
        hint = (
            "the key's user may not use this project: check init(project=..., entity=...) "
            "and the user's teams (docs/server.md, 'Trust model')"
        )
    elif exc.status in (401, 403):
        hint = (
            "check the API key (WISP_API_KEY, settings={'api_key': ...} or `wisp login`); "
            "`wisp doctor` tests it"
        )
    elif exc.status == 404:
        hint = "is WISP_SERVER_URL the address of a wisp server?"
    else:
        hint = "`wisp doctor` checks the server and the key"
    reason = str(exc)
    if ": server answered " in reason:  # "PUT /runs/x: server answered 401: why"
        reason = "HTTP " + reason.split(": server answered ", 1)[1]
    return FatalApiError(
        f"the server {server_url} refused run {run_id}: {reason}; {hint}", status=exc.status
    )


def human_size(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)  # pragma: no cover


def finish_upload(
    run: Run, timeout: float, *, stream: Any = None, limit: str = "upload_timeout"
) -> None:
    """Wait up to ``timeout`` s for the run's uploads; say what is left if time runs out.

    ``limit`` names the setting that set ``timeout``, for the message.
    """
    up: Uploader | None = run.part("uploader")
    if up is None or up.thread is None:
        return
    out = stream if stream is not None else sys.stderr
    up.finish()
    start = time.monotonic()
    deadline = start + timeout
    short = start + min(timeout, UNREACHABLE_WAIT)  # while the server has never answered
    tty = bool(getattr(out, "isatty", lambda: False)())
    shown = False
    tries = up.retries
    try:
        while up.thread.is_alive():
            now = time.monotonic()
            never = never_answered(up)
            end = short if never else deadline
            if now >= end or (up.retries > tries and gone(up)):
                break
            up.thread.join(min(0.25, end - now))
            if up.thread.is_alive() and not never and time.monotonic() - start > 1.0:
                left = up.pending_bytes()
                if tty:
                    out.write(f"\rwisp: uploading run {run.id}: {human_size(left)} left ...  ")
                    shown = True
                elif not shown:
                    out.write(
                        f"wisp: uploading run {run.id}: {human_size(left)} left, waiting up to "
                        f"{timeout:.0f}s\n"
                    )
                    shown = True
    except KeyboardInterrupt:
        # Ctrl-C stops the wait, not the program's ending: the run is closed on disk already
        up.stop()
        out.write(
            f"{chr(10) if shown and tty else ''}wisp: run {run.id}: upload interrupted with "
            f"{human_size(up.pending_bytes())} left; the run is safe on disk, "
            f"`wisp sync {run.dir}` finishes uploading it\n"
        )
        with contextlib.suppress(OSError, ValueError):
            out.flush()
        return
    if shown and tty:
        out.write("\n")
    if up.rejected:
        import warnings

        from wisp.errors import WispWarning

        warnings.warn(
            f"wisp: run {run.id}: the server refused {up.rejected} record(s); they are set aside "
            f"in {os.path.join(run.dir or '', 'rejected.jsonl')} with its reason, everything else "
            f"was uploaded (`wisp sync --retry-rejected {run.dir}` sends them again)",
            WispWarning,
            stacklevel=3,
        )
    if up.done.is_set():
        if shown:
            out.write(f"wisp: run {run.id} uploaded\n")
        return
    up.stop()
    left = up.pending_bytes()
    if gone(up):
        out.write(
            f"wisp: run {run.id}: {human_size(left)} of {run.file_path} not uploaded: the server "
            f"{up.client.server_url} stopped answering during the run ({_cause(up.last_error)}); "
            f"it is safe on disk, `wisp sync {run.dir}` finishes uploading it\n"
        )
        with contextlib.suppress(OSError, ValueError):
            out.flush()
        return
    if never_answered(up):
        out.write(
            f"wisp: run {run.id} was not uploaded: the server {up.client.server_url} could not "
            f"be reached ({_cause(up.last_error)}); it is safe on disk, `wisp sync {run.dir}` "
            "uploads it\n"
        )
        with contextlib.suppress(OSError, ValueError):
            out.flush()
        return
    if up.error is not None:
        why = f"the upload stopped: {type(up.error).__name__}: {up.error}"
    elif up.last_error is not None:
        why = (
            f"the server could not be reached within {limit}={timeout:.3g}s "
            f"(last error: {up.last_error})"
        )
    else:
        why = f"{limit}={timeout:.3g}s ran out"
    out.write(
        f"wisp: run {run.id}: {human_size(left)} of {run.file_path} not uploaded ({why}); it is "
        f"safe on disk, run `wisp sync {run.dir}` to finish uploading\n"
    )
    with contextlib.suppress(OSError, ValueError):
        out.flush()

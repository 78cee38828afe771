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
from wisp.errors import UsageError

if TYPE_CHECKING:
    from wisp._run import Run

__all__ = ["attach", "check_settings", "finish_upload", "human_size"]

log = logging.getLogger("wisp")


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


def attach(run: Run) -> None:
    """Start uploading a new online run; wait at most ``init_timeout`` for it to register.

    The uploader is attached to the run as its ``"uploader"`` part: ``finish()``
    waits for it (:func:`finish_upload`) once the run file is closed.
    """
    s = run.settings
    assert run.dir is not None
    deadline = time.monotonic() + s.init_timeout
    client = ApiClient(s.server_url, s.api_key, timeout=10.0)
    up = Uploader(run.dir, client, heartbeat_interval=s.heartbeat_interval)

    def stop() -> None:
        wait, why = run.upload_wait()
        finish_upload(run, wait, limit=why)

    run.attach("uploader", up, stop, after_close=True)
    run.barrier(s.init_timeout)  # the run record is on disk: register from it
    up.start()
    # registered, or refused for good (401/403/422 end the thread at once): never wait out
    # init_timeout for an answer that has come
    while not up.registered.is_set() and not up.ended.is_set():
        left = deadline - time.monotonic()
        if left <= 0:
            break
        up.registered.wait(min(left, 0.02))
    if up.registered.is_set():
        run.url = f"{client.server_url}/runs/{up.key or run.id}"
    elif up.error is not None:
        import warnings

        from wisp.errors import WispWarning

        run.mode = "offline"
        warnings.warn(
            f"wisp: server {s.server_url} refused run {run.id} ({up.error}); the run is "
            f"recorded offline in {run.dir}: fix the cause, then `wisp sync {run.dir}` "
            "uploads it",
            WispWarning,
            stacklevel=4,
        )
    else:
        log.info(
            "wisp: server %s did not answer within init_timeout=%ss; training goes on, "
            "uploads will catch up",
            s.server_url,
            s.init_timeout,
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
    tty = bool(getattr(out, "isatty", lambda: False)())
    shown = False
    while up.thread.is_alive():
        now = time.monotonic()
        if now >= deadline:
            break
        up.thread.join(min(0.25, deadline - now))
        if up.thread.is_alive() and time.monotonic() - start > 1.0:
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

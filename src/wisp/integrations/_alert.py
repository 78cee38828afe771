"""``wisp.alert()``: record an alert in the run and send it to a webhook.

An ALERT record (type 10, format version 1) holds::

    {"title": str, "text": str, "level": "INFO" | "WARN" | "ERROR",
     "ts": unix seconds, "step": int, "sent": bool}

``sent`` says whether the alert is delivered (``wait_duration`` can suppress
repeats of a title).

**Online** (``mode="online"``: the run streams to a server) the record is the
whole of it: the server delivers the alerts it receives through the project's
automations whose trigger is about alerts (``alert.level = ERROR``, one delivery
path and one delivery log; docs/automations.md, "Alerts"), and the process posts
nothing (an ``alert_webhook`` setting is not used: it warns once).

**Offline**, when the ``alert_webhook`` setting (env ``WISP_ALERT_WEBHOOK``) is
set, the alert is POSTed there as JSON by a short-lived thread, so neither the
training loop nor the writer waits on the network; the body is::

    {"text": "[LEVEL] title: text", "title", "body", "level", "run_id",
     "run_name", "project", "ts"}

(``text`` makes it a valid Slack incoming-webhook message).  A failed POST is
counted under ``alert`` in the run's failures and logged once; it never raises.
"""

from __future__ import annotations

import enum
import json
import logging
import threading
import time
from collections.abc import Callable
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from wisp._runfile import RecordType
from wisp.errors import RunStateError, UsageError

if TYPE_CHECKING:
    from wisp._run import Run

__all__ = ["AlertLevel", "alert", "login", "post_json"]

log = logging.getLogger("wisp")
_lock = threading.Lock()
#: (run id, title) -> time of the last alert sent, for ``wait_duration``
_last_sent: dict[tuple[str, str], float] = {}
WEBHOOK_TIMEOUT = 10.0
_warned: list[bool] = []  # the online-run warning about alert_webhook was given


class AlertLevel(str, enum.Enum):
    """Alert levels, as in wandb."""

    INFO = "INFO"
    WARN = "WARN"
    ERROR = "ERROR"


def post_json(url: str, body: dict[str, Any], timeout: float = WEBHOOK_TIMEOUT) -> None:
    """POST ``body`` as JSON; raise OSError (urllib's errors) on failure or a non-2xx status."""
    import urllib.request

    data = json.dumps(body).encode("utf-8")
    req = urllib.request.Request(
        url, data=data, method="POST", headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        if not 200 <= resp.status < 300:
            raise OSError(f"webhook answered HTTP {resp.status}")


def _count_failure(run: Run, exc: BaseException) -> None:
    with _lock:
        n = run.count_failure("alert")
    if n == 1:
        log.warning(
            "wisp: sending an alert to the webhook failed (%s: %s); counting further failures",
            type(exc).__name__,
            exc,
        )


def _send(run: Run, url: str, body: dict[str, Any], post: Callable[..., None]) -> None:
    try:
        post(url, body)
    except (OSError, ValueError) as exc:  # urllib raises URLError/HTTPError (OSError), ValueError
        _count_failure(run, exc)


def alert(
    title: str,
    text: str,
    level: str | AlertLevel | None = None,
    wait_duration: float | timedelta | None = None,
    *,
    post: Callable[..., None] = post_json,
    run: Run | None = None,
) -> threading.Thread | None:
    """Record an alert in the current run and POST it to the configured webhook.

    ``wait_duration`` (seconds or a timedelta) suppresses sending another alert
    with the same title within that time (it is still recorded).  Returns the
    sending thread, if one was started (join it to wait for delivery).  ``run``
    (default: the current run) records it (``run.alert(...)``).
    """
    from wisp import _current

    run = run or _current.run
    if run is None:
        raise RunStateError("wisp.alert() needs a run: call wisp.init() first")
    if not isinstance(title, str) or not title:
        raise UsageError(f"alert() title must be a non-empty string, got {title!r}")
    if not isinstance(text, str):
        raise UsageError(f"alert() text must be a string, got {type(text).__name__}")
    from wisp._protocol import MAX_STRING_LENGTH, clean_text

    for what, value in (("title", title), ("text", text)):
        if len(value) > MAX_STRING_LENGTH:
            raise UsageError(
                f"alert() {what} is {len(value)} characters long, over the limit of "
                f"{MAX_STRING_LENGTH}"
            )
    title, text = clean_text(title), clean_text(text)  # NUL, lone surrogates -> U+FFFD
    try:
        lvl = AlertLevel(level or AlertLevel.INFO)
    except ValueError:
        raise UsageError(
            f"alert() level must be INFO, WARN or ERROR (or a wisp.AlertLevel), got {level!r}"
        ) from None
    if isinstance(wait_duration, timedelta):
        wait_duration = wait_duration.total_seconds()
    if wait_duration is not None and (
        isinstance(wait_duration, bool) or not isinstance(wait_duration, (int, float))
    ):
        raise UsageError(
            f"alert() wait_duration must be seconds or a timedelta, got {wait_duration!r}"
        )
    if run.mode == "disabled":
        return None
    now = time.time()
    key = (run.id, title)
    with _lock:
        last = _last_sent.get(key)
        send = wait_duration is None or last is None or now - last >= wait_duration
        if send:
            _last_sent[key] = now
    run.record(
        RecordType.ALERT,
        {
            "title": title,
            "text": text,
            "level": lvl.value,
            "ts": now,
            "step": run.step,
            "sent": send,
        },
    )
    url = run.settings.alert_webhook
    if run.mode == "online":  # the server delivers it (its automations)
        if url and not _warned:
            _warned.append(True)
            log.warning(
                "wisp: alert_webhook is not used by online runs: the server delivers alerts "
                "through the project's automations (wisp automation add --when "
                "'alert.level exists' --webhook URL; docs/automations.md)"
            )
        return None
    if not (send and url):
        return None
    body = {
        "text": f"[{lvl.value}] {title}: {text}",
        "title": title,
        "body": text,
        "level": lvl.value,
        "run_id": run.id,
        "run_name": run.name,
        "project": run.project_path,
        "ts": now,
    }
    thread = threading.Thread(
        target=_send, args=(run, url, body, post), name="wisp-alert", daemon=True
    )
    thread.start()
    return thread


def login(*args: Any, **kwargs: Any) -> bool:
    """``wandb.login()``: wisp needs no login for local runs; the server key is the
    ``api_key`` setting (``WISP_API_KEY``).  Accepts and ignores wandb's arguments."""
    return True

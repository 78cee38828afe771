"""The automations worker: one background thread per server process.

Every ``interval`` seconds it (1) stores ``crashed`` on running runs whose heartbeats stopped
for the heartbeat timeout, (2) evaluates the active automations over the runs changed since
its previous pass, the artifact events and the alerts of those runs (``store.automations``:
edge state and queue in the database), and
(3) claims the due deliveries and POSTs them from a small thread pool, so a slow webhook
delays neither ingest (which never waits on this thread) nor the next pass.

A webhook request carries ``Content-Type: application/json``, ``X-Wisp-Event``,
``X-Wisp-Delivery`` (the delivery id: the same on every retry, for receivers to drop a
repeat) and, when the automation has a secret, ``X-Wisp-Signature-256: sha256=<hex>``: the
HMAC-SHA256 of the body with the secret (decrypted here: ``automations.secrets``). An e-mail
action goes through the configured SMTP server instead (``automations.mail``; docs/automations.md).
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import threading
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from sqlalchemy.exc import SQLAlchemyError

from wisp.server.automations.mail import send_mail
from wisp.server.automations.secrets import SecretError
from wisp.server.store.automations import AutomationStore, Claimed

__all__ = ["SEND_TIMEOUT", "AutomationWorker", "sign"]

SEND_TIMEOUT = 10.0  # seconds for one webhook request
_SLACK = 5.0  # changed runs are read from this much before the previous pass (commit lag)
log = logging.getLogger("wisp.server.automations")


def sign(secret: str, body: bytes) -> str:
    """The ``X-Wisp-Signature-256`` header value of ``body``."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def post(url: str, secret: str | None, body: bytes, delivery_id: int, event: str) -> int:
    """POST the body; the HTTP status (raises ``OSError`` when there is no answer)."""
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "wisp-server",
        "X-Wisp-Delivery": str(delivery_id),
        "X-Wisp-Event": event,
    }
    if secret:
        headers["X-Wisp-Signature-256"] = sign(secret, body)
    req = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=SEND_TIMEOUT) as resp:
            return int(resp.status)
    except urllib.error.HTTPError as e:
        return int(e.code)


class AutomationWorker:
    """Run health, automation evaluation and webhook delivery for one process."""

    def __init__(self, store: Any, settings: Any, sealer: Any) -> None:
        self.autos = AutomationStore(store, sealer)
        self.sealer = sealer
        self.settings = settings
        self.clock = store.clock
        self.interval = settings.automation_interval
        self.deliver = settings.deliver
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._pool = ThreadPoolExecutor(4, thread_name_prefix="wisp-webhook")
        self._sending: set[int] = set()
        self._lock = threading.Lock()
        # a restart re-reads a while back: evaluation is idempotent (edge state in the DB)
        self._since = self.clock() - max(3600.0, store.heartbeat_timeout)
        self._alert_after = 0  # alerts (events ids) at or below it were evaluated
        self._alert_marks: list[tuple[float, int]] = []

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="wisp-automations", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._pool.shutdown(wait=False, cancel_futures=True)

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.tick()
            except SQLAlchemyError as e:  # the database is away: try again next pass
                log.warning("automations: %s", e)
            self._stop.wait(self.interval)

    def tick(self) -> None:
        """One pass: mark crashed runs, evaluate changed runs, send due deliveries."""
        start = self.clock()
        crashed = self.autos.mark_crashed()
        if self.autos.any_active():
            changed: dict[str, str] = dict(self.autos.changed_since(self._since - _SLACK))
            changed.update(crashed)
            self.autos.evaluate(list(changed.items()))
            self.autos.evaluate_artifacts(self._since - _SLACK)
            top = self.autos.evaluate_alerts(list(changed.items()), self._alert_after)
            # the alerts' watermark moves to what was read _SLACK ago: an event with a lower
            # id committed after this read (PostgreSQL ids are not commit-ordered) is still read
            self._alert_marks.append((start, top))
            while self._alert_marks and self._alert_marks[0][0] < start - _SLACK:
                self._alert_after = max(self._alert_after, self._alert_marks.pop(0)[1])
        self._since = start
        if self.deliver:
            for did in self.autos.due(50):
                with self._lock:
                    if did in self._sending:
                        continue
                    self._sending.add(did)
                self._pool.submit(self._send, did)

    def _deliver(self, c: Claimed, delivery_id: int) -> int:
        """Send one claimed delivery: an e-mail or a (signed) webhook POST; its status."""
        if c.email:
            st = self.settings
            args = (st.smtp_url, st.smtp_from, st.smtp_starttls, c.email, c.body)
            return send_mail(*args, delivery_id, c.event, SEND_TIMEOUT)
        secret = self.sealer.open(c.secret) if c.sealed and c.secret else c.secret
        return post(c.url, secret, c.body, delivery_id, c.event)

    def _send(self, delivery_id: int) -> None:
        try:
            got = self.autos.claim(delivery_id)
            if got is None:
                return
            code: int | None = None
            error: str | None = None
            try:
                code = self._deliver(got, delivery_id)
                if not 200 <= code < 300 and code != 250:
                    error = f"HTTP {code}"
            except SecretError as e:
                error = str(e)
            except (OSError, ValueError) as e:  # refused, timed out, bad URL, SMTP refusals
                error = f"{type(e).__name__}: {e}"[:500]
            self.autos.finish(delivery_id, got.attempt, code, error)
        except SQLAlchemyError as e:
            log.warning("automations: delivery %s: %s", delivery_id, e)
        finally:
            with self._lock:
                self._sending.discard(delivery_id)

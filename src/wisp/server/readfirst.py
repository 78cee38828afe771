"""Reads before ingest: a dashboard's poll is not kept waiting behind uploads.

One server process shares its GIL and its CPU between the requests it serves.  Ingest
(``POST /runs/{id}/records``) is bulk work, seconds of it in a busy minute, and a poll (the
runs table, a chart) needs the GIL a few dozen times for a few milliseconds each; when both
want it the poll waits behind whole slices of ingest, so it took seconds under load
(benchmarks/bench_concurrent.py).  :class:`ReadFirst` counts the reads being answered
(``GET``/``HEAD`` requests, from arrival until their response starts: a long download does not
count once it streams) and ingest gives way to them:

- before each of its steps (decode, apply) an ingest request waits on the event loop
  (:meth:`ReadFirst.quiet`) while reads are in flight;
- inside a step, between records, the worker thread sleeps (:meth:`ReadFirst.pauser`), which
  hands the GIL to the reads at once.

Ingest processes (:mod:`wisp.server.ingesting`) make the same pauses: the count is also kept
in shared memory (:meth:`ReadFirst.shared`) and read there by :func:`shared_pauser`, so a
batch being applied in another process, and its database backend, leave the CPU to the reads.

Both waits are bounded (``max_wait`` each, 0.25 s by default), so ingest always moves on:
a dashboard polling nonstop slows uploads down, it never stops them.  Uploaders retry and
back off on their own; nothing is dropped by waiting.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

__all__ = ["ReadFirst", "shared_pauser"]

_READS = frozenset({"GET", "HEAD"})
_STEP = 0.002  # seconds between looks while reads are in flight


class ReadFirst:
    """The count of reads in flight, and the waits ingest makes for them."""

    def __init__(self, max_wait: float = 0.25) -> None:
        self.max_wait = max_wait
        self._active = 0  # changed on the event loop only; read from worker threads
        self._shared: Any = None  # the same count in shared memory, once asked for
        self.waited = 0.0  # seconds ingest gave way, in all (doctor-style counters)

    @property
    def active(self) -> int:
        """Reads in flight."""
        return self._active

    @active.setter
    def active(self, n: int) -> None:
        self._active = n
        if self._shared is not None:
            self._shared.value = n

    def shared(self) -> Any:
        """The count in shared memory, for the processes this one starts (pass it to them
        when they start; :func:`shared_pauser` reads it)."""
        if self._shared is None:
            import multiprocessing

            self._shared = multiprocessing.get_context("spawn").RawValue("i", self._active)
        return self._shared

    def middleware(self, app: Any) -> Any:
        """``app`` (ASGI) with its reads counted while they are answered (Starlette's
        ``Middleware(reads.middleware)``)."""

        async def counted(scope: Any, receive: Any, send: Any) -> None:
            if scope["type"] != "http" or scope.get("method") not in _READS:
                await app(scope, receive, send)
                return
            self.active += 1
            done = False

            async def send_counted(message: Any) -> None:
                nonlocal done
                if not done and message.get("type") == "http.response.start":
                    done = True
                    self.active -= 1
                await send(message)

            try:
                await app(scope, receive, send_counted)
            finally:
                if not done:
                    self.active -= 1

        return counted

    async def quiet(self) -> None:
        """On the event loop: wait while reads are in flight, ``max_wait`` at most."""
        if self.active:
            t0 = time.monotonic()
            end = t0 + self.max_wait
            while self.active and time.monotonic() < end:
                await asyncio.sleep(_STEP)
            self.waited += time.monotonic() - t0

    def pauser(self) -> Callable[[], None]:
        """For one step of ingest on a worker thread: a function to call between its pieces,
        which sleeps (the GIL goes to the reads) while reads are in flight, ``max_wait`` in
        all over the step."""

        def waited(spent: float) -> None:
            self.waited += spent

        return _pauser(lambda: self._active, self.max_wait, waited)


def shared_pauser(count: Any, max_wait: float) -> Callable[[], None]:
    """:meth:`ReadFirst.pauser` in an ingest process, over the count of
    :meth:`ReadFirst.shared` (the CPU goes to the reads of the server process)."""
    return _pauser(lambda: int(count.value), max_wait, None)


def _pauser(
    active: Callable[[], int], max_wait: float, waited: Callable[[float], None] | None
) -> Callable[[], None]:
    left = max_wait

    def pause() -> None:
        nonlocal left
        if active() and left > 0:
            t0 = time.monotonic()
            end = t0 + left
            while active() and time.monotonic() < end:
                time.sleep(_STEP)
            spent = time.monotonic() - t0
            left -= spent
            if waited is not None:
                waited(spent)

    return pause

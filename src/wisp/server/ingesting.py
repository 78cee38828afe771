"""Record batches applied in ingest processes, apart from the process answering reads.

A server process answers a dashboard's reads and applies the uploaders' record batches
(``POST /runs/{id}/records``: decode, validate, merge points into chunks, write).  In one
process both need its one GIL, and on a busy machine the thread holding it for ingest is
often itself waiting for a CPU, so a read waits behind it twice; under 16 uploaders on 2
cores a poll took up to ~1 s, most of it waiting to get back onto the event loop
(benchmarks/bench_concurrent.py, docs/server.md "Scale").

With ``--ingest-processes N`` (the default on PostgreSQL: :attr:`Dialect.ingest_processes`)
a server process hands each batch as sent (gzip or not: decoding it was most of a busy
event loop's time) to one of ``N`` processes of its own, which gunzip, decode and apply it
against their own connection pool (the store keeps no state a request
depends on, so any number of processes can write) and answer the acked sequence or the
:class:`~wisp.server.http.problem.Problem` to send.  They run at a lower CPU priority
(``nice`` +:data:`INGEST_NICE`, each in a session of its own at that nice: Linux's autogroup
scheduling shares the CPU between sessions first, so in the server's session they would take
from its share whatever their nice) and pause between records and keys while the server process
answers reads (:func:`wisp.server.readfirst.shared_pauser`): ingest takes the cycles that
reads leave, and a read never waits for ingest's GIL.  Authentication, the write rules'
caller (``ACTOR``, passed along) and the answer stay with the server process.  An ingest
process that dies fails the batches it held with a 503 (uploaders send them again) and the
pool is started anew.
"""

from __future__ import annotations

import asyncio
import os
import signal
import threading
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import TYPE_CHECKING, Any

from wisp.server.http.problem import Problem
from wisp.server.readfirst import ReadFirst

if TYPE_CHECKING:
    from wisp.server.http.body import Encoded
    from wisp.server.rights.matrix import Principal
    from wisp.server.store.facade import Store

__all__ = ["INGEST_NICE", "IngestPool", "apply_batch"]

#: how much nicer than the server process its ingest processes run
INGEST_NICE = 5
_WATCH = 1.0  # seconds between an ingest process's looks at whether the server is alive

_STORE: list[Store] = []  # in an ingest process: its store, opened by _start
_READS: list[tuple[Any, float]] = []  # and the server's count of reads in flight, max_wait


def apply_batch(
    store: Store,
    run_id: str,
    body: Encoded | bytes | bytearray,
    pause: Callable[[], None] | None = None,
) -> int:
    """Decode (gunzip too), validate and apply one ``POST /runs/{id}/records`` body; the
    acked seq (a :class:`Problem` for a bad or conflicting batch).  The caller is
    ``ACTOR``'s; ``pause`` is called between records and keys (:mod:`wisp.server.readfirst`)."""
    from wisp.server.http.body import Encoded, decode_batch
    from wisp.server.store.ingest import prepare_batch

    raw = body.decoded() if isinstance(body, Encoded) else body
    b, prepared = prepare_batch(decode_batch(raw), pause)
    return store.ingest(run_id, b.writer_id, b.first_seq, prepared, pause=pause)


def _start(
    db: str, heartbeat_timeout: float, nice: int, server: int, reads: tuple[Any, float]
) -> None:
    """An ingest process's initializer: Ctrl-C is the server's to handle (it closes the
    pool), the lower priority, the store (migrated already by the server), the server's
    count of reads in flight, and an end of its own when the server process is gone
    (killed: nobody closes the pool)."""
    from wisp.server.store.facade import open_store

    def orphaned() -> None:
        while os.getppid() == server:
            time.sleep(_WATCH)
        os._exit(0)  # a batch being applied is rolled back; its uploader sends it again

    threading.Thread(target=orphaned, name="wisp-ingest-watch", daemon=True).start()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if nice:
        os.nice(nice)
        _own_autogroup(nice)
    _STORE.append(open_store(db, heartbeat_timeout=heartbeat_timeout, run_migrations=False))
    _READS.append(reads)


def _own_autogroup(nice: int) -> None:
    """A session of its own at ``nice``: Linux's autogroup scheduling shares the CPU between
    sessions first, so in the server's session an ingest process takes from the server's
    share whatever its own nice (best effort: elsewhere the process's nice is all)."""
    try:
        os.setsid()
        with open("/proc/self/autogroup", "w") as f:
            f.write(str(nice))
    except OSError:
        pass  # not Linux, no autogroup (or it is off), or not allowed: the nice stays


def _apply(run_id: str, body: Encoded | bytes | bytearray, actor: Principal | None) -> int:
    from wisp.server.readfirst import shared_pauser
    from wisp.server.rights.matrix import ACTOR

    token = ACTOR.set(actor)
    try:
        return apply_batch(_STORE[0], run_id, body, shared_pauser(*_READS[0]))
    finally:
        ACTOR.reset(token)


def _ready() -> int:
    return os.getpid()


class IngestPool:
    """``n`` ingest processes of one server process (started on first use or by
    :meth:`start`, ended by :meth:`close`)."""

    def __init__(
        self, db: str, n: int, *, heartbeat_timeout: float = 300.0, reads: ReadFirst | None = None
    ) -> None:
        self.db = db
        self.n = n
        self.heartbeat_timeout = heartbeat_timeout
        self.reads = reads if reads is not None else ReadFirst()  # theirs go first
        self._pool: ProcessPoolExecutor | None = None

    def start(self) -> None:
        """Start the processes (they open their stores while the server goes on)."""
        if self._pool is not None:
            return
        import multiprocessing

        self._pool = ProcessPoolExecutor(
            self.n,
            mp_context=multiprocessing.get_context("spawn"),  # no copy of the server's threads
            initializer=_start,
            initargs=(
                self.db,
                self.heartbeat_timeout,
                INGEST_NICE,
                os.getpid(),
                (self.reads.shared(), self.reads.max_wait),
            ),
        )
        for _ in range(self.n):  # each submit while none is idle starts one more process
            self._pool.submit(_ready)

    async def apply(
        self, run_id: str, body: Encoded | bytes | bytearray, actor: Principal | None
    ) -> int:
        """:func:`apply_batch` in an ingest process, as ``actor``."""
        self.start()
        assert self._pool is not None
        pool = self._pool
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(pool, _apply, run_id, body, actor)  # not copied
        except BrokenProcessPool:
            if self._pool is pool:  # the first to notice starts a new pool
                self._pool = None
                pool.shutdown(wait=False, cancel_futures=True)
            raise Problem(
                503, "ingest_unavailable", "an ingest process ended: send the batch again"
            ) from None

    def close(self) -> None:
        """End the processes (batches being applied finish first)."""
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)

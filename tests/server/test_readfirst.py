"""Reads before ingest (wisp.server.readfirst): the count of reads and the bounded waits."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from typing import Any

from wisp.server.readfirst import ReadFirst


def _call(app: Any, method: str, seen: list[int], reads: ReadFirst) -> list[str]:
    """Run one request through ``app``; ``seen`` gets the count at each message sent."""
    sent: list[str] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message["type"])
        seen.append(reads.active)

    asyncio.run(app({"type": "http", "method": method, "path": "/"}, receive, send))
    return sent


def test_a_read_counts_until_its_response_starts_and_a_write_never() -> None:
    """A GET is counted while the app answers it and not once its response starts (a long
    download does not hold ingest back); a POST is never counted."""
    reads = ReadFirst()
    inside: list[int] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        inside.append(reads.active)
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"x"})

    counted = reads.middleware(app)
    seen: list[int] = []
    assert _call(counted, "GET", seen, reads) == ["http.response.start", "http.response.body"]
    assert inside == [1] and seen == [0, 0] and reads.active == 0
    _call(counted, "POST", seen, reads)
    assert inside == [1, 0] and reads.active == 0


def test_a_read_that_fails_before_answering_is_uncounted() -> None:
    """A read whose app raises before any response leaves the count where it was."""
    reads = ReadFirst()

    async def app(scope: Any, receive: Any, send: Any) -> None:
        raise RuntimeError("boom")

    with contextlib.suppress(RuntimeError):
        _call(reads.middleware(app), "GET", [], reads)
    assert reads.active == 0


def test_pause_sleeps_while_reads_are_in_flight_and_at_most_max_wait_a_step() -> None:
    """A step's pauses return at once without reads, end when the reads end, and add up
    to max_wait at most while reads never end (ingest always moves on)."""
    # bounds with room for a loaded machine: a 1 s budget, reads ending after 0.05 s
    reads = ReadFirst(max_wait=1.0)
    pause = reads.pauser()
    pause()
    assert reads.waited == 0  # no reads in flight: no sleep at all
    reads.active = 1
    ended = threading.Timer(0.05, lambda: setattr(reads, "active", 0))
    ended.start()
    t0 = time.monotonic()
    pause()
    first = time.monotonic() - t0
    ended.join()
    assert 0.04 <= first < 0.8  # ended with the reads, long before the budget
    reads.active = 1  # a read that never ends: the rest of the step's budget, then on
    t0 = time.monotonic()
    for _ in range(5):
        pause()
    assert time.monotonic() - t0 < 1.0 + 1.0  # one budget a step, not 1 s a pause (5 s)
    assert 0.9 <= reads.waited < 1.0 + 0.5


def test_quiet_waits_on_the_event_loop_for_the_reads_bounded() -> None:
    """quiet() returns once reads end, or after max_wait while they go on."""
    reads = ReadFirst(max_wait=0.2)

    async def main() -> tuple[float, float]:
        reads.active = 1

        async def end() -> None:
            await asyncio.sleep(0.05)
            reads.active = 0

        task = asyncio.create_task(end())
        t0 = time.monotonic()
        await reads.quiet()
        first = time.monotonic() - t0
        await task
        reads.active = 1
        t0 = time.monotonic()
        await reads.quiet()
        return first, time.monotonic() - t0

    first, bounded = asyncio.run(main())
    assert 0.04 <= first < 0.19
    assert 0.19 <= bounded < 0.5


def test_ingest_pauses_between_the_keys_of_its_merge(store: Any) -> None:
    """A batch's chunk merge gives way to reads before each key and before its write, not
    only between records (it was half of a batch's GIL time in one stretch)."""
    from wisp.server.store.ingest import prepare_records

    store.put_run("r", {"project": "p"})
    rows = [[s, 1.0 + s, {f"k{j}": s * 0.5 for j in range(3)}] for s in range(100)]
    calls: list[int] = []
    store.ingest(
        "r",
        "w",
        0,
        prepare_records([{"type": 3, "data": {"rows": rows}}]),
        pause=lambda: calls.append(1),
    )
    # one record, then before the merge, its 3 keys and the chunks' one statement
    assert len(calls) == 1 + 1 + 3 + 1


def test_the_shared_count_follows_the_reads_and_pauses_another_process_s_ingest() -> None:
    """The count in shared memory tracks ``active``, and a pauser over it (an ingest
    process's) returns at once without reads and ends its wait when the reads end."""
    from wisp.server.readfirst import shared_pauser

    reads = ReadFirst(max_wait=1.0)
    reads.active = 2
    count = reads.shared()
    assert count.value == 2
    reads.active = 0
    assert count.value == 0
    pause = shared_pauser(count, 1.0)
    t0 = time.monotonic()
    pause()
    assert time.monotonic() - t0 < 0.5  # no reads: no sleep (bound with room for load)
    reads.active = 1
    ended = threading.Timer(0.05, lambda: setattr(reads, "active", 0))
    ended.start()
    pause()
    ended.join()
    assert count.value == 0  # it returned because the reads ended (or its budget ran out)

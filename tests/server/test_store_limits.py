"""Token buckets in the database (``server.store.limits``), on SQLite and PostgreSQL."""

from __future__ import annotations

from typing import Any


def test_buckets_refill_take_and_refuse(store: Any) -> None:
    """A bucket allows its burst, refills at its rate, refuses without taking, and a clock
    that steps back (another process's) refills nothing."""
    now = [1000.0]
    store.clock = lambda: now[0]
    lim = store.limits
    assert [lim.take("k:a", 1.0, 3.0) for _ in range(4)] == [True, True, True, False]
    assert lim.take("k:b", 1.0, 3.0)  # another bucket
    now[0] += 0.5
    assert not lim.take("k:a", 1.0, 3.0)  # half a token: refused, nothing taken
    now[0] += 0.6
    assert lim.take("k:a", 1.0, 3.0) and not lim.take("k:a", 1.0, 3.0)
    now[0] -= 100.0
    assert not lim.take("k:a", 1.0, 3.0)
    assert lim.left("k:a", 1.0, 3.0) < 1.0 and lim.left("k:new", 1.0, 3.0) == 3.0
    now[0] += 1000.0
    assert lim.left("k:a", 1.0, 3.0) == 3.0  # full again, never over the burst
    lim.sweep(now[0] + 1)
    assert lim.left("k:b", 1.0, 3.0) == 3.0


def test_leases_never_admit_more_than_one_bucket(store: Any, db_url: str) -> None:
    """Two processes leasing tokens of one key's bucket admit no more than the bucket holds,
    and at most their unspent leases less."""
    from wisp.server import open_store

    other = open_store(db_url)
    try:
        now = [50.0]
        store.clock = other.clock = lambda: now[0]
        rate, burst = 1e-9, 80.0  # leases of 2 tokens
        admitted = sum(
            s.limits.take_leased("k:x", rate, burst) for _ in range(100) for s in (store, other)
        )
        assert burst - 2 * 2 <= admitted <= burst
        assert store.limits.take_leased("k:y", 2.0, 4.0)  # small buckets: exact
        assert sum(store.limits.take_leased("k:y", 2.0, 4.0) for _ in range(5)) == 3
    finally:
        other.close()

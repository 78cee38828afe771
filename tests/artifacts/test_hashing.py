"""The artifact hashing helpers: the thread map every artifact pipeline stage runs on."""

from __future__ import annotations

import threading

import pytest

from wisp.artifacts._hashing import parallel


def test_parallel_keeps_order_and_uses_threads() -> None:
    """``parallel`` returns the results in the items' order, with items running at once."""
    assert parallel(lambda x: x * x, range(200), n=4) == [x * x for x in range(200)]
    assert parallel(lambda x: x, [], n=4) == [] and parallel(lambda x: x, [3]) == [3]
    both = threading.Barrier(2, timeout=10)  # passes only with two items running together
    assert parallel(lambda x: (both.wait(), x)[1], [1, 2], n=2) == [1, 2]


def test_parallel_finishes_every_item_then_raises_the_first_failure() -> None:
    """Every item is done even when some fail; the failure of the lowest item is raised."""
    done: list[int] = []

    def fn(x: int) -> int:
        if x in (5, 2):
            raise ValueError(f"bad {x}")
        done.append(x)
        return x

    with pytest.raises(ValueError, match="bad 2"):
        parallel(fn, range(10), n=3)
    assert sorted(done) == [0, 1, 3, 4, 6, 7, 8, 9]

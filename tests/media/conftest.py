"""Fixtures for the media tests: a real run in tmp_path, and a gate that holds the writer."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

import wisp
from wisp._values import Deferred


class Gate(Deferred):
    """A value whose resolve() blocks the writer thread until opened (or 10 s pass)."""

    __slots__ = ("event",)

    def __init__(self) -> None:
        self.event = threading.Event()

    def resolve(self, ctx: Any) -> Any:
        if not self.event.wait(10):
            raise TimeoutError("gate never opened")
        return 0

    def open(self) -> None:
        self.event.set()


@pytest.fixture
def run(tmp_path: Any) -> Iterator[wisp.Run]:
    r = wisp.init(project="media", dir=str(tmp_path), settings={"git": False})
    yield r
    wisp.finish()


@pytest.fixture
def make_run(tmp_path: Any) -> Iterator[Any]:
    made: list[wisp.Run] = []

    def make(**settings: Any) -> wisp.Run:
        r = wisp.init(
            project="media", dir=str(tmp_path / str(len(made))), settings={"git": False, **settings}
        )
        made.append(r)
        return r

    yield make
    wisp.finish()


def read_back(r: wisp.Run) -> wisp.RunData:
    """Finish ``r`` and open what it wrote."""
    r.finish()
    assert r.dir is not None
    return wisp.open_run(r.dir)


def logged(r: wisp.Run, key: str) -> Any:
    """Finish ``r`` and return the last value stored under ``key``."""
    _, values = read_back(r).scalars(key)
    assert values, f"nothing logged under {key!r}"
    return values[-1]

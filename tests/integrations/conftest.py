"""Shared fixtures for the integration tests: a clean wisp state per test."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

import wisp


@pytest.fixture(autouse=True)
def _isolated(tmp_path: object, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No current run before or after a test, runs under tmp_path, no git lookups."""
    for name in list(os.environ):
        if name.startswith("WISP_") or name.startswith("WANDB_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("WISP_DIR", str(tmp_path))
    monkeypatch.setenv("WISP_GIT", "false")
    monkeypatch.setenv("WISP_SYSTEM_METRICS", "false")
    assert wisp.run is None
    yield
    if wisp.run is not None:
        wisp.finish()
    from wisp.integrations import _watch

    _watch.unwatch()

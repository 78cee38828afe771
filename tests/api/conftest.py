"""Fixtures for the wisp.Api suite: real servers (SQLite and PostgreSQL) filled by the real SDK.

One module-scoped world per backend: a server process, runs logged by ``wisp.init`` online
(so the same runs are also in a local folder), and the values that were logged.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

PG_HOST = os.environ.get("WISP_TEST_PG", "postgresql://postgres@127.0.0.1:5432")

NAN, INF = math.nan, math.inf
CONFIGS = [
    {"lr": 0.1, "opt": "adam", "layers": 2, "flag": True},
    {"lr": 0.01, "opt": "sgd", "layers": 4, "flag": False},
    {"lr": 0.001, "opt": "adam", "layers": 8},
    {"lr": 0.0001, "opt": "sgd.v2", "nested": {"depth": 3}},
]
TAGS = [["base", "a"], ["a"], [], ["b"]]


def logged_values(i: int) -> dict[int, dict[str, float]]:
    """step -> values logged by run ``i`` (NaN and ±inf included, a sparse key)."""
    out: dict[int, dict[str, float]] = {}
    for s in range(300):
        row = {"loss": 1.0 / (s + 1) + i, "acc": s * 0.001 * (i + 1)}
        if s % 7 == 0:
            row["sparse"] = float(s)
        out[s] = row
    out[5]["loss"] = NAN
    out[6]["loss"] = INF
    out[7]["acc"] = -INF
    return out


class World:
    """A server and a local folder holding the same runs, and what was logged."""

    def __init__(self, server: Any, local_dir: Path, ids: list[str]) -> None:
        self.server = server
        self.local_dir = local_dir
        self.ids = ids
        self.logged = {rid: logged_values(i) for i, rid in enumerate(ids)}


def _fill(srv: Any, local_dir: Path) -> list[str]:
    import wisp

    ids = []
    for i, (cfg, tags) in enumerate(zip(CONFIGS, TAGS, strict=True)):
        run = wisp.init(
            project="sweep",
            name=f"run-{i}",
            config=cfg,
            tags=tags,
            notes=f"note {i}",
            dir=str(local_dir),
            settings={
                "server_url": srv.url,
                "api_key": srv.key,
                "system_metrics": False,
                "console": "off",
            },
        )
        for step, row in logged_values(i).items():
            run.log(row, step=step)
        run.summary["best"] = float(i)
        if i == 0:
            saved = local_dir / "notes.txt"
            saved.write_bytes(b"hello \x00 world")
            wisp.save(str(saved))
        run.finish()
        ids.append(run.id)
    other = wisp.init(
        project="other",
        dir=str(local_dir),
        settings={"server_url": srv.url, "api_key": srv.key, "system_metrics": False},
    )
    other.log({"x": 1.0})
    other.finish()
    return ids


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def world(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[World]:
    """A filled server on the backend under test, and the SDK's local folder of the same runs."""
    from wisp.testing import Server, temporary_postgres_database

    base = tmp_path_factory.mktemp(f"api-{request.param}")
    local = base / "local"
    local.mkdir()
    if request.param == "sqlite":
        with Server(base) as srv:
            yield World(srv, local, _fill(srv, local))
        return
    with temporary_postgres_database(PG_HOST) as url, Server(base, db=url) as srv:
        yield World(srv, local, _fill(srv, local))

"""Shared fixtures: every test gets its own run directory and no current run leaks between tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import wisp


def pytest_configure(config: pytest.Config) -> None:
    """Tests behave the same whatever SIGINT disposition the suite was started with.

    A shell that ignores SIGINT (nohup, a background job, CI) hands the ignored signal to
    pytest and through it to every child process, where Ctrl-C then does nothing and the
    SIGINT tests hang.  A handler (unlike an ignored signal) is reset to the default by exec,
    so every child the tests start gets SIGINT as a terminal would deliver it.
    """
    import signal

    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    for name in list(__import__("os").environ):
        if name.startswith(("WISP_", "WANDB_")):  # wisp honours wandb's variables too
            monkeypatch.delenv(name)
    monkeypatch.setenv("WISP_DIR", str(tmp_path))
    monkeypatch.setenv("WISP_CONFIG", str(tmp_path / "no-user-config.json"))
    monkeypatch.setenv("WISP_GIT", "false")
    monkeypatch.setenv("WISP_SYSTEM_METRICS", "false")
    monkeypatch.setenv("WISP_CONSOLE", "off")
    monkeypatch.setenv("WISP_SIGNALS", "false")
    yield
    if wisp.run is not None:
        wisp.finish()
    from wisp._run import live_runs

    for run in live_runs():  # init(reinit="create_new") runs a test left open
        run.finish()


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """An S3-speaking server on a free loopback port for the test session (moto's
    standalone server: no real S3 server installs from the registries here)."""
    from wisp.testing import S3Server

    with S3Server(tmp_path_factory.mktemp("s3")) as s3:
        yield s3


@pytest.fixture
def s3_url(s3_server: object, monkeypatch: pytest.MonkeyPatch) -> str:
    """A fresh bucket's ``s3://`` URL (5 MiB parts), with the AWS variables pointing at it."""
    for k, v in s3_server.env.items():  # type: ignore[attr-defined]
        monkeypatch.setenv(k, v)
    return str(s3_server.bucket()) + "?part_size=5242880"  # type: ignore[attr-defined]

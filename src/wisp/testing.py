"""Test helpers: a real wisp server for your tests (and the project's own).

:class:`Server` starts a real ``wisp server`` process (``python -m wisp.cli server``) on
a free loopback port, with a SQLite database in a directory you give (or any
database URL, e.g. one from :func:`temporary_postgres_database`), and creates an API
key for it.  It is a context manager, can be stopped and started again on the same
port and database, and has small JSON helpers for asserting on what the server holds::

    from wisp.testing import Server

    def test_upload(tmp_path):
        with Server(tmp_path) as srv:
            run = wisp.init(project="p", settings={"server_url": srv.url, "api_key": srv.key})
            ...
            assert srv.get(f"/runs/{run.id}")["state"] == "finished"

:class:`S3Server` is an S3-speaking server on loopback (moto's standalone mode, from the
``test-server`` extra) for a server with ``media_url="s3://bucket/prefix"``.

For pytest, ``wisp_server = server_fixture()`` in a ``conftest.py`` gives each test a
started server (``no_auth=True`` etc. pass through).

Needs the server extra (``pip install 'wisp-tracker[server]'``).  ``import wisp`` never
imports this module.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

__all__ = [
    "S3Server",
    "Server",
    "free_port",
    "send_json",
    "server_fixture",
    "temporary_postgres_database",
]


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that is free on ``host`` right now."""
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def _clean_env(base: Path) -> dict[str, str]:
    """The environment without the caller's wisp settings (the pool size aside)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("WISP_") or k == "WISP_SERVER_DB_POOL"
    }
    env["WISP_CONFIG"] = str(base / "wisp-config.json")
    env["WISP_SERVER_DIR"] = str(base)  # its data dir (the secrets key), not the caller's
    return env


class Server:
    """A real ``wisp server`` process on loopback (see the module docstring).

    ``db``: a database URL (default ``sqlite:///<base_dir>/server.db``); ``key``: use this
    API key instead of creating one of ``key_scope``; ``no_auth``: open reads without a key;
    ``args``: more ``wisp server`` options; ``media_url``: where media and artifact bytes
    go (default: a directory in ``base_dir``; ``s3://bucket/prefix`` uses the ``AWS_*``
    variables of this process); ``own_session``: start it in a session of its own, as a
    service manager or another terminal would (on Linux with autogroup scheduling, its
    threads then share the CPU with other sessions as a group, not with this process's
    children one by one).
    """

    def __init__(
        self,
        base_dir: str | os.PathLike[str],
        *,
        db: str | None = None,
        port: int | None = None,
        no_auth: bool = False,
        key: str | None = None,
        key_scope: str = "write",
        args: Sequence[str] = (),
        media_url: str | None = None,
        own_session: bool = False,
    ) -> None:
        self.base_dir = Path(base_dir)
        self.own_session = own_session
        self.base_dir.mkdir(parents=True, exist_ok=True)
        self.db_url = db or f"sqlite:///{self.base_dir / 'server.db'}"
        self.media_dir = media_url or str(self.base_dir / "server-media")
        self.port = port or free_port()
        self._own_port = port is None  # chosen here: another one if it is taken meanwhile
        self.no_auth = no_auth
        self.args = list(args)  # more `wisp server` options
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = self.base_dir / f"server-{self.port}.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self.key = key if key is not None else self.create_key(key_scope, "wisp.testing")

    def create_key(self, scope: str = "write", name: str = "") -> str:
        """A new API key of ``scope`` on this server's database (the secret)."""
        from wisp.server import keys_create

        return keys_create(scope, name, db=self.db_url)[1]

    def command(self) -> list[str]:
        cmd = [sys.executable, "-m", "wisp.cli", "server", "--host", "127.0.0.1"]
        cmd += ["--port", str(self.port), "--db", self.db_url, "--media-url", self.media_dir]
        return [*cmd, *self.args, *(["--no-auth"] if self.no_auth else [])]

    def start(self, timeout: float = 30.0) -> Server:
        """Start the process and wait until it answers (``RuntimeError`` if it does not).

        A port chosen here can be taken by another process before the server binds it (the
        gap after :func:`free_port`): the server then exits, and another port is tried."""
        for _ in range(3):
            if self._start_once(timeout):
                return self
            old, self.port = self.port, free_port()
            self.url = self.url.replace(f":{old}", f":{self.port}")
            self.log = self.base_dir / f"server-{self.port}.log"
        raise RuntimeError(f"wisp server found no free port: {self._log_tail()}")

    def _start_once(self, timeout: float) -> bool:
        """True once it answers; False when its port was taken (and chosen here)."""
        if self.running:
            return True
        start = self.log.stat().st_size if self.log.exists() else 0
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(
                self.command(),
                cwd=self.base_dir,
                env=_clean_env(self.base_dir),
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=self.own_session,
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                code = self.proc.returncode
                self.proc = None
                if self._own_port and "already in use" in self._log_since(start):
                    return False
                raise RuntimeError(f"wisp server exited with {code}: {self._log_tail()}")
            # bound by this process (uvicorn says so), not answered by another one that
            # took the port first
            if "Uvicorn running on" in self._log_since(start):
                try:
                    probe = f"{self.url}/api/openapi.json"
                    urllib.request.urlopen(probe, timeout=1, context=self._probe_tls()).close()
                    return True
                except urllib.error.HTTPError as e:  # it answers: up
                    e.close()
                    return True
                except OSError:
                    pass
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"wisp server did not answer within {timeout}s: {self._log_tail()}")

    def _log_since(self, offset: int) -> str:
        try:
            with open(self.log, "rb") as f:
                f.seek(offset)
                return f.read().decode(errors="replace")
        except OSError:
            return ""

    def _probe_tls(self) -> Any:
        """For an ``https`` url (``--tls-cert``): a context that only checks it answers."""
        if not self.url.startswith("https://"):
            return None
        import ssl

        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        return ctx

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self) -> None:
        """Terminate the process (kill it after 10 s); the database and media stay."""
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)

    def _log_tail(self) -> str:
        try:
            return self.log.read_text(errors="replace")[-4000:]
        except OSError:
            return ""

    def __enter__(self) -> Server:
        return self.start()

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    # -- asserting on what the server holds -----------------------------------------------------

    def get(self, path: str) -> Any:
        """``GET /api/v1<path>`` with this server's key, parsed from JSON."""
        req = urllib.request.Request(
            f"{self.url}/api/v1{path}", headers={"Authorization": f"Bearer {self.key}"}
        )
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                return json.loads(resp.read())
        except urllib.error.HTTPError as e:
            e.close()  # its socket now: not at a later garbage collection (a ResourceWarning)
            raise

    def send(self, method: str, path: str, body: Any) -> tuple[int, Any]:
        """``<method> /api/v1<path>`` of ``body`` as JSON with this server's key: the status
        and the parsed answer (an error's too)."""
        return send_json(self.url, self.key, method, path, body)

    def points(self, run_id: str, key: str) -> list[tuple[int, Any]]:
        """Every (step, value) the server holds for ``key`` of ``run_id`` (raw series)."""
        doc = self.get(f"/series?runs={run_id}&keys={key}&x=step&buckets=100000")
        series = [s for s in doc["series"] if s["run"] == run_id and s["key"] == key]
        if not series:
            return []
        (s,) = series
        if not s["raw"]:
            raise AssertionError(f"expected raw points for {run_id}/{key}, got buckets")
        return list(zip(s["x"], s["y"], strict=True))


@contextlib.contextmanager
def temporary_postgres_database(
    admin_url: str = "postgresql://postgres@127.0.0.1:5432",
) -> Iterator[str]:
    """A fresh, empty PostgreSQL database on the server at ``admin_url``; dropped on exit.

    Yields its URL.  ``psycopg.OperationalError`` when PostgreSQL cannot be reached.
    """
    import psycopg

    name = f"wisp_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(f"{admin_url}/postgres", autocommit=True, connect_timeout=5) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield f"{admin_url}/{name}"
    finally:
        with psycopg.connect(f"{admin_url}/postgres", autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def server_fixture(**options: Any) -> Callable[..., Any]:
    """A pytest fixture giving each test a started :class:`Server` under its ``tmp_path``.

    In a ``conftest.py``: ``wisp_server = server_fixture(no_auth=True)``.
    """
    import pytest

    @pytest.fixture
    def wisp_server(tmp_path: Path) -> Iterator[Server]:
        with Server(tmp_path, **options) as srv:
            yield srv

    return wisp_server


def send_json(
    url: str, key: str, method: str, path: str, body: Any, *, gzip: bool = False
) -> tuple[int, Any]:
    """``<method> <url>/api/v1<path>`` of ``body`` as JSON with the API key ``key``: the
    status and the parsed answer (an error's too).  ``body`` may be bytes, sent as they
    are; ``gzip`` says they are gzip (``Content-Encoding``)."""
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    if gzip:
        headers["Content-Encoding"] = "gzip"
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    req = urllib.request.Request(f"{url}/api/v1{path}", data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as e:
        with e:
            return e.code, json.loads(e.read())


class S3Server:
    """An S3-compatible server on a free loopback port (``python -m moto.server``).

    ``env`` holds the standard AWS variables that point a client at it; :meth:`bucket`
    creates a bucket and returns its ``s3://`` URL.  A context manager, like :class:`Server`.
    """

    def __init__(self, log_dir: str | os.PathLike[str], port: int | None = None) -> None:
        self.port = port or free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.log = Path(log_dir) / f"s3-{self.port}.log"
        self.env = {
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ACCESS_KEY_ID": "wisp-test",
            "AWS_SECRET_ACCESS_KEY": "wisp-test-secret",
            "AWS_REGION": "us-east-1",
        }
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 60.0) -> S3Server:
        self.log.parent.mkdir(parents=True, exist_ok=True)
        cmd = [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)]
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"S3 server exited: {self.log.read_text()[-2000:]}")
            try:
                urllib.request.urlopen(self.endpoint + "/", timeout=1).close()
                return self
            except urllib.error.HTTPError as e:  # it answers
                e.close()
                return self
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"S3 server did not answer within {timeout}s")

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def client(self) -> Any:
        """A boto3 client of this server."""
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            aws_access_key_id=self.env["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=self.env["AWS_SECRET_ACCESS_KEY"],
            region_name=self.env["AWS_REGION"],
        )

    def bucket(self, prefix: str = "wisp") -> str:
        """A new, empty bucket; its ``s3://bucket/prefix`` URL."""
        name = f"wisp-{uuid.uuid4().hex[:12]}"
        self.client().create_bucket(Bucket=name)
        return f"s3://{name}/{prefix}".rstrip("/")

    def __enter__(self) -> S3Server:
        return self.start()

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

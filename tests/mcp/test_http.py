"""`/mcp` on a real `wisp server` (SQLite and PostgreSQL), spoken to by the mcp SDK's
streamable-HTTP client with keys of different rights: every call is checked as the caller."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

import wisp
from tests._procs import stop
from wisp.testing import Server, temporary_postgres_database

pytest.importorskip("mcp")

PG = os.environ.get("WISP_TEST_PG", "postgresql://postgres@127.0.0.1:5432")


@contextlib.contextmanager
def _db(backend: str, tmp_path: Path) -> Iterator[str | None]:
    if backend == "sqlite":
        yield None
    else:
        with temporary_postgres_database(PG) as url:
            yield url


async def _calls(url: str, key: str | None, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    import httpx
    from mcp.client.streamable_http import streamable_http_client

    from mcp import ClientSession

    headers = {"Authorization": f"Bearer {key}"} if key else {}
    out: list[Any] = []
    with anyio.fail_after(60):
        async with (
            httpx.AsyncClient(headers=headers, timeout=30) as http,
            streamable_http_client(f"{url}/mcp", http_client=http) as streams,
            ClientSession(streams[0], streams[1]) as s,
        ):
            await s.initialize()
            out.append(await s.list_tools())
            for name, args in calls:
                out.append(await s.call_tool(name, args))
    return out


def _team_server(tmp_path: Path, db: str | None) -> tuple[Server, dict[str, str]]:
    from wisp.server import keys_create, teams_add, teams_member, users_add

    srv = Server(tmp_path / "srv", db=db)
    for name in ("alice", "bob", "carol"):
        users_add(name, db=srv.db_url)
    teams_add("lab", db=srv.db_url)
    teams_member("lab", "alice", "member", db=srv.db_url)
    teams_member("lab", "bob", "viewer", db=srv.db_url)
    keys = {
        "alice": keys_create("write", "a", db=srv.db_url, user="alice")[1],
        "bob": keys_create("write", "b", db=srv.db_url, user="bob")[1],
        "carol": keys_create("write", "c", db=srv.db_url, user="carol")[1],
    }
    return srv, keys


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_tools_under_the_callers_rights(tmp_path: Path, backend: str) -> None:
    """A member reads a 10,000-step history exactly across pages and tags a run; a viewer
    reads but cannot tag; an outsider sees no project and no run."""
    with _db(backend, tmp_path) as db:
        srv, keys = _team_server(tmp_path, db)
        with srv:
            settings = {"server_url": srv.url, "api_key": keys["alice"], "system_metrics": False}
            run = wisp.init(project="exp", entity="lab", dir=str(tmp_path / "a"), settings=settings)
            for s in range(10_000):
                run.log({"loss": 1.0 / (s + 1)}, step=s)
            run.finish()
            path = run.path

            def history(key: str) -> list[list[Any]]:
                got: list[list[Any]] = []
                cursor = None
                while True:
                    args = {"run": path, "key": "loss", "cursor": cursor, "limit": 4000}
                    _, res = anyio.run(_calls, srv.url, key, [("get_metric_history", args)])
                    assert not res.is_error, res.content
                    got += res.structured_content["points"]
                    cursor = res.structured_content["next_cursor"]
                    if cursor is None:
                        return got

            pts = history(keys["alice"])
            assert [p[0] for p in pts] == list(range(10_000))
            assert [p[1] for p in pts] == [1.0 / (s + 1) for s in range(10_000)]

            _, tagged = anyio.run(
                _calls, srv.url, keys["alice"], [("add_tags", {"run": path, "tags": ["seen"]})]
            )
            assert tagged.structured_content["tags"] == ["seen"]

            _, listed, refused = anyio.run(
                _calls,
                srv.url,
                keys["bob"],
                [
                    ("list_runs", {"project": "lab/exp"}),
                    ("add_tags", {"run": path, "tags": ["bob"]}),
                ],
            )
            assert [r["id"] for r in listed.structured_content["runs"]] == [run.id]
            assert refused.is_error and "403" in refused.content[0].text
            with wisp.Api(server_url=srv.url, api_key=keys["alice"]) as api:
                assert api.run(path).tags == ["seen"]

            _, projects, hidden = anyio.run(
                _calls,
                srv.url,
                keys["carol"],
                [("list_projects", {}), ("get_run", {"run": path})],
            )
            assert projects.structured_content["projects"] == []
            assert hidden.is_error


STOPPABLE = r"""
import sys, time, wisp
run = wisp.init(project="exp", settings={"system_metrics": False, "heartbeat_interval": 0.2})
print(run.id, flush=True)
try:
    for s in range(100000):
        wisp.log({"loss": 1.0}, step=s)
        time.sleep(0.01)
except KeyboardInterrupt:
    print("interrupted", flush=True)
    raise
"""


def test_stop_run_ends_a_live_run_cleanly(tmp_path: Path) -> None:
    """stop_run asks a live training process to stop: it exits as on Ctrl+C within seconds,
    and the server shows the run as killed with its points kept."""
    with Server(tmp_path / "srv") as srv:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("WISP_", "WANDB_"))}
        env.update(WISP_SERVER_URL=srv.url, WISP_API_KEY=srv.key, WISP_CONFIG=str(tmp_path / "c"))
        proc = subprocess.Popen(
            [sys.executable, "-c", STOPPABLE],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
        try:
            assert proc.stdout is not None
            run_id = proc.stdout.readline().strip()
            time.sleep(1.0)
            _, stopped = anyio.run(
                _calls, srv.url, srv.key, [("stop_run", {"run": f"exp/{run_id}"})]
            )
            assert not stopped.is_error, stopped.content
            out, err = proc.communicate(timeout=60)
        finally:
            stop(proc)
        assert "interrupted" in out
        assert "was asked to stop from the server" in err
        assert proc.returncode != 0
        with wisp.Api(server_url=srv.url, api_key=srv.key) as api:
            run = api.run(f"exp/{run_id}")
            assert run.state == "killed"
            assert len(list(run.scan_history(keys=["loss"]))) > 10


def test_report_tools_write_versions(tmp_path: Path) -> None:
    """An agent creates a report, appends a line panel and freezes it through /mcp: three
    versions on the server, the last with the panel and its run set pinned."""
    with Server(tmp_path / "srv") as srv:
        settings = {"server_url": srv.url, "api_key": srv.key, "system_metrics": False}
        run = wisp.init(project="exp", dir=str(tmp_path / "a"), settings=settings)
        for s in range(20):
            run.log({"loss": 1.0 / (s + 1)}, step=s)
        run.finish()
        _, made = anyio.run(
            _calls,
            srv.url,
            srv.key,
            [("create_report", {"project": "exp", "title": "LR", "text": "Loss falls."})],
        )
        assert not made.is_error, made.content
        path = f"exp/{made.structured_content['id']}"
        calls: list[tuple[str, dict[str, Any]]] = [
            ("add_report_panel", {"report": path, "type": "line", "y": ["loss"]}),
            ("freeze_report", {"report": path}),
            ("add_report_panel", {"report": path, "type": "nope"}),
        ]
        _, panel, frozen, bad = anyio.run(_calls, srv.url, srv.key, calls)
        assert panel.structured_content["version"] == 2
        assert frozen.structured_content["version"] == 3 and frozen.structured_content["frozen"]
        assert bad.is_error and "nope" in bad.content[0].text
        with wisp.Api(server_url=srv.url, api_key=srv.key) as api:
            ref = api.report(path)
            assert [v["version"] for v in ref.versions()] == [1, 2, 3]
            report = wisp.Report.from_markdown(ref.markdown)
            assert [p.type for p in report.panels] == ["line"]
            assert "Loss falls." in ref.markdown and run.id in ref.markdown

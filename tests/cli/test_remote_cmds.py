"""`wisp server`, `server keys`, `login`, `sync` and `gc` against a real server process (src/wisp/cli/_remote.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from tests._procs import reaped, stop
from tests.cli._helpers import make_run, wisp_cli
from tests.cli.conftest import need_server


def test_keys_list_and_revoke(tmp_path: Path, server: tuple[str, str]) -> None:
    """keys list shows the created key and keys revoke disables it; revoking again is an error."""
    db = f"sqlite:///{tmp_path / 'server.db'}"
    keys = json.loads(
        wisp_cli("server", "keys", "list", "--db", db, "--json", cwd=tmp_path).stdout
    )["keys"]
    assert len(keys) == 1 and keys[0]["scope"] == "write"
    key_id = keys[0]["id"]
    res = wisp_cli("server", "keys", "revoke", key_id, "--db", db, cwd=tmp_path)
    assert res.returncode == 0 and res.stdout.strip() == f"revoked {key_id}"
    res = wisp_cli("server", "keys", "revoke", key_id, "--db", db, cwd=tmp_path)
    assert res.returncode == 2 and "no active key" in res.stderr
    url, key = server
    res = wisp_cli("login", url, "--key", key, cwd=tmp_path)
    assert res.returncode == 1 and "refused the key" in res.stderr


def test_login_sync_then_gc(tmp_path: Path, server: tuple[str, str]) -> None:
    """login + sync --all upload every run to the real server; then gc deletes exactly those runs."""
    url, key = server
    a = make_run(tmp_path, "for i in range(50):\n    wisp.log({'loss': 1 / (i + 1)})", name="a")
    b = make_run(tmp_path, "wisp.log({'loss': 3})", name="b")
    assert wisp_cli("login", url, "--key", key, cwd=tmp_path).returncode == 0
    res = wisp_cli("gc", "--dry-run", cwd=tmp_path)
    assert "0 fully synced run(s)" in res.stdout
    res = wisp_cli("sync", "--all", cwd=tmp_path, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("synced 2 run(s), 0 already up to date")
    req = urllib.request.Request(
        f"{url}/api/v1/projects/proj/runs", headers={"Authorization": f"Bearer {key}"}
    )
    with urllib.request.urlopen(req, timeout=10) as resp:
        runs = json.load(resp)["runs"]
    assert sorted(r["name"] for r in runs) == ["a", "b"]
    res = wisp_cli("sync", str(a), cwd=tmp_path, timeout=120)
    assert res.returncode == 0 and "1 already up to date" in res.stdout
    res = wisp_cli("gc", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert not a.exists() and not b.exists()
    assert "2 fully synced run(s)" in res.stdout


def test_sync_unreachable_server_fails(tmp_path: Path) -> None:
    """sync to a server that does not answer gives up after --give-up-after seconds without progress and exits 1 with a one-line error."""
    need_server()
    run = make_run(tmp_path, "wisp.log({'x': 1})")
    t0 = time.monotonic()
    argv = ["sync", str(run), "--server", "http://127.0.0.1:9", "--key", "k"]
    res = wisp_cli(*argv, "--give-up-after", "3", cwd=tmp_path, timeout=120)
    assert res.returncode == 1
    assert res.stderr.startswith("wisp: error: ") and "Traceback" not in res.stderr
    assert time.monotonic() - t0 < 60  # not the default 60 s of retries


def test_sync_of_a_run_not_started_yet_says_so(tmp_path: Path, server: tuple[str, str]) -> None:
    """sync of a run whose file has no run record yet (its process only just made it) exits 0
    with a line naming it as not started, beside a run it uploads."""
    from wisp._runfile import HEADER

    url, key = server
    done = make_run(tmp_path, "wisp.log({'loss': 3})", name="done")
    fresh = tmp_path / "wisp" / "run-20260101_000000-fresh"
    fresh.mkdir(parents=True)
    (fresh / "run.wisp").write_bytes(HEADER)
    res = wisp_cli("sync", str(done), str(fresh), "--server", url, "--key", key, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert f"{fresh}: skipped, no run record yet" in res.stdout
    assert "synced 1 run(s), 0 already up to date, 1 not started yet" in res.stdout


def test_sync_without_paths_is_usage_error(tmp_path: Path) -> None:
    """sync with neither paths nor --all is a usage error with a hint."""
    res = wisp_cli("sync", cwd=tmp_path)
    assert res.returncode == 2 and "hint: give run directories" in res.stderr


def test_ui_serves_local_runs_and_prints_its_url(tmp_path: Path) -> None:
    """`wisp ui` prints its loopback URL, opens no browser, and serves the runs of --dir."""
    need_server()
    make_run(tmp_path, "run.log({'loss': 0.5})", name="ui-run")
    env = {k: v for k, v in os.environ.items() if not k.startswith("WISP_")}
    env.update(WISP_CONFIG=str(tmp_path / "cfg.json"), BROWSER="false")
    cmd = [sys.executable, "-m", "wisp.cli", "ui", "--port", "0", "--dir", str(tmp_path)]
    proc = subprocess.Popen(
        [*cmd, "--data", str(tmp_path / "data")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("wisp dashboard: http://127.0.0.1:"), line
        url = line.split()[2]
        deadline = time.monotonic() + 30
        names: list[str] = []
        while time.monotonic() < deadline and "ui-run" not in names:
            with urllib.request.urlopen(f"{url}/api/v1/projects/proj/runs", timeout=5) as r:
                names = [run["name"] for run in json.load(r)["runs"]]
            time.sleep(0.2)
        assert "ui-run" in names
    finally:
        proc.terminate()
        stop(proc, 20)


def _ui_runs(cwd: Path, env: dict[str, str], *args: str, want: str) -> tuple[list[str], str]:
    """Start `wisp ui ARGS` in ``cwd``; the run names it shows once ``want`` is among them
    (or after 30 s), and what it said on stderr."""
    cmd = [sys.executable, "-m", "wisp.cli", "ui", "--port", "0", *args]
    pipes = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE}
    with reaped(subprocess.Popen(cmd, **pipes, text=True, env=env, cwd=cwd)) as proc:  # type: ignore[call-overload]
        try:
            line = proc.stdout.readline()
            assert line.startswith("wisp dashboard: http://127.0.0.1:"), line + proc.stderr.read()
            url = line.split()[2]
            deadline = time.monotonic() + 30
            names: list[str] = []
            while time.monotonic() < deadline and want not in names:
                with urllib.request.urlopen(f"{url}/api/v1/projects/proj/runs", timeout=5) as r:
                    names = [run["name"] for run in json.load(r)["runs"]]
                time.sleep(0.2)
        finally:
            proc.terminate()
            _out, err = proc.communicate(timeout=20)
    return names, err


def test_ui_says_what_it_follows_and_ui_dir_shows_that_folder_only(tmp_path: Path) -> None:
    """`wisp ui` says which folders it follows and that its database keeps other folders' runs; `wisp ui DIR` shows DIR's runs alone, not those imported before from elsewhere."""
    need_server()
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    make_run(a, name="run-a")
    make_run(b, name="run-b")
    env = {k: v for k, v in os.environ.items() if not k.startswith("WISP_")}
    env.update(WISP_CONFIG=str(tmp_path / "cfg.json"), WISP_DATA_DIR=str(tmp_path / "data"))
    names, err = _ui_runs(a, env, want="run-a")
    assert names == ["run-a"]
    assert f"wisp ui: follows the runs under {a}\n" in err
    assert "it keeps the runs of every folder `wisp ui` followed before" in err
    names, err = _ui_runs(a, env, str(b), want="run-b")
    assert names == ["run-b"]  # run-a, in the shared database, is not shown
    assert f"wisp ui: follows the runs under {b}\n" in err
    assert f"database and media in {tmp_path / 'data' / 'folders'}" in err


def test_sync_sets_aside_a_refused_record_and_retry_rejected_keeps_it(
    tmp_path: Path, server: tuple[str, str]
) -> None:
    """`wisp sync` uploads a run holding a record the server refuses, says it set one aside; --retry-rejected tries it again."""
    url, key = server
    body = (
        "for i in range(20):\n"
        "    wisp.log({'loss': float(i)})\n"
        "run.on_writer(lambda: run.writer.append(7, {'lines': [[1.0, 'stdout', 'a\\x00b']]}))\n"
        "for i in range(20, 40):\n"
        "    wisp.log({'loss': float(i)})"
    )
    run = make_run(tmp_path, body)
    res = wisp_cli("sync", str(run), "--server", url, "--key", key, cwd=tmp_path, timeout=120)
    assert res.returncode == 0, res.stderr
    assert "1 record(s) refused by the server are set aside" in res.stdout
    assert len((run / "rejected.jsonl").read_text().splitlines()) == 1
    res = wisp_cli(
        "sync", str(run), "--retry-rejected", "--server", url, "--key", key, cwd=tmp_path
    )
    assert res.returncode == 0, res.stderr
    assert "1 record(s) refused" in res.stdout  # still refused: kept for a later retry
    assert len((run / "rejected.jsonl").read_text().splitlines()) == 1

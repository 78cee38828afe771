"""The first hour with wisp: what a new user's script and commands say (issue 21).

Each test runs a real script or `wisp` command in a subprocess, against a real server
(wisp.testing.Server) where one is needed, and checks the message the user reads.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli._helpers import make_run, wisp_cli
from tests.cli.conftest import need_server
from wisp.testing import Server, free_port

QUICKSTART = """
import time, wisp
run = wisp.init(project="quick", settings={"system_metrics": False, "git": False})
for i in range(10):
    run.log({"loss": 1 / (i + 1)})
time.sleep(0.3)
print("url", run.url, flush=True)
"""


def _script(
    tmp_path: Path, env: dict[str, str], code: str = QUICKSTART
) -> tuple[subprocess.CompletedProcess[str], float]:
    """Run ``code`` as a user's script in ``tmp_path`` with only ``env``'s wisp variables."""
    e = {k: v for k, v in os.environ.items() if not k.startswith(("WISP_", "WANDB_"))}
    e["WISP_CONFIG"] = str(tmp_path / "no-config.json")
    e.update(env)
    path = tmp_path / "train.py"
    path.write_text(code)
    t0 = time.monotonic()
    proc = subprocess.run(
        [sys.executable, str(path)], cwd=tmp_path, env=e, capture_output=True, text=True, timeout=90
    )
    return proc, time.monotonic() - t0


@pytest.fixture
def live_server(tmp_path: Path) -> Iterator[Server]:
    need_server()
    with Server(tmp_path / "srv") as srv:
        yield srv


def test_quick_start_offline_says_where_the_run_is_and_how_to_see_it(tmp_path: Path) -> None:
    """An offline quick start prints the run directory and `wisp ui` on stderr; WISP_SILENT hides it."""
    proc, _ = _script(tmp_path, {})
    assert proc.returncode == 0, proc.stderr
    (run_dir,) = (tmp_path / "wisp").glob("run-*")
    lines = proc.stderr.splitlines()
    assert lines[0].startswith("wisp: offline run ") and lines[0].endswith(str(run_dir))
    assert (
        lines[1].startswith("wisp: view it with `wisp ui`") and f"wisp sync {run_dir}" in lines[1]
    )
    assert len(lines) == 2
    assert "url None" in proc.stdout
    quiet, _ = _script(tmp_path, {"WISP_SILENT": "1"})
    assert quiet.returncode == 0 and quiet.stderr == "", quiet.stderr


def test_quick_start_online_prints_the_dashboard_url_which_is_run_url(
    tmp_path: Path, live_server: Server
) -> None:
    """An online quick start prints the run's dashboard page, equal to run.url, and the server serves it."""
    env = {"WISP_SERVER_URL": live_server.url, "WISP_API_KEY": live_server.key}
    proc, _ = _script(tmp_path, env)
    assert proc.returncode == 0, proc.stderr
    (run_dir,) = (tmp_path / "wisp").glob("run-*")
    run_id = run_dir.name.rsplit("-", 1)[1]
    url = f"{live_server.url}/#/p/quick/r/{run_id}"
    assert f"url {url}" in proc.stdout
    assert f"wisp: view it at {url}\n" in proc.stderr
    assert re.search(rf"^wisp: run \S+ \({run_id}\) is written to {run_dir}$", proc.stderr, re.M)
    with urllib.request.urlopen(url.split("#")[0], timeout=10) as resp:  # the dashboard
        assert resp.status == 200
    assert live_server.get(f"/runs/{run_id}")["project"] == "quick"


def test_a_refused_api_key_stops_the_script_at_init_with_the_reason(
    tmp_path: Path, live_server: Server
) -> None:
    """A wrong API key makes init() raise at once with the server's reason: exit 1, no run left behind."""
    env = {"WISP_SERVER_URL": live_server.url, "WISP_API_KEY": "wrong", "WISP_INIT_TIMEOUT": "30"}
    proc, took = _script(tmp_path, env)
    assert proc.returncode == 1 and "url" not in proc.stdout
    assert took < 10
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("wisp.errors.FatalApiError: the server ")
    assert "HTTP 401: the API key is not valid" in last and "WISP_API_KEY" in last
    assert proc.stderr.count('File "') == 2  # the script's line and wisp.init(): no internals
    assert not list((tmp_path / "wisp").glob("run-*"))


def test_server_down_says_so_once_and_does_not_hold_the_exit(tmp_path: Path) -> None:
    """With nothing listening, a 0.3 s script says it cannot reach the server, exits 0 within seconds, names `wisp sync`."""
    url = f"http://127.0.0.1:{free_port()}"
    proc, took = _script(tmp_path, {"WISP_SERVER_URL": url, "WISP_API_KEY": "k"})
    assert proc.returncode == 0, proc.stderr
    assert took < 8, f"the script took {took:.1f}s with the server down"
    (run_dir,) = (tmp_path / "wisp").glob("run-*")
    assert proc.stderr.count(f"cannot reach the server {url}") == 1, proc.stderr
    assert proc.stderr.count("not uploaded") == 1 and f"`wisp sync {run_dir}`" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize(
    ("env", "code", "expected"),
    [
        (
            {},
            'import wisp; wisp.init(settings={"flush_intervall": 1})',
            "unknown setting 'flush_intervall' in settings (did you mean 'flush_interval'?)",
        ),
        (
            {"WISP_MODE": "onlin"},
            "import wisp; wisp.init()",
            "setting 'mode' from environment variable WISP_MODE must be one of 'offline', "
            "'online', 'disabled', got 'onlin' (did you mean 'online'?)",
        ),
        (
            {"WISP_SERVER_URL": "localhost:8080"},
            "import wisp; wisp.init()",
            "environment variable WISP_SERVER_URL must start with http:// or https://, got "
            "'localhost:8080' (did you mean 'http://localhost:8080'?)",
        ),
    ],
    ids=["setting-typo", "mode-typo", "url-without-scheme"],
)
def test_settings_errors_name_the_variable_and_suggest_a_fix(
    tmp_path: Path, env: dict[str, str], code: str, expected: str
) -> None:
    """A bad setting stops init() with one UsageError naming where it came from and the likely fix."""
    proc, _ = _script(tmp_path, env, code)
    assert proc.returncode == 1
    assert expected in proc.stderr.strip().splitlines()[-1], proc.stderr
    assert proc.stderr.count('File "') == 2, proc.stderr  # no frames from inside wisp


def test_an_unknown_wisp_variable_warns_once_with_a_suggestion(tmp_path: Path) -> None:
    """WISP_SERVR_URL is not silently ignored: one warning suggests WISP_SERVER_URL."""
    code = "import wisp\nwisp.init(mode='offline').finish()\nwisp.init(mode='offline').finish()"
    proc, _ = _script(tmp_path, {"WISP_SERVR_URL": "http://h:1"}, code)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("WISP_SERVR_URL") == 1, proc.stderr
    assert "did you mean 'WISP_SERVER_URL'?" in proc.stderr


@pytest.fixture
def busy_port() -> Iterator[int]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield s.getsockname()[1]


@pytest.mark.parametrize("command", ["ui", "server"])
def test_a_busy_port_is_one_line_and_exit_code_2(
    tmp_path: Path, busy_port: int, command: str
) -> None:
    """`wisp ui` / `wisp server` on a port in use say so in one line and exit 2, no traceback."""
    need_server()
    extra = ["--data", str(tmp_path / "ui")] if command == "ui" else []
    if command == "server":
        extra = ["--db", f"sqlite:///{tmp_path / 's.db'}", "--media-dir", str(tmp_path / "m")]
    res = wisp_cli(command, "--port", str(busy_port), *extra, cwd=tmp_path, timeout=60)
    assert res.returncode == 2, res.stderr
    assert res.stderr.startswith("wisp: error: cannot start the ") and "Traceback" not in res.stderr
    assert f"port {busy_port} on 127.0.0.1 is already in use" in res.stderr
    assert "--port" in res.stderr


def test_wisp_ui_refuses_a_non_loopback_host_without_a_traceback(tmp_path: Path) -> None:
    """`wisp ui --host 0.0.0.0` is a usage error (exit 2) naming `wisp server`, no traceback."""
    need_server()
    res = wisp_cli("ui", "--host", "0.0.0.0", "--port", "0", "--data", str(tmp_path), cwd=tmp_path)
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert "loopback only" in res.stderr and "`wisp server`" in res.stderr


def test_wisp_sync_takes_a_run_id_prefix(tmp_path: Path, live_server: Server) -> None:
    """`wisp sync <id prefix>` uploads that run, as `show` and `export` take prefixes."""
    run_dir = make_run(tmp_path, "run.log({'loss': 0.5})")
    run_id = run_dir.name.rsplit("-", 1)[1]
    res = wisp_cli(
        "sync", run_id[:5], "--dir", str(tmp_path), "--server", live_server.url,
        "--key", live_server.key, cwd=tmp_path,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert "synced 1 run(s)" in res.stdout
    assert live_server.points(run_id, "loss") == [(0, 0.5)]
    res = wisp_cli("sync", "zz-no-such", "--dir", str(tmp_path), "--server", live_server.url,
                   cwd=tmp_path)  # fmt: skip
    assert res.returncode == 2 and "no run 'zz-no-such'" in res.stderr


def test_wisp_server_says_where_its_data_lives(tmp_path: Path) -> None:
    """`wisp server` prints its database and media directory when it starts."""
    need_server()
    srv = Server(tmp_path)
    with srv:
        pass
    log = srv.log.read_text()
    assert f"wisp server: database sqlite:///{tmp_path / 'server.db'}" in log
    assert f"wisp server: media files in {tmp_path / 'server-media'}" in log


def test_wisp_server_errors_before_start_are_one_line(tmp_path: Path) -> None:
    """A port out of range (exit 2) and a database that cannot be opened (exit 1, password hidden) are one line each, no traceback."""
    need_server()
    db = f"sqlite:///{tmp_path / 's.db'}"
    res = wisp_cli("server", "--port", "70000", "--db", db, cwd=tmp_path)
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert "port must be 0-65535, got 70000" in res.stderr
    pytest.importorskip("psycopg")
    res = wisp_cli(
        "server", "--port", "0", "--db", "postgresql://u:hunter2@127.0.0.1:1/x", cwd=tmp_path
    )
    assert res.returncode == 1 and "Traceback" not in res.stderr, res.stderr
    assert res.stderr.startswith("wisp: error: cannot open the database postgresql")
    assert "u:***@127.0.0.1:1/x" in res.stderr and "hunter2" not in res.stderr


def test_adding_a_user_with_an_empty_stdin_is_refused_not_passwordless(tmp_path: Path) -> None:
    """`wisp server users add bob </dev/null` exits 2 saying no password was given and how to give one; no user is made."""
    need_server()
    db = f"sqlite:///{tmp_path / 's.db'}"
    res = wisp_cli("server", "users", "add", "bob", "--db", db, cwd=tmp_path, stdin="")
    assert res.returncode == 2, res.stderr
    assert res.stderr.splitlines() == [
        "wisp: error: no password given (standard input was empty)",
        "hint: type one at the prompt, or give it with --password-file FILE or WISP_PASSWORD; "
        "--no-password makes a user with API keys only",
    ]
    users = wisp_cli("server", "users", "ls", "--json", "--db", db, cwd=tmp_path)
    assert "bob" not in users.stdout

"""`wisp login` and the config file it writes (src/wisp/cli/_remote.py, src/wisp/_userconfig.py)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

from tests.cli._helpers import wisp_cli


def test_login_saves_0600_config_used_by_init(tmp_path: Path, server: tuple[str, str]) -> None:
    """login verifies the key with a real server, writes the config with mode 0600, and init() picks the values up."""
    url, key = server
    res = wisp_cli("login", url, "--key", key, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    cfg = tmp_path / "wisp-config.json"
    assert stat.S_IMODE(cfg.stat().st_mode) == 0o600
    assert json.loads(cfg.read_text()) == {"version": 1, "server_url": url, "api_key": key}
    code = (
        "from wisp._settings import Settings; s = Settings.resolve(); "
        "print(s.server_url, s.api_key)"
    )
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("WISP_")},
        "WISP_CONFIG": str(cfg),
    }
    out = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout.split()
    assert out == [url, key]
    env["WISP_API_KEY"] = "from-env"  # environment variables win over the file
    out = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout.split()
    assert out == [url, "from-env"]


def test_login_rejected_key_and_unreachable(tmp_path: Path, server: tuple[str, str]) -> None:
    """A key the real server refuses, or an unreachable server, fails with exit 1, one line plus hint, nothing saved."""
    url, _key = server
    res = wisp_cli("login", url, "--key", "wrong", cwd=tmp_path)
    assert res.returncode == 1
    assert res.stderr.splitlines()[0] == f"wisp: error: {url} refused the key (HTTP 401)"
    assert "Traceback" not in res.stderr
    res = wisp_cli("login", "http://127.0.0.1:9", "--key", "k", cwd=tmp_path)
    assert res.returncode == 1 and "cannot reach" in res.stderr
    assert not (tmp_path / "wisp-config.json").exists()
    res = wisp_cli("login", "http://127.0.0.1:9", "--key", "k", "--no-verify", cwd=tmp_path)
    assert res.returncode == 0 and (tmp_path / "wisp-config.json").exists()


def test_login_usage_errors(tmp_path: Path) -> None:
    """A malformed URL or a missing key (no terminal to prompt on) is a usage error, exit 2."""
    res = wisp_cli("login", "localhost:8080", "--key", "k", cwd=tmp_path)
    assert res.returncode == 2 and "must look like http://host:port" in res.stderr
    res = wisp_cli("login", "http://localhost:1", cwd=tmp_path, stdin="")
    assert res.returncode == 2 and res.stderr.startswith("wisp: error: no API key given")


def test_login_reads_the_key_from_stdin_or_a_file(tmp_path: Path) -> None:
    """A key piped in or named by --key-file is saved, so it never has to be in argv (ps)."""
    import json

    url = "http://127.0.0.1:9"
    res = wisp_cli("login", url, "--no-verify", cwd=tmp_path, stdin="wisp_w_piped\n")
    assert res.returncode == 0, res.stderr
    assert json.loads((tmp_path / "wisp-config.json").read_text())["api_key"] == "wisp_w_piped"
    (tmp_path / "key.txt").write_text("wisp_w_fromfile\n")
    res = wisp_cli("login", url, "--no-verify", "--key-file", "key.txt", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert json.loads((tmp_path / "wisp-config.json").read_text())["api_key"] == "wisp_w_fromfile"

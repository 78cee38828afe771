"""``wisp artifact put|get|ls|alias`` as a user runs them, against a real server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest


def _wisp(*args: str, server: Any) -> str:
    env = {**os.environ, "WISP_SERVER_URL": server.url, "WISP_API_KEY": server.key}
    env["PYTHONPATH"] = str(Path(__file__).parents[2] / "src")
    out = subprocess.run(
        [sys.executable, "-m", "wisp.cli", "artifact", *args, "--project", "p"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


@pytest.mark.parametrize("server", ["sqlite"], indirect=True)
def test_put_get_ls_alias(server: Any, data: Path, tmp_path: Path) -> None:
    """put makes v0 then v1, ls lists it, alias moves a user alias, get downloads the aliased
    version byte for byte."""
    assert "v0 on" in _wisp("put", str(data), "--name", "ds", "--type", "dataset", server=server)
    (data / "f0.txt").write_text("new")
    put = _wisp(
        "put", str(data), "--name", "ds", "--type", "dataset", "--alias", "x", server=server
    )
    assert "v1 on" in put
    rows = json.loads(_wisp("ls", "--json", server=server))
    assert [(r["name"], r["versions"], r["latest"]) for r in rows] == [("ds", 2, "v1")]
    from wisp._upload._live import human_size

    table = _wisp("ls", server=server).splitlines()  # sizes as people read them
    assert table[1].split()[:4] == ["ds", "dataset", "2", "v1"]
    assert table[1].endswith(human_size(rows[0]["size"])) and "KB" in table[1]
    assert "-> v0" in _wisp("alias", "ds:v0", "prod", server=server)
    root = tmp_path / "got"
    _wisp("get", "ds:prod", "--root", str(root), server=server)
    assert (root / "f0.txt").read_text() == "file 0\n"
    assert (root / "sub" / "g3.bin").read_bytes() == bytes([3]) * 1003

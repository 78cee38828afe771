"""``import wisp`` costs nothing: stdlib-only allowlist, no threads, no files (src/wisp/__init__.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

# Everything `import wisp` may add to sys.modules in a fresh interpreter.
ALLOWED = {"wisp", "wisp.errors", "__future__"}

PROBE = """
import json, os, sys, threading
before = set(sys.modules)
fds_before = set(os.listdir('/proc/self/fd'))
import wisp
added = sorted(set(sys.modules) - before)
fds_after = set(os.listdir('/proc/self/fd'))
print(json.dumps({"added": added, "threads": threading.active_count(),
                  "new_fds": sorted(fds_after - fds_before), "cwd": sorted(os.listdir('.'))}))
"""


def test_import_loads_only_allowlisted_modules_and_starts_nothing(tmp_path: Path) -> None:
    """A fresh interpreter importing wisp loads only allowlisted modules, starts no thread, opens no file."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("WISP_")}
    out = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    info = json.loads(out.stdout)
    assert set(info["added"]) <= ALLOWED, set(info["added"]) - ALLOWED
    assert len(info["added"]) <= 25
    assert info["threads"] == 1
    assert info["new_fds"] == []
    assert info["cwd"] == []


def test_public_names_resolve_lazily() -> None:
    """Every name in wisp.__all__ resolves (lazily where it is not loaded at import)."""
    import wisp

    for name in wisp.__all__:
        if name in ("config", "summary"):
            continue
        assert hasattr(wisp, name), name


def test_a_whole_offline_run_stays_off_heavy_modules(tmp_path: Path) -> None:
    """init() + log() + finish() in offline mode never imports typing, logging, shutil, numpy or the server."""
    code = (
        "import sys, wisp\n"
        "r = wisp.init(project='p')\n"
        "wisp.log({'x': 1.0})\n"
        "r.finish()\n"
        "heavy = {'typing', 'logging', 'shutil', 'numpy', 'wisp.server', 'wisp._upload', 'http.client'}\n"
        "print(sorted(heavy & set(sys.modules)))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("WISP_")}
    env["WISP_CONFIG"] = str(tmp_path / "none.json")
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert out.stdout.strip() == "[]", out.stdout

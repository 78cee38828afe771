"""Run a Python script in a real child interpreter, with a timeout that fails the test."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

import wisp


def child_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("WISP_")}
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "TORCHELASTIC_RUN_ID"):
        env.pop(name, None)
    env.update(
        WISP_DIR=str(tmp_path),
        WISP_GIT="false",
        WISP_SYSTEM_METRICS="false",
        WISP_CONSOLE="off",
        PYTHONUNBUFFERED="1",
    )
    env.update(extra)
    return env


def run_script(
    tmp_path: Path,
    code: str,
    *args: str,
    timeout: float = 60,
    name: str = "script.py",
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run ``code`` as a script file under ``-W error``; a hang fails the test."""
    script = tmp_path / name
    script.write_text(textwrap.dedent(code))
    try:
        return subprocess.run(
            [sys.executable, "-W", "error", str(script), *args],
            cwd=tmp_path,
            env=env or child_env(tmp_path),
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"{name} hung for {timeout}s; stderr: {exc.stderr!r}")


def run_dirs(base: Path) -> list[Path]:
    return sorted((base / "wisp").glob("run-*"))


def only_run(base: Path) -> wisp.RunData:
    dirs = run_dirs(base)
    assert len(dirs) == 1, dirs
    return wisp.open_run(dirs[0])


def rows(data: wisp.RunData) -> list[dict[str, object]]:
    """History without timestamps, for comparing runs."""
    return [{k: v for k, v in r.items() if k != "_timestamp"} for r in data.history()]


@contextlib.contextmanager
def tmpfs(where: Path, size: str) -> Iterator[Path]:
    """A tmpfs of ``size`` (``"6m"``) mounted at ``where`` for the test (needs root, as CI has);
    skips with the reason when mounting is not permitted here."""
    where.mkdir()
    res = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
        capture_output=True,
        text=True,
        check=False,
    )
    if res.returncode != 0:
        pytest.skip(f"mounting a tmpfs is not permitted here: {res.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)

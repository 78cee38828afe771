"""Run metadata without subprocesses: git commit and branch read from files (src/wisp/_meta.py)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from wisp._meta import collect, git_info


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


def test_git_info_matches_git_for_loose_and_packed_refs(tmp_path: Path) -> None:
    """git_info reads the same commit and branch as git itself, before and after packing refs."""
    _git(tmp_path, "init", "-q", "-b", "main")
    (tmp_path / "f").write_text("x")
    _git(tmp_path, "add", "f")
    _git(tmp_path, "commit", "-qm", "c")
    sub = tmp_path / "a" / "b"
    sub.mkdir(parents=True)
    head = _git(tmp_path, "rev-parse", "HEAD")
    assert git_info(str(sub)) == {"commit": head, "branch": "main"}
    _git(tmp_path, "pack-refs", "--all")
    assert git_info(str(sub)) == {"commit": head, "branch": "main"}


def test_no_repository_gives_none(tmp_path: Path) -> None:
    """Outside a repository there is no git info, and collect() still describes the host."""
    assert git_info(str(tmp_path)) is None or Path("/.git").exists()
    meta = collect(git=False)
    assert meta["git"] is None and meta["host"] and meta["pid"] > 0

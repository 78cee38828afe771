"""Facts about where a run happens: host, Python, platform, git.  Cheap, no subprocess."""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # typing costs ~15 ms to import; only type checkers need it
if TYPE_CHECKING:
    from typing import Any

__all__ = ["collect", "git_info", "process_alive"]


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read().strip()
    except OSError:
        return None


def _find_git_dir(start: str) -> str | None:
    cur = os.path.abspath(start)
    while True:
        candidate = os.path.join(cur, ".git")
        if os.path.isdir(candidate):
            return candidate
        if os.path.isfile(candidate):  # worktree or submodule: "gitdir: <path>"
            text = _read(candidate) or ""
            if text.startswith("gitdir:"):
                return os.path.normpath(os.path.join(cur, text[7:].strip()))
        parent = os.path.dirname(cur)
        if parent == cur:
            return None
        cur = parent


def git_info(start: str | None = None) -> dict[str, Any] | None:
    """Commit and branch of the repository around ``start``, read from files (no git process)."""
    git_dir = _find_git_dir(start or os.getcwd())
    if git_dir is None:
        return None
    head = _read(os.path.join(git_dir, "HEAD"))
    if not head:
        return None
    if not head.startswith("ref:"):
        return {"commit": head, "branch": None}
    ref = head[4:].strip()
    common = _read(os.path.join(git_dir, "commondir"))
    dirs = [git_dir] + ([os.path.normpath(os.path.join(git_dir, common))] if common else [])
    branch = ref.rsplit("/", 1)[-1] if ref.startswith("refs/heads/") else ref
    branch = ref[len("refs/heads/") :] if ref.startswith("refs/heads/") else branch
    for d in dirs:
        commit = _read(os.path.join(d, ref))
        if commit:
            return {"commit": commit, "branch": branch}
        packed = _read(os.path.join(d, "packed-refs"))
        if packed:
            for line in packed.splitlines():
                parts = line.split(" ", 1)
                if len(parts) == 2 and parts[1] == ref:
                    return {"commit": parts[0], "branch": branch}
    return {"commit": None, "branch": branch}


def collect(*, git: bool) -> dict[str, Any]:
    uname = os.uname()
    return {
        "host": uname.nodename,
        "pid": os.getpid(),
        "python": sys.version.split()[0],
        "implementation": sys.implementation.name,
        "platform": f"{uname.sysname}-{uname.release}-{uname.machine}",
        "executable": sys.executable,
        "argv": list(sys.argv),
        "cwd": os.getcwd(),
        "git": git_info() if git else None,
    }


def process_alive(pid: object, host: object) -> bool:
    """Whether process ``pid`` on ``host`` still runs; False for another host or no pid."""
    if type(pid) is not int or pid <= 0 or host != os.uname().nodename:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, owned by someone else
        return True
    return True

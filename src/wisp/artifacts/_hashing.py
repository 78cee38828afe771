"""sha256 of files at disk speed: large reads (hashlib releases the GIL above 2 KiB), a
thread pool so both cores hash at once, and one pass that hashes while it copies."""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Callable, Iterable, Sequence

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TypeVar

    T = TypeVar("T")
    R = TypeVar("R")

__all__ = ["CHUNK", "copy_hashing", "hash_files", "parallel", "sha256_file", "workers"]

CHUNK = 1 << 20  # 1 MiB reads: hashlib releases the GIL for buffers over 2 KiB


def workers() -> int:
    """Threads for hashing and copying: every core this process may use, at most 8."""
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        n = os.cpu_count() or 2
    return max(2, min(8, n))


def sha256_file(path: str) -> tuple[str, int]:
    """(hex sha256, size) of the file at ``path``."""
    h = hashlib.sha256()
    buf = bytearray(CHUNK)
    view = memoryview(buf)
    size = 0
    with open(path, "rb", buffering=0) as f:
        while True:
            n = f.readinto(buf)
            if not n:
                break
            h.update(view[:n])
            size += n
    return h.hexdigest(), size


def copy_hashing(src: str, dst: str) -> tuple[str, int]:
    """Copy ``src`` to ``dst`` (created, must not exist) and hash it in the same pass."""
    h = hashlib.sha256()
    buf = bytearray(CHUNK)
    view = memoryview(buf)
    size = 0
    with open(src, "rb", buffering=0) as fi, open(dst, "xb", buffering=0) as fo:
        while True:
            n = fi.readinto(buf)
            if not n:
                break
            h.update(view[:n])
            fo.write(view[:n])
            size += n
    return h.hexdigest(), size


def parallel(fn: Callable[[T], R], items: Sequence[T] | Iterable[T], n: int = 0) -> list[R]:
    """``[fn(x) for x in items]`` on ``n`` (default :func:`workers`) threads, this one
    included; every item is done, then the exception of the first failed item is raised.

    Plain threads, not ``concurrent.futures``: its pools refuse work once the interpreter
    is shutting down, which is when a run's exit hook stores the artifacts still pending."""
    items = list(items)
    n = min(n or workers(), len(items))
    if n <= 1:
        return [fn(x) for x in items]
    results: list[Any] = [None] * len(items)
    errors: dict[int, Exception] = {}
    todo = iter(range(len(items)))
    lock = threading.Lock()

    def work() -> None:
        while True:
            with lock:
                i = next(todo, None)
            if i is None:
                return
            try:
                results[i] = fn(items[i])
            except Exception as exc:  # noqa: BLE001 - raised by the calling thread below
                errors[i] = exc

    threads = [threading.Thread(target=work, name="wisp-hash", daemon=True) for _ in range(n - 1)]
    for t in threads:
        t.start()
    work()
    for t in threads:
        t.join()
    if errors:
        raise errors[min(errors)]
    return results


def hash_files(paths: Sequence[str], n: int = 0) -> list[tuple[str, int]]:
    """(sha256, size) of each file, hashed on ``n`` threads."""
    return parallel(sha256_file, paths, n)

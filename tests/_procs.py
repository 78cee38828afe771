"""Child processes in tests: killed, reaped and their pipes closed on every path.

A ``Popen`` left running or with open pipes when a test fails is collected during some
later test, whose ``ResourceWarning`` (an error here) then fails that innocent test.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Iterator
from typing import Any, TypeVar

P = TypeVar("P", bound="subprocess.Popen[Any]")


def stop(proc: subprocess.Popen[Any], grace: float = 0.0, *, group: bool = False) -> int:
    """Give ``proc`` up to ``grace`` seconds to exit, then SIGKILL it (its whole process
    group with ``group``, for ``start_new_session=True``); reap it, close its pipes and
    return its exit code."""
    if grace > 0:
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(grace)
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            if group:
                os.killpg(proc.pid, signal.SIGKILL)
            else:
                proc.kill()
    proc.wait()
    for pipe in (proc.stdin, proc.stdout, proc.stderr):
        if pipe is not None:
            with contextlib.suppress(OSError):  # stdin's flush to a dead child
                pipe.close()
    return proc.returncode


@contextlib.contextmanager
def reaped(proc: P, *, group: bool = False) -> Iterator[P]:
    """``with reaped(Popen(...)) as proc:`` stops ``proc`` (see :func:`stop`) on leaving the
    block, however it is left; inside, wait for it (``communicate``) as usual."""
    try:
        yield proc
    finally:
        stop(proc, group=group)

"""``wisp.doctor()``: a structured health report of wisp in this process.

Each item is a :class:`Check` ``(name, status, message, fix)`` with ``status``
one of ``"ok"``, ``"warn"``, ``"fail"``; ``fix`` is an empty string when there is
nothing to do.  The CLI prints the same list.  Doctor only reads state: it never
imports torch, never calls into ``torch.cuda`` and never sets a start method.
"""

from __future__ import annotations

import os
import sys
import threading
from typing import Any, NamedTuple

__all__ = ["Check", "doctor"]

OK, WARN, FAIL = "ok", "warn", "fail"


class Check(NamedTuple):
    """One finding of ``wisp.doctor()`` and ``wisp doctor`` (the CLI's JSON calls ``message``
    ``detail``)."""

    name: str
    status: str  # "ok" | "warn" | "fail"
    message: str
    fix: str = ""


def _start_method(now: dict[str, Any]) -> Check:
    method = now["start_method"]
    if method is None:
        default = "fork" if sys.platform == "linux" and sys.version_info < (3, 14) else "spawn"
        if sys.platform == "darwin":
            default = "spawn"
        return Check(
            "start method",
            OK,
            f"multiprocessing start method not set yet (platform default: {default}); "
            "wisp never sets it",
            "",
        )
    if method == "fork" and now["cuda_initialized"]:
        return Check(
            "start method",
            WARN,
            "start method is 'fork' and CUDA is initialised: forked workers cannot use CUDA",
            "use multiprocessing.get_context('spawn') or 'forkserver' for workers that touch CUDA",
        )
    return Check("start method", OK, f"multiprocessing start method is {method!r}", "")


def _torch(first: dict[str, Any], now: dict[str, Any]) -> list[Check]:
    if not first:
        state = "imported" if now["torch_imported"] else "not imported"
        cuda = "initialised" if now["cuda_initialized"] else "not initialised"
        return [Check("torch", OK, f"torch {state}, CUDA {cuda}; no run started yet", "")]
    before = "imported" if first["torch_imported"] else "not imported"
    cuda_before = "initialised" if first["cuda_initialized"] else "not initialised"
    cuda_now = "initialised" if now["cuda_initialized"] else "not initialised"
    return [
        Check(
            "torch",
            OK,
            f"before wisp's first init(): torch {before}, CUDA {cuda_before}; now CUDA {cuda_now} "
            "(wisp never imports torch nor initialises CUDA)",
            "",
        )
    ]


def _runs() -> list[Check]:
    from wisp import _run

    out: list[Check] = []
    live = [r for r in _run.live_runs() if r.pid == os.getpid()]
    for run in live + [r for r in _run.recent_runs() if r not in live]:
        label = f"run {run.id}"
        w = run.writer
        if w is None:
            continue
        failures = dict(w.failures)
        if failures:
            counts = ", ".join(f"{k}: {v}" for k, v in sorted(failures.items()))
            first = w.first_error
            out.append(
                Check(
                    label,
                    WARN,
                    f"{run.state}: background failures ({counts}); first: "
                    f"{type(first).__name__}: {first}",
                    "check the disk and the logged values named above; "
                    "finish() raises the first failure",
                )
            )
        elif run.state == "running" and not w.thread.is_alive():
            out.append(
                Check(label, FAIL, "running, but its writer thread has stopped", "call finish()")
            )
        else:
            waits = w.backpressure_waits
            note = f", log() waited for queue room {waits} times" if waits else ""
            out.append(Check(label, OK, f"{run.state}, no background failures{note}", ""))
    if not out:
        out.append(Check("runs", OK, "no live or recent run in this process", ""))
    return out


def _threads() -> Check:
    from wisp import _run

    names = [t.name for t in threading.enumerate()]
    # the live runs' writers (a finished run's thread may still be on its way out)
    mine = [r.writer for r in _run.live_runs() if r.pid == os.getpid() and r.writer is not None]
    live = len(mine)
    writers = sum(1 for w in mine if w.thread.is_alive())
    status = OK if writers >= live else FAIL
    return Check(
        "threads",
        status,
        f"{len(names)} threads, {writers} wisp writer threads for {live} live runs",
        "" if status == OK else "a writer thread died: finish() the run and start a new one",
    )


def _signals() -> Check:
    from wisp import _hooks

    if not _hooks.installed():
        return Check("signals", OK, "no run started yet; nothing hooked", "")
    state = _hooks.signal_state()
    text = "; ".join(f"{k}: {v}" for k, v in state.items())
    replaced = any("another handler" in v for v in state.values())
    return Check(
        "signals",
        WARN if replaced else OK,
        text,
        "make your handler call the previous one (signal.getsignal) so runs end as killed"
        if replaced
        else "",
    )


def _rank() -> Check:
    from wisp import _ranks
    from wisp.errors import UsageError

    try:
        info = _ranks.detect()
    except UsageError as exc:
        return Check("distributed", FAIL, str(exc), "fix RANK / WORLD_SIZE / LOCAL_RANK")
    if info is None:
        return Check("distributed", OK, "not a distributed launch (no RANK)", "")
    return Check(
        "distributed",
        OK,
        f"rank {info.rank} of {info.world_size} (local rank {info.local_rank}); "
        "only rank 0 records unless init(ranks='all')",
        "",
    )


def doctor() -> list[Check]:
    """Check wisp's state in this process: start method, torch/CUDA, runs, threads, signals."""
    from wisp import _hooks

    state = _hooks.process_state()
    now, first = state["now"], state["first_init"]
    checks = [_start_method(now), *_torch(first, now)]
    if first and first["pid"] != os.getpid():
        checks.append(
            Check(
                "process",
                OK,
                f"forked from pid {first['pid']}: the parent's runs are inert here",
                "",
            )
        )
    checks += _runs()
    checks.append(_threads())
    checks.append(_signals())
    checks.append(_rank())
    return checks

"""Process-level hooks: fork, exit, uncaught exceptions and signals (docs/safety.md).

Installed once per process at the first ``init()`` that records a run, never at
import.  Everything here must stay cheap and must never hang the process:

* fork: ``os.register_at_fork(after_in_child=...)`` makes the parent's runs
  inert in the child (see :func:`wisp._registry.after_fork_in_child`).
* exit: an ``atexit`` hook finishes runs nobody finished, all of them within
  one ``exit_timeout`` in total.
* uncaught exceptions: a chained ``sys.excepthook`` remembers how the
  interpreter is about to exit (``failed``/1, or ``killed``/130 for Ctrl+C).
* signals (setting ``signals``, main thread only): SIGTERM and SIGINT chain to
  the handler that was installed before.  When that handler is the default
  action the process is about to die, so runs are finished as ``killed``
  first, then the signal is re-raised with its default action.  When it is a
  Python callable (a user's handler, or Python's ``KeyboardInterrupt``) the
  run is flushed, remembered as ``killed`` in case the process now exits, and
  the previous handler runs: a caught KeyboardInterrupt or a graceful user
  shutdown keeps the run usable.  An ignored signal, or one whose handler was
  installed from C, is left alone.
"""

from __future__ import annotations

import atexit
import os
import signal
import sys
import threading
import time
from types import FrameType

from wisp._logging import warn_once  # re-exported: process hooks and runs use it
from wisp.errors import RunStateError

TYPE_CHECKING = False  # typing costs ~15 ms to import; only type checkers need it
if TYPE_CHECKING:
    from typing import Any

    from wisp._run import Run

__all__ = ["flush", "install", "installed", "process_state", "warn_once"]


_installed = False
_previous_excepthook: Any = None
_exit_exc: tuple[int, str] | None = None  # set by the excepthook
_signal_exit: tuple[int, str] | None = None  # a signal was passed on to a Python handler
_previous_handlers: dict[int, Any] = {}  # signum -> handler we chain to
_signal_notes: dict[int, str] = {}  # signum -> why it was not hooked
_exit_timeout = 10.0
_FORK_WAIT = 1.0  # the most os.fork() waits for writers to reach a quiet point
#: What the process looked like at wisp's first init (doctor reports it).
_first_init: dict[str, Any] = {}


def log_without_run() -> None:
    """``wisp.log()`` with no current run: an error, except in a multiprocessing child."""
    process = sys.modules.get("multiprocessing.process")
    if process is not None and process.parent_process() is not None:
        warn_once(
            "wisp: log() in a multiprocessing child process without a run is ignored; "
            "call wisp.init() in the child to record a run of its own",
            stacklevel=4,
        )
        return
    raise RunStateError("wisp.log() needs a run: call wisp.init() first")


def _snapshot() -> dict[str, Any]:
    torch = sys.modules.get("torch")
    cuda = sys.modules.get("torch.cuda")
    mp = sys.modules.get("multiprocessing")
    return {
        "pid": os.getpid(),
        "torch_imported": torch is not None,
        # the module flag, read without calling into torch.cuda
        "cuda_initialized": bool(getattr(cuda, "_initialized", False)) if cuda else False,
        "start_method": mp.get_start_method(allow_none=True) if mp is not None else None,
        "threads": threading.active_count(),
    }


def install(*, signals: bool, exit_timeout: float) -> None:
    """Install the hooks (idempotent).  ``signals`` hooks SIGTERM/SIGINT if not done yet."""
    global _installed, _previous_excepthook, _exit_timeout
    _exit_timeout = exit_timeout
    if not _installed:
        _installed = True
        _first_init.update(_snapshot())
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(
                before=_before_fork,
                after_in_parent=_after_fork_in_parent,
                after_in_child=_after_fork_in_child,
            )
        atexit.register(_finish_at_exit)
        _previous_excepthook = sys.excepthook
        sys.excepthook = _excepthook
    if signals:
        _install_signals()


_held: list[Any] = []  # writer locks taken by _before_fork, released in the parent
_fork_mask: list[Any] = []  # the forking thread's signal mask, while _before_fork blocks


def _before_fork() -> None:
    """Let each writer finish the slice it is on (bounded), so the fork sees it idle.

    With SIGTERM/SIGINT hooked, they are blocked on the forking thread until the hooks
    after the fork: a child signalled before its ``_restore_signals`` would otherwise run
    wisp's inherited handler's C half (a flag), have it dropped once the handler is back to
    ``SIG_DFL``, and wait on for good (``with Pool()`` terminating a worker it just forked).
    Blocked, the signal stays pending and acts under the restored handler.
    """
    from wisp import _run, _shared_steps

    if _previous_handlers and hasattr(signal, "pthread_sigmask"):
        blocked = {signal.SIGTERM, signal.SIGINT}
        _fork_mask.append(signal.pthread_sigmask(signal.SIG_BLOCK, blocked))
    deadline = time.monotonic() + _FORK_WAIT
    for run in _run.live_runs():
        _shared_steps.before_fork(run)  # one step counter for the run's processes
        w = run.writer
        if w is not None and w.busy.acquire(timeout=max(0.0, deadline - time.monotonic())):
            _held.append(w.busy)


def _unblock_signals() -> None:
    """Give the forking thread back the signal mask ``_before_fork`` found."""
    while _fork_mask:
        signal.pthread_sigmask(signal.SIG_SETMASK, _fork_mask.pop())


def _after_fork_in_parent() -> None:
    while _held:
        _held.pop().release()
    _unblock_signals()


def _after_fork_in_child() -> None:
    from wisp import _registry

    _held.clear()  # the child's writers get fresh locks; these stay with the parent
    _restore_signals()
    _registry.after_fork_in_child()
    _unblock_signals()  # last: a signal sent meanwhile acts now, under the restored handler


def _restore_signals() -> None:
    """In a forked child: SIGTERM and SIGINT get back the handlers they had before wisp.

    The child has no run of its own to finish (a child that logs writes through), and a
    Python-level handler changes how it dies: CPython runs it only between bytecodes, so a
    SIGTERM that lands just before a blocking wait is never acted on. ``with Pool()`` ends
    by sending its workers SIGTERM while they wait on the task queue's lock; with wisp's
    handler inherited, a worker could sleep through it and the pool's exit hang for good.
    A child that calls ``init()`` for a run of its own hooks the signals again.
    """
    for signum, previous in list(_previous_handlers.items()):
        if signal.getsignal(signum) is _on_signal:
            try:
                signal.signal(signum, previous)
            except ValueError:  # the child is not on its main thread: keep wisp's handler
                continue
        del _previous_handlers[signum]


def _excepthook(exc_type: type[BaseException], exc: BaseException, tb: Any) -> None:
    global _exit_exc
    if not hasattr(sys, "ps1"):  # an interactive prompt survives errors; a script does not
        _exit_exc = (130, "killed") if issubclass(exc_type, KeyboardInterrupt) else (1, "failed")
    previous = _previous_excepthook or sys.__excepthook__
    previous(exc_type, exc, tb)


def _install_signals() -> None:
    if threading.current_thread() is not threading.main_thread():
        _signal_notes.setdefault(0, "init() ran off the main thread; signals were not hooked")
        return
    for signum in (signal.SIGTERM, signal.SIGINT):
        if signum in _previous_handlers:
            continue
        if signum == signal.SIGINT and "ipykernel" in sys.modules:
            _signal_notes[signum] = "left to the Jupyter kernel (interrupts stay catchable)"
            continue
        previous = signal.getsignal(signum)
        if previous is None:
            _signal_notes[signum] = "handler installed outside Python; left alone"
            continue
        if previous == signal.SIG_IGN:
            _signal_notes[signum] = "ignored by the process; left alone"
            continue
        _previous_handlers[signum] = previous
        signal.signal(signum, _on_signal)


def signal_state() -> dict[str, str]:
    """signal name -> how wisp handles it (for doctor)."""
    out: dict[str, str] = {}
    for signum in (signal.SIGTERM, signal.SIGINT):
        name = signal.Signals(signum).name
        if signum in _previous_handlers:
            hooked = signal.getsignal(signum) is _on_signal
            out[name] = (
                "hooked, chains to the previous handler"
                if hooked
                else ("hooked, but another handler was installed after wisp")
            )
        else:
            out[name] = _signal_notes.get(signum, _signal_notes.get(0, "not hooked"))
    return out


def _on_signal(signum: int, frame: FrameType | None) -> None:
    global _signal_exit
    from wisp import _run

    previous = _previous_handlers.get(signum, signal.SIG_DFL)
    code = 128 + signum
    runs = [r for r in _run.live_runs() if r.pid == os.getpid()]
    if previous == signal.SIG_DFL:
        # the process is about to die: finish the runs, then die of the same signal
        _finish_all(runs, code, "killed")
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
        return
    if previous is not signal.default_int_handler:
        # a KeyboardInterrupt's fate is up to the program (and the excepthook sees it)
        _signal_exit = (code, "killed")
    deadline = time.monotonic() + min(_exit_timeout, 2.0)
    for run in runs:
        if run.writer is not None and run.live:
            run.barrier(timeout=max(0.0, deadline - time.monotonic()))
    if callable(previous):
        previous(signum, frame)


def _exit_state() -> tuple[int, str]:
    """How the interpreter is exiting, for runs nobody finished."""
    if _exit_exc is not None:
        return _exit_exc
    if _signal_exit is not None:
        return _signal_exit
    if getattr(sys, "last_value", None) is not None and "ipykernel" not in sys.modules:
        # the excepthook was replaced after ours, but the error was still unhandled
        if isinstance(sys.last_value, KeyboardInterrupt):
            return 130, "killed"
        return 1, "failed"
    # sys.exit(n) does not pass through any hook: its code is unknown here
    return 0, "finished"


def _finish_all(runs: list[Run], code: int, state: str) -> None:
    """Finish ``runs``, all of them within one ``exit_timeout``."""
    deadline = time.monotonic() + _exit_timeout
    for run in runs:
        run.limit_finish(deadline)  # finish() waits for the writer and uploads only until then
        try:
            run.finish(code, state=state)
        except Exception as exc:  # noqa: BLE001 - exit must never hang or crash on us
            sys.stderr.write(f"wisp: run {run.id} did not finish cleanly at exit: {exc}\n")
        w = run.writer
        if w is not None and w.thread.is_alive():
            # finish() was already under way on this thread when the signal came
            w.close(max(0.0, deadline - time.monotonic()))


def _finish_at_exit() -> None:
    from wisp import _run

    code, state = _exit_state()
    _finish_all([r for r in _run.live_runs() if r.pid == os.getpid()], code, state)


def installed() -> bool:
    """True once the first recording ``init()`` installed the hooks."""
    return _installed


def process_state() -> dict[str, Any]:
    """The process now and at wisp's first init (for doctor)."""
    return {"now": _snapshot(), "first_init": dict(_first_init), "hooks": _installed}


def flush(timeout: float | None = None) -> bool:
    """Write everything the current run has queued to its file (not fsynced) and wait.

    In a forked child that will leave with ``os._exit`` (which skips the exit hook),
    call it before exiting: the rows logged since the last flush are otherwise lost.
    False when ``timeout`` ran out (or the disk is full); True with no run.
    """
    from wisp import _current

    run = _current.run
    if run is None or not run.live:
        return True
    return run.barrier(timeout)

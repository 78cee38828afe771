"""Per-run helpers started by ``init()`` and stopped by ``finish()``.

The system-metrics sampler (``system_metrics``, ``system_interval``), console
capture (``console``) and the files saved at finish (``files``).  ``start(run)``
attaches them to the run as parts; the Run stops them at finish, before the finish
record is queued.
"""

from __future__ import annotations

import sys

from wisp._runfile import RecordType

TYPE_CHECKING = False  # typing costs ~15 ms to import; only type checkers need it
if TYPE_CHECKING:
    from typing import Any

    from wisp._run import Run

__all__ = ["console_mode", "start"]

#: seconds from init() to the first system reading (less when ``system_interval`` is less)
_FIRST_READING = 1.0


def _in_notebook() -> bool:
    if "ipykernel" not in sys.modules:
        return False
    ipython = sys.modules.get("IPython")
    get = getattr(ipython, "get_ipython", None)
    shell = get() if callable(get) else None
    return shell is not None and type(shell).__name__ == "ZMQInteractiveShell"


def console_mode(setting: str | None) -> str:
    """``wrap`` or ``off``: the setting if given, else off in notebooks and wrap elsewhere."""
    if setting is not None:
        return setting
    return "off" if _in_notebook() else "wrap"


def start(run: Run) -> None:
    """Start the sampler and console capture for a live run, as its settings say.

    Each is attached to the run as a part (``console``, then ``system``), so
    ``finish()`` stops the sampler first, then console capture, before the
    finish record is queued.
    """
    if run.writer is None or not run.live:
        return
    s = run.settings

    at_end: list[tuple[str, str]] = []  # save(policy="end"): (source, name)

    def files_at_end() -> None:  # those, and files the user wrote into run.dir
        from wisp._rundir import user_files

        if at_end or (run.dir is not None and user_files(run.dir)):
            from wisp.integrations._files import save_at_end

            save_at_end(run)

    run.attach("files", at_end, files_at_end)  # attached first: stopped last, after console

    def emit(rtype: int) -> Any:
        def put(payload: dict[str, Any]) -> None:
            # never through run.record: it warns in forked children and raises after finish
            run.record_if_live(rtype, payload)

        return put

    capture = None
    if console_mode(s.console) == "wrap":
        from wisp._console import ConsoleCapture

        capture = ConsoleCapture(emit(RecordType.CONSOLE))
        capture.start()
        run.attach("console", capture, capture.stop)
    if s.system_metrics:
        from wisp._system import SystemSampler

        put_system = emit(RecordType.SYSTEM)

        def on_sample(payload: dict[str, Any]) -> None:
            put_system(payload)
            if capture is not None:
                capture.flush()  # lines printed before a quiet spell reach the file too

        # Sampled by the run's writer thread (a run has one background thread): the first
        # reading comes a moment after init() (at most one interval), so it never competes
        # with init() and a finish() soon after waits for nothing.
        sampler = SystemSampler(on_sample, disk_path=run.dir)
        first = min(s.system_interval, _FIRST_READING)
        cancel = run.writer.every(s.system_interval, sampler.sample_once, first)

        def stop() -> None:
            cancel()  # no sample is under way once it returns
            sampler.close()

        run.attach("system", sampler, stop)

"""Per-run helpers started by ``init()`` and stopped by ``finish()``.

The system-metrics sampler (``system_metrics``, ``system_interval``) and
console capture (``console``).  ``start(run)`` sets ``run._extras_stop``; the
Run calls it at finish, before the finish record is queued.
"""

from __future__ import annotations

import os
import sys

from wisp._logging import logger
from wisp._runfile import RecordType
from wisp._writer import RECORD

TYPE_CHECKING = False  # typing costs ~15 ms to import; only type checkers need it
if TYPE_CHECKING:
    from typing import Any

    from wisp._run import Run

__all__ = ["console_mode", "start"]


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
    """Start the sampler and console capture for a live run, as its settings say."""
    writer = run._writer
    if writer is None or not run._live:
        return
    s = run._settings
    pid = os.getpid()
    stoppers: list[Any] = []

    def emit(rtype: int) -> Any:
        def put(payload: dict[str, Any]) -> None:
            # never through run._record: it warns in forked children and raises after finish
            if run._live and os.getpid() == pid:
                writer.put((RECORD, rtype, payload))

        return put

    capture = None
    if console_mode(s.console) == "wrap":
        from wisp._console import ConsoleCapture

        capture = ConsoleCapture(emit(RecordType.CONSOLE))
        capture.start()
        stoppers.append(capture.stop)
    if s.system_metrics:
        from wisp._system import SystemSampler

        put_system = emit(RecordType.SYSTEM)

        def on_sample(payload: dict[str, Any]) -> None:
            put_system(payload)
            if capture is not None:
                capture.flush()  # lines printed before a quiet spell reach the file too

        sampler = SystemSampler(on_sample, interval=s.system_interval, disk_path=run.dir)
        sampler.start()
        stoppers.insert(0, sampler.stop)

    def stop() -> None:
        for fn in stoppers:
            try:
                fn()
            except Exception as exc:  # noqa: BLE001 - finish() must go on regardless
                logger().warning("wisp: stopping %s failed: %s", fn, exc)

    run._extras_stop = stop  # type: ignore[attr-defined]

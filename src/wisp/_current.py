"""The current run of the process: what ``wisp.run`` reads, ``init()`` sets, ``finish()`` clears.

The package's own modules reach the current run here, never through the ``wisp`` facade,
which sits on top of them (it imports them; they do not import it).  ``import wisp`` does
not load this module: the facade loads it on first use (``init()``, ``log()``, reading
``wisp.run``).  Library code above the facade (integrations that clear the run they
started, ``wandb_compat``) sets ``run`` here too, never ``wisp.run``.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing costs ~15 ms to import; only type checkers need it
if TYPE_CHECKING:
    from wisp._run import Run

__all__ = ["finish", "run"]

#: The current run (set by ``wisp.init()``, cleared by ``wisp.finish()``), or None.
run: Run | None = None


def finish(exit_code: int = 0) -> None:
    """Finish the current run, if any (``wisp.finish()``).  Safe to call twice."""
    global run
    r = run
    if r is not None:
        run = None
        r.finish(exit_code)

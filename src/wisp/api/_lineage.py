"""``wisp.Api`` runs' lineage: ``run.parent``, ``run.forks()``, rows set aside by rewinds.

A mixin of :class:`wisp.api._objects.Run`; the backend answers ``lineage(key)``
(``{"parent": {"run_id", "project", "step"} | None, "set_aside": [...]}``),
``forks(key)`` (run dicts) and ``restore_set_aside(key, index)`` (the new run's dict).
Fork and rewind themselves are ``wisp.init(fork_from=...)`` / ``init(resume_from=...)``
(``wisp._lineage``, docs/fork.md).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

__all__ = ["LineageMixin"]


class LineageMixin:
    """``parent``, ``fork_step``, ``forks()``, ``set_aside()``, ``scan_set_aside()`` and
    ``restore_set_aside()`` of a run."""

    _backend: Any

    @property
    def key(self) -> str:  # pragma: no cover - Run's own
        raise NotImplementedError

    def __init__(self, backend: Any, data: dict[str, Any]) -> None:  # pragma: no cover
        raise NotImplementedError  # Run's own __init__; declared here for type(self)(...)

    def _lineage(self) -> dict[str, Any]:
        out: dict[str, Any] = self._backend.lineage(self.key)
        return out

    @property
    def parent(self) -> Any:
        """The run this one was forked from (``wisp.init(fork_from=...)``), or None."""
        p = self._lineage()["parent"]
        if p is None:
            return None
        return type(self)(self._backend, self._backend.get_run(p["run_id"], p["project"]))

    @property
    def fork_step(self) -> int | None:
        """The parent's last step in this run's history (None: not a fork)."""
        p = self._lineage()["parent"]
        return None if p is None else int(p["step"])

    def forks(self) -> list[Any]:
        """The runs forked from this one (not their forks: call ``forks()`` on them)."""
        return [type(self)(self._backend, d) for d in self._backend.forks(self.key)]

    def set_aside(self) -> list[dict[str, Any]]:
        """What rewinds set aside, oldest first: ``{"rewind": i, "step": N, "rows": n,
        "min_step", "max_step"}`` (the rows themselves: :meth:`scan_set_aside`)."""
        out: list[dict[str, Any]] = self._lineage()["set_aside"]
        return out

    def scan_set_aside(self, rewind: int | None = None) -> Iterator[dict[str, Any]]:
        """The rows set aside (by rewind ``rewind``, else all), each with ``"_rewind": i``."""
        rows: Iterator[dict[str, Any]] = self._backend.scan_set_aside(self.key, rewind)
        return rows

    def restore_set_aside(self, rewind: int = -1) -> Any:
        """The rows rewind ``rewind`` (default: the latest) set aside, back as a new run: a
        fork of this run at the rewind's step holding them.  This run is left as it is."""
        return type(self)(self._backend, self._backend.restore_set_aside(self.key, rewind))

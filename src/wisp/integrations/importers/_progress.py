"""What every importer shares: idempotency, resumability, a progress line and a summary.

Idempotency: an imported run gets a run id derived from its source id, so importing the
same source again finds it.  When a run is complete its directory gains a small
``import.json`` (format version 1)::

    {"version": 1, "source": "mlflow", "source_id": "<id in the source>",
     "fingerprint": "<sha256 of what the source said about the run>"}

A run whose directory has the same fingerprint is left alone ("unchanged"); one whose
source changed since is imported again into a fresh directory ("updated"); a
directory without ``import.json`` is an import that was interrupted and is redone
(that is what makes an import resumable: run it again).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TextIO

from wisp._rundir import read_meta

__all__ = ["IMPORT_FILE", "ImportReport", "Progress", "RunIndex", "interrupted"]

IMPORT_FILE = "import.json"
_RUN_DIR = re.compile(r"run-\d{8}_\d{6}-(.+)")
IMPORT_FORMAT = 1


@dataclass
class ImportReport:
    """What one import did: run directories made, and what was left out and why."""

    source: str
    runs: list[str] = field(default_factory=list)  # directories imported now
    unchanged: list[str] = field(default_factory=list)  # already imported, same source
    updated: int = 0  # of ``runs``: imported again because the source changed
    points: int = 0  # metric points written
    files: int = 0  # files copied into runs
    skipped: dict[str, int] = field(default_factory=dict)  # runs not imported, by reason
    left_out: dict[str, int] = field(default_factory=dict)  # values/files not imported
    failed: list[tuple[str, str]] = field(default_factory=list)  # (source id, error)

    def skip(self, reason: str, n: int = 1) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + n

    def leave_out(self, what: str, n: int = 1) -> None:
        self.left_out[what] = self.left_out.get(what, 0) + n

    def summary(self) -> str:
        parts = [f"{self.source}: imported {len(self.runs)} run(s)"]
        if self.updated:
            parts[0] += f" ({self.updated} updated)"
        parts[0] += f", {self.points} points, {self.files} files"
        if self.unchanged:
            parts.append(f"{len(self.unchanged)} unchanged since the last import")
        for reason, n in sorted(self.skipped.items()):
            parts.append(f"{n} skipped: {reason}")
        for what, n in sorted(self.left_out.items()):
            parts.append(f"{n} not imported: {what}")
        for sid, err in self.failed[:5]:
            parts.append(f"failed {sid}: {err}")
        if len(self.failed) > 5:
            parts.append(f"... {len(self.failed) - 5} more failed")
        return "\n".join(parts)


class Progress:
    """A one-line progress display: redrawn in place on a terminal, every few seconds else."""

    def __init__(
        self,
        what: str,
        total: int | None = None,
        *,
        stream: TextIO | None = None,
        clock: Callable[[], float] = time.monotonic,
        every: float = 0.2,
    ) -> None:
        self.what = what
        self.total = total
        self.done = 0
        self.stream = stream if stream is not None else sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.clock = clock
        self.every = every if self.tty else max(every, 5.0)
        self.start = clock()
        self._last = self.start
        self._shown = False

    def advance(self, n: int = 1, note: str = "") -> None:
        self.done += n
        now = self.clock()
        if now - self._last >= self.every:
            self._last = now
            self._show(note)

    def _show(self, note: str) -> None:
        of = f"/{self.total}" if self.total is not None else ""
        rate = self.done / max(self.clock() - self.start, 1e-9)
        line = f"{self.what}: {self.done}{of} ({rate:.0f}/s) {note}"[:120]
        if self.tty:
            self.stream.write("\r" + line.ljust(120))
        else:
            self.stream.write(line + "\n")
        self.stream.flush()
        self._shown = True

    def close(self) -> None:
        if self._shown and self.tty:
            self.stream.write("\n")
            self.stream.flush()


def interrupted(run_dir: str) -> bool:
    """An import stopped before its run was closed: run.json still says running (an
    imported run always ends finished, failed or crashed)."""
    meta = read_meta(run_dir)
    return not meta or meta.get("state") == "running"


class RunIndex:
    """The run directories under ``<base>/wisp`` by run id, read once per import."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.by_id: dict[str, str] = {}
        root = os.path.join(base, "wisp")
        try:
            names = sorted(os.listdir(root))
        except OSError:
            names = []
        for name in names:
            m = _RUN_DIR.fullmatch(name)  # run-<YYYYmmdd_HHMMSS>-<run id>
            if m:
                self.by_id.setdefault(m.group(1), os.path.join(root, name))

    def check(self, run_id: str, fingerprint: str) -> tuple[str, str | None]:
        """``("new"|"unchanged"|"changed"|"partial", existing dir or None)``."""
        d = self.by_id.get(run_id)
        if d is None:
            return "new", None
        try:
            with open(os.path.join(d, IMPORT_FILE), encoding="utf-8") as f:
                doc = json.load(f)
        except (OSError, ValueError):
            return "partial", d
        if isinstance(doc, dict) and doc.get("fingerprint") == fingerprint:
            return "unchanged", d
        return "changed", d

    def claim(self, run_id: str, fingerprint: str, report: ImportReport) -> str | None:
        """``run_id``'s state (:meth:`check`) when it is to be imported now, None (noted in
        ``report.unchanged``) when it was imported from the same source; an outdated or
        interrupted import is removed first."""
        state, existing = self.check(run_id, fingerprint)
        if state == "unchanged":
            assert existing is not None
            report.unchanged.append(existing)
            return None
        if existing is not None:
            self.discard(existing)
        return state

    def discard(self, run_dir: str) -> None:
        """Remove an interrupted or outdated import of a run (only under ``<base>/wisp``)."""
        root = os.path.realpath(os.path.join(self.base, "wisp"))
        if os.path.dirname(os.path.realpath(run_dir)) == root:
            shutil.rmtree(run_dir, ignore_errors=True)

    def done(
        self, run_id: str, run_dir: str, source: str, source_id: str, fingerprint: str
    ) -> None:
        """Mark ``run_dir`` as a complete import (written last, atomically)."""
        doc: dict[str, Any] = {
            "version": IMPORT_FORMAT,
            "source": source,
            "source_id": source_id,
            "fingerprint": fingerprint,
        }
        path = os.path.join(run_dir, IMPORT_FILE)
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(doc, f)
        os.replace(tmp, path)
        self.by_id[run_id] = run_dir

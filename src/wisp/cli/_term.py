"""Terminal output for the CLI: errors, colours (TTY only), tables, progress bars."""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, TextIO, TypeVar

__all__ = [
    "EXIT",
    "CliError",
    "Output",
    "Progress",
    "color",
    "fmt_duration",
    "log_lines",
    "table",
]

T = TypeVar("T")

#: Exit codes (docs/cli.md).
EXIT = {
    "ok": 0,
    "failed": 1,  # the command ran and something failed (doctor fail, server unreachable)
    "usage": 2,  # bad arguments, unknown run, unreadable input
    "missing_dependency": 3,  # an optional package the command needs is not installed
    "interrupted": 130,
}


class CliError(Exception):
    """A user-facing error: printed as one line plus a hint, no traceback."""

    def __init__(self, message: str, hint: str | None = None, code: int = EXIT["usage"]) -> None:
        super().__init__(message)
        self.hint = hint
        self.code = code


def _use_color(stream: TextIO) -> bool:
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


_CODES = {"red": "31", "green": "32", "yellow": "33", "blue": "34", "dim": "2", "bold": "1"}


def color(text: str, name: str, stream: TextIO | None = None) -> str:
    if not _use_color(stream or sys.stdout):
        return text
    return f"\033[{_CODES[name]}m{text}\033[0m"


def fmt_duration(seconds: float | None) -> str:
    if seconds is None or seconds < 0:
        return "-"
    s = int(seconds)
    if s < 60:
        return f"{seconds:.1f}s" if seconds < 10 else f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    if s < 86400:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    return f"{s // 86400}d{s % 86400 // 3600:02d}h"


def fmt_value(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, dict):
        return f"<{value.get('_type', 'object')}>"
    return str(value)


def table(
    headers: Sequence[str], rows: Sequence[Sequence[str]], colors: Sequence[str | None] = ()
) -> str:
    """A plain aligned table; ``colors`` (by row) only apply on a TTY."""
    widths = [len(h) for h in headers]
    for row in rows:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], len(cell))
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()]
    for n, row in enumerate(rows):
        line = "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
        c = colors[n] if n < len(colors) else None
        lines.append(color(line, c) if c else line)
    return "\n".join(lines)


class Progress:
    """A progress bar on stderr, drawn only when stderr is a terminal."""

    def __init__(self, total: int | None, label: str, stream: TextIO | None = None) -> None:
        self.total = total
        self.label = label
        self.stream = stream or sys.stderr
        self.enabled = _use_tty(self.stream)
        self.done = 0
        self._last = 0.0

    def update(self, n: int = 1) -> None:
        self.done += n
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self._last < 0.1 and (self.total is None or self.done < self.total):
            return
        self._last = now
        if self.total:
            frac = min(1.0, self.done / self.total)
            bar = "#" * int(frac * 30)
            text = f"\r{self.label} [{bar:<30}] {self.done}/{self.total}"
        else:
            text = f"\r{self.label} {self.done}"
        self.stream.write(text)
        self.stream.flush()

    def close(self) -> None:
        if self.enabled:
            self.stream.write("\r\033[K")
            self.stream.flush()

    def iter(self, items: Iterable[T]) -> Iterator[T]:
        try:
            for item in items:
                yield item
                self.update()
        finally:
            self.close()


def _use_tty(stream: TextIO) -> bool:
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty()) and os.environ.get("TERM") != "dumb"


class Output:
    """What a command answers: lines for people, or with ``--json`` one JSON document.

    Commands call :meth:`say` for each human line and :meth:`data` for the fields of their
    answer.  Without ``--json`` the lines go to stdout; with it they go to stderr and ``main``
    prints the fields, the ``exit_code`` added, as one JSON document on stdout (a command
    that runs on, such as ``wisp ui``, :meth:`event` prints JSON lines as things happen).
    """

    def __init__(self, as_json: bool) -> None:
        self.json = as_json
        self.doc: dict[str, Any] = {}

    def say(self, text: str = "", *, err: bool = False) -> None:
        print(text, file=sys.stderr if (err or self.json) else sys.stdout, flush=True)

    def data(self, **fields: Any) -> None:
        self.doc.update(fields)

    def event(self, kind: str, **fields: Any) -> None:
        """One JSON line now (``--json``), for commands that run until stopped."""
        if self.json:
            import json

            print(json.dumps({"event": kind, **fields}, default=str), flush=True)

    def finish(self, code: int) -> None:
        """Print the JSON document (``--json`` only)."""
        if self.json:
            import json

            print(json.dumps({**self.doc, "exit_code": code}, default=str), flush=True)


@contextlib.contextmanager
def log_lines(name: str, out: Output) -> Iterator[None]:
    """While the block runs, each record of logger ``name`` (INFO and up) is a line of
    ``out`` on stderr: library code logs what a command shows (``wisp server``'s start-up
    lines, ``wisp agent``'s trials)."""
    import logging

    class _Lines(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            out.say(record.getMessage(), err=True)

    logger = logging.getLogger(name)
    handler = _Lines(logging.INFO)
    level = logger.level
    logger.addHandler(handler)
    if logger.getEffectiveLevel() > logging.INFO:
        logger.setLevel(logging.INFO)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)

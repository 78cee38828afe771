"""Console capture: copy what the program prints into CONSOLE records (type 7).

Payload (format version 1, see docs/run-file.md)::

    {"lines": [[ts, "stdout" | "stderr", text], ...]}

``ts`` is unix seconds when the line was completed; ``text`` has no trailing
newline.  A carriage return that is not part of ``\\r\\n`` starts the line
over, so a progress bar redrawn a thousand times is recorded once, as its
final state.  Capture is bounded: after ``max_bytes`` of text one marker line
is recorded and further output is only shown, not recorded.

The streams are wrapped, not replaced by something else: every write goes to
the original stream first, unchanged, so the user sees exactly what they
would without wisp.  :meth:`ConsoleCapture.stop` restores the originals (or,
when something else wrapped them on top of us, turns the wrapper into a plain
pass-through).
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable

from wisp._protocol import MAX_STRING_LENGTH, clean_text

TYPE_CHECKING = False  # typing costs ~15 ms to import; only type checkers need it
if TYPE_CHECKING:
    from typing import Any, TextIO

__all__ = ["ConsoleCapture", "StreamProxy"]

MAX_BYTES = 16 * 1024 * 1024
BATCH_LINES = 256
BATCH_SECONDS = 1.0
LIMIT_MARKER = "[wisp: console capture limit reached; further output is not recorded]"


class StreamProxy:
    """Stands in for ``sys.stdout``/``sys.stderr``: writes through, then records."""

    def __init__(self, original: TextIO, name: str, capture: ConsoleCapture) -> None:
        self._original = original
        self._name = name
        self._capture: ConsoleCapture | None = capture
        self._partial: list[str] = []
        self._cr = False  # the last character seen was a lone-so-far '\r'

    def write(self, s: str) -> int:
        n = self._original.write(s)
        cap = self._capture
        if cap is not None and s and type(s) is str:
            cap._feed(self, s)
        return n

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        self._original.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._original, name)

    # the line assembler; called with the capture's lock held
    def _split(self, s: str, now: float, out: list[list[Any]]) -> None:
        start = 0
        n = len(s)
        if self._cr:
            self._cr = False
            if s[0] == "\n":
                start = 1
                out.append([now, self._name, "".join(self._partial)])
                self._partial = []
            else:
                self._partial = []
        i = start
        while i < n:
            nl = s.find("\n", i)
            cr = s.find("\r", i)
            if nl < 0 and cr < 0:
                self._partial.append(s[i:])
                return
            if cr < 0 or (0 <= nl < cr):
                self._partial.append(s[i:nl])
                out.append([now, self._name, "".join(self._partial)])
                self._partial = []
                i = nl + 1
                continue
            # a '\r' comes first
            self._partial.append(s[i:cr])
            if cr + 1 < n:
                if s[cr + 1] == "\n":
                    out.append([now, self._name, "".join(self._partial)])
                    i = cr + 2
                else:
                    i = cr + 1
                self._partial = []
            else:
                self._cr = True  # decide when the next write shows what follows
                return

    def _take_partial(self, now: float, out: list[list[Any]]) -> None:
        text = "".join(self._partial)
        self._partial = []
        self._cr = False
        if text:
            out.append([now, self._name, text])


class ConsoleCapture:
    """Wraps ``sys.stdout`` and ``sys.stderr`` and emits batches of lines.

    ``emit(payload)`` gets ``{"lines": [...]}``; it is called on the thread that
    printed (it must only enqueue), or from :meth:`flush`/:meth:`stop`.
    """

    def __init__(
        self,
        emit: Callable[[dict[str, Any]], None],
        *,
        max_bytes: int = MAX_BYTES,
        get_time: Callable[[], float] = time.time,
        batch_lines: int = BATCH_LINES,
        batch_seconds: float = BATCH_SECONDS,
    ) -> None:
        self.emit = emit
        self.max_bytes = max_bytes
        self._get_time = get_time
        self.batch_lines = batch_lines
        self.batch_seconds = batch_seconds
        self._lock = threading.Lock()
        self._lines: list[list[Any]] = []
        self._first_ts = 0.0
        self._pid = os.getpid()
        self.captured_bytes = 0
        self.limited = False
        self.failures = 0
        self._proxies: dict[str, StreamProxy] = {}

    def start(self) -> None:
        for name in ("stdout", "stderr"):
            original = getattr(sys, name)
            if original is None:
                continue
            proxy = StreamProxy(original, name, self)
            self._proxies[name] = proxy
            setattr(sys, name, proxy)

    def _feed(self, proxy: StreamProxy, s: str) -> None:
        if self.limited or os.getpid() != self._pid:
            return
        try:
            with self._lock:
                now = self._get_time()
                before = len(self._lines)
                proxy._split(s, now, self._lines)
                self.captured_bytes += len(s)
                if len(self._lines) > before and before == 0:
                    self._first_ts = now
                if self.captured_bytes > self.max_bytes:
                    proxy._take_partial(now, self._lines)
                    self._lines.append([now, proxy._name, LIMIT_MARKER])
                    self.limited = True
                    batch = self._take()
                elif self._lines and (
                    len(self._lines) >= self.batch_lines
                    or now - self._first_ts >= self.batch_seconds
                ):
                    batch = self._take()
                else:
                    return
            self.emit({"lines": batch})
        except Exception:  # noqa: BLE001 - printing must never fail because of wisp
            self.failures += 1

    def _take(self) -> list[list[Any]]:
        """The lines held, each made storable: NUL and lone surrogates replaced (the protocol's
        ``clean_text``), a line over MAX_STRING_LENGTH split into pieces of that size."""
        batch, self._lines = self._lines, []
        out = []
        for ts, stream, text in batch:
            text = clean_text(text)
            if len(text) <= MAX_STRING_LENGTH:
                out.append([ts, stream, text])
            else:
                for i in range(0, len(text), MAX_STRING_LENGTH):
                    out.append([ts, stream, text[i : i + MAX_STRING_LENGTH]])
        return out

    def flush(self, *, partial: bool = False) -> None:
        """Emit the lines held back (and, with ``partial``, unfinished lines too)."""
        with self._lock:
            if partial and not self.limited:
                now = self._get_time()
                for proxy in self._proxies.values():
                    proxy._take_partial(now, self._lines)
            batch = self._take()
        if batch:
            self.emit({"lines": batch})

    def stop(self) -> None:
        """Record what is left and give the streams back."""
        if os.getpid() != self._pid:
            return
        try:
            self.flush(partial=True)
        finally:
            for name, proxy in self._proxies.items():
                if getattr(sys, name) is proxy:
                    setattr(sys, name, proxy._original)
                proxy._capture = None
            self._proxies = {}

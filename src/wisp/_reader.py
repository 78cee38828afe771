"""Reading runs back: ``wisp.open_run(path)``.

Works on a finished run, a run still being written, and a run whose process
was killed: the reader stops at the first torn or corrupt record and reports
how many bytes it ignored.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator

from wisp._runfile import RecordType, decode_history, iter_records, scan
from wisp.errors import RunFileError

TYPE_CHECKING = False  # typing costs ~15 ms to import; only type checkers need it
if TYPE_CHECKING:
    from typing import Any

__all__ = ["RunData", "find_run_file", "open_run"]

RUN_FILE = "run.wisp"


def _loads(payload: bytes) -> Any:
    return json.loads(payload)


def find_run_file(path: str | os.PathLike[str]) -> str:
    p = os.fspath(path)
    if os.path.isdir(p):
        candidate = os.path.join(p, RUN_FILE)
        if not os.path.exists(candidate):
            raise RunFileError(f"{p} is not a wisp run directory (no {RUN_FILE})")
        return candidate
    if not os.path.exists(p):
        raise RunFileError(f"no run file or run directory at {p}")
    return p


class RunData:
    """A run read from disk.  Records are read once, at open; ``history()`` decodes lazily."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.dir = os.path.dirname(os.path.abspath(path))
        self.metadata: dict[str, Any] = {}
        self.config: dict[str, Any] = {}
        self.summary: dict[str, Any] = {}
        self.metrics: list[dict[str, Any]] = []
        self.finish: dict[str, Any] | None = None
        self.records: dict[str, list[Any]] = {}
        self._history_payloads: list[bytes] = []
        with open(path, "rb") as f:
            data = f.read()
        info = scan(data)
        self.record_count = info.records
        self.ignored_bytes = info.ignored
        for rec in iter_records(data):
            t = rec.type
            if t == RecordType.HISTORY:
                self._history_payloads.append(rec.payload)
                continue
            obj = _loads(rec.payload)
            if t == RecordType.RUN:
                if not self.metadata:
                    self.metadata = obj
            elif t == RecordType.CONFIG:
                self.config = obj["config"]
            elif t == RecordType.SUMMARY:
                self.summary = obj["summary"]
            elif t == RecordType.METRIC:
                self.metrics.append(obj)
            elif t == RecordType.FINISH:
                self.finish = obj
            else:
                self.records.setdefault(RecordType.NAMES.get(t, str(t)), []).append(obj)

    # -- identity ----------------------------------------------------------------------------

    @property
    def id(self) -> str:
        return str(self.metadata.get("run_id", ""))

    @property
    def name(self) -> str:
        return str(self.metadata.get("name", ""))

    @property
    def project(self) -> str:
        return str(self.metadata.get("project", ""))

    @property
    def state(self) -> str:
        """finished / failed / killed from the finish record; running or crashed without one."""
        if self.finish is not None:
            return str(self.finish.get("state", "finished"))
        pid = self.metadata.get("pid")
        if pid and self.metadata.get("host") == os.uname().nodename and _alive(int(pid)):
            return "running"
        return "crashed"

    # -- history -----------------------------------------------------------------------------

    def history(self, keys: list[str] | None = None) -> Iterator[dict[str, Any]]:
        """Rows in logged order: ``{"_step": s, "_timestamp": t, key: value, ...}``."""
        want = set(keys) if keys is not None else None
        for payload in self._history_payloads:
            for step, ts, values in decode_history(payload):
                if want is not None:
                    values = {k: v for k, v in values.items() if k in want}
                    if not values:
                        continue
                row = {"_step": step, "_timestamp": ts}
                row.update(values)
                yield row

    def scalars(self, key: str) -> tuple[list[int], list[Any]]:
        """(steps, values) of one metric."""
        steps: list[int] = []
        values: list[Any] = []
        for payload in self._history_payloads:
            for step, _ts, row in decode_history(payload):
                if key in row:
                    steps.append(step)
                    values.append(row[key])
        return steps, values

    def keys(self) -> list[str]:
        seen: dict[str, None] = {}
        for payload in self._history_payloads:
            for _s, _t, row in decode_history(payload):
                seen.update(dict.fromkeys(row))
        return list(seen)

    def to_pandas(self) -> Any:
        """History as a pandas DataFrame (needs pandas: ``pip install pandas``)."""
        try:
            import pandas as pd
        except ImportError as exc:
            raise ImportError(
                "RunData.to_pandas() needs pandas; install it with `pip install pandas`"
            ) from exc
        return pd.DataFrame.from_records(list(self.history()))

    def __repr__(self) -> str:
        return f"<wisp.RunData {self.project}/{self.name} id={self.id} state={self.state}>"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def open_run(path: str | os.PathLike[str]) -> RunData:
    """Read a run directory (or its run file)."""
    return RunData(find_run_file(path))

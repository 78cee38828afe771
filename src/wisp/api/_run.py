"""``Run`` of ``wisp.Api()``: wandb's public ``Run`` over a server or a local folder.

A :class:`Run` wraps a run dict in the shape of ``GET /api/v1/runs/{id}`` and a backend
(``_server.ServerBackend`` or ``_local.LocalBackend``) that reads and saves.  History
follows wandb's rules: ``keys`` selects rows holding every key, ``max_step`` is exclusive,
system metrics (``system/*``) are their own stream (``history(stream="system")``).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

from wisp._protocol import project_entity
from wisp.api._lineage import LineageMixin
from wisp.api._objects import File, User
from wisp.api._summary import ApiSummary
from wisp.api._tables import SYSTEM_PREFIX
from wisp.errors import NotFoundError, UsageError

__all__ = ["Run"]

_X_AXES = {"_step": "step", "step": "step", "_timestamp": "time", "_runtime": "relative"}
_EDITABLE = ("name", "tags", "notes", "group", "job_type")


def _optional_text(name: str, doc: str) -> Any:
    """A property for an editable text field of the run that may be None."""

    def get(self: Run) -> str | None:
        v = self._field(name)
        return None if v is None else str(v)

    def put(self: Run, value: str | None) -> None:
        self._set_text(name, value)

    return property(get, put, doc=doc)


class Run(LineageMixin):
    """One run: attributes, histories, files, artifacts, and edits saved with :meth:`update`."""

    def __init__(self, backend: Any, data: dict[str, Any]) -> None:
        self._backend = backend
        self._data = data
        self._summary: ApiSummary | None = None  # a copy, made when first asked for
        self._config: dict[str, Any] | None = None
        self._dirty: dict[str, Any] = {}
        self._full: dict[str, Any] | None = data if "metadata" in data else None
        self._last_step: int | None = None

    # -- attributes ----------------------------------------------------------------------------

    @property
    def id(self) -> str:
        """The run's id (unique in its project)."""
        return str(self._data["id"])

    @property
    def key(self) -> str:
        """The server's key of the run (unique on the server): the id unless another project
        had a run with this id first."""
        return str(self._data.get("key") or self._data["id"])

    @property
    def storage_id(self) -> str:
        """wandb's name for the server's key of the run (:attr:`key`)."""
        return self.key

    @property
    def project(self) -> str:
        """The project's name without its entity, as in wandb (``project_path`` has both)."""
        return project_entity(self.project_path)[1]

    @property
    def entity(self) -> str:
        """The user or team owning the project, ``""`` for a project named without one."""
        return project_entity(self.project_path)[0]

    @property
    def project_path(self) -> str:
        """The project's full name: ``entity/project``, or ``project``."""
        return str(self._data["project"])

    @property
    def path(self) -> list[str]:
        """``[entity, project, run_id]`` as in wandb (``"/".join(run.path)`` is what
        ``Api.run()`` takes; the entity is ``""`` for a project named without one)."""
        return [self.entity, self.project, self.id]

    @property
    def run_path(self) -> str:
        """``entity/project/run_id`` (``project/run_id`` without an entity) as one string."""
        return f"{self.project_path}/{self.id}"

    def _where(self) -> str:
        return self.run_path

    @property
    def url(self) -> str | None:
        """The run's dashboard page on a server; None for a local folder."""
        return self._backend.run_url(self.project_path, self.key)  # type: ignore[no-any-return]

    @property
    def state(self) -> str:
        return str(self._data["state"])

    @property
    def created_at(self) -> float:
        return float(self._data["created_at"])

    @property
    def createdAt(self) -> str:
        """Creation time as wandb gives it: ISO 8601 in UTC, without a zone suffix."""
        import datetime

        when = datetime.datetime.fromtimestamp(self.created_at, datetime.timezone.utc)
        return when.replace(tzinfo=None).isoformat(timespec="seconds")

    @property
    def finished_at(self) -> float | None:
        v = self._data.get("finished_at")
        return None if v is None else float(v)

    @property
    def heartbeat_at(self) -> float | None:
        v = self._data.get("heartbeat_at", self._data.get("finished_at"))
        return None if v is None else float(v)

    @property
    def metadata(self) -> dict[str, Any]:
        """What the SDK recorded about the process (host, python, argv, git, ...)."""
        if self._full is None:
            self._full = self._backend.get_run(self.key)
        return dict(self._full.get("metadata") or {})

    @property
    def user(self) -> User:
        """Who made the run: the server's owner of it where known, else the host's user."""
        meta = self.metadata
        name = self._data.get("owner") or meta.get("user") or meta.get("username") or ""
        return User(str(name))

    @property
    def summary_metrics(self) -> dict[str, Any]:
        """The summary as stored (a plain dict), wandb's ``run.summary_metrics``."""
        return copy.deepcopy(self._data.get("summary") or {})

    @property
    def summary(self) -> ApiSummary:
        """The summary; ``summary.update({...})`` saves at once, item assignment at
        :meth:`update`, as in wandb."""
        if self._summary is None:
            self._summary = ApiSummary(self.summary_metrics, self._save_summary)
        return self._summary

    def _save_summary(self) -> None:
        self._save({})

    @property
    def config(self) -> dict[str, Any]:
        """The config (a dict); change it and call :meth:`update` to save it."""
        if self._config is None:
            self._config = copy.deepcopy(self._data.get("config") or {})
        return self._config

    @property
    def json_config(self) -> str:
        import json

        return json.dumps({k: {"value": v} for k, v in self.config.items()})

    def _field(self, name: str) -> Any:
        return self._dirty.get(name, self._data.get(name))

    def _set_text(self, name: str, value: Any) -> None:
        if value is not None and not isinstance(value, str):
            raise UsageError(f"run.{name} must be a str, got {type(value).__name__}")
        self._dirty[name] = value

    @property
    def name(self) -> str:
        return str(self._field("name"))

    @name.setter
    def name(self, value: str) -> None:
        self._set_text("name", value)

    display_name = name

    @property
    def notes(self) -> str:
        return str(self._field("notes") or "")

    @notes.setter
    def notes(self, value: str) -> None:
        self._set_text("notes", value)

    group = _optional_text("group", "The run's group; set it and call update() to save it.")
    job_type = _optional_text("job_type", "The run's job type; set it and call update().")

    @property
    def tags(self) -> list[str]:
        """The tags; assign a new list (or change this one) and call :meth:`update`."""
        if "tags" not in self._dirty:
            self._dirty["tags"] = list(self._data.get("tags") or [])
        tags: list[str] = self._dirty["tags"]
        return tags

    @tags.setter
    def tags(self, value: list[str]) -> None:
        if not isinstance(value, (list, tuple)) or not all(isinstance(t, str) for t in value):
            raise UsageError("run.tags must be a list of str")
        self._dirty["tags"] = list(value)

    def __repr__(self) -> str:
        return f"<Run {self._where()} ({self.state})>"

    # -- edits ---------------------------------------------------------------------------------

    def _changes(self) -> dict[str, Any]:
        body = {k: v for k, v in self._dirty.items() if k in _EDITABLE and v != self._data.get(k)}
        if body.get("tags") == list(self._data.get("tags") or []):
            del body["tags"]
        if self._summary is not None and dict(self._summary) != (self._data.get("summary") or {}):
            from wisp._values import prepare_row

            row, deferred = prepare_row(dict(self._summary))
            if deferred:
                raise UsageError("summary values must be plain values (numbers, strings, lists)")
            body["summary"] = row
        if self._config is not None and self._config != (self._data.get("config") or {}):
            import json

            try:
                body["config"] = json.loads(json.dumps(self._config))
            except (TypeError, ValueError) as exc:
                raise UsageError(f"run.config must be JSON (numbers, text, ...): {exc}") from None
        return body

    def _save(self, extra: dict[str, Any]) -> None:
        body = {**self._changes(), **extra}
        if body:
            self._data = self._backend.edit(self.key, body)
            self._summary = None
            self._config = None
            self._full = None
        self._dirty = {}

    def update(self) -> None:
        """Save changed name, tags, notes, group, job type, config and summary.

        Over a server it needs a write key; over a local folder the change is appended to the
        run file.  A change that cannot be saved raises, naming the reason."""
        self._save({})

    def save(self) -> None:
        """wandb's alias of :meth:`update`."""
        self.update()

    def delete(self, delete_artifacts: bool = False) -> None:
        """Delete the run and all its data (needs a write key)."""
        self._backend.delete(self.key)

    # -- histories -----------------------------------------------------------------------------

    def _all_keys(self, system: bool = False) -> list[str]:
        have: list[str] = self._backend.metric_keys(self.key)
        return [k for k in have if k.startswith(SYSTEM_PREFIX) == system]

    def _keys(self, keys: list[str] | str | None) -> list[str]:
        have = self._all_keys()
        if keys is None:
            return have
        if isinstance(keys, str):
            keys = [keys]
        missing = [k for k in keys if k not in have]
        if missing:
            shown = ", ".join(have[:20]) + (" ..." if len(have) > 20 else "")
            raise NotFoundError(
                f"run {self._where()} has no metric {missing[0]!r} (metrics: {shown or 'none'})"
            )
        return list(keys)

    def history(
        self,
        samples: int = 500,
        keys: list[str] | str | None = None,
        x_axis: str = "_step",
        pandas: bool = True,
        stream: str = "default",
    ) -> Any:
        """Downsampled metrics: at most ``samples`` buckets per key, extremes kept.

        Rows hold the x axis (``_step``, ``_timestamp``, ``_runtime`` or a metric key) and
        each key's last value in the bucket; when a key was downsampled, ``<key>:min`` and
        ``<key>:max`` hold the bucket's extremes.  Up to ``samples`` points come back exactly.
        With ``keys``, only rows holding every key (as in wandb).  ``stream="system"``: the
        system metrics, rows ``{"_timestamp", "_runtime", "system/...": value}``.
        """
        if isinstance(samples, (list, str)) and keys is None:  # history(["loss"]) of wisp 0.x
            samples, keys = 500, samples
        if not isinstance(samples, int) or not 1 <= samples <= 100_000:
            raise UsageError(f"samples must be an int in 1..100000, got {samples!r}")
        if stream == "system":
            out = self._system_rows(samples)
        elif stream != "default":
            raise UsageError(f"stream must be 'default' or 'system', got {stream!r}")
        else:
            out = self._sampled(keys, x_axis, samples)
        if not pandas:
            return out
        from wisp.api._tables import need

        pd = need("pandas", "Run.history(pandas=True)")
        return pd.DataFrame.from_records(out)

    def _sampled(
        self, keys: list[str] | str | None, x_axis: str, samples: int
    ) -> list[dict[str, Any]]:
        ks = self._keys(keys)
        x = _X_AXES.get(x_axis, x_axis)
        if x not in ("step", "time", "relative"):
            self._keys([x])
        series = self._backend.series(self.key, ks, x, samples)
        rows: dict[Any, dict[str, Any]] = {}
        for s in series:
            key = s["key"]
            extremes = not s["raw"]
            for i, xv in enumerate(s["x"]):
                row = rows.setdefault(xv, {x_axis: xv})
                row[key] = s["y"][i]
                if extremes:
                    row[f"{key}:min"] = s["min"][i]
                    row[f"{key}:max"] = s["max"][i]
        out = [rows[k] for k in sorted(rows)]
        if keys is not None:
            out = [r for r in out if all(k in r for k in ks)]
        return out

    def _system_rows(self, samples: int) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = self._backend.system(self.key, self._all_keys(system=True))
        start = self.created_at
        for r in rows:
            r["_runtime"] = max(0.0, r["_timestamp"] - start)
        if len(rows) > samples:  # evenly spaced samples, first and last kept
            step = (len(rows) - 1) / (samples - 1) if samples > 1 else len(rows)
            rows = [rows[round(i * step)] for i in range(samples)] if samples > 1 else rows[-1:]
        return rows

    @property
    def system_metrics(self) -> dict[str, Any]:
        """The last value of each system metric (``system/cpu``, ...), as wandb's."""
        out: dict[str, Any] = {}
        for row in self._backend.system(self.key, self._all_keys(system=True)):
            out.update({k: v for k, v in row.items() if not k.startswith("_")})
        return out

    @property
    def lastHistoryStep(self) -> int:
        """The last step of the history, -1 when nothing was logged."""
        if self._last_step is None:
            keys = self._all_keys()
            last = -1
            if keys:
                for row in self._backend.scan(self.key, keys, None, None, 10_000):
                    last = max(last, int(row["_step"]))
            self._last_step = last
        return self._last_step

    def scan_history(
        self,
        keys: list[str] | str | None = None,
        page_size: int = 10_000,
        min_step: int | None = None,
        max_step: int | None = None,
    ) -> Iterator[dict[str, Any]]:
        """Every logged numeric point, streamed in step order: ``{"_step": s, key: value...}``.

        As in wandb: ``max_step`` is exclusive, and with ``keys`` only the rows holding every
        key come back.  Without ``keys``, a key absent at a step is left out of that row; NaN
        and ±inf come back as logged.  ``page_size`` steps are decoded at a time.
        """
        ks = self._keys(keys)
        if not isinstance(page_size, int) or page_size < 1:
            raise UsageError(f"page_size must be a positive int, got {page_size!r}")
        hi = None if max_step is None else int(max_step) - 1
        rows: Iterator[dict[str, Any]] = self._backend.scan(
            self.key, ks, min_step, hi, page_size, complete=keys is not None
        )
        return rows

    def metric_keys(self) -> list[str]:
        """The keys of the run's logged numeric metrics, sorted (system metrics are
        ``history(stream="system")``)."""
        return self._all_keys()

    def stop(self) -> None:
        """Ask the run's process to finish (a live run uploading to a server): it sees the
        request with its next heartbeat or batch and stops as on Ctrl+C, state ``killed``."""
        self._backend.stop(self.key)

    def alerts(self) -> list[dict[str, Any]]:
        """The alerts the run raised (``wisp.alert``): title, text, level, ts, step."""
        found: list[dict[str, Any]] = self._backend.alerts(self.key)
        return found

    def console_lines(self) -> Iterator[str]:
        """The captured console output (stdout and stderr), one line at a time, in order."""
        lines: Iterator[str] = self._backend.console_lines(self.key)
        return lines

    # -- files and artifacts -------------------------------------------------------------------

    def files(self, names: list[str] | None = None, per_page: int = 50) -> list[File]:
        got = [File(self._backend, self.key, f) for f in self._backend.files(self.key)]
        return got if names is None else [f for f in got if f.name in set(names)]

    def file(self, name: str) -> File:
        for f in self.files():
            if f.name == name:
                return f
        raise NotFoundError(f"run {self._where()} has no file {name!r}")

    def logged_artifacts(self, per_page: int = 100) -> list[Any]:
        """The artifact versions this run logged (``wisp.Artifact`` objects)."""
        from wisp.api._artifacts import run_artifacts

        return run_artifacts(self._backend, self.project_path, self.id, "logged")

    def used_artifacts(self, per_page: int = 100) -> list[Any]:
        """The artifact versions this run used."""
        from wisp.api._artifacts import run_artifacts

        return run_artifacts(self._backend, self.project_path, self.id, "used")

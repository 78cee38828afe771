"""The objects ``wisp.Api()`` hands out — the same over a server and over a local folder.

A :class:`Run` wraps a run dict in the shape of ``GET /api/v1/runs/{id}`` and a backend
(``_server.ServerBackend`` or ``_local.LocalBackend``) that does the reading and saving.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

from wisp._protocol import project_entity
from wisp.errors import UsageError

__all__ = ["File", "Project", "Run", "Runs"]

_X_AXES = {"_step": "step", "step": "step", "_timestamp": "time", "_runtime": "relative"}


class Project:
    """A project: ``name``, ``run_count``, ``last_activity``."""

    def __init__(self, name: str, run_count: int, last_activity: float | None) -> None:
        self.name = name
        self.run_count = run_count
        self.last_activity = last_activity

    def __repr__(self) -> str:
        return f"<Project {self.name} runs={self.run_count}>"


class File:
    """A file saved with ``wisp.save()``; ``download(root)`` writes it under ``root``."""

    def __init__(self, backend: Any, run_id: str, info: dict[str, Any]) -> None:
        self._backend = backend
        self.run_id = run_id
        self.name: str = info["name"]
        self.size: int | None = info.get("size")
        self.sha256: str | None = info.get("sha256")
        self._info = info

    def download(self, root: str = ".", replace: bool = False) -> str:
        """Write the file to ``<root>/<name>``; returns the path.  A name that would land
        outside ``root`` (absolute, ``..``, a drive letter) is refused with UsageError."""
        import os

        from wisp._localpath import local_path

        path = local_path(root, self.name)
        if os.path.exists(path) and not replace:
            raise UsageError(f"{path} exists: pass replace=True to overwrite it")
        data = self._backend.file_bytes(self.run_id, self._info)
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)
        return path

    def __repr__(self) -> str:
        return f"<File {self.name} size={self.size}>"


class Run:
    """One run: attributes, histories, files, and edits saved with :meth:`update`."""

    def __init__(self, backend: Any, data: dict[str, Any]) -> None:
        self._backend = backend
        self._data = data
        self._summary: dict[str, Any] | None = None  # a copy, made when first asked for
        self._dirty: dict[str, Any] = {}

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
    def path(self) -> str:
        """``entity/project/run_id`` (``project/run_id`` without an entity), as ``Api.run()``
        takes it."""
        return f"{self.project_path}/{self.id}"

    @property
    def state(self) -> str:
        return str(self._data["state"])

    @property
    def created_at(self) -> float:
        return float(self._data["created_at"])

    @property
    def finished_at(self) -> float | None:
        v = self._data.get("finished_at")
        return None if v is None else float(v)

    @property
    def group(self) -> str | None:
        return self._data.get("group")

    @property
    def job_type(self) -> str | None:
        return self._data.get("job_type")

    @property
    def config(self) -> dict[str, Any]:
        return dict(self._data.get("config") or {})

    @property
    def summary(self) -> dict[str, Any]:
        """The summary; change it in place and call :meth:`update` to save it."""
        if self._summary is None:
            self._summary = copy.deepcopy(self._data.get("summary") or {})
        return self._summary

    def _field(self, name: str) -> Any:
        return self._dirty.get(name, self._data.get(name))

    @property
    def name(self) -> str:
        return str(self._field("name"))

    @name.setter
    def name(self, value: str) -> None:
        if not isinstance(value, str):
            raise UsageError(f"run.name must be a str, got {type(value).__name__}")
        self._dirty["name"] = value

    @property
    def notes(self) -> str:
        return str(self._field("notes") or "")

    @notes.setter
    def notes(self, value: str) -> None:
        if not isinstance(value, str):
            raise UsageError(f"run.notes must be a str, got {type(value).__name__}")
        self._dirty["notes"] = value

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
        return f"<Run {self.path} ({self.state}) {self.name!r}>"

    # -- edits ---------------------------------------------------------------------------------

    def update(self) -> None:
        """Save changed name, tags, notes and summary."""
        body = {k: v for k, v in self._dirty.items() if v != self._data.get(k)}
        if self._summary is not None and self._summary != (self._data.get("summary") or {}):
            body["summary"] = self._summary
        if body:
            self._data = self._backend.edit(self.key, body)
            self._summary = None
        self._dirty = {}

    def delete(self) -> None:
        """Delete the run and all its data (needs a write key)."""
        self._backend.delete(self.key)

    # -- histories -----------------------------------------------------------------------------

    def _keys(self, keys: list[str] | str | None) -> list[str]:
        have: list[str] = self._backend.metric_keys(self.key)
        if keys is None:
            return have
        if isinstance(keys, str):
            keys = [keys]
        missing = [k for k in keys if k not in have]
        if missing:
            from wisp.errors import NotFoundError

            shown = ", ".join(have[:20]) + (" ..." if len(have) > 20 else "")
            raise NotFoundError(
                f"run {self.path} has no metric {missing[0]!r} (metrics: {shown or 'none'})"
            )
        return list(keys)

    def history(
        self,
        keys: list[str] | str | None = None,
        x_axis: str = "_step",
        samples: int = 500,
        pandas: bool = True,
    ) -> Any:
        """Downsampled metrics: at most ``samples`` buckets per key, extremes kept.

        Rows hold the x axis (``_step``, ``_timestamp``, ``_runtime`` or a metric key) and
        each key's last value in the bucket; when a key was downsampled, ``<key>:min`` and
        ``<key>:max`` hold the bucket's extremes.  Up to ``samples`` points come back exactly.
        """
        ks = self._keys(keys)
        if not isinstance(samples, int) or not 1 <= samples <= 100_000:
            raise UsageError(f"samples must be an int in 1..100000, got {samples!r}")
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
        if not pandas:
            return out
        from wisp.api._tables import need

        pd = need("pandas", "Run.history(pandas=True)")
        return pd.DataFrame.from_records(out)

    def scan_history(
        self,
        keys: list[str] | str | None = None,
        min_step: int | None = None,
        max_step: int | None = None,
        page_size: int = 10_000,
    ) -> Iterator[dict[str, Any]]:
        """Every logged numeric point, streamed in step order: ``{"_step": s, key: value...}``.

        A key absent at a step is left out of that row; NaN and ±inf come back as logged.
        ``page_size`` is the number of steps decoded at a time (memory stays bounded).
        """
        ks = self._keys(keys)
        if not isinstance(page_size, int) or page_size < 1:
            raise UsageError(f"page_size must be a positive int, got {page_size!r}")
        rows: Iterator[dict[str, Any]] = self._backend.scan(
            self.key, ks, min_step, max_step, page_size
        )
        return rows

    def metric_keys(self) -> list[str]:
        """The keys of the run's logged numeric metrics, sorted."""
        return list(self._backend.metric_keys(self.key))

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

    # -- files ---------------------------------------------------------------------------------

    def files(self) -> list[File]:
        return [File(self._backend, self.key, f) for f in self._backend.files(self.key)]

    def file(self, name: str) -> File:
        for f in self.files():
            if f.name == name:
                return f
        from wisp.errors import NotFoundError

        raise NotFoundError(f"run {self.path} has no file {name!r}")


class Runs:
    """A lazy collection of a project's runs: iterate, ``len()``, index, ``histories()``."""

    def __init__(self, backend: Any, project: str, filters: str, order: str, per_page: int) -> None:
        if not isinstance(per_page, int) or not 1 <= per_page <= 1000:
            raise UsageError(f"per_page must be an int in 1..1000, got {per_page!r}")
        self._backend = backend
        self.project = project
        self.filters = filters
        self.sort, self.order = _order(order)
        self.per_page = per_page
        self._pages: list[list[dict[str, Any]]] = []
        self._total: int | None = None

    def _page(self, n: int) -> list[dict[str, Any]]:
        while len(self._pages) <= n:
            runs, total = self._backend.list_runs(
                self.project,
                self.filters,
                self.sort,
                self.order,
                self.per_page,
                len(self._pages) * self.per_page,
            )
            if self._total is None and total == 0:
                found = resolve_project(self._backend, self.project)
                if found != self.project:  # "entity/name" of a project named "name"
                    self.project = found
                    continue
                self._backend.check_project(self.project)
            self._total = total
            self._pages.append(runs)
            if not runs:
                break
        return self._pages[n] if n < len(self._pages) else []

    def __len__(self) -> int:
        if self._total is None:
            self._page(0)
        return int(self._total or 0)

    def __iter__(self) -> Iterator[Run]:
        n = 0
        while True:
            page = self._page(n)
            for d in page:
                yield Run(self._backend, d)
            if len(page) < self.per_page:
                return
            n += 1

    def __getitem__(self, i: int) -> Run:
        if i < 0:
            i += len(self)
        page = self._page(i // self.per_page)
        try:
            return Run(self._backend, page[i % self.per_page])
        except IndexError:
            raise IndexError(f"run index {i} out of range ({len(self)} runs)") from None

    def __repr__(self) -> str:
        return f"<Runs {self.project} filter={self.filters!r}>"

    def histories(
        self,
        keys: list[str] | str | None = None,
        format: str = "pandas",  # noqa: A002 - the public name
        min_step: int | None = None,
        max_step: int | None = None,
        batch_runs: int = 200,
    ) -> Any:
        """Every point of every run here as one long table: ``run_id`` (each run's id, unique in
        its project), ``step``, key columns.

        ``format``: ``"pandas"`` (a DataFrame), ``"arrow"`` (a ``pyarrow.Table``) or
        ``"polars"``.  Runs go to the server in batches of ``batch_runs``, one streamed
        request each (Arrow IPC with pyarrow installed, JSON lines otherwise).
        """
        if format not in ("pandas", "arrow", "polars"):
            raise UsageError(f"format must be 'pandas', 'arrow' or 'polars', got {format!r}")
        if isinstance(keys, str):
            keys = [keys]
        runs = list(self)
        from wisp.api._tables import build, by_run_id

        keyed = [r.key for r in runs]
        parts = self._backend.export(keyed, keys, min_step, max_step, max(1, batch_runs))
        return build(by_run_id(parts, _renamed(runs)), keys, format)

    def to_parquet(
        self, path: str, keys: list[str] | str | None = None, batch_runs: int = 200
    ) -> int:
        """Write every point of every run here to one Parquet file, streamed; returns the rows.

        Memory stays bounded by one record batch.  Without ``keys``, the columns are the
        union of the runs' metric keys.  Needs pyarrow.
        """
        from wisp.api._tables import by_run_id, need, to_batch

        pa = need("pyarrow", "to_parquet()")
        pq = need("pyarrow.parquet", "to_parquet()")
        if isinstance(keys, str):
            keys = [keys]
        runs = list(self)
        ids = [r.key for r in runs]
        if keys is None:
            union: set[str] = set()
            for rid in ids:
                union.update(self._backend.metric_keys(rid))
            keys = sorted(union)
        fields = [pa.field("run_id", pa.string()), pa.field("step", pa.int64())]
        schema = pa.schema(fields + [pa.field(k, pa.float64()) for k in keys])
        rows = 0
        with pq.ParquetWriter(path, schema, compression="zstd") as writer:
            parts = self._backend.export(ids, keys, None, None, max(1, batch_runs))
            for part in by_run_id(parts, _renamed(runs)):
                batch = to_batch(part, schema)
                if batch.num_rows:
                    writer.write_batch(batch)
                    rows += batch.num_rows
        return rows


def resolve_project(backend: Any, project: str) -> str:
    """``project``, or ``name`` for an ``entity/name`` that is no project when ``name`` is one:
    a wandb-style path (``run.path`` of wandb, or of wisp before entities) to a project
    named without its entity still finds it."""
    entity, name = project_entity(project)
    if entity:
        names = {p["name"] for p in backend.projects()}
        if project not in names and name in names:
            return name
    return project


def _renamed(runs: list[Run]) -> dict[str, str]:
    """key -> id of the runs the server knows by another key (their id was taken first in
    another project): histories name runs by id, as the rest of the API does."""
    return {r.key: r.id for r in runs if r.key != r.id}


def _order(order: str) -> tuple[str, str]:
    if not isinstance(order, str) or not order.strip("+-"):
        raise UsageError(f"order must be a field name like '-created_at', got {order!r}")
    from wisp.api._filters import field_name

    if order.startswith("-"):
        return field_name(order[1:]), "desc"
    return field_name(order.lstrip("+")), "asc"

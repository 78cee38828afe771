"""``Runs`` of ``wisp.Api()``: a lazy, paged collection of a project's runs, and the long
tables of their histories."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from wisp.api._objects import order_of, renamed, resolve_project
from wisp.api._run import Run
from wisp.api._tables import SYSTEM_PREFIX
from wisp.errors import UsageError

__all__ = ["Runs"]


class Runs:
    """A lazy collection of a project's runs: iterate, ``len()``, index, ``histories()``."""

    def __init__(
        self,
        backend: Any,
        project: str,
        filters: str,
        order: str,
        per_page: int,
        post: list[tuple[str, Any]] | None = None,
    ) -> None:
        if not isinstance(per_page, int) or not 1 <= per_page <= 1000:
            raise UsageError(f"per_page must be an int in 1..1000, got {per_page!r}")
        self._backend = backend
        self.project = project
        self.filters = filters
        self._post = post or []  # ($regex conditions, evaluated here: the language has none)
        self.sort, self.order = order_of(order)
        self.per_page = per_page
        self._pages: list[list[dict[str, Any]]] = []
        self._total: int | None = None

    def _page(self, n: int) -> list[dict[str, Any]]:
        if self._post and self._total is None:
            self._load_all()
        while len(self._pages) <= n and not self._post:
            runs, total = self._fetch(len(self._pages) * self.per_page)
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

    def _fetch(self, offset: int) -> tuple[list[dict[str, Any]], int]:
        return self._backend.list_runs(  # type: ignore[no-any-return]
            self.project, self.filters, self.sort, self.order, self.per_page, offset
        )

    def _load_all(self) -> None:
        """Every run of the language's filter, then the ``$regex`` conditions, paged here."""
        from wisp.api._filters import regex_match

        got: list[dict[str, Any]] = []
        while True:
            runs, total = self._fetch(len(got))
            if not got and total == 0:
                found = resolve_project(self._backend, self.project)
                if found != self.project:
                    self.project = found
                    continue
                self._backend.check_project(self.project)
            got.extend(runs)
            if len(runs) < self.per_page or len(got) >= total:
                break
        kept = [r for r in got if regex_match(self._post, r)]
        self._pages = [kept[i : i + self.per_page] for i in range(0, len(kept), self.per_page)]
        self._total = len(kept)

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
        return build(by_run_id(parts, renamed(runs)), keys, format)

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
                union.update(
                    k for k in self._backend.metric_keys(rid) if not k.startswith(SYSTEM_PREFIX)
                )
            keys = sorted(union)
        fields = [pa.field("run_id", pa.string()), pa.field("step", pa.int64())]
        schema = pa.schema(fields + [pa.field(k, pa.float64()) for k in keys])
        rows = 0
        with pq.ParquetWriter(path, schema, compression="zstd") as writer:
            parts = self._backend.export(ids, keys, None, None, max(1, batch_runs))
            for part in by_run_id(parts, renamed(runs)):
                batch = to_batch(part, schema)
                if batch.num_rows:
                    writer.write_batch(batch)
                    rows += batch.num_rows
        return rows

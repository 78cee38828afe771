"""Import MLflow runs, from a file store (``mlruns/``) or a tracking server's REST API.

No ``mlflow`` import: the file store is read as MLflow lays it out, the server through
its REST API 2.0 with ``urllib``.

File store (``FileStore``, as MLflow 1.x-3.x write it)::

    mlruns/<experiment_id>/meta.yaml            name, experiment_id, lifecycle_stage, ...
    mlruns/<experiment_id>/<run_id>/meta.yaml   run_id, run_name, status (1 RUNNING,
                                                2 SCHEDULED, 3 FINISHED, 4 FAILED,
                                                5 KILLED), start_time, end_time (ms),
                                                lifecycle_stage, artifact_uri, user_id
    .../<run_id>/metrics/<key>                  one point per line: "<ms> <value> <step>"
                                                (older files: no step, meaning 0)
    .../<run_id>/params/<key>, tags/<key>       the value as the file's text
    .../<run_id>/artifacts/...                  the run's artifacts (file:// artifact_uri)

Keys holding ``/`` are nested folders.  REST: ``experiments/search``, ``runs/search``,
``metrics/get-history``, ``artifacts/list`` under ``/api/2.0/mlflow/`` and
``/get-artifact`` for artifact bytes.

Mapping: experiment -> project (``/`` becomes ``_``), run id -> wisp run id (the same
32 hex digits, so importing again finds the run), params -> config (strings, as MLflow
keeps them), metrics -> history: one row per step holding every key logged at that
step, stamped with the earliest of their timestamps; a key that has several points at
one step (logged without ``step=``) keeps all its points at steps 0, 1, 2... in logged
order (listed in ``imported_from.renumbered``).  NaN and infinities are kept.  Tags:
``mlflow.note.content`` -> notes, ``mlflow.runName`` -> name, the others ->
``imported_from.tags`` (all of them, exactly) and wisp tags ``key=value`` for the
user's tags.  Status -> finished / failed / killed / crashed (RUNNING).  Artifacts are
copied into the run's ``files/`` as FILE records.
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import json
import logging
import os
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, TextIO

from wisp.errors import RunFileError, UsageError
from wisp.integrations.importers._progress import ImportReport, Progress, RunIndex
from wisp.integrations.importers._writeback import ImportedRun

__all__ = ["import_mlflow"]

log = logging.getLogger("wisp")

_STATUS = {1: "RUNNING", 2: "SCHEDULED", 3: "FINISHED", 4: "FAILED", 5: "KILLED"}
_API = "/api/2.0/mlflow"


@dataclass
class _Run:
    """One MLflow run as either store describes it."""

    run_id: str
    experiment: str
    name: str
    status: str
    start_ms: int | None
    end_ms: int | None
    params: dict[str, str]
    tags: dict[str, str]
    user: str | None
    artifact_uri: str | None
    fingerprint: str
    ref: Any = None  # the store's handle: the run folder, or None for REST
    metric_keys: list[str] = field(default_factory=list)


# -- file store -------------------------------------------------------------------------------


def _yaml_scalar(raw: str) -> Any:
    s = raw.strip()
    if s in ("", "null", "~"):
        return None
    if s.startswith("'") and s.endswith("'") and len(s) >= 2:
        return s[1:-1].replace("''", "'")
    if s.startswith('"') and s.endswith('"') and len(s) >= 2:
        return json.loads(s)
    if s == "[]":
        return []
    try:
        return int(s)
    except ValueError:
        return s


def _read_meta(path: str) -> dict[str, Any]:
    """A flat ``meta.yaml`` as MLflow's ``yaml.safe_dump`` writes it (long values wrap)."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if any(c in text for c in '"|>&*!{'):  # beyond plain scalars: a real YAML parser
        try:
            import yaml
        except ImportError:
            pass
        else:
            doc = yaml.safe_load(text)
            return doc if isinstance(doc, dict) else {}
    out: dict[str, str] = {}
    last = None
    for line in text.splitlines():
        if not line.strip():
            continue
        if line[0] in " \t" and last is not None:  # a wrapped value goes on
            out[last] += " " + line.strip()
            continue
        key, sep, value = line.partition(":")
        if sep:
            last = key.strip()
            out[last] = value
    return {k: _yaml_scalar(v) for k, v in out.items()}


def _read_tree(folder: str) -> dict[str, str]:
    """``params/`` or ``tags/``: each file's text under its path as the key."""
    out: dict[str, str] = {}
    for root, _dirs, files in os.walk(folder):
        for name in files:
            full = os.path.join(root, name)
            key = os.path.relpath(full, folder).replace(os.sep, "/")
            with open(full, encoding="utf-8") as f:
                out[key] = f.read()
    return out


def _metric_files(folder: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for root, _dirs, files in os.walk(folder):
        for name in files:
            full = os.path.join(root, name)
            out[os.path.relpath(full, folder).replace(os.sep, "/")] = full
    return out


def _stat_print(run_dir: str) -> str:
    """A fingerprint of a file-store run: every file's path, size and mtime (artifacts too)."""
    h = hashlib.sha256()
    for root, dirs, files in os.walk(run_dir):
        dirs.sort()
        for name in sorted(files):
            st = os.stat(os.path.join(root, name))
            h.update(
                f"{os.path.relpath(os.path.join(root, name), run_dir)}|{st.st_size}|"
                f"{st.st_mtime_ns}\n".encode()
            )
    return h.hexdigest()


def _float(v: Any) -> float:
    return float(v)  # "nan", "inf", "NaN", "Infinity" all parse


class FileStore:
    """Reads an ``mlruns`` folder."""

    def __init__(self, root: str) -> None:
        if root.startswith("file:"):
            root = urllib.parse.unquote(urllib.parse.urlsplit(root).path)
        if not os.path.isdir(root):
            raise UsageError(f"no MLflow file store at {root}")
        if os.path.isdir(os.path.join(root, "mlruns")) and not os.path.isfile(
            os.path.join(root, "meta.yaml")
        ):
            root = os.path.join(root, "mlruns")
        self.root = os.path.abspath(root)
        self.where = self.root

    def experiments(self) -> list[tuple[str, str, str]]:
        """``(experiment_id, name, lifecycle_stage)`` of every experiment."""
        out = []
        for name in sorted(os.listdir(self.root)):
            meta = os.path.join(self.root, name, "meta.yaml")
            if name.startswith(".") or not os.path.isfile(meta):
                continue
            doc = _read_meta(meta)
            out.append(
                (
                    str(doc.get("experiment_id", name)),
                    str(doc.get("name") or name),
                    str(doc.get("lifecycle_stage") or "active"),
                )
            )
        return out

    def runs(self, experiment_id: str, experiment: str) -> Iterator[_Run | tuple[str, str]]:
        """Each run of an experiment, or ``(run id, why it cannot be read)``."""
        exp_dir = os.path.join(self.root, experiment_id)
        for name in sorted(os.listdir(exp_dir)):
            run_dir = os.path.join(exp_dir, name)
            meta_path = os.path.join(run_dir, "meta.yaml")
            if not os.path.isfile(meta_path):
                continue
            try:
                meta = _read_meta(meta_path)
                params = _read_tree(os.path.join(run_dir, "params"))
                tags = _read_tree(os.path.join(run_dir, "tags"))
            except (OSError, ValueError) as exc:
                yield name, f"unreadable: {exc}"
                continue
            if meta.get("lifecycle_stage") == "deleted":
                yield name, "deleted in MLflow"
                continue
            status = meta.get("status")
            metrics = _metric_files(os.path.join(run_dir, "metrics"))
            yield _Run(
                run_id=str(meta.get("run_id") or meta.get("run_uuid") or name),
                experiment=experiment,
                name=str(meta.get("run_name") or tags.get("mlflow.runName") or name),
                status=_STATUS.get(status, str(status)) if isinstance(status, int) else str(status),
                start_ms=meta.get("start_time"),
                end_ms=meta.get("end_time"),
                params=params,
                tags=tags,
                user=meta.get("user_id") or None,
                artifact_uri=meta.get("artifact_uri") or None,
                fingerprint=_stat_print(run_dir),
                ref=(run_dir, metrics),
                metric_keys=sorted(metrics),
            )

    def history(self, run: _Run, key: str) -> list[tuple[int, float, int]]:
        """``(timestamp ms, value, step)`` in file order."""
        with open(run.ref[1][key], encoding="utf-8") as f:
            text = f.read()
        tokens = text.split()
        lines = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
        if len(tokens) == 3 * lines:  # every line "<ms> <value> <step>": parse by columns
            return list(
                zip(
                    map(int, tokens[0::3]),
                    map(float, tokens[1::3]),
                    map(int, tokens[2::3]),
                    strict=True,
                )
            )
        out = []
        for line in text.split("\n"):
            parts = line.split()
            if len(parts) == 3:
                out.append((int(parts[0]), float(parts[1]), int(parts[2])))
            elif len(parts) == 2:  # files from MLflow before steps existed
                out.append((int(parts[0]), float(parts[1]), 0))
        return out

    def artifacts(self, run: _Run) -> Iterator[tuple[str, str | bytes]]:
        """``(relative path, local file)`` of every artifact."""
        folder = None
        uri = run.artifact_uri or ""
        if uri.startswith("file:"):
            folder = urllib.parse.unquote(urllib.parse.urlsplit(uri).path)
        if folder is None or not os.path.isdir(folder):
            folder = os.path.join(run.ref[0], "artifacts")  # the store was moved
        for root, dirs, files in os.walk(folder):
            dirs.sort()
            for name in sorted(files):
                full = os.path.join(root, name)
                yield os.path.relpath(full, folder).replace(os.sep, "/"), full


# -- REST -------------------------------------------------------------------------------------


class RestStore:
    """Reads a tracking server (``http(s)://host:port``) through its REST API."""

    def __init__(self, url: str, timeout: float = 60.0) -> None:
        self.base = url.rstrip("/")
        self.where = self.base
        self.timeout = timeout
        self.headers = {"Content-Type": "application/json", "Accept": "application/json"}
        token = os.environ.get("MLFLOW_TRACKING_TOKEN")
        user = os.environ.get("MLFLOW_TRACKING_USERNAME")
        if token:
            self.headers["Authorization"] = f"Bearer {token}"
        elif user:
            pw = os.environ.get("MLFLOW_TRACKING_PASSWORD", "")
            cred = base64.b64encode(f"{user}:{pw}".encode()).decode()
            self.headers["Authorization"] = f"Basic {cred}"

    def _call(
        self, method: str, path: str, body: Any = None, query: dict[str, Any] | None = None
    ) -> Any:
        url = self.base + path
        if query:
            url += "?" + urllib.parse.urlencode({k: v for k, v in query.items() if v is not None})
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(url, data=data, headers=self.headers, method=method)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as exc:
            detail = exc.read()[:300].decode("utf-8", "replace")
            raise RunFileError(f"MLflow server {method} {path}: {exc.code} {detail}") from exc
        except OSError as exc:
            raise RunFileError(f"MLflow server {self.base} unreachable: {exc}") from exc
        if path.startswith(_API):
            return json.loads(raw) if raw else {}
        return raw

    def _pages(self, path: str, body: dict[str, Any], item: str) -> Iterator[dict[str, Any]]:
        token = None
        while True:
            doc = self._call("POST", path, {**body, **({"page_token": token} if token else {})})
            yield from doc.get(item, [])
            token = doc.get("next_page_token")
            if not token:
                return

    def experiments(self) -> list[tuple[str, str, str]]:
        body = {"max_results": 1000, "view_type": "ALL"}
        return [
            (
                str(e["experiment_id"]),
                str(e.get("name") or e["experiment_id"]),
                str(e.get("lifecycle_stage") or "active"),
            )
            for e in self._pages(f"{_API}/experiments/search", body, "experiments")
        ]

    def runs(self, experiment_id: str, experiment: str) -> Iterator[_Run | tuple[str, str]]:
        body = {"experiment_ids": [experiment_id], "max_results": 1000, "run_view_type": "ALL"}
        for r in self._pages(f"{_API}/runs/search", body, "runs"):
            info, data = r.get("info", {}), r.get("data", {})
            run_id = str(info.get("run_id") or info.get("run_uuid"))
            if info.get("lifecycle_stage") == "deleted":
                yield run_id, "deleted in MLflow"
                continue
            params = {p["key"]: p.get("value", "") for p in data.get("params", [])}
            tags = {t["key"]: t.get("value", "") for t in data.get("tags", [])}
            metrics = data.get("metrics", [])
            # the latest point of every key, params, tags and status: grows when the run does
            digest = json.dumps([info, params, tags, metrics], sort_keys=True, default=str)
            yield _Run(
                run_id=run_id,
                experiment=experiment,
                name=str(info.get("run_name") or tags.get("mlflow.runName") or run_id),
                status=str(info.get("status") or "FINISHED"),
                start_ms=_int_or_none(info.get("start_time")),
                end_ms=_int_or_none(info.get("end_time")),
                params=params,
                tags=tags,
                user=info.get("user_id") or None,
                artifact_uri=info.get("artifact_uri") or None,
                fingerprint=hashlib.sha256(digest.encode()).hexdigest(),
                metric_keys=sorted({m["key"] for m in metrics}),
            )

    def history(self, run: _Run, key: str) -> list[tuple[int, float, int]]:
        out = []
        token = None
        while True:
            doc = self._call(
                "GET",
                f"{_API}/metrics/get-history",
                query={"run_id": run.run_id, "metric_key": key, "page_token": token},
            )
            for m in doc.get("metrics", []):
                out.append(
                    (
                        int(m.get("timestamp", 0)),
                        _float(m.get("value", "nan")),
                        int(m.get("step", 0)),
                    )
                )
            token = doc.get("next_page_token")
            if not token:
                return out

    def artifacts(self, run: _Run, path: str | None = None) -> Iterator[tuple[str, str | bytes]]:
        doc = self._call(
            "GET", f"{_API}/artifacts/list", query={"run_id": run.run_id, "path": path}
        )
        for f in doc.get("files", []):
            if f.get("is_dir"):
                yield from self.artifacts(run, f["path"])
            else:
                yield (
                    f["path"],
                    self._call(
                        "GET", "/get-artifact", query={"path": f["path"], "run_uuid": run.run_id}
                    ),
                )


def _int_or_none(v: Any) -> int | None:
    return None if v is None or v == "" else int(v)


# -- conversion -------------------------------------------------------------------------------


def _project(name: str) -> str:
    p = name.strip().strip("/").replace("/", "_")[:128]
    return p if p.strip() and p.isprintable() else "mlflow"


def _rows(
    series: dict[str, list[tuple[int, float, int]]], renumbered: list[str]
) -> list[tuple[int, float, dict[str, float]]]:
    """Every point as history rows: ``(step, earliest ms of the step, {key: value})``."""
    fast = _aligned_rows(series)
    if fast is not None:
        return fast
    by_step: dict[int, list[Any]] = {}
    for key, points in series.items():
        steps = [p[2] for p in points]
        if len(set(steps)) != len(steps):
            renumbered.append(key)
            points = sorted(points, key=lambda p: p[0])  # logged order (stable)
            points = [(ts, v, i) for i, (ts, v, _s) in enumerate(points)]
        for ts, value, step in points:
            slot = by_step.get(step)
            if slot is None:
                by_step[step] = [ts, {key: value}]
            else:
                slot[1][key] = value
                if ts < slot[0]:
                    slot[0] = ts
    return [(step, by_step[step][0] / 1000.0, by_step[step][1]) for step in sorted(by_step)]


def _aligned_rows(
    series: dict[str, list[tuple[int, float, int]]],
) -> list[tuple[int, float, dict[str, float]]] | None:
    """The common case by columns: every key logged at the same increasing steps."""
    if not series:
        return []
    keys = list(series)
    first = series[keys[0]]
    steps = [p[2] for p in first]
    if any(a >= b for a, b in itertools.pairwise(steps)):
        return None
    for k in keys[1:]:
        pts = series[k]
        if len(pts) != len(steps) or any(p[2] != s for p, s in zip(pts, steps, strict=False)):
            return None
    cols = [[p[1] for p in series[k]] for k in keys]
    stamps = [min(t) for t in zip(*([p[0] for p in series[k]] for k in keys), strict=False)]
    return [
        (step, ts / 1000.0, dict(zip(keys, values, strict=False)))
        for step, ts, values in zip(steps, stamps, zip(*cols, strict=False), strict=False)
    ]


_STATE_EXIT = {"FINISHED": 0, "FAILED": 1, "KILLED": 137}


def _import_run(
    store: FileStore | RestStore,
    run: _Run,
    base: str,
    index: RunIndex,
    report: ImportReport,
    artifacts: bool,
) -> None:
    state = index.claim(run.run_id, run.fingerprint, report)
    if state is None:
        return
    series = {key: store.history(run, key) for key in run.metric_keys}
    renumbered: list[str] = []
    rows = _rows(series, renumbered)
    tags = dict(run.tags)
    notes = tags.get("mlflow.note.content") or None
    user_tags = [
        f"{k}={v}" if v else k for k, v in sorted(tags.items()) if not k.startswith("mlflow.")
    ]
    start = (run.start_ms or (rows[0][1] * 1000 if rows else time.time() * 1000)) / 1000.0
    origin = {
        "imported_from": {
            "source": "mlflow",
            "store": store.where,
            "run_id": run.run_id,
            "experiment": run.experiment,
            "status": run.status,
            "user": run.user,
            "tags": tags,
            "renumbered": renumbered,
            "artifact_uri": run.artifact_uri,
        },
        "program": tags.get("mlflow.source.name") or None,
    }
    out = ImportedRun(
        base,
        run_id=run.run_id,
        project=_project(run.experiment),
        name=run.name,
        created_at=start,
        origin=origin,
        config=run.params,
        tags=[t[:256] for t in user_tags[:256]],
        notes=notes,
        group=tags.get("mlflow.parentRunId") or None,
    )
    points = 0
    last = start
    for step, ts, values in rows:
        out.log(step, ts, values)
        points += len(values)
        last = max(last, ts)
    files = 0
    if artifacts:
        files = _copy_artifacts(store, run, out, report)
    end = run.end_ms / 1000.0 if run.end_ms else last
    exit_code = _STATE_EXIT.get(run.status)  # KILLED is failed (137); RUNNING stays crashed
    run_dir = out.finish(max(end, start), exit_code)
    index.done(run.run_id, run_dir, "mlflow", run.run_id, run.fingerprint)
    report.runs.append(run_dir)
    report.points += points
    report.files += files
    if state == "changed":
        report.updated += 1


def _copy_artifacts(
    store: FileStore | RestStore, run: _Run, out: ImportedRun, report: ImportReport
) -> int:
    from wisp._localpath import local_path
    from wisp._rundir import FILES_DIR
    from wisp.integrations._files import save_file

    n = 0
    try:
        for rel, src in store.artifacts(run):
            if isinstance(src, bytes):  # downloaded: write it where save_file keeps it
                dest = local_path(os.path.join(out.dir, FILES_DIR), rel, what="MLflow artifact")
                os.makedirs(os.path.dirname(dest), exist_ok=True)
                with open(dest, "wb") as f:
                    f.write(src)
                src = dest
            save_file(out.run, src, rel, kind="artifact")
            n += 1
    except (OSError, RunFileError, UsageError) as exc:
        report.leave_out(f"artifacts that could not be read ({type(exc).__name__})")
        log.warning("wisp: MLflow run %s: artifacts not all copied: %s", run.run_id, exc)
    return n


def _open_store(source: str) -> FileStore | RestStore:
    if source.startswith(("http://", "https://")):
        return RestStore(source)
    return FileStore(source)


def import_mlflow(
    source: str | os.PathLike[str],
    dir: str | os.PathLike[str] | None = None,  # noqa: A002 - wisp.init's name
    *,
    experiments: Iterable[str] | None = None,
    artifacts: bool = True,
    stream: TextIO | None = None,
) -> ImportReport:
    """Import every MLflow run of ``source`` into ``<dir>/wisp/``; return what was done.

    ``source`` is an ``mlruns`` folder (or ``file://`` URI, or the folder holding
    ``mlruns/``) or a tracking server URL (``http://host:5000``).  ``experiments``
    limits the import to these experiment names or ids.  Runs already imported and
    unchanged are left alone; an interrupted import resumes where it stopped.
    """
    store = _open_store(os.fspath(source))
    base = os.path.abspath(os.fspath(dir) if dir is not None else os.getcwd())
    wanted = set(experiments) if experiments is not None else None
    report = ImportReport("mlflow")
    index = RunIndex(base)
    exps = [e for e in store.experiments() if wanted is None or e[0] in wanted or e[1] in wanted]
    progress = Progress("wisp import mlflow", stream=stream)
    try:
        for exp_id, exp_name, stage in exps:
            if stage == "deleted":
                report.skip("experiment deleted in MLflow")
                continue
            for run in store.runs(exp_id, exp_name):
                if isinstance(run, tuple):
                    report.skip(run[1])
                    continue
                try:
                    _import_run(store, run, base, index, report, artifacts)
                except (OSError, ValueError, RunFileError) as exc:
                    report.failed.append((run.run_id, f"{type(exc).__name__}: {exc}"))
                progress.advance(note=f"{exp_name}/{run.name}")
    finally:
        progress.close()
    return report

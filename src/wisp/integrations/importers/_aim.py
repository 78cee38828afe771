"""Import the runs of an Aim repository, read with Aim's own SDK (``aim.Repo``, ``aim.Run``).

Mapping: a run's hash -> run id ``aim-<hash>``; ``experiment`` -> project; ``name`` ->
name; ``description`` -> notes; tags -> tags; ``creation_time`` -> created_at;
``end_time`` -> the finish time (a run without one, still running or ended without
closing, is imported crashed and imported again once it changes); ``archived`` and
the hash -> ``imported_from``.  Params (``run[...]``) -> config, except Aim's own
``__system_params`` (kept in ``imported_from.system_params`` without the environment
variables).  Metrics: each (name, context) sequence becomes the key ``name`` for the
empty context, else ``name/k=v,...`` (the context's keys sorted; each key's context
is kept in ``imported_from.contexts``); every point keeps its step, the points of one
step share a row stamped with their earliest time.  Epochs become an ``epoch`` value
in the row (or ``epoch/<key>`` for each key when the metrics of one step disagree).
Aim's system metrics (``__system__<name>``) become wisp system samples
``system/<name>``.  Distributions become wisp histograms (Aim's bins and counts),
images wisp images (the file Aim stored, with its caption; a list of images a gallery),
keyed like metrics; texts, audio and figures are counted as not imported.

Aim's readers read its index: runs whose index is out of date are indexed first, as
``aim up`` does when it starts (that writes Aim's index in the repository, nothing else).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import warnings
from typing import Any, TextIO

from wisp._protocol import RecordType
from wisp.errors import RunFileError
from wisp.integrations.importers._progress import ImportReport, Progress, RunIndex
from wisp.integrations.importers._writeback import Gallery, ImportedRun, MediaBytes, Typed

__all__ = ["import_aim"]

SYSTEM_PREFIX = "__system__"
MEDIA = ("distributions", "images")  # Aim's sequence kinds imported besides metrics
_SUFFIX = {"png": ".png", "jpeg": ".jpg", "jpg": ".jpg", "gif": ".gif"}
Points = tuple[list[int], tuple[list[Any], list[Any], list[float]]]


def _aim() -> tuple[Any, Any, Any]:
    try:
        with warnings.catch_warnings():  # aim's models use SQLAlchemy 1.x names
            warnings.simplefilter("ignore", DeprecationWarning)
            from aim import Repo, Run
            from aim.sdk.index_manager import RepoIndexManager
    except ImportError as exc:
        raise ImportError(
            "importing Aim runs needs the aim package to read its repository; install it "
            "with `pip install aim`"
        ) from exc
    return Repo, Run, RepoIndexManager


def key_of(name: str, context: dict[str, Any]) -> str:
    """The wisp key of Aim's ``(name, context)`` sequence."""
    if not context:
        return name
    parts = [f"{k}={_context_value(v)}" for k, v in sorted(context.items(), key=lambda kv: kv[0])]
    return f"{name}/{','.join(parts)}"


def _context_value(v: Any) -> str:
    return v if isinstance(v, str) else json.dumps(v, sort_keys=True, default=str)


def _repo_path(path: str) -> str:
    path = os.path.abspath(path)
    if os.path.basename(path) == ".aim":
        path = os.path.dirname(path)
    if not os.path.isdir(os.path.join(path, ".aim")):
        raise RunFileError(f"no Aim repository at {path} (no .aim folder)")
    return path


def _index(repo: Any, manager_cls: Any) -> None:
    """Index the runs Aim's readers would not see yet (as ``aim up`` does on start)."""
    import aimrocks.errors

    manager = manager_cls.get_index_manager(repo)
    index = repo.request_tree("meta", read_only=True)
    stale = [h for h in repo.list_all_runs() if manager._is_run_index_outdated(h, index)]
    try:
        for run_hash in stale:
            manager.index(run_hash)
    except aimrocks.errors.RocksIOError as exc:
        why = exc.args[0].decode(errors="replace") if exc.args else str(exc)
        raise RunFileError(
            f"cannot update Aim's index of {repo.path} ({why}): is `aim up` or another "
            "import using it? Import again once it has indexed the runs, or stop it"
        ) from exc
    if stale:  # the read-only containers opened before indexing hold the old index
        repo.container_pool.clear()


class _Rows:
    """Points by step: (earliest time, values, epochs by key)."""

    def __init__(self) -> None:
        self.by_step: dict[int, tuple[float, dict[str, Any], dict[str, Any]]] = {}

    def put(self, step: int, ts: float, key: str, value: Any, epoch: Any) -> None:
        t, values, epochs = self.by_step.setdefault(int(step), (ts, {}, {}))
        values[key] = value
        if epoch is not None and not (isinstance(epoch, float) and math.isnan(epoch)):
            epochs[key] = int(epoch) if float(epoch).is_integer() else epoch
        if ts < t:
            self.by_step[int(step)] = (ts, values, epochs)

    def rows(self) -> list[tuple[int, float, dict[str, Any]]]:
        out = []
        for step in sorted(self.by_step):
            ts, values, epochs = self.by_step[step]
            row = dict(values)
            if len(set(epochs.values())) == 1 and "epoch" not in row:
                row["epoch"] = next(iter(epochs.values()))
            else:
                row.update({f"epoch/{k}": e for k, e in epochs.items()})
            out.append((step, ts, row))
        return out


def _fingerprint(run: Any, seqs: list[tuple[str, str, dict[str, Any], Points]]) -> str:
    doc = [run.hash, run.end_time, run.name, run.experiment, list(run.tags), run.description]
    doc.append(run.get(..., {}))
    for kind, name, ctx, (steps, (values, _epochs, times)) in seqs:
        last = values[-1:] if kind == "metric" else []  # media objects have no stable text
        doc.append([kind, name, ctx, len(steps), steps[-1:], last, times[-1:]])
    return hashlib.sha256(json.dumps(doc, sort_keys=True, default=str).encode()).hexdigest()


def _points(sequence: Any) -> Points:
    """(steps, (values, epochs, times)) of one Aim sequence."""
    try:
        steps, (values, epochs, times) = sequence.data.items_list()
    except ValueError:  # no points
        return [], ([], [], [])
    return list(steps), (list(values), list(epochs), list(times))


def _sequences(run: Any) -> list[tuple[str, str, dict[str, Any], Points]]:
    """(kind, name, context, points) of the run's metrics, distributions and images."""
    from aim.sdk.sequence import Sequence

    out = [("metric", m.name, m.context.to_dict(), _points(m)) for m in run.metrics()]
    getters = {"distributions": run.get_distribution_sequence, "images": run.get_image_sequence}
    for kind in MEDIA:
        for name, ctx, _run in run.iter_sequence_info_by_type(
            Sequence.registry[kind].allowed_dtypes()
        ):
            out.append((kind, name, ctx.to_dict(), _points(getters[kind](name, ctx))))
    return out


def _media(value: Any) -> Any:
    """An Aim Distribution, Image or list of Images as a wisp value; None for others."""
    from aim.sdk.objects.distribution import Distribution
    from aim.sdk.objects.image import Image

    if isinstance(value, Distribution):
        lo, hi = (float(x) for x in value.range)
        n = int(value.bin_count)
        counts = [int(c) if float(c).is_integer() else float(c) for c in value.weights]
        edges = [lo + (hi - lo) * i / n for i in range(n + 1)]
        return Typed({"_type": "histogram", "bins": edges, "counts": counts, "nan": 0, "inf": 0})
    if isinstance(value, Image):
        data = bytes(value.storage["data"].load())  # the encoded file Aim stored
        suffix = _SUFFIX.get(str(value.format).lower(), ".png")
        return MediaBytes(data, suffix, int(value.width), int(value.height), value.caption or None)
    if isinstance(value, list) and value and all(isinstance(v, Image) for v in value):
        return Gallery([_media(v) for v in value])
    return None


def _left_out(run: Any) -> dict[str, int]:
    """Aim's other sequences (texts, audio, figures, ...) by kind."""
    from aim.sdk.sequence import Sequence
    from aim.sdk.sequences.sequence_type_map import SEQUENCE_TYPE_MAP

    counts: dict[str, int] = {}
    for kind, cls in Sequence.registry.items():
        dtypes = cls.allowed_dtypes()
        dtypes = (dtypes,) if isinstance(dtypes, str) else dtypes
        if kind in ("metric", *MEDIA) or not all(d in SEQUENCE_TYPE_MAP for d in dtypes):
            continue
        n = sum(1 for _ in run.iter_sequence_info_by_type(dtypes))
        if n:
            counts[f"Aim {kind} sequences"] = n
    return counts


def _collect(
    seqs: list[tuple[str, str, dict[str, Any], Points]], report: ImportReport
) -> tuple[_Rows, _Rows, dict[str, dict[str, Any]], int]:
    """History rows, system samples, each key's context, and the metric points."""
    rows, system = _Rows(), _Rows()
    contexts: dict[str, dict[str, Any]] = {}
    points = 0
    for kind, name, ctx, (steps, (values, epochs, times)) in seqs:
        if kind == "metric" and name.startswith(SYSTEM_PREFIX):
            key = "system/" + key_of(name[len(SYSTEM_PREFIX) :], ctx)
            for step, value, ts in zip(steps, values, times, strict=True):
                system.put(step, float(ts), key, value, None)
            continue
        key = key_of(name, ctx)
        if ctx:
            contexts[key] = {"name": name, "context": ctx}
        for step, value, epoch, ts in zip(steps, values, epochs, times, strict=True):
            stored = value if kind == "metric" else _media(value)
            if stored is None:
                report.leave_out(f"Aim {kind} values of another type")
                continue
            rows.put(step, float(ts), key, stored, epoch)
        points += len(steps) if kind == "metric" else 0
    return rows, system, contexts, points


def _import_run(run: Any, repo_path: str, base: str, index: RunIndex, report: ImportReport) -> None:
    seqs = _sequences(run)
    run_id = f"aim-{run.hash}"
    fingerprint = _fingerprint(run, seqs)
    state = index.claim(run_id, fingerprint, report)
    if state is None:
        return
    params = run.get(..., {}) or {}
    config = {k: v for k, v in params.items() if not str(k).startswith("__")}
    system_params = dict(params.get("__system_params") or {})
    system_params.pop("env_variables", None)
    rows, system, contexts, points = _collect(seqs, report)
    for what, n in _left_out(run).items():
        report.leave_out(what, n)
    start = float(run.creation_time)
    origin = {
        "imported_from": {
            "source": "aim",
            "path": repo_path,
            "hash": run.hash,
            "archived": bool(run.archived),
            "contexts": contexts,
            "system_params": system_params,
        }
    }
    out = ImportedRun(
        base,
        run_id=run_id,
        project=str(run.experiment or "default"),
        name=str(run.name or run.hash),
        created_at=start,
        origin=origin,
        config=config,
        tags=[str(t) for t in run.tags],
        notes=run.description or None,
    )
    samples = sorted(((ts, vals) for _s, ts, vals in system.rows()), key=lambda s: s[0])
    last = start
    for step, ts, row in rows.rows():
        while samples and samples[0][0] <= ts:
            t, vals = samples.pop(0)
            out.record(RecordType.SYSTEM, {"ts": t, "values": vals})
        out.log(step, ts, row)
        last = max(last, ts)
    for t, vals in samples:
        out.record(RecordType.SYSTEM, {"ts": t, "values": vals})
    end = run.end_time
    run_dir = out.finish(float(end) if end else last, 0 if end else None)
    index.done(run_id, run_dir, "aim", run.hash, fingerprint)
    report.runs.append(run_dir)
    report.points += points
    if state == "changed":
        report.updated += 1


def import_aim(
    repo: str | os.PathLike[str],
    dir: str | os.PathLike[str] | None = None,  # noqa: A002 - wisp.init's name
    *,
    stream: TextIO | None = None,
) -> ImportReport:
    """Import every run of the Aim repository ``repo`` (the folder holding ``.aim``) into
    ``<dir>/wisp/``.  Needs the ``aim`` package.  Runs already imported and unchanged are
    left alone; an interrupted import resumes."""
    repo_cls, run_cls, manager_cls = _aim()
    path = _repo_path(os.fspath(repo))
    base = os.path.abspath(os.fspath(dir) if dir is not None else os.getcwd())
    aim_repo = repo_cls.from_path(path)
    _index(aim_repo, manager_cls)
    report = ImportReport("aim")
    index = RunIndex(base)
    hashes = sorted(aim_repo.list_all_runs())
    progress = Progress("wisp import aim", total=len(hashes), stream=stream)
    try:
        for run_hash in hashes:
            try:
                run = run_cls(run_hash, repo=aim_repo, read_only=True)
                _import_run(run, path, base, index, report)
            except (OSError, ValueError, KeyError, TypeError) as exc:
                report.failed.append((run_hash, f"{type(exc).__name__}: {exc}"))
            progress.advance(note=run_hash)
    finally:
        progress.close()
    return report

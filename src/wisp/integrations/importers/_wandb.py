"""Import wandb runs (``run-<id>.wandb`` files, offline or synced) as wisp runs.

A ``.wandb`` file is wandb's transaction log: a 7-byte header (``:W&B``, u16
magic 0xBEE1, u8 version 0) then 32 KiB blocks of chunks, each ``u32 crc32 |
u16 length | u8 type (1 full, 2 first, 3 middle, 4 last)`` + data, in the
LevelDB log layout.  Each reassembled record is a protobuf ``Record`` decoded
with the wandb package's own ``wandb.proto.wandb_internal_pb2`` (so wandb must
be installed).  Converted: run identity, config, history (steps and times kept;
images, tables and histograms become wisp values, see ``_wandb_media``), summary,
system metrics (``system/<name>`` SYSTEM records), alerts, the files the run saved
(``wandb.save``, from the run folder's ``files/``) and the exit state.
"""

from __future__ import annotations

import glob
import json
import logging
import os
import struct
import zlib
from collections.abc import Iterable, Iterator
from typing import Any, TextIO

from wisp._runfile import RecordType
from wisp.errors import RunFileError, UsageError
from wisp.integrations.importers._progress import ImportReport, Progress, RunIndex, interrupted
from wisp.integrations.importers._wandb_media import convert_value, nest
from wisp.integrations.importers._writeback import ImportedRun, existing_run_dir

__all__ = ["import_wandb", "import_wandb_report", "iter_wandb_records", "wandb_files"]

log = logging.getLogger("wisp")

_HEADER = struct.Struct("<4sHB")
_CHUNK = struct.Struct("<IHB")
_BLOCK = 32768
_FULL, _FIRST, _MIDDLE, _LAST = 1, 2, 3, 4
_TYPE_CRC = [zlib.crc32(bytes([t])) & 0xFFFFFFFF for t in range(5)]


def _proto() -> Any:
    try:
        from wandb.proto import wandb_internal_pb2
    except ImportError as exc:
        raise ImportError(
            "importing wandb runs needs the wandb package to read its files; install it with "
            "`pip install wandb`"
        ) from exc
    return wandb_internal_pb2


def iter_wandb_records(path: str) -> Iterator[bytes]:
    """The raw protobuf records of a ``.wandb`` file; stops at a torn or corrupt tail."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < _HEADER.size:
        raise RunFileError(f"{path} is not a wandb run file (too short)")
    ident, magic, version = _HEADER.unpack_from(data)
    if ident != b":W&B" or magic != 0xBEE1 or version != 0:
        raise RunFileError(f"{path} is not a wandb run file (header {data[:7]!r})")
    pos = _HEADER.size
    parts: list[bytes] | None = None
    while pos + _CHUNK.size <= len(data):
        left = _BLOCK - pos % _BLOCK
        if left < _CHUNK.size:
            pos += left
            continue
        crc, length, kind = _CHUNK.unpack_from(data, pos)
        chunk = data[pos + _CHUNK.size : pos + _CHUNK.size + length]
        if (
            kind not in (_FULL, _FIRST, _MIDDLE, _LAST)
            or len(chunk) != length
            or zlib.crc32(chunk, _TYPE_CRC[kind]) & 0xFFFFFFFF != crc
        ):
            if any(data[pos:]):
                log.warning("wisp: %s: stopped at a damaged record at byte %d", path, pos)
            return
        pos += _CHUNK.size + length
        if kind == _FULL:
            yield chunk
        elif kind == _FIRST:
            parts = [chunk]
        elif parts is not None:
            parts.append(chunk)
            if kind == _LAST:
                yield b"".join(parts)
                parts = None


def wandb_files(paths: Iterable[str | os.PathLike[str]]) -> list[str]:
    """``.wandb`` files in ``paths`` (files, run directories or a ``wandb/`` folder)."""
    out: list[str] = []
    for p in paths:
        p = os.fspath(p)
        if os.path.isfile(p):
            out.append(p)
        elif os.path.isdir(p):
            pattern = os.path.join(glob.escape(p), "**", "run-*.wandb")
            out.extend(sorted(glob.glob(pattern, recursive=True)))
        else:
            raise RunFileError(f"no wandb run file or directory at {p}")
    seen: dict[str, None] = {}
    for f in out:
        seen.setdefault(os.path.realpath(f), None)
    return list(seen)


def _key(item: Any) -> str:
    return "/".join(item.nested_key) if item.nested_key else item.key


def _value(raw: str) -> Any:
    return json.loads(raw)


# files wandb writes for itself into a run's files/ (the user's saved files are imported)
_OWN_FILES = {
    "requirements.txt",
    "wandb-metadata.json",
    "wandb-summary.json",
    "config.yaml",
    "output.log",
    "diff.patch",
    "conda-environment.yaml",
}


def _import_one(path: str, base: str, pb: Any, report: ImportReport | None = None) -> str:
    run_info: Any = None
    config: dict[str, Any] = {}
    rows: list[tuple[int, float, dict[str, Any]]] = []
    summary: dict[str, Any] = {}
    system: list[dict[str, Any]] = []
    alerts: list[dict[str, Any]] = []
    exit_code: int | None = None
    runtime: float | None = None
    environment: dict[str, Any] = {}
    skipped: dict[str, int] = {}
    saved: list[str] = []
    files_dir = os.path.join(os.path.dirname(path), "files")
    for raw in iter_wandb_records(path):
        rec = pb.Record()
        rec.ParseFromString(raw)
        kind = rec.WhichOneof("record_type")
        if kind == "run" and run_info is None:
            run_info = rec.run
            for item in rec.run.config.update:
                config[_key(item)] = _value(item.value_json)
        elif kind == "config":
            for item in rec.config.update:
                config[_key(item)] = _value(item.value_json)
            for item in rec.config.remove:
                config.pop(_key(item), None)
        elif kind == "history":
            values = nest(rec.history.item)
            step = values.get("_step", rec.history.step.num)
            ts = values.get("_timestamp", 0.0)
            row = {}
            for k, v in values.items():
                if k.startswith("_"):
                    continue
                v = convert_value(v, files_dir, skipped)
                if v is not None:
                    row[k] = v
            rows.append((int(step), float(ts), row))
        elif kind == "summary":
            summary.update(nest(rec.summary.update))
            for item in rec.summary.remove:
                summary.pop(_key(item), None)
        elif kind == "stats":
            ts = rec.stats.timestamp.seconds + rec.stats.timestamp.nanos / 1e9
            values = {}
            for item in rec.stats.item:
                v = _value(item.value_json)
                if isinstance(v, (int, float)) and not isinstance(v, bool):
                    values[f"system/{item.key}"] = v
            if values:
                system.append({"ts": ts, "values": values})
        elif kind == "alert":
            alerts.append(
                {
                    "title": rec.alert.title,
                    "text": rec.alert.text,
                    "level": rec.alert.level or "INFO",
                    "sent": False,
                }
            )
        elif kind == "environment" and not environment:
            e = rec.environment
            environment = {
                "host": e.host or None,
                "program": e.program or None,
                "python": e.python or None,
                "platform": e.os or None,
            }
        elif kind == "files":
            saved.extend(f.path for f in rec.files.files)
        elif kind == "exit":
            exit_code = int(rec.exit.exit_code)
            runtime = float(rec.exit.runtime) if rec.exit.runtime else None
    if run_info is None:
        raise RunFileError(f"{path} holds no wandb run record")
    run_id = run_info.run_id
    done = existing_run_dir(base, run_id)
    if done is not None and interrupted(done):  # an import cut short: do it again
        RunIndex(base).discard(done)
        done = None
    if done is not None:
        log.info("wisp: wandb run %s is already imported at %s", run_id, done)
        if report is not None:
            report.unchanged.append(done)
        return done
    config.pop("_wandb", None)
    start = run_info.start_time.seconds + run_info.start_time.nanos / 1e9
    origin = {
        "imported_from": {
            "source": "wandb",
            "path": os.path.abspath(path),
            "run_id": run_id,
            "entity": run_info.entity or None,
            "skipped": skipped,
        },
        **{k: v for k, v in environment.items() if v},
    }
    out = ImportedRun(
        base,
        run_id=run_id,
        project=run_info.project or "uncategorized",
        name=run_info.display_name or run_id,
        created_at=start,
        origin=origin,
        config=config,
        tags=list(run_info.tags),
        notes=run_info.notes or None,
        group=run_info.run_group or None,
        job_type=run_info.job_type or None,
    )
    last_ts = start
    pending_system = sorted(system, key=lambda s: s["ts"])
    for step, ts, row in rows:
        while pending_system and pending_system[0]["ts"] <= ts:
            out.record(RecordType.SYSTEM, pending_system.pop(0))
        out.log(step, ts or last_ts, row)
        last_ts = max(last_ts, ts)
    for sample in pending_system:
        out.record(RecordType.SYSTEM, sample)
    for a in alerts:
        out.record(RecordType.ALERT, {**a, "ts": last_ts, "step": out.run.step})
    final = {
        k: v
        for k, v in summary.items()
        if not k.startswith("_") and not (isinstance(v, dict) and "_type" in v)
    }
    n_files = _save_files(out, files_dir, saved, skipped)
    end = start + runtime if runtime else last_ts
    run_dir = out.finish(end, exit_code, final)
    if report is not None:
        report.runs.append(run_dir)
        report.files += n_files
        report.points += sum(len(r[2]) for r in rows)
        for what, n in skipped.items():
            report.leave_out(what, n)
    return run_dir


def _save_files(out: ImportedRun, files_dir: str, saved: list[str], skipped: dict[str, int]) -> int:
    """The files the run saved (``wandb.save``) that are in its folder, as run files."""
    from wisp._localpath import local_path
    from wisp.integrations._files import save_file

    n = 0
    for rel in dict.fromkeys(saved):
        if rel.startswith("media/") or rel in _OWN_FILES:
            continue  # media are imported as values; wandb's own files are not the user's
        try:  # the names come from the run file: nothing outside the run's folder is read
            # wandb.save links the user's file into files/: follow links already there
            full = local_path(files_dir, rel, what="saved", links=True)
        except UsageError:
            full = ""
        if not full or not os.path.isfile(full):
            skipped["saved files missing from the run folder"] = (
                skipped.get("saved files missing from the run folder", 0) + 1
            )
            continue
        save_file(out.run, full, rel)
        n += 1
    return n


def import_wandb(
    paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    dir: str | os.PathLike[str] | None = None,  # noqa: A002 - wisp.init's name
    *,
    stream: TextIO | None = None,
) -> list[str]:
    """Convert wandb runs into wisp runs under ``<dir>/wisp/``; return their directories.

    ``paths`` are ``run-*.wandb`` files, wandb run directories or a whole
    ``wandb/`` folder.  A run already imported (same run id under ``dir``) is
    not imported again.  Needs the ``wandb`` package to decode the records.
    """
    report = import_wandb_report(paths, dir, stream=stream)
    if report.failed:
        sid, err = report.failed[0]
        raise RunFileError(f"{sid}: {err}")
    return report.runs + report.unchanged


def import_wandb_report(
    paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    dir: str | os.PathLike[str] | None = None,  # noqa: A002 - wisp.init's name
    *,
    stream: TextIO | None = None,
) -> ImportReport:
    """:func:`import_wandb` over many runs: a progress line, and a report of what was
    imported, left out (by kind) and which runs failed (the others go on)."""
    pb = _proto()
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    base = os.path.abspath(os.fspath(dir) if dir is not None else os.getcwd())
    files = wandb_files(paths)
    if not files:
        raise RunFileError("no run-*.wandb files found in " + ", ".join(map(str, paths)))
    report = ImportReport("wandb")
    progress = Progress("wisp import wandb", total=len(files), stream=stream)
    try:
        for f in files:
            try:
                _import_one(f, base, pb, report)
            except (OSError, ValueError, RunFileError) as exc:
                report.failed.append((f, f"{type(exc).__name__}: {exc}"))
            progress.advance(note=os.path.basename(f))
    finally:
        progress.close()
    return report

"""Local runs: ``wisp ls``, ``show``, ``export`` and ``gc``.

Runs are found under ``<dir>/wisp/run-*/`` (``--dir`` defaults to the current
directory).  ``gc`` relies on the uploader's cursor file, ``upload.json`` in
the run directory (format version 1)::

    {"server": url, "offset": int, "acked_seq": int, "writer_id": str, "done": bool}

``offset`` is the run-file byte offset up to which the server has
acknowledged every record.  *Fully synced* has one definition, shared with
``wisp sync``: :func:`wisp._rundir.sync_status`.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import sys
import time
from collections.abc import Iterator
from typing import Any

from wisp._rundir import read_meta, run_dirs_in, sync_status
from wisp.cli._term import EXIT, CliError, Progress, color, fmt_duration, fmt_value, table

__all__ = ["cmd_export", "cmd_gc", "cmd_ls", "cmd_show", "find_runs", "resolve_run"]

_STATE_COLORS = {
    "finished": "green",
    "running": "blue",
    "failed": "red",
    "crashed": "red",
    "killed": "yellow",
}


def runs_root(base: str) -> str:
    base = os.path.abspath(base)
    if os.path.basename(base) == "wisp" and not os.path.isdir(os.path.join(base, "wisp")):
        return base
    return os.path.join(base, "wisp")


def find_runs(base: str) -> list[str]:
    """Run directories under ``base``, oldest first."""
    root = runs_root(base)
    try:
        runs = run_dirs_in(root)
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise CliError(f"cannot list {root}: {exc.strerror}", "check --dir") from None
    return sorted(runs, key=lambda d: (_meta(d).get("created_at") or 0, d))


def _meta(run_dir: str) -> dict[str, Any]:
    """run.json, or {} when it is missing or unreadable."""
    return read_meta(run_dir)


def _open(path: str) -> Any:
    from wisp._reader import open_run
    from wisp.errors import RunFileError

    try:
        return open_run(path)
    except (RunFileError, OSError, ValueError) as exc:
        raise CliError(f"cannot read run {path}: {exc}", "is it a wisp run directory?") from None


def resolve_run(ref: str, base: str) -> str:
    """A run directory from a path, a run id (or prefix), a name or a directory name."""
    if os.path.exists(ref):
        p = os.path.abspath(ref)
        return os.path.dirname(p) if os.path.isfile(p) else p
    hits: list[str] = []
    for d in find_runs(base):
        run_id = os.path.basename(d).rsplit("-", 1)[-1]
        if ref in (run_id, os.path.basename(d)):
            return d
        if run_id.startswith(ref) or _name_of(d) == ref:
            hits.append(d)
    if len(hits) == 1:
        return hits[0]
    where = runs_root(base)
    if not hits:
        raise CliError(
            f"no run {ref!r} under {where}",
            "give a run id, name or directory; `wisp ls` lists runs (use --dir)",
        )
    names = ", ".join(os.path.basename(h) for h in hits[:5])
    raise CliError(f"{ref!r} matches {len(hits)} runs ({names})", "give more of the run id")


def _name_of(run_dir: str) -> str | None:
    name = _meta(run_dir).get("name")
    return name if isinstance(name, str) else None


def _duration(data: Any) -> float | None:
    start = data.metadata.get("created_at")
    if not isinstance(start, (int, float)):
        return None
    end = data.finish.get("finished_at") if data.finish else None
    if isinstance(end, (int, float)):
        return float(end) - start
    return time.time() - start if data.state == "running" else None


def _info(d: str, data: Any) -> dict[str, Any]:
    return {
        "id": data.id,
        "project": data.project,
        "name": data.name,
        "state": data.state,
        "created_at": data.metadata.get("created_at"),
        "duration": _duration(data),
        "dir": d,
        "summary": {k: v for k, v in data.summary.items() if not k.startswith("_")},
        "synced": sync_status(d),  # (fully synced, why not)
    }


def _synced_cell(status: tuple[bool, str]) -> str:
    """``yes``, ``no`` (never sent to a server) or ``partly`` (some of it, or not marked done)."""
    done, why = status
    return "yes" if done else ("no" if why == "never synced" else "partly")


def _jsonable(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    return value


def _dump(obj: Any) -> None:
    json.dump(_jsonable(obj), sys.stdout, indent=1, allow_nan=False, default=str)
    sys.stdout.write("\n")


def cmd_ls(args: argparse.Namespace) -> int:
    infos = []
    for d in find_runs(args.dir):
        try:
            data = _open(d)
        except CliError as exc:
            print(color(f"wisp: skipping {d}: {exc}", "yellow", sys.stderr), file=sys.stderr)
            continue
        if args.project and data.project != args.project:
            continue
        infos.append(_info(d, data))
    if args.json:
        for info in infos:
            info["synced"], info["sync_status"] = info["synced"]
        _dump({"runs": infos})
        return EXIT["ok"]
    if not infos:
        where = runs_root(args.dir)
        print(f"no runs under {where}" + (f" in project {args.project!r}" if args.project else ""))
        return EXIT["ok"]
    keys: list[str] = [k for k in (args.keys or "").split(",") if k]
    if not keys:
        seen: dict[str, None] = {}
        for info in infos:
            for k, v in info["summary"].items():
                if isinstance(v, (int, float)) and not isinstance(v, bool):
                    seen.setdefault(k, None)
        keys = list(seen)[:3]
    headers = ["STATE", "PROJECT", "NAME", "ID", "CREATED", "DURATION", "SYNCED", *keys]
    rows, colors = [], []
    for info in infos:
        created = info["created_at"]
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(created)) if created else "-"
        rows.append(
            [
                info["state"],
                info["project"],
                info["name"],
                info["id"],
                when,
                fmt_duration(info["duration"]),
                _synced_cell(info["synced"]),
                *(fmt_value(info["summary"][k]) if k in info["summary"] else "-" for k in keys),
            ]
        )
        colors.append(_STATE_COLORS.get(info["state"]))
    print(table(headers, rows, colors))
    return EXIT["ok"]


def _files(run_dir: str) -> list[dict[str, Any]]:
    out = []
    for root, _dirs, files in os.walk(run_dir):
        for f in sorted(files):
            p = os.path.join(root, f)
            try:
                size = os.path.getsize(p)
            except OSError:
                continue
            out.append({"path": os.path.relpath(p, run_dir), "size": size})
    return out


def cmd_show(args: argparse.Namespace) -> int:
    d = resolve_run(args.run, args.dir)
    data = _open(d)
    info = _info(d, data)
    info["summary"] = data.summary
    info.update(
        config=data.config,
        metadata=data.metadata,
        finish=data.finish,
        metrics=data.metrics,
        keys=data.keys(),
        files=_files(d),
        ignored_bytes=data.ignored_bytes,
        records={k: len(v) for k, v in data.records.items()},
    )
    if args.json:
        _dump(info)
        return EXIT["ok"]
    state = color(info["state"], _STATE_COLORS.get(info["state"], "bold"))
    print(f"{color(data.project + '/' + data.name, 'bold')}  {data.id}  {state}")
    meta = data.metadata
    git = meta.get("git") or {}
    for label, value in (
        ("directory", d),
        (
            "created",
            time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(meta["created_at"]))
            if isinstance(meta.get("created_at"), (int, float))
            else None,
        ),
        ("duration", fmt_duration(info["duration"])),
        ("host", f"{meta.get('host')} pid {meta.get('pid')}" if meta.get("host") else None),
        ("command", " ".join(meta.get("argv") or []) or None),
        ("git", f"{git.get('commit', '')[:12]} ({git.get('branch')})" if git else None),
        ("exit code", (data.finish or {}).get("exit_code")),
        ("failures", (data.finish or {}).get("failures") or None),
        ("torn tail", f"{data.ignored_bytes} bytes ignored" if data.ignored_bytes else None),
    ):
        if value is not None:
            print(f"  {label + ':':<11}{value}")
    for title, mapping in (("config", data.config), ("summary", data.summary)):
        print(color(title, "bold"))
        if not mapping:
            print("  (empty)")
        for k, v in _flatten(mapping):
            print(f"  {k} = {fmt_value(v)}")
    print(color("files", "bold"))
    for f in info["files"]:
        print(f"  {f['path']}  {_size(f['size'])}")
    return EXIT["ok"]


def _flatten(mapping: dict[str, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    for k, v in mapping.items():
        if isinstance(v, dict) and "_type" not in v:
            yield from _flatten(v, f"{prefix}{k}.")
        else:
            yield f"{prefix}{k}", v


def _size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def _cell(value: Any) -> Any:
    if isinstance(value, (dict, list)):
        return json.dumps(_jsonable(value), ensure_ascii=False)
    return value


def cmd_export(args: argparse.Namespace) -> int:
    if args.project is not None:
        from wisp.cli._export_cmd import export_project

        return export_project(args)
    if args.run is None:
        raise CliError("export needs a RUN or --project PROJECT", "wisp export --help")
    d = resolve_run(args.run, args.dir)
    data = _open(d)
    fmt = args.format
    keys = [k for k in (args.keys or "").split(",") if k] or None
    if getattr(args, "media", None):
        from wisp.cli._media_export import export_media

        n = export_media(data, args.media, keys)
        print(f"wrote {n} media files to {args.media}", file=sys.stderr)
        args.out.data(run=data.id, media_files=n, written=args.media)
        return EXIT["ok"]
    out_path = args.output or f"{data.name or data.id}.{fmt}"
    if args.json and out_path == "-":
        raise CliError("--json answers on stdout: the rows need a file", "give one with -o FILE")
    if fmt == "parquet" and out_path == "-":
        raise CliError("parquet cannot be written to stdout", "give a file with -o")
    rows = data.history(keys)
    columns = ["_step", "_timestamp", *(keys or data.keys())]
    progress = Progress(None, f"exporting {data.name}")
    if fmt == "parquet":
        try:
            import pyarrow as pa
            import pyarrow.parquet as pq
        except ImportError:
            raise CliError(
                "--format parquet needs pyarrow", "pip install pyarrow", EXIT["missing_dependency"]
            ) from None
        cols: dict[str, list[Any]] = {c: [] for c in columns}
        for row in progress.iter(rows):
            for c in columns:
                cols[c].append(_cell(row.get(c)))
        pq.write_table(pa.table(cols), out_path)
        count = len(cols["_step"])
    else:
        stream = sys.stdout
        if out_path != "-":
            stream = open(out_path, "w", encoding="utf-8", newline="")  # noqa: SIM115
        try:
            count = _write_text(fmt, stream, columns, progress.iter(rows))
        finally:
            if stream is not sys.stdout:
                stream.close()
    if out_path != "-":
        print(f"wrote {count} rows to {out_path}", file=sys.stderr)
    args.out.data(run=data.id, rows=count, written=out_path, format=fmt)
    return EXIT["ok"]


def _write_text(fmt: str, stream: Any, columns: list[str], rows: Iterator[dict[str, Any]]) -> int:
    count = 0
    if fmt == "csv":
        import csv

        w = csv.writer(stream)
        w.writerow(columns)
        for row in rows:
            w.writerow(["" if row.get(c) is None else _cell(row.get(c)) for c in columns])
            count += 1
    else:
        for row in rows:
            stream.write(json.dumps(_jsonable(row), ensure_ascii=False, allow_nan=False))
            stream.write("\n")
            count += 1
    return count


def sync_state(run_dir: str) -> tuple[bool, str]:
    """(fully synced to any server, why not): the one definition in :mod:`wisp._rundir`."""
    return sync_status(run_dir)


def cmd_gc(args: argparse.Namespace) -> int:
    runs = find_runs(args.dir)
    doomed: list[tuple[str, int]] = []
    kept = 0
    for d in runs:
        ok, why = sync_state(d)
        if ok:
            size = sum(f["size"] for f in _files(d))
            doomed.append((d, size))
        else:
            kept += 1
            if args.verbose:
                args.out.say(f"keep   {os.path.basename(d)}: {why}")
    total = sum(s for _, s in doomed)
    verb = "would delete" if args.dry_run else "delete"
    for d, size in doomed:
        args.out.say(f"{verb} {os.path.basename(d)} ({_size(size)})")
    args.out.data(
        deleted=[os.path.basename(d) for d, _ in doomed],
        bytes=total,
        kept=kept,
        dry_run=bool(args.dry_run),
    )
    if not args.dry_run:
        failed = 0
        for d, _ in Progress(len(doomed), "deleting").iter(doomed):
            try:
                shutil.rmtree(d)
            except OSError as exc:
                failed += 1
                print(f"wisp: cannot delete {d}: {exc.strerror}", file=sys.stderr)
        if failed:
            return EXIT["failed"]
    done = "would free" if args.dry_run else "freed"
    args.out.say(f"{len(doomed)} fully synced run(s), {done} {_size(total)}; kept {kept} run(s)")
    return EXIT["ok"]

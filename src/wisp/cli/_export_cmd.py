"""``wisp export --project P``: every run of a project into one Parquet file, via wisp.Api."""

from __future__ import annotations

import argparse
import os
import sys

from wisp.cli._term import EXIT, CliError

__all__ = ["export_project"]


def export_project(args: argparse.Namespace) -> int:
    """Stream a project's histories (run_id, step, key columns) into ``-o`` (Parquet)."""
    if args.format != "parquet":
        raise CliError(
            "--project exports Parquet only", "use --format parquet (or wisp.Api in Python)"
        )
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        raise CliError(
            "--format parquet needs pyarrow", "pip install pyarrow", EXIT["missing_dependency"]
        ) from None
    import wisp
    from wisp.errors import ApiError, UsageError

    out = args.output or f"{args.project.replace('/', '-')}.parquet"  # entity/project
    if out == "-":
        raise CliError("parquet cannot be written to stdout", "give a file with -o")
    keys = [k for k in (args.keys or "").split(",") if k] or None
    local = args.server is None and not os.environ.get("WISP_SERVER_URL")
    try:
        if args.server is not None:
            api = wisp.Api(server_url=args.server)
        elif local and args.dir != ".":
            api = wisp.Api(dir=args.dir)
        else:
            api = wisp.Api()
        with api:
            runs = api.runs(args.project, filters=args.filter)
            n = len(runs)
            rows = runs.to_parquet(out, keys=keys)
    except (ApiError, UsageError) as exc:
        raise CliError(str(exc), "check the project name, filter and server") from None
    print(f"wrote {rows} rows of {n} runs to {out}", file=sys.stderr)
    args.out.data(project=args.project, runs=n, rows=rows, written=out, format="parquet")
    return EXIT["ok"]

"""``wisp import wandb|tensorboard|mlflow|neptune``: convert other trackers' runs into wisp runs."""

from __future__ import annotations

import argparse
import sys

from wisp.cli._term import EXIT, CliError

__all__ = ["cmd_import"]

_PACKAGE = {"wandb": "wandb", "tensorboard": "tensorboard", "neptune": "pyarrow"}


def cmd_import(args: argparse.Namespace) -> int:
    from wisp.integrations import importers

    try:
        if args.source in ("mlflow", "neptune", "wandb"):
            return _report_import(args)
        made = []
        for logdir in args.paths:
            made += importers.import_tensorboard(logdir, args.dir, project=args.project)
    except ImportError as exc:
        package = _PACKAGE.get(args.source, args.source)
        raise CliError(str(exc), f"pip install {package}", EXIT["missing_dependency"]) from exc
    for run_dir in made:
        print(run_dir)
    print(f"imported {len(made)} run(s) into {args.dir}/wisp", flush=True)
    return EXIT["ok"]


def _report_import(args: argparse.Namespace) -> int:
    from wisp.integrations import importers

    if args.source == "wandb":
        from wisp.integrations.importers._wandb import import_wandb_report

        report = import_wandb_report(args.paths, args.dir)
        print(report.summary(), flush=True)
        return EXIT["failed"] if report.failed else EXIT["ok"]
    failed = 0
    for path in args.paths:
        if args.source == "mlflow":
            report = importers.import_mlflow(
                path, args.dir, experiments=args.experiment, artifacts=not args.no_files
            )
        else:
            report = importers.import_neptune(path, args.dir, files=not args.no_files)
        print(report.summary(), flush=True)
        failed += len(report.failed)
    print(f"runs are in {args.dir}/wisp", file=sys.stderr)
    return EXIT["failed"] if failed else EXIT["ok"]

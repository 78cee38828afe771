"""``wisp import wandb|tensorboard|mlflow|neptune|aim``: other trackers' runs as wisp runs."""

from __future__ import annotations

import argparse
import sys

from wisp.cli._term import EXIT, CliError

__all__ = ["cmd_import"]

_PACKAGE = {"wandb": "wandb", "tensorboard": "tensorboard", "neptune": "pyarrow"}


def cmd_import(args: argparse.Namespace) -> int:
    from wisp.integrations import importers

    try:
        if args.source in ("mlflow", "neptune", "wandb", "aim"):
            return _report_import(args)
        made = []
        for logdir in args.paths:
            made += importers.import_tensorboard(logdir, args.dir, project=args.project)
    except ImportError as exc:
        package = _PACKAGE.get(args.source, args.source)
        raise CliError(str(exc), f"pip install {package}", EXIT["missing_dependency"]) from exc
    for run_dir in made:
        args.out.say(run_dir)
    args.out.say(f"imported {len(made)} run(s) into {args.dir}/wisp")
    args.out.data(source=args.source, imported=len(made), runs=made)
    return EXIT["ok"]


def _report_import(args: argparse.Namespace) -> int:
    from wisp.integrations import importers

    if args.source == "wandb":
        from wisp.integrations.importers._wandb import import_wandb_report

        report = import_wandb_report(args.paths, args.dir)
        args.out.say(report.summary())
        args.out.data(source="wandb", summary=[report.summary()], failed=bool(report.failed))
        return EXIT["failed"] if report.failed else EXIT["ok"]
    failed = 0
    summaries: list[str] = []
    for path in args.paths:
        if args.source == "mlflow":
            report = importers.import_mlflow(
                path, args.dir, experiments=args.experiment, artifacts=not args.no_files
            )
        elif args.source == "aim":
            report = importers.import_aim(path, args.dir)
        else:
            report = importers.import_neptune(path, args.dir, files=not args.no_files)
        args.out.say(report.summary())
        summaries.append(report.summary())
        failed += len(report.failed)
    print(f"runs are in {args.dir}/wisp", file=sys.stderr)
    args.out.data(source=args.source, summary=summaries, failed=failed)
    return EXIT["failed"] if failed else EXIT["ok"]

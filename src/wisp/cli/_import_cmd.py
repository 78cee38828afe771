"""``wisp import wandb|tensorboard``: convert other trackers' runs into wisp runs."""

from __future__ import annotations

import argparse

from wisp.cli._term import EXIT, CliError

__all__ = ["cmd_import"]


def cmd_import(args: argparse.Namespace) -> int:
    from wisp.integrations import importers

    try:
        if args.source == "wandb":
            made = importers.import_wandb(args.paths, args.dir)
        else:
            made = []
            for logdir in args.paths:
                made += importers.import_tensorboard(logdir, args.dir, project=args.project)
    except ImportError as exc:
        package = "wandb" if args.source == "wandb" else "tensorboard"
        raise CliError(str(exc), f"pip install {package}", EXIT["missing_dependency"]) from exc
    for run_dir in made:
        print(run_dir)
    print(f"imported {len(made)} run(s) into {args.dir}/wisp", flush=True)
    return EXIT["ok"]

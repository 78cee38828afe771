"""One trial of examples/sweep.yaml: the demo spiral MLP of examples/train.py.

The agent passes the sweep's parameters as ``--name=value`` arguments (read here with
argparse) and into ``wisp.config`` (the run's config shows them).  Run it alone with
``python examples/sweep_train.py --lr 0.5 --hidden 16``.
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from train import train  # examples/train.py, next to this file


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lr", type=float, default=0.5)
    ap.add_argument("--hidden", type=int, default=16)
    ap.add_argument("--steps", type=int, default=600)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--project", default="spiral-sweep")
    args = ap.parse_args(argv)
    train(args.lr, args.hidden, args.steps, args.seed, 0.0, args.project)


if __name__ == "__main__":
    main()

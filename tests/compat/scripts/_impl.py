"""The module under test: ``wisp`` as ``wandb``, or the real ``wandb`` (COMPAT_IMPL=wandb)."""

import json
import os

if os.environ.get("COMPAT_IMPL") == "wandb":
    import wandb
else:
    import wisp as wandb  # the one-line change


def result(**values: object) -> None:
    """Print what the script observed, for the test to read."""
    print("RESULT " + json.dumps(values, default=str), flush=True)


__all__ = ["result", "wandb"]

"""What a script recorded, in one shape for wisp and for the real wandb (for comparisons)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import wisp
from tests.compat.conftest import unflatten


def _norm(value: Any) -> Any:
    if isinstance(value, dict):
        if value.get("_type") == "histogram":  # wandb names the counts "values"
            counts = value.get("counts", value.get("values"))
            return {"_type": "histogram", "counts": counts, "bins": value["bins"]}
        return {k: _norm(v) for k, v in value.items()}
    return value


class Recorded:
    """rows (without _step/_timestamp), summary and config, nested dicts unflattened."""

    def __init__(self, impl: str, base: Path, run_dir: str | None = None) -> None:
        if impl == "wisp":
            assert run_dir is not None
            data = wisp.open_run(run_dir)
            rows = [{k: v for k, v in r.items() if not k.startswith("_")} for r in data.history()]
            summary, config = data.summary, data.config
        else:
            from tests.compat._wandb_file import WandbOffline

            w = WandbOffline(str(base))
            rows, config = w.rows(), {k: v for k, v in w.config.items() if k != "_wandb"}
            summary = {k: v for k, v in w.summary.items() if not k.startswith("_")}
        self.rows = [_norm(unflatten(r)) for r in rows]
        self.summary = _norm(unflatten(summary))
        self.config = config

"""What ``wisp.init()`` does inside a sweep trial: the agent's parameters become config.

The agent sets ``WISP_SWEEP_ID``, ``WISP_SWEEP_RUN_ID`` and ``WISP_SWEEP_PARAMS`` (JSON) in
the trial's environment; ``init()`` calls :func:`sweep_args` when the first is set.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["ENV_ID", "ENV_PARAMS", "ENV_RUN_ID", "sweep_args"]

ENV_ID = "WISP_SWEEP_ID"
ENV_RUN_ID = "WISP_SWEEP_RUN_ID"
ENV_PARAMS = "WISP_SWEEP_PARAMS"


def sweep_args(
    run_id: str | None, config: Any, project: str | None
) -> tuple[str | None, dict[str, Any] | None, str | None]:
    """(id, config, project) for a trial run: the sweep's run id and parameters win."""
    import json

    from wisp.errors import UsageError

    try:
        params = json.loads(os.environ.get(ENV_PARAMS) or "{}")
    except ValueError:
        raise UsageError(f"{ENV_PARAMS} is not valid JSON") from None
    if config is not None and not isinstance(config, Mapping) and hasattr(config, "__dict__"):
        config = vars(config)  # argparse.Namespace and friends
    merged = {**(config or {}), **params}
    return (
        os.environ.get(ENV_RUN_ID) or run_id,
        merged,
        project or os.environ.get("WISP_SWEEP_PROJECT") or None,
    )

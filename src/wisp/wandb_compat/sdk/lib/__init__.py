"""``wandb.sdk.lib``: ``RunDisabled`` and ``config_util``.

wisp's ``init(mode="disabled")`` returns an ordinary ``wisp.Run`` (mode ``"disabled"``),
so nothing is ever a ``RunDisabled``; the class exists for ``isinstance`` checks.
"""

from __future__ import annotations

from wisp.wandb_compat.sdk.lib import config_util, telemetry

__all__ = ["RunDisabled", "config_util", "telemetry"]


class RunDisabled:
    """wandb's disabled-mode run type (wisp's disabled runs are ``wisp.Run``)."""

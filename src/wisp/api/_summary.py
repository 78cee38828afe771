"""``Run.summary`` of ``wisp.Api()``: wandb's ``HTTPSummary`` over a stored summary.

The summary reads as every reader's (:class:`wisp._summary.SummaryDict`): keys as stored
(a nested dict or a multi-kind ``define_metric`` stored as ``eval/f1``, ``loss/min``, as
the live ``run.summary`` holds them), a prefix of stored keys read as the nested dict
(``summary["eval"]["f1"]``), ``_json_dict`` the plain dict.  As in wandb,
``summary.update({...})`` saves at once; item assignment is saved by ``run.update()``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from wisp._summary import SummaryDict

__all__ = ["ApiSummary"]


class ApiSummary(SummaryDict):
    """A run's summary that saves through its run."""

    def __init__(self, data: dict[str, Any], save: Callable[[], None]) -> None:
        super().__init__(data)
        self._save = save

    def update(self, other: Any = (), /, **kwargs: Any) -> None:
        """Set values and save the summary now (wandb's ``HTTPSummary.update``)."""
        dict.update(self, other, **kwargs)
        self._save()

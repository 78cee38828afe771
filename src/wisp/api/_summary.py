"""``Run.summary`` of ``wisp.Api()``: wandb's ``HTTPSummary`` over a stored summary.

The summary is read as the SDK's live ``run.summary`` holds it: keys as stored (a nested
dict or a multi-kind ``define_metric`` stored as ``eval/f1``, ``loss/min``), and a key that
is a prefix of stored keys reads as the nested dict (``summary["eval"]["f1"]``).
``_json_dict`` is the whole summary as a plain dict, as wandb scripts export it.  As in
wandb, ``summary.update({...})`` saves at once; item assignment is saved by ``run.update()``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from wisp._summary import nested_get

__all__ = ["ApiSummary"]


class ApiSummary(dict[str, Any]):
    """A run's summary: a dict of the stored keys, read nested as wandb does."""

    def __init__(self, data: dict[str, Any], save: Callable[[], None]) -> None:
        super().__init__(data)
        self._save = save

    def __getitem__(self, key: str) -> Any:
        if dict.__contains__(self, key):
            return dict.__getitem__(self, key)
        return nested_get(dict(self), key)

    def get(self, key: str, default: Any = None) -> Any:
        try:
            return self[key]
        except KeyError:
            return default

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self[name]
        except KeyError:
            raise AttributeError(f"summary has no key {name!r}") from None

    def __delitem__(self, key: str) -> None:
        if dict.__contains__(self, key):
            dict.__delitem__(self, key)
            return
        under = [k for k in self if k.startswith(key + "/")]
        if not under:
            raise KeyError(key)
        for k in under:
            dict.__delitem__(self, k)

    @property
    def _json_dict(self) -> dict[str, Any]:
        """The summary as a plain dict (what wandb's export loop collects)."""
        return dict(self)

    def update(self, other: Any = (), /, **kwargs: Any) -> None:
        """Set values and save the summary now (wandb's ``HTTPSummary.update``)."""
        dict.update(self, other, **kwargs)
        self._save()

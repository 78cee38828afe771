"""``run.summary``: one value per key, computed by the writer, overridable by the user.

wandb's summary is a nested dict with attribute access; wisp stores nested dicts
flattened with ``/`` (as ``log()`` does) and reads them back nested:
``summary.update({"eval": {"f1": 0.6}})`` then ``summary["eval"]`` is
``{"f1": 0.6}`` and ``summary["eval/f1"]`` is ``0.6``.  ``summary.best = 5`` sets
the key ``best``.
"""

from __future__ import annotations

from collections.abc import Iterator, MutableMapping

from wisp._values import SCALAR_TYPES, prepare_row
from wisp.errors import UsageError

TYPE_CHECKING = False  # typing costs ~15 ms to import; only type checkers need it
if TYPE_CHECKING:
    from typing import Any

    from wisp._run import Run

    _MappingBase = MutableMapping[str, Any]
else:
    _MappingBase = MutableMapping

__all__ = ["Summary", "SummaryDict", "nested", "nested_get"]


def nested(view: dict[str, Any]) -> dict[str, Any]:
    """The stored keys as wandb's nested summary dict: ``eval/f1`` under ``{"eval": {"f1": ..}}``.

    A key under another stored key (``a/b`` beside ``a``) stays flat, so no value is lost.
    """
    out: dict[str, Any] = {}
    for key, value in view.items():
        parts = key.split("/")
        if any("/".join(parts[:i]) in view for i in range(1, len(parts))):
            out[key] = value
            continue
        node = out
        for p in parts[:-1]:
            node = node.setdefault(p, {})
        node[parts[-1]] = value
    return out


def nested_get(view: dict[str, Any], key: str) -> Any:
    """``view[key]``, or the keys under ``key/`` as a nested dict; KeyError when neither."""
    try:
        return view[key]
    except KeyError:
        pass
    prefix = key + "/"
    out: dict[str, Any] = {}
    for k, v in view.items():
        if k.startswith(prefix):
            node = out
            *parents, leaf = k[len(prefix) :].split("/")
            for p in parents:
                child = node.get(p)
                if not isinstance(child, dict):
                    child = node[p] = {}
                node = child
            node[leaf] = v
    if not out:
        raise KeyError(key)
    return out


def _attr(summary: Any, name: str) -> Any:
    """``summary.name``: the key ``name`` (AttributeError for private names or no key)."""
    if name.startswith("_"):
        raise AttributeError(name)
    try:
        return summary[name]
    except KeyError:
        raise AttributeError(f"summary has no key {name!r}") from None


def _under(keys: Any, key: str) -> tuple[str, ...]:
    """The stored keys ``del summary[key]`` removes: ``key``, else those nested under it."""
    if key in keys:
        return (key,)
    found = tuple(k for k in keys if k.startswith(key + "/"))
    if not found:
        raise KeyError(key)
    return found


class SummaryDict(dict):  # type: ignore[type-arg]
    """A stored summary as readers return it (``wisp.open_run``, ``wisp.Api``): a dict of
    the stored keys that reads a prefix of them nested, as the live ``run.summary`` does
    (``summary["eval"]["f1"]`` for ``eval/f1``); ``_json_dict`` is the plain nested dict."""

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
        return _attr(self, name)

    def __delitem__(self, key: str) -> None:
        for k in _under(dict.keys(self), key):
            dict.__delitem__(self, k)

    @property
    def _json_dict(self) -> dict[str, Any]:
        """The summary as wandb's plain nested dict (what wandb's export loop collects)."""
        return nested(dict(self))


class Summary(_MappingBase):
    """The run's summary: last value per key unless ``define_metric`` says otherwise.

    Reading waits until the writer has processed everything logged so far, so
    ``run.summary["loss"]`` right after ``log({"loss": x})`` is ``x``.  Values set
    here override the computed ones.  Attributes read and write keys
    (``summary.best = 5``), as in wandb.
    """

    __slots__ = ("_run",)

    def __init__(self, run: Run) -> None:
        object.__setattr__(self, "_run", run)

    def _view(self) -> dict[str, Any]:
        view: dict[str, Any] = self._run.summary_view()
        return view

    def __getitem__(self, key: str) -> Any:
        return nested_get(self._view(), key)

    def __setitem__(self, key: str, value: Any) -> None:
        if not isinstance(key, str) or not key:
            raise UsageError(f"summary keys must be non-empty strings, got {key!r}")
        self.update({key: value})

    def update(self, other: Any = (), /, **kwargs: Any) -> None:
        from wisp._arrays import summary_array

        items = {k: summary_array(v) for k, v in dict(other, **kwargs).items()}
        row, deferred = prepare_row(items)
        if deferred:
            media = ", ".join(repr(k) for k, v in row.items() if type(v) not in SCALAR_TYPES)
            raise UsageError(f"summary values must be plain values; log media ({media}) with log()")
        self._run.summary_set(row)

    def __delitem__(self, key: str) -> None:
        self._run.summary_set({}, _under(self._view(), key))

    def __getattr__(self, name: str) -> Any:
        return _attr(self, name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name.startswith("_"):
            raise AttributeError(f"summary keys set as attributes must not start with '_': {name}")
        self[name] = value

    def __delattr__(self, name: str) -> None:
        try:
            del self[name]
        except KeyError:
            raise AttributeError(name) from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._view())

    def __len__(self) -> int:
        return len(self._view())

    @property
    def _json_dict(self) -> dict[str, Any]:
        """The summary as a plain nested dict, as wandb's ``summary._json_dict``."""
        return nested(self._view())

    def __repr__(self) -> str:
        return f"Summary({self._view()!r})"

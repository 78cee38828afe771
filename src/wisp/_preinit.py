"""``wisp.config`` and ``wisp.summary`` outside a run: placeholders, as wandb's are.

Reading or setting a key raises RunStateError (wandb raises ``wandb.Error``); names
starting with ``_`` raise AttributeError, so ``hasattr()``, ``copy`` and
``from wisp import *`` are safe.
"""

from __future__ import annotations

from wisp.errors import RunStateError

TYPE_CHECKING = False  # typing costs ~15 ms to import; only type checkers need it
if TYPE_CHECKING:
    from typing import Any

__all__ = ["PreInit", "placeholder"]


class PreInit:
    """Stands for ``wisp.config``/``wisp.summary`` until ``wisp.init()`` is called."""

    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        object.__setattr__(self, "_name", name)

    def _fail(self, what: str) -> RunStateError:
        return RunStateError(f"call wisp.init() before {self._name}{what}")

    def __getitem__(self, key: str) -> Any:
        raise self._fail(f"[{key!r}]")

    def __setitem__(self, key: str, value: Any) -> None:
        raise self._fail(f"[{key!r}]")

    def __getattr__(self, key: str) -> Any:
        if key.startswith("_"):
            raise AttributeError(key)
        raise self._fail(f".{key}")

    def __setattr__(self, key: str, value: Any) -> None:
        raise self._fail(f".{key}")

    def __repr__(self) -> str:
        return f"<{self._name} before wisp.init()>"


_placeholders: dict[str, PreInit] = {}


def placeholder(name: str) -> PreInit:
    """The one placeholder for ``wisp.<name>``."""
    found = _placeholders.get(name)
    if found is None:
        found = _placeholders[name] = PreInit(f"wisp.{name}")
    return found

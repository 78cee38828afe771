"""``run.config``: the run's configuration, converted to JSON-like data when set."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, MutableMapping

from wisp._protocol import Invalid, RecordType, clean_json
from wisp.errors import UsageError

TYPE_CHECKING = False  # typing costs ~15 ms to import; only type checkers need it
if TYPE_CHECKING:
    from typing import Any, Protocol

    class Recorder(Protocol):
        """What a Config writes its snapshots to (a Run)."""

        def record(self, rtype: int, payload: Any) -> None: ...

    _MappingBase = MutableMapping[str, Any]
else:
    _MappingBase = MutableMapping

__all__ = ["Config", "key_str"]


def key_str(key: Any) -> str:
    """A config key as JSON writes it (wandb stores ``{0: "cat"}`` as ``{"0": "cat"}``)."""
    if isinstance(key, str):
        return key
    if key is None or isinstance(key, bool):
        return {None: "null", True: "true", False: "false"}[key]
    if isinstance(key, float):
        return repr(key)
    return str(key)


def _checked(key: str, value: Any) -> Any:
    """A config value converted (``_jsonable``) and checked against the protocol's JSON rules
    (depth, key and string sizes, integer range); NUL and lone surrogates in strings are
    replaced (``wisp._protocol.clean_text``)."""
    try:
        return clean_json(_jsonable(key, value), f"config[{key!r}]")
    except Invalid as exc:
        raise UsageError(f"{exc.field} {exc.reason}") from None
    except RecursionError:
        raise UsageError(f"config[{key!r}] is nested too deeply (or refers to itself)") from None


def _check_key(key: Any) -> str:
    from wisp._protocol import MAX_JSON_KEY_LENGTH, text_problem

    if not isinstance(key, str) or not key:
        raise UsageError(f"config keys must be non-empty strings, got {key!r}")
    problem = text_problem(key, MAX_JSON_KEY_LENGTH)
    if problem is not None:
        raise UsageError(f"config key {key!r} {problem}")
    return key


def _jsonable(key: str, value: Any) -> Any:
    """Config values: JSON types as they are, common Python objects converted, others refused."""
    if value is None or type(value) in (str, int, float, bool):
        return value
    if isinstance(value, Mapping):
        out = {}
        for k, v in value.items():
            ks = key_str(k)
            out[ks] = _jsonable(f"{key}.{ks}", v)
        return out
    if isinstance(value, (list, tuple, set, frozenset)):
        items = sorted(value, key=repr) if isinstance(value, (set, frozenset)) else value
        return [_jsonable(f"{key}[{i}]", v) for i, v in enumerate(items)]
    if isinstance(value, (bool, int, float, str)):
        return type(value).__mro__[1](value) if not isinstance(value, bool) else bool(value)
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    mod = type(value).__module__ or ""
    if mod.startswith("numpy") and hasattr(value, "tolist"):
        return _jsonable(key, value.tolist())
    if hasattr(value, "value") and type(value).__mro__[-2].__name__ == "Enum":
        return _jsonable(key, value.value)
    if hasattr(value, "__dict__") and type(value).__name__ == "Namespace":
        return _jsonable(key, vars(value))
    if hasattr(value, "__dataclass_fields__"):
        return _jsonable(key, {f: getattr(value, f) for f in value.__dataclass_fields__})
    raise UsageError(
        f"config value for {key!r} has type {type(value).__name__}; expected a JSON-like value "
        "(str, number, bool, None, list, dict), a path, an enum, a dataclass or a Namespace"
    )


class Config(_MappingBase):
    """The run's configuration: ``run.config.lr`` and ``run.config["lr"]`` alike.

    Every change writes a full snapshot to the run file.  Values are converted to
    JSON-like data when set, so later changes to the caller's objects don't leak.
    """

    def __init__(self, run: Recorder | None) -> None:
        object.__setattr__(self, "_run", run)
        object.__setattr__(self, "_data", {})

    def _changed(self) -> None:
        run = self._run
        if run is not None:
            run.record(RecordType.CONFIG, {"config": self.as_dict()})

    def update(
        self, other: Any = (), /, allow_val_change: bool | None = None, **kwargs: Any
    ) -> None:
        """Set keys from a dict (or an argparse Namespace) and keyword arguments.

        ``allow_val_change`` is accepted for wandb compatibility (wisp always allows
        changing a value); it is not stored as a key.
        """
        if other is not None and not isinstance(other, Mapping) and hasattr(other, "__dict__"):
            other = vars(other)  # argparse.Namespace and friends
        items = {**dict(other or ()), **kwargs}
        converted = {_check_key(key_str(k)): _checked(key_str(k), v) for k, v in items.items()}
        self._data.update(converted)
        if converted:
            self._changed()

    def setdefaults(self, other: Any) -> None:
        """Set the keys of ``other`` that are not set yet (wandb's ``config.setdefaults``)."""
        if other is not None and not isinstance(other, Mapping) and hasattr(other, "__dict__"):
            other = vars(other)
        fresh = {k: v for k, v in dict(other or ()).items() if key_str(k) not in self._data}
        if fresh:
            self.update(fresh)

    def as_dict(self) -> dict[str, Any]:
        import copy

        return copy.deepcopy(self._data)

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self._data[_check_key(key_str(key))] = _checked(key_str(key), value)
        self._changed()

    def __delitem__(self, key: str) -> None:
        del self._data[key]
        self._changed()

    def __getattr__(self, name: str) -> Any:
        try:
            return self._data[name]
        except KeyError:
            raise AttributeError(f"config has no key {name!r}") from None

    def __setattr__(self, name: str, value: Any) -> None:
        self[name] = value

    def __delattr__(self, name: str) -> None:
        try:
            del self[name]
        except KeyError:
            raise AttributeError(name) from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __repr__(self) -> str:
        return f"Config({self._data!r})"

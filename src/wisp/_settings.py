"""Settings: one table of every knob, read at ``init()``, never at import.

Precedence, lowest first: the defaults below, the ``wisp login`` config file
(``server_url`` and ``api_key`` only, see ``_userconfig.py``), wandb's environment
variables where no ``WISP_*`` one is set (``WANDB_MODE``, ``WANDB_DIR``,
``WANDB_SILENT``, ``WANDB_CONSOLE``; ``_wandb_env.py``), environment variables
(``WISP_*``), then ``wisp.init(settings=Settings(...))`` or a plain dict.  wandb's
own setting names are mapped or warned about once (``_wandb_env.py``).
docs/settings.md lists the same table for users; keep them in step.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping

from wisp._protocol import DEFAULT_MAX_VALUE_BYTES
from wisp.errors import UsageError

TYPE_CHECKING = False  # typing costs ~15 ms to import; only type checkers need it
if TYPE_CHECKING:
    from typing import Any

__all__ = ["OTHER_ENV", "Settings", "read_environ", "unknown_env", "warn_unknown_env"]


def _choice(*options: str) -> Callable[[Any], str | None]:
    def check(value: Any) -> str | None:
        if value in options:
            return None
        return f"must be one of {', '.join(map(repr, options))}, got {value!r}" + _did_you_mean(
            str(value), options
        )

    return check


def _positive(value: Any) -> str | None:
    return None if value > 0 else f"must be > 0, got {value!r}"


def _nonneg(value: Any) -> str | None:
    return None if value >= 0 else f"must be >= 0, got {value!r}"


def _url(value: Any) -> str | None:
    from wisp._protocol import url_problem

    return url_problem(value)


def _any(value: Any) -> str | None:
    return None


def _did_you_mean(word: str, candidates: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the closest candidate, or ``""``."""
    import difflib

    close = difflib.get_close_matches(word, list(candidates), n=1, cutoff=0.6)
    if not close and word.lower() != word:
        close = difflib.get_close_matches(word.lower(), list(candidates), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


# name: (type, default, environment variable, check: None, or what is wrong with a value)
_FIELDS: dict[str, tuple[type, Any, str | None, Callable[[Any], str | None]]] = {
    "mode": (str, None, "WISP_MODE", _choice("offline", "online", "disabled")),
    "dir": (str, None, "WISP_DIR", _any),
    "flush_interval": (float, 1.0, "WISP_FLUSH_INTERVAL", _positive),
    "queue_size": (int, 10_000, "WISP_QUEUE_SIZE", _positive),
    # bytes of rows held in memory while the disk is full (None: 256 MiB or RAM/8, less)
    "disk_full_memory": (int, None, "WISP_DISK_FULL_MEMORY", _positive),
    "fsync": (str, "finish", "WISP_FSYNC", _choice("never", "interval", "finish")),
    "finish_timeout": (float, 30.0, "WISP_FINISH_TIMEOUT", _nonneg),
    "exit_timeout": (float, 10.0, "WISP_EXIT_TIMEOUT", _nonneg),
    "max_value_bytes": (int, DEFAULT_MAX_VALUE_BYTES, "WISP_MAX_VALUE_BYTES", _positive),
    "git": (bool, True, "WISP_GIT", _any),
    "server_url": (str, None, "WISP_SERVER_URL", _url),
    "api_key": (str, None, "WISP_API_KEY", _any),
    "init_timeout": (float, 5.0, "WISP_INIT_TIMEOUT", _nonneg),
    "upload_timeout": (float, 30.0, "WISP_UPLOAD_TIMEOUT", _nonneg),
    "system_metrics": (bool, True, "WISP_SYSTEM_METRICS", _any),
    "system_interval": (float, 10.0, "WISP_SYSTEM_INTERVAL", _positive),
    "console": (str, None, "WISP_CONSOLE", _choice("wrap", "off")),
    "ranks": (str, "zero", "WISP_RANKS", _choice("zero", "all")),
    "signals": (bool, True, "WISP_SIGNALS", _any),
    "heartbeat_interval": (float, 15.0, "WISP_HEARTBEAT_INTERVAL", _positive),
    "alert_webhook": (str, None, "WISP_ALERT_WEBHOOK", _any),
    "silent": (bool, False, "WISP_SILENT", _any),
}

#: ``WISP_*`` variables that are not settings: ``init()`` defaults (``_wandb_env.INIT_ENV``),
#: the artifact cache, the config file, sweep trials, ``wisp ui`` and the server's own.
#: Any other ``WISP_*`` name in the environment gets one warning (a misspelt setting).
OTHER_ENV = frozenset(
    {
        "WISP_PROJECT",
        "WISP_ENTITY",
        "WISP_NAME",
        "WISP_TAGS",
        "WISP_NOTES",
        "WISP_RUN_ID",
        "WISP_RESUME",
        "WISP_RUN_GROUP",
        "WISP_JOB_TYPE",
        "WISP_CACHE_DIR",
        "WISP_CONFIG",
        "WISP_SWEEP_ID",
        "WISP_SWEEP_RUN_ID",
        "WISP_SWEEP_PARAMS",
        "WISP_SWEEP_PROJECT",
        "WISP_DATA_DIR",
        "WISP_MEDIA_URL",
        "WISP_UI_PORT",
        "WISP_DATABASE_URL",
        "WISP_SERVER_DIR",
        "WISP_PASSWORD",
        "WISP_SERVER_DB_POOL",
        "WISP_SERVER_SETTINGS_JSON",
        "WISP_SERVER_SECRETS_KEY",  # automations (docs/automations.md)
        "WISP_SERVER_SMTP_PASSWORD",
        "WISP_MCP_MAX_BYTES",  # wisp mcp (docs/agents.md)
    }
)
#: Prefixes of the project's own test and benchmark knobs, never warned about.
_DEV_ENV_PREFIXES = ("WISP_TEST_", "WISP_BENCH_", "WISP_UPDATE_SCREENSHOTS")


def unknown_env(env: Mapping[str, str]) -> list[tuple[str, str]]:
    """``(name, " (did you mean 'X'?)" or "")`` for each ``WISP_*`` name wisp does not know."""
    known = {spec[2] for spec in _FIELDS.values() if spec[2] is not None} | OTHER_ENV
    return [
        (var, _did_you_mean(var, known))
        for var in env
        if var.startswith("WISP_") and var not in known and not var.startswith(_DEV_ENV_PREFIXES)
    ]


def read_environ() -> dict[str, str]:
    """The environment variables settings and ``init()`` read (``WISP_*``, ``WANDB_*``,
    ``XDG_CONFIG_HOME``), copied in one pass: ``os.environ`` decodes a name and a value
    on every access, and settings look up ~40 names."""
    env = os.environ
    return {k: env[k] for k in env if k.startswith(("WISP_", "WANDB_")) or k == "XDG_CONFIG_HOME"}


def warn_unknown_env(env: Mapping[str, str]) -> None:
    """One warning per unknown ``WISP_*`` variable name per process, with a suggestion."""
    if not any(k.startswith("WISP_") for k in env):
        return
    for var, hint in unknown_env(env):
        from wisp._logging import warn_once_per

        warn_once_per(
            f"env {var}",
            f"wisp: environment variable {var} is not a wisp setting and is ignored{hint}; "
            "docs/settings.md lists them",
            stacklevel=6,  # warn_once_per, here, resolve(), start_run(), wisp.init(), caller
        )


_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def _coerce(name: str, kind: type, value: Any, source: str) -> Any:
    if value is None:
        return None
    try:
        if kind is bool:
            if isinstance(value, bool):
                return value
            if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
                return value.strip().lower() in _TRUE
            raise ValueError
        if kind is float:
            if isinstance(value, bool):
                raise ValueError
            return float(value)
        if kind is int:
            if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
                raise ValueError
            return int(value)
        if kind is str:
            return os.fspath(value) if isinstance(value, os.PathLike) else str(value)
    except (TypeError, ValueError):
        pass
    what = {bool: "a boolean (true/false)", int: "an int", float: "a number", str: "a string"}
    raise UsageError(f"setting {name!r} from {source} must be {what[kind]}, got {value!r}")


class Settings:
    """Every setting of a run.  Unknown names are refused.

    >>> Settings(flush_interval=0.5).flush_interval
    0.5
    """

    __slots__ = ("_explicit", "_values")

    def __init__(self, **kwargs: Any) -> None:
        self._values: dict[str, Any] = {k: spec[1] for k, spec in _FIELDS.items()}
        self._explicit: set[str] = set()
        self._apply(kwargs, "Settings()")

    def _apply(self, values: Mapping[str, Any], source: str) -> None:
        for name, value in values.items():
            spec = _FIELDS.get(name)
            if spec is None:  # wandb's settings map to wisp's, or warn once (_wandb_env)
                from wisp._wandb_env import map_setting

                try:
                    mapped = map_setting(name, value)
                except KeyError:
                    known = ", ".join(sorted(_FIELDS))
                    raise UsageError(
                        f"unknown setting {name!r} in {source}"
                        + _did_you_mean(str(name), _FIELDS)
                        + f"; known settings: {known} (wandb's common settings are accepted "
                        "too, see docs/settings.md)"
                    ) from None
                if mapped is None:
                    continue
                name, value = mapped
                spec = _FIELDS[name]
            elif name in ("mode", "console"):
                from wisp._wandb_env import map_value

                value = map_value(name, value)
            kind, _default, _env, check = spec
            coerced = _coerce(name, kind, value, source)
            if coerced is not None:
                problem = check(coerced)
                if problem is not None:
                    raise UsageError(f"setting {name!r} from {source} {problem}")
            self._values[name] = coerced
            self._explicit.add(name)

    @classmethod
    def resolve(
        cls,
        explicit: Settings | Mapping[str, Any] | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> Settings:
        """Defaults, then ``environ`` (default ``os.environ``), then ``explicit``."""
        env = read_environ() if environ is None else environ
        warn_unknown_env(env)
        out = cls()
        out._explicit.clear()
        if environ is None or "WISP_CONFIG" in env:
            out._apply_user_config(env)
        from_env = {
            name: env[spec[2]]
            for name, spec in _FIELDS.items()
            if spec[2] is not None and env.get(spec[2], "") != ""
        }
        for name, value in from_env.items():
            out._apply({name: value}, f"environment variable {_FIELDS[name][2]}")
        if any(k.startswith("WANDB_") for k in env):  # wandb's, where no WISP_* is set
            from wisp._wandb_env import SETTINGS_ENV, settings_from_env

            for name, value in settings_from_env(env, set(from_env)).items():
                out._apply({name: value}, f"environment variable {SETTINGS_ENV[name][0]}")
        if isinstance(explicit, Settings):
            out._apply({k: explicit._values[k] for k in explicit._explicit}, "settings")
        elif explicit is not None:
            if not isinstance(explicit, Mapping):
                raise UsageError(
                    f"settings must be a wisp.Settings or a dict, got {type(explicit).__name__}"
                )
            out._apply(explicit, "settings")
        return out

    def _apply_user_config(self, env: Mapping[str, str]) -> None:
        # `wisp login`'s file: server_url and api_key, below env vars and explicit settings
        from wisp._userconfig import config_path, read_config

        path = config_path(env)
        try:
            values = read_config(path)
        except (OSError, ValueError):
            return  # missing or broken: init() goes on; `wisp doctor` reports it
        self._apply(values, f"the wisp config file {path}")
        self._explicit.difference_update(values)

    def replace(self, **kwargs: Any) -> Settings:
        """A copy with some settings changed."""
        return self._replaced("Settings.replace()", kwargs)

    def _replaced(self, source: str, values: Mapping[str, Any]) -> Settings:
        """A copy with ``values`` applied; errors name ``source`` (e.g. ``init() arguments``)."""
        out = Settings()
        out._values = dict(self._values)
        out._explicit = set(self._explicit)
        out._apply(values, source)
        return out

    def as_dict(self) -> dict[str, Any]:
        return dict(self._values)

    def __getattr__(self, name: str) -> Any:
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError(f"Settings has no setting {name!r}") from None

    def __setattr__(self, name: str, value: Any) -> None:
        if name in Settings.__slots__:
            object.__setattr__(self, name, value)
        else:
            self._apply({name: value}, "Settings")

    def __repr__(self) -> str:
        shown = ", ".join(
            f"{k}={'***' if k == 'api_key' and v else repr(v)}" for k, v in self._values.items()
        )
        return f"Settings({shown})"

    @staticmethod
    def fields() -> dict[str, tuple[type, Any, str | None]]:
        """Name -> (type, default, environment variable), for docs and doctor."""
        return {k: (v[0], v[1], v[2]) for k, v in _FIELDS.items()}

"""wandb's environment variables, settings and ``reinit`` values, mapped to wisp's.

Precedence for each value (highest first; docs/settings.md has the table): an explicit
argument or setting, the ``WISP_*`` variable, the matching ``WANDB_*`` variable, the
default.  ``WANDB_API_KEY`` is never read: wisp's server key is ``WISP_API_KEY``.

Settings only wandb knows are accepted: each maps to a wisp setting, or has no effect
in wisp and warns once per process naming it.  Any other unknown name is refused.
"""

from __future__ import annotations

from wisp.errors import UsageError

TYPE_CHECKING = False  # typing costs ~15 ms to import; only type checkers need it
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any

__all__ = [
    "INIT_ENV",
    "SETTINGS_ENV",
    "init_from_env",
    "map_setting",
    "reinit_mode",
    "settings_from_env",
]

_TRUE = {"1", "true", "yes", "on"}


def _mode(value: Any) -> Any:
    """wandb's modes: ``online``/``run``/``shared`` leave the choice to wisp (online when a
    server is configured), ``offline``/``dryrun`` and ``disabled`` are the same."""
    v = str(value).strip().lower()
    if v in ("online", "run", "shared"):
        return None
    if v in ("offline", "dryrun"):
        return "offline"
    if v == "disabled":
        return "disabled"
    raise UsageError(f"wandb mode must be online, offline or disabled, got {value!r}")


def _console(value: Any) -> Any:
    v = str(value).strip().lower()
    if v == "off":
        return "off"
    if v in ("auto", "wrap", "redirect", "wrap_raw", "wrap_emu"):
        return "wrap"
    raise UsageError(f"wandb console must be auto, wrap, redirect or off, got {value!r}")


def _flag(value: Any) -> bool:
    return value if isinstance(value, bool) else str(value).strip().lower() in _TRUE


def _not(value: Any) -> bool:
    return not _flag(value)


#: wisp setting <- WANDB_* variable (read when the WISP_* one is unset), with a converter.
SETTINGS_ENV: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "mode": ("WANDB_MODE", _mode),
    "dir": ("WANDB_DIR", str),
    "silent": ("WANDB_SILENT", _flag),
    "console": ("WANDB_CONSOLE", _console),
}

#: init() argument <- (WISP_* variable, WANDB_* variable).
INIT_ENV: dict[str, tuple[str, str]] = {
    "project": ("WISP_PROJECT", "WANDB_PROJECT"),
    "entity": ("WISP_ENTITY", "WANDB_ENTITY"),
    "name": ("WISP_NAME", "WANDB_NAME"),
    "tags": ("WISP_TAGS", "WANDB_TAGS"),
    "notes": ("WISP_NOTES", "WANDB_NOTES"),
    "id": ("WISP_RUN_ID", "WANDB_RUN_ID"),
    "resume": ("WISP_RESUME", "WANDB_RESUME"),
    "group": ("WISP_RUN_GROUP", "WANDB_RUN_GROUP"),
    "job_type": ("WISP_JOB_TYPE", "WANDB_JOB_TYPE"),
}

# wandb setting -> (wisp setting, converter)
_MAPPED: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "silent": ("silent", _flag),
    "quiet": ("silent", _flag),
    "_disable_stats": ("system_metrics", _not),
    "x_disable_stats": ("system_metrics", _not),
    "_stats_sample_rate_seconds": ("system_interval", float),
    "x_stats_sampling_interval": ("system_interval", float),
    "_disable_meta": ("git", _not),
    "x_disable_meta": ("git", _not),
    "disable_git": ("git", _not),
    "root_dir": ("dir", str),
}
# wandb's values of settings wisp has too, as wisp's (anything else is checked as it is)
_VALUE_MAPS: dict[str, dict[str, str]] = {
    "mode": {"dryrun": "offline", "run": "online"},
    "console": {"auto": "wrap", "redirect": "wrap", "wrap_raw": "wrap", "wrap_emu": "wrap"},
}

#: wandb settings with no effect in wisp: accepted, warned about once each.
NO_EFFECT = frozenset(
    {
        "start_method",
        "_service_wait",
        "x_service_wait",
        "_disable_service",
        "x_disable_service",
        "save_code",
        "code_dir",
        "disable_code",
        "disable_job_creation",
        "_save_requirements",
        "x_save_requirements",
        "anonymous",
        "show_info",
        "show_warnings",
        "show_errors",
        "program",
        "program_relpath",
        "_file_stream_timeout_seconds",
        "x_file_stream_timeout_seconds",
        "x_file_stream_max_bytes",
        "_disable_machine_info",
        "x_disable_machine_info",
        "x_label",
        "x_primary",
        "allow_val_change",
        "sync_tensorboard",
        "base_url",
        "api_key",
        "entity",
        "project",
        "run_name",
        "run_id",
        "run_tags",
        "run_notes",
        "run_group",
        "run_job_type",
        "resume",
        "reinit",
        "heartbeat_seconds",
        "x_sync",
        "_offline",
        "x_jupyter_root",
        "notebook_name",
    }
)


def map_setting(name: str, value: Any) -> tuple[str, Any] | None:
    """A wandb-only setting as ``(wisp name, value)``; None when it has no effect (warns
    once).  Raises KeyError for names neither wisp nor wandb knows."""
    mapped = _MAPPED.get(name)
    if mapped is not None:
        return mapped[0], None if value is None else mapped[1](value)
    if name in NO_EFFECT:
        from wisp._logging import warn_once_per

        warn_once_per(
            f"setting {name}",
            f"wisp: wandb setting {name!r} has no effect in wisp"
            + (" (wisp never reads or sends wandb's API key)" if name == "api_key" else ""),
        )
        return None
    raise KeyError(name)


def map_value(name: str, value: Any) -> Any:
    """wandb's values for wisp's own settings (``mode="dryrun"``, ``console="auto"``)."""
    values = _VALUE_MAPS.get(name)
    if values is None or not isinstance(value, str):
        return value
    return values.get(value, value)  # the setting's own check names the allowed values


def settings_from_env(env: Mapping[str, str], already: set[str]) -> dict[str, Any]:
    """wisp settings from ``WANDB_*`` variables, for those not in ``already``
    (set by a ``WISP_*`` variable)."""
    out: dict[str, Any] = {}
    for name, (var, convert) in SETTINGS_ENV.items():
        raw = env.get(var, "")
        if name in already or raw == "":
            continue
        try:
            value = convert(raw)
        except UsageError as exc:
            raise UsageError(f"environment variable {var}: {exc}") from None
        if value is not None:
            out[name] = value
    return out


def init_from_env(env: Mapping[str, str]) -> dict[str, Any]:
    """init() arguments from ``WISP_*`` variables, else the matching ``WANDB_*`` ones."""
    out: dict[str, Any] = {}
    for arg, (wisp_var, wandb_var) in INIT_ENV.items():
        raw = env.get(wisp_var) or env.get(wandb_var)
        if not raw:
            continue
        if arg == "tags":
            out[arg] = [t.strip() for t in raw.split(",") if t.strip()]
        elif arg == "resume":
            low = raw.strip().lower()
            out[arg] = True if low in _TRUE else False if low in ("0", "false", "no") else low
        else:
            out[arg] = raw
    return out


def reinit_mode(value: Any) -> str:
    """``init(reinit=...)``: ``finish_previous``, ``return_previous`` or ``create_new``.

    ``"default"`` (and no value) is wisp's default, ``finish_previous`` (wandb's default
    returns the previous run outside notebooks); True and False are wandb's deprecated
    aliases of ``finish_previous`` and ``return_previous``.
    """
    if value is None or value is True or value == "default":
        return "finish_previous"
    if value is False:
        return "return_previous"
    if value in ("finish_previous", "return_previous", "create_new"):
        return str(value)
    raise UsageError(
        "init() reinit must be 'default', 'return_previous', 'finish_previous', 'create_new' "
        f"or a bool, got {value!r}"
    )

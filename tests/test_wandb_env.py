"""wandb's environment variables, settings and reinit values (``wisp._wandb_env``)."""

from __future__ import annotations

import pytest

from wisp._settings import Settings
from wisp._wandb_env import init_from_env, reinit_mode
from wisp.errors import UsageError, WispWarning


def test_wandb_variables_apply_only_where_wisp_ones_are_unset() -> None:
    """WANDB_MODE/DIR/SILENT/CONSOLE set settings; a WISP_* variable wins over its WANDB_* one."""
    env = {
        "WANDB_MODE": "dryrun",
        "WANDB_DIR": "/w",
        "WANDB_SILENT": "true",
        "WANDB_CONSOLE": "off",
    }
    s = Settings.resolve(environ=env)
    assert (s.mode, s.dir, s.silent, s.console) == ("offline", "/w", True, "off")
    s = Settings.resolve(environ={**env, "WISP_MODE": "disabled", "WISP_DIR": "/x"})
    assert (s.mode, s.dir) == ("disabled", "/x")
    assert Settings.resolve(environ={"WANDB_MODE": "online"}).mode is None  # wisp decides


def test_bad_wandb_mode_names_the_variable() -> None:
    """An unknown WANDB_MODE raises UsageError naming the variable."""
    with pytest.raises(UsageError, match="WANDB_MODE"):
        Settings.resolve(environ={"WANDB_MODE": "sideways"})


def test_explicit_settings_win_over_wandb_variables() -> None:
    """Settings passed to init() override WANDB_* variables."""
    s = Settings.resolve(Settings(mode="offline"), environ={"WANDB_MODE": "disabled"})
    assert s.mode == "offline"


def test_wandb_settings_map_or_warn_once() -> None:
    """Mapped wandb settings set wisp's; no-op ones warn once per name; unknown ones raise."""
    s = Settings(x_disable_stats=True, _disable_meta=True, x_stats_sampling_interval=3, quiet=True)
    assert (s.system_metrics, s.git, s.system_interval, s.silent) == (False, False, 3.0, True)
    assert Settings(mode="dryrun", console="redirect").mode == "offline"
    with pytest.warns(WispWarning, match="x_service_wait"):
        Settings(x_service_wait=30)
    with pytest.raises(UsageError, match="unknown setting 'flush_intervall'"):
        Settings(flush_intervall=1)


def test_init_arguments_from_wisp_then_wandb_variables() -> None:
    """init() defaults come from WISP_* variables, else WANDB_*; tags split on commas."""
    env = {"WANDB_PROJECT": "a", "WISP_PROJECT": "b", "WANDB_TAGS": "x, y", "WANDB_RESUME": "true"}
    assert init_from_env(env) == {"project": "b", "tags": ["x", "y"], "resume": True}
    assert init_from_env({"WANDB_API_KEY": "k"}) == {}


@pytest.mark.parametrize(
    ("value", "want"),
    [
        (None, "finish_previous"),
        ("default", "finish_previous"),
        (True, "finish_previous"),
        (False, "return_previous"),
        ("create_new", "create_new"),
        ("return_previous", "return_previous"),
    ],
)
def test_reinit_values(value: object, want: str) -> None:
    """wandb's reinit values and booleans map to one of three behaviours."""
    assert reinit_mode(value) == want


def test_reinit_refuses_other_values() -> None:
    """An unknown reinit value raises UsageError listing the accepted ones."""
    with pytest.raises(UsageError, match="create_new"):
        reinit_mode("sometimes")


def test_wisp_values_of_shared_settings_are_kept() -> None:
    """mode="online" and console="wrap" passed as settings stay as they are."""
    s = Settings(mode="online", console="wrap")
    assert (s.mode, s.console) == ("online", "wrap")
    assert Settings(mode="run").mode == "online"

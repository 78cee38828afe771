"""Settings: defaults, environment, explicit values, and clear errors (src/wisp/_settings.py)."""

from __future__ import annotations

import pytest

from wisp._settings import Settings
from wisp.errors import UsageError


def test_precedence_is_defaults_then_environment_then_explicit() -> None:
    """Explicit settings beat WISP_* variables, which beat defaults."""
    env = {"WISP_FLUSH_INTERVAL": "2.5", "WISP_QUEUE_SIZE": "99", "WISP_GIT": "no"}
    s = Settings.resolve({"queue_size": 5}, environ=env)
    assert s.flush_interval == 2.5 and s.queue_size == 5 and s.git is False
    assert Settings.resolve(None, environ={}).fsync == "finish"


def test_bad_values_name_the_setting_and_its_source() -> None:
    """A bad value names the setting, where it came from and what was expected."""
    with pytest.raises(UsageError, match="WISP_QUEUE_SIZE must be a int"):
        Settings.resolve(None, environ={"WISP_QUEUE_SIZE": "lots"})
    with pytest.raises(UsageError, match="'fsync' must be one of"):
        Settings(fsync="always")
    with pytest.raises(UsageError, match="'flush_interval' must be > 0"):
        Settings(flush_interval=0)
    with pytest.raises(UsageError, match="unknown setting 'flush'"):
        Settings(flush=1)


def test_api_key_is_hidden_in_repr() -> None:
    """repr(Settings) never shows the API key."""
    assert "secret" not in repr(Settings(api_key="secret"))


def test_replace_returns_a_changed_copy() -> None:
    """replace() changes the copy only."""
    a = Settings(queue_size=3)
    b = a.replace(queue_size=4)
    assert (a.queue_size, b.queue_size) == (3, 4)


def test_every_setting_is_documented() -> None:
    """docs/settings.md names every setting and its environment variable."""
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[1] / "docs" / "settings.md").read_text()
    for name, (_kind, _default, env) in Settings.fields().items():
        assert f"`{name}`" in doc, name
        assert env is None or f"`{env}`" in doc, env

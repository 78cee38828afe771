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
    with pytest.raises(UsageError, match="WISP_QUEUE_SIZE must be an int"):
        Settings.resolve(None, environ={"WISP_QUEUE_SIZE": "lots"})
    with pytest.raises(UsageError, match=r"'fsync' from Settings\(\) must be one of"):
        Settings(fsync="always")
    with pytest.raises(UsageError, match="'flush_interval' from settings must be > 0"):
        Settings.resolve({"flush_interval": 0}, environ={})
    with pytest.raises(UsageError, match="unknown setting 'flush'"):
        Settings(flush=1)


def test_every_check_names_the_environment_variable() -> None:
    """A value refused by a setting's check names the WISP_* variable it came from."""
    with pytest.raises(UsageError) as err:
        Settings.resolve(None, environ={"WISP_MODE": "onlin"})
    assert "environment variable WISP_MODE" in str(err.value)
    assert "did you mean 'online'?" in str(err.value)
    with pytest.raises(UsageError, match="environment variable WISP_FLUSH_INTERVAL must be > 0"):
        Settings.resolve(None, environ={"WISP_FLUSH_INTERVAL": "-1"})


def test_unknown_setting_suggests_the_closest_name() -> None:
    """A misspelt setting name is refused with a "did you mean" naming the right one."""
    with pytest.raises(UsageError, match="did you mean 'flush_interval'"):
        Settings.resolve({"flush_intervall": 1}, environ={})


def test_server_url_without_a_scheme_is_refused_with_a_fix() -> None:
    """A server URL without http:// names its variable and suggests the URL with a scheme."""
    with pytest.raises(UsageError) as err:
        Settings.resolve(None, environ={"WISP_SERVER_URL": "localhost:8080"})
    text = str(err.value)
    assert "environment variable WISP_SERVER_URL" in text
    assert "did you mean 'http://localhost:8080'?" in text
    assert Settings(server_url="https://h.example/wisp").server_url == "https://h.example/wisp"


def test_unknown_wisp_variable_warns_once_with_a_suggestion() -> None:
    """An unknown WISP_* name warns once per process, suggesting the setting it resembles."""
    from wisp.errors import WispWarning

    env = {"WISP_SERVR_URL": "http://x", "WISP_PROJECT": "p", "WISP_TEST_PG": "1"}
    with pytest.warns(WispWarning, match="WISP_SERVR_URL .*did you mean 'WISP_SERVER_URL'"):
        Settings.resolve(None, environ=env)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Settings.resolve(None, environ=env)  # once per process: no second warning


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


def test_every_wisp_variable_wisp_reads_is_known() -> None:
    """No WISP_* name that wisp's own code reads is warned about as unknown."""
    import re
    from pathlib import Path

    from wisp._settings import unknown_env

    src = Path(__file__).resolve().parents[1] / "src" / "wisp"
    names = {
        m
        for p in src.rglob("*.py")
        for m in re.findall(r"\"(WISP_[A-Z0-9_]*[A-Z0-9])\"", p.read_text())
        if m != "WISP_SWEEP"  # a prefix (the agent drops the parent's sweep variables)
    }
    assert len(names) > 30
    assert unknown_env(dict.fromkeys(names, "1")) == []

"""_values: per-value size limits, media dispatch, and lazy loading of the media types."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

import wisp
from wisp._settings import Settings
from wisp._values import DEFAULT_MAX_VALUE_BYTES, Deferred, prepare_row
from wisp.errors import UsageError, ValueLimitError


@pytest.fixture
def make_run(tmp_path: Any) -> Iterator[Any]:
    def make(**settings: Any) -> wisp.Run:
        return wisp.init(project="values", dir=str(tmp_path), settings={"git": False, **settings})

    yield make
    wisp.finish()


def test_default_limit_matches_the_setting() -> None:
    """prepare_row's default limit is the max_value_bytes setting's default."""
    assert Settings().max_value_bytes == DEFAULT_MAX_VALUE_BYTES


def test_long_string_is_refused_naming_the_key() -> None:
    """A string over the limit raises ValueLimitError (a UsageError and ValueError) naming it."""
    with pytest.raises(ValueLimitError, match=r"'notes/text'.*1,001 bytes.*1,000 bytes") as info:
        prepare_row({"notes": {"text": "x" * 1001}}, max_value_bytes=1000)
    assert isinstance(info.value, UsageError) and isinstance(info.value, ValueError)
    row, _ = prepare_row({"notes": {"text": "x" * 1000}}, max_value_bytes=1000)
    assert row == {"notes/text": "x" * 1000}


def test_multibyte_strings_count_encoded_bytes() -> None:
    """Large strings are measured in UTF-8 bytes, not characters."""
    with pytest.raises(ValueLimitError):
        prepare_row({"s": "é" * (1 << 20)}, max_value_bytes=(1 << 20) + 10)


def test_list_of_strings_counts_every_item() -> None:
    """A list value's size is the sum of its items."""
    with pytest.raises(ValueLimitError, match="'tags'"):
        prepare_row({"tags": ["x" * 400, "y" * 400]}, max_value_bytes=500)


def test_setting_applies_to_log(make_run: Any) -> None:
    """Run.log() checks values against the run's max_value_bytes setting."""
    r = make_run(max_value_bytes=100)
    with pytest.raises(ValueLimitError, match="'a/b'"):
        r.log({"a": {"b": "z" * 200}})
    r.log({"a": {"b": "z" * 50}})


def test_deferred_estimate_is_checked() -> None:
    """A Deferred reporting a size over the limit is refused before it is enqueued."""

    class Big(Deferred):
        __slots__ = ()

        def estimate_bytes(self) -> int:
            return 10_000

    with pytest.raises(ValueLimitError, match=r"'big'.*10,000 bytes"):
        prepare_row({"big": Big()}, max_value_bytes=9_999)
    row, deferred = prepare_row({"big": Big()}, max_value_bytes=10_000)
    assert deferred and isinstance(row["big"], Big)


def test_media_in_summary_is_refused(make_run: Any) -> None:
    """Setting a media value in the summary is refused on the calling thread, naming the key."""
    r = make_run()
    with pytest.raises(UsageError, match=r"summary values must be plain.*'h'"):
        r.summary.update({"h": wisp.Histogram([1.0]), "x": 1})
    r.summary["x"] = 2
    assert r.summary["x"] == 2


def test_list_of_non_image_media_is_refused() -> None:
    """A list of Deferred values other than Images names the key and the offending item."""
    h = wisp.Histogram([1.0])
    with pytest.raises(UsageError, match=r"'h'.*item 0 is Histogram"):
        prepare_row({"h": [h, h]})


def test_media_types_load_lazily() -> None:
    """import wisp loads no media module, numpy, torch or PIL; wisp.Image loads no numpy or PIL."""
    code = (
        "import sys, json, wisp\n"
        "heavy = ('wisp.media', 'numpy', 'torch', 'PIL')\n"
        "before = sorted(m for m in sys.modules if m.startswith(heavy))\n"
        "wisp.Histogram, wisp.Image, wisp.Table\n"
        "after = sorted(m for m in sys.modules if m.startswith(('numpy', 'torch', 'PIL')))\n"
        "print(json.dumps([before, after, 'Image' in wisp.__all__, 'Table' in dir(wisp)]))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    before, after, in_all, in_dir = json.loads(out.stdout)
    assert before == [] and after == []
    assert in_all and in_dir

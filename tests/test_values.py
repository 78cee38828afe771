"""What log() accepts and how values are checked and converted (src/wisp/_values.py)."""

from __future__ import annotations

import enum
from typing import Any

import pytest

from wisp._deferred import Deferred
from wisp._protocol import MAX_KEY_LENGTH, MAX_LIST_ITEMS
from wisp._values import convert_value, prepare_row
from wisp.errors import UsageError, ValueLimitError


def test_nested_dicts_flatten_with_slashes() -> None:
    """Nested dicts become 'a/b' keys; an empty nested dict contributes nothing."""
    row, deferred = prepare_row({"a": {"b": 1, "c": {"d": 2.5}}, "e": {}, "f": None})
    assert row == {"a/b": 1, "a/c/d": 2.5, "f": None} and deferred is False


@pytest.mark.parametrize(
    ("data", "match"),
    [
        ({1: 1.0}, "keys must be strings"),
        ({"a": {2: 1.0}}, "under 'a/'"),
        ({"": 1.0}, f"1 to {MAX_KEY_LENGTH} characters"),
        ({"a": {"": 1.0}}, "'a/'"),
        ({"k" * (MAX_KEY_LENGTH + 1): 1.0}, f"1 to {MAX_KEY_LENGTH} characters"),
        ({"_step": 1}, "reserved"),
        ({"a/b": 1, "a": {"b": 2}}, "appears twice"),
        ({"x": object()}, "has type object"),
        ({"x": 1j}, "has type complex"),
    ],
)
def test_bad_keys_and_values_are_refused_naming_them(data: dict[Any, Any], match: str) -> None:
    """Each refused key or value raises UsageError with a message naming what was wrong."""
    with pytest.raises(UsageError, match=match):
        prepare_row(data)


def test_key_length_counts_the_flattened_key() -> None:
    """A nested key is checked at its full 'parent/child' length: MAX_KEY_LENGTH fits, one more does not."""
    child = "k" * (MAX_KEY_LENGTH - 2)
    assert prepare_row({"a": {child: 1}})[0] == {f"a/{child}": 1}
    with pytest.raises(UsageError):
        prepare_row({"ab": {child: 1}})


def test_a_non_mapping_is_refused() -> None:
    """log() takes a dict: a list is refused with its type named."""
    with pytest.raises(UsageError, match="got list"):
        prepare_row([("a", 1)])  # type: ignore[arg-type]


def test_plain_lists_are_copied_and_bounded() -> None:
    """A list of scalars is copied (later changes don't leak) and limited to MAX_LIST_ITEMS."""
    values = [1, 2.0, "x", None, True]
    row, _ = prepare_row({"l": values})
    values.append(9)
    assert row["l"] == [1, 2.0, "x", None, True]
    prepare_row({"l": [0] * MAX_LIST_ITEMS})
    with pytest.raises(UsageError, match=f"at most {MAX_LIST_ITEMS}"):
        prepare_row({"l": [0] * (MAX_LIST_ITEMS + 1)})


class _Color(enum.IntEnum):
    RED = 3


class _Name(str):
    pass


def test_subclasses_of_plain_types_become_plain_values() -> None:
    """IntEnum, str and float subclasses are logged as plain int, str and float."""
    assert type(convert_value("k", _Color.RED)) is int and convert_value("k", _Color.RED) == 3
    assert type(convert_value("k", _Name("n"))) is str


def test_numpy_scalars_and_one_element_arrays_become_numbers() -> None:
    """numpy scalars and 1-element arrays log as Python numbers; 2-32 elements as lists."""
    np = pytest.importorskip("numpy")
    assert convert_value("k", np.float32(1.5)) == 1.5
    assert type(convert_value("k", np.array([[7]]))) is int
    assert convert_value("k", np.str_("s")) == "s"
    assert convert_value("k", np.array([1, 2])) == [1, 2]
    assert convert_value("k", np.array([[1.5], [2.5]])) == [[1.5], [2.5]]


class _Big(Deferred):
    def estimate_bytes(self) -> int:
        return 10_000


def test_values_over_the_size_limit_are_refused() -> None:
    """A string or media value larger than max_value_bytes raises ValueLimitError naming the key."""
    with pytest.raises(ValueLimitError, match="'s'"):
        prepare_row({"s": "x" * 101}, max_value_bytes=100)
    with pytest.raises(ValueLimitError, match="'m'"):
        prepare_row({"m": _Big()}, max_value_bytes=1000)
    row, deferred = prepare_row({"m": _Big()}, max_value_bytes=10_000)
    assert deferred is True and isinstance(row["m"], _Big)

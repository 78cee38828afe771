"""wisp.Histogram: accepted sources, NaN/inf counting, precomputed bins, errors."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
import torch

import wisp
from wisp import _tensors
from wisp.errors import UsageError

from .conftest import Gate, logged, read_back

SOURCES = [
    ("list-int", [1, 2, 2, 3, 3, 3, 9]),
    ("list-float", [0.5, -1.25, 3.0, 2.0]),
    ("tuple", (1.0, 2.0, 4.0)),
    ("np-float64", np.linspace(-3, 3, 101)),
    ("np-float32-2d", np.arange(60, dtype=np.float32).reshape(6, 10)),
    ("np-float16", np.arange(20, dtype=np.float16)),
    ("np-int8", np.arange(-50, 50, dtype=np.int8)),
    ("np-int64", np.arange(1000, dtype=np.int64) ** 2),
    ("np-uint8", np.arange(256, dtype=np.uint8)),
    ("np-bool", np.array([True, False, True, True])),
    ("torch-float32", torch.linspace(0, 1, 33)),
    ("torch-float64-3d", torch.arange(24, dtype=torch.float64).reshape(2, 3, 4)),
    ("torch-float16", torch.arange(10, dtype=torch.float16)),
    ("torch-int32", torch.arange(-7, 40, dtype=torch.int32)),
    ("torch-uint8", torch.arange(200, dtype=torch.uint8)),
    ("torch-bool", torch.tensor([True, False, False])),
    ("torch-noncontiguous", torch.arange(30.0).reshape(5, 6).t()),
    ("torch-requires-grad", torch.linspace(0, 2, 9, requires_grad=True)),
]


def _expected(source: Any, bins: int) -> tuple[list[Any], list[Any]]:
    if isinstance(source, torch.Tensor):
        source = source.detach().numpy()
    a = np.asarray(source).reshape(-1)
    if a.dtype == np.bool_:
        a = a.astype(np.uint8)
    elif a.dtype == np.float16:  # half precision is binned as float32
        a = a.astype(np.float32)
    counts, edges = np.histogram(a, bins=bins)
    return counts.tolist(), edges.tolist()


@pytest.mark.parametrize(("name", "source"), SOURCES, ids=[n for n, _ in SOURCES])
def test_sources_bin_like_numpy(run: wisp.Run, name: str, source: Any) -> None:
    """Every accepted source type and dtype is binned exactly as numpy.histogram bins it."""
    run.log({"h": wisp.Histogram(source, num_bins=7)})
    value = logged(run, "h")
    counts, edges = _expected(source, 7)
    assert value["_type"] == "histogram"
    assert value["counts"] == counts
    assert value["bins"] == pytest.approx(edges)
    assert value["nan"] == 0 and value["inf"] == 0


def test_bfloat16_tensor(run: wisp.Run) -> None:
    """A bfloat16 tensor (which numpy cannot hold) is binned via float32."""
    t = torch.arange(16, dtype=torch.bfloat16)
    run.log({"h": wisp.Histogram(t, num_bins=4)})
    assert logged(run, "h")["counts"] == [4, 4, 4, 4]


def test_nan_and_inf_are_counted_not_binned(run: wisp.Run) -> None:
    """NaN and +/-inf values are counted separately and left out of the bins."""
    a = np.array([1.0, 2.0, np.nan, np.inf, -np.inf, np.nan, 3.0, np.inf])
    run.log({"np": wisp.Histogram(a, num_bins=2), "pt": wisp.Histogram(torch.from_numpy(a))})
    data = read_back(run)
    for key in ("np", "pt"):
        (value,) = data.scalars(key)[1]
        assert value["nan"] == 2
        assert value["inf"] == 3
        assert sum(value["counts"]) == 3
        assert value["bins"][0] == 1.0 and value["bins"][-1] == 3.0


def test_all_nan_and_constant_sources(run: wisp.Run) -> None:
    """An all-NaN source gives empty bins over [0, 1]; a constant one a bin around the value."""
    run.log(
        {
            "nan": wisp.Histogram(np.full(5, np.nan), num_bins=4),
            "const": wisp.Histogram([2.0, 2.0, 2.0], num_bins=4),
        }
    )
    data = read_back(run)
    nan = data.scalars("nan")[1][0]
    assert nan["counts"] == [0, 0, 0, 0] and nan["nan"] == 5
    assert nan["bins"][0] == 0.0 and nan["bins"][-1] == 1.0
    const = data.scalars("const")[1][0]
    assert sum(const["counts"]) == 3
    assert const["bins"][0] == 1.5 and const["bins"][-1] == 2.5


@pytest.mark.parametrize("source", [[], np.zeros(0), torch.zeros(0, 3)], ids=["list", "np", "pt"])
def test_empty_sources(run: wisp.Run, source: Any) -> None:
    """An empty source gives zero counts over [0, 1]."""
    run.log({"h": wisp.Histogram(source, num_bins=2)})
    value = logged(run, "h")
    assert value["counts"] == [0, 0] and value["bins"] == [0.0, 0.5, 1.0]


def test_np_histogram_is_stored_as_given(run: wisp.Run) -> None:
    """A precomputed (counts, edges) pair is stored unchanged."""
    counts, edges = np.histogram(np.arange(100), bins=5)
    run.log({"h": wisp.Histogram(np_histogram=(counts, edges))})
    value = logged(run, "h")
    assert value == {
        "_type": "histogram",
        "bins": edges.tolist(),
        "counts": counts.tolist(),
        "nan": 0,
        "inf": 0,
    }


@pytest.mark.parametrize("bins", [0, 513, -1, 1.5, True, "64", None])
def test_num_bins_out_of_range(bins: Any) -> None:
    """num_bins must be an int from 1 to 512."""
    with pytest.raises(UsageError, match="num_bins"):
        wisp.Histogram([1.0], num_bins=bins)


def test_num_bins_bounds_accepted(run: wisp.Run) -> None:
    """1 and 512 bins are both accepted."""
    run.log(
        {"one": wisp.Histogram([1, 2], num_bins=1), "max": wisp.Histogram([1, 2], num_bins=512)}
    )
    data = read_back(run)
    assert len(data.scalars("one")[1][0]["counts"]) == 1
    assert len(data.scalars("max")[1][0]["counts"]) == 512


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({}, "exactly one"),
        ({"values": [1], "np_histogram": ([1], [0, 1])}, "exactly one"),
        ({"np_histogram": [1, 2, 3]}, "pair"),
        ({"np_histogram": ([1, 2], [0, 1])}, "one more edge"),
        ({"np_histogram": ([1, 2], [0, 2, 1])}, "increasing"),
        ({"np_histogram": ([1], [0, float("nan")])}, "finite"),
        ({"np_histogram": (["a"], [0, 1])}, "expected a number"),
        ({"np_histogram": ([], [0])}, "1 to 512"),
        ({"np_histogram": ("ab", [0, 1])}, "list or array"),
        ({"values": np.array(["a", "b"])}, "dtype"),
        ({"values": np.array([1 + 2j])}, "dtype"),
        ({"values": torch.tensor([1 + 2j])}, "dtype"),
        ({"values": ["a", 1.0]}, "expected numbers"),
        ({"values": {"a": 1}}, "expected a numpy array"),
        ({"values": torch.empty(3, device="meta")}, "meta"),
        ({"values": torch.eye(3).to_sparse()}, "to_dense"),
    ],
)
def test_rejected_inputs(kwargs: dict[str, Any], match: str) -> None:
    """Sources and precomputed bins that cannot make a histogram are refused with a clear error."""
    with pytest.raises(UsageError, match=match):
        wisp.Histogram(**kwargs)


def test_writer_failure_surfaces_at_finish(run: wisp.Run) -> None:
    """A list whose middle item is not a number fails on the writer and is reported at finish."""
    run.log({"h": wisp.Histogram([1.0, "x", 2.0])})
    with pytest.raises(wisp.errors.WriterError, match="'h'"):
        run.finish()


def test_mutation_after_construction_does_not_leak(run: wisp.Run) -> None:
    """Changing the source in place after log() leaves the logged histogram as it was."""
    gate = Gate()
    a = np.zeros(1000)
    t = torch.zeros(1000)
    run.log({"gate": gate})
    run.log({"np": wisp.Histogram(a, num_bins=2), "pt": wisp.Histogram(t, num_bins=2)})
    a[:] = 5.0
    t.fill_(5.0)
    gate.open()
    data = read_back(run)
    for key in ("np", "pt"):
        value = data.scalars(key)[1][0]
        assert value["bins"] == [-0.5, 0.0, 0.5]
        assert value["counts"] == [0, 1000]


def test_row_value_is_compact(run: wisp.Run) -> None:
    """A 64-bin histogram of a million values stays a small JSON object in the row."""
    run.log({"h": wisp.Histogram(np.random.default_rng(0).normal(size=1_000_000))})
    value = logged(run, "h")
    assert sum(value["counts"]) == 1_000_000
    assert len(json.dumps(value)) < 3000


@pytest.mark.parametrize(
    "source",
    [
        torch.tensor([1.0, 2.0, float("nan"), float("inf"), -float("inf"), 3.0, 3.0]),
        torch.arange(1000, dtype=torch.float32) / 7,
        torch.arange(-20, 20, dtype=torch.int64),
        torch.full((9,), 4.0),
        torch.full((3,), float("nan")),
    ],
)
def test_device_binning_matches_numpy(source: torch.Tensor) -> None:
    """The sync-free binning used for CUDA tensors gives numpy's bins (checked here on CPU)."""
    h = wisp.Histogram([0.0], num_bins=8)
    value = h._from_device(_tensors.device_histogram(source, 8).array())
    a = source.double().numpy()
    finite = a[np.isfinite(a)]
    counts, edges = np.histogram(finite, bins=8)
    assert value["counts"] == counts.tolist()
    assert value["bins"] == pytest.approx(edges.tolist())
    assert value["nan"] == int(np.isnan(a).sum())
    assert value["inf"] == int(np.isinf(a).sum())

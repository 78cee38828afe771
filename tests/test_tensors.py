"""Framework tensors in log(): numbers from 1-element tensors, errors, private snapshots."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
import torch

import wisp
from wisp import _tensors
from wisp.errors import UsageError


@pytest.fixture
def run(tmp_path: Any) -> Iterator[wisp.Run]:
    r = wisp.init(project="tensors", dir=str(tmp_path), settings={"git": False})
    yield r
    wisp.finish()


def _last_row(r: wisp.Run) -> dict[str, Any]:
    r.finish()
    assert r.dir is not None
    return list(wisp.open_run(r.dir).history())[-1]


SCALARS = [
    ("0d-float32", torch.tensor(1.5), 1.5, float),
    ("0d-float64", torch.tensor(0.1, dtype=torch.float64), 0.1, float),
    ("0d-float16", torch.tensor(0.5, dtype=torch.float16), 0.5, float),
    ("0d-bfloat16", torch.tensor(2.0, dtype=torch.bfloat16), 2.0, float),
    ("0d-int64", torch.tensor(7), 7, int),
    ("0d-uint8", torch.tensor(200, dtype=torch.uint8), 200, int),
    ("0d-bool", torch.tensor(True), True, bool),
    ("1-element", torch.tensor([3.25]), 3.25, float),
    ("1x1x1", torch.ones(1, 1, 1), 1.0, float),
    ("requires-grad", torch.tensor(4.0, requires_grad=True) * 2, 8.0, float),
    ("parameter", torch.nn.Parameter(torch.tensor([5.0])), 5.0, float),
    ("nan", torch.tensor(float("nan")), None, float),
]


@pytest.mark.parametrize(("name", "value", "want", "kind"), SCALARS, ids=[s[0] for s in SCALARS])
def test_one_element_tensors_log_as_numbers(
    run: wisp.Run, name: str, value: torch.Tensor, want: Any, kind: type
) -> None:
    """0-d and 1-element tensors of every dtype log as the matching Python number."""
    run.log({"x": value})
    got = _last_row(run)["x"]
    assert type(got) is kind
    if want is None:
        assert got != got
    else:
        assert got == want


@pytest.mark.parametrize(
    ("value", "match"),
    [
        (torch.tensor(1 + 2j), "complex"),
        (torch.zeros(3, dtype=torch.complex64), "'w' is a complex torch tensor"),
        (torch.Size([2, 3]), "expected a number"),
        (torch.float32, "expected a number"),
    ],
)
def test_rejected_tensors_name_key_and_shape(run: wisp.Run, value: Any, match: str) -> None:
    """Complex tensors and other torch objects are refused, naming the key."""
    with pytest.raises(UsageError, match=match):
        run.log({"w": value})


def test_state_dict_logs_as_wandb_does(run: wisp.Run) -> None:
    """A state_dict logs like wandb: a 12-weight matrix as nested lists, a 33+ one as a histogram."""
    small, big = torch.nn.Linear(4, 3), torch.nn.Linear(8, 8)
    run.log({"s": small.state_dict(), "b": big.state_dict()})
    row = _last_row(run)
    assert row["s/weight"] == small.weight.detach().tolist()
    assert row["s/bias"] == small.bias.detach().tolist()
    assert row["b/weight"]["_type"] == "histogram" and sum(row["b/weight"]["counts"]) == 64
    assert len(row["b/weight"]["counts"]) == 32


def test_cpu_scalar_changed_after_log(run: wisp.Run) -> None:
    """An in-place change to a CPU tensor right after log() does not change the logged number."""
    t = torch.tensor([1.0])
    run.log({"x": t})
    t.add_(41.0)
    assert _last_row(run)["x"] == 1.0


SNAPSHOT_SOURCES = [
    ("numpy-float32", lambda: np.arange(12, dtype=np.float32).reshape(3, 4)),
    ("numpy-int16", lambda: np.arange(12, dtype=np.int16)),
    ("numpy-bool", lambda: np.array([True, False])),
    ("numpy-scalar", lambda: np.float64(3.0)),
    ("torch-float32", lambda: torch.arange(12.0).reshape(3, 4)),
    ("torch-transposed", lambda: torch.arange(12.0).reshape(3, 4).t()),
    ("torch-int64", lambda: torch.arange(5)),
    ("torch-bool", lambda: torch.tensor([True, False])),
    ("torch-half", lambda: torch.arange(4, dtype=torch.float16)),
    ("torch-bfloat16", lambda: torch.arange(4, dtype=torch.bfloat16)),
    ("torch-negative-view", lambda: torch.arange(4.0)._neg_view()),
]


def _as_numpy(source: Any) -> np.ndarray:
    if isinstance(source, torch.Tensor):
        return source.resolve_neg().float().numpy().copy()
    return np.array(source, copy=True)


@pytest.mark.parametrize(("name", "make"), SNAPSHOT_SOURCES, ids=[n for n, _ in SNAPSHOT_SOURCES])
def test_snapshot_is_private(name: str, make: Any) -> None:
    """A snapshot keeps the data as it was when taken, whatever happens to the source later."""
    source = make()
    want = _as_numpy(source)
    snap = _tensors.snapshot(source, "x")
    assert snap.shape == tuple(want.shape) and snap.ready
    if isinstance(source, torch.Tensor):
        source.zero_()
    elif isinstance(source, np.ndarray):
        source[...] = 0
    np.testing.assert_array_equal(snap.array(), want)


def test_snapshot_of_a_list_is_a_copy() -> None:
    """A list is copied, so appending to or changing it later leaves the snapshot alone."""
    values = [1.0, 2.0, 3.0]
    snap = _tensors.snapshot(values, "x")
    values[0] = 9.0
    values.append(4.0)
    assert snap.array().tolist() == [1.0, 2.0, 3.0]


@pytest.mark.parametrize(
    ("value", "match"),
    [
        (np.array(["a"]), "numpy dtype <U1"),
        (np.array([object()]), "numpy dtype object"),
        (np.datetime64("2024-01-01"), "numpy dtype datetime64"),
        (torch.tensor([1 + 1j]), "torch dtype torch.complex64"),
        (torch.empty(2, device="meta"), "meta device"),
        (torch.eye(2).to_sparse(), "to_dense"),
        (["a", "b"], "item 0 is str"),
        ({"a": 1}, "type dict"),
        (np.dtype("f4"), "unsupported numpy type"),
    ],
)
def test_snapshot_rejects_non_numeric(value: Any, match: str) -> None:
    """Only bool, integer and float data can be snapshotted; others get a clear error."""
    with pytest.raises(UsageError, match=match):
        _tensors.snapshot(value, "x")


def test_is_cuda_tensor_is_false_on_cpu() -> None:
    """CPU tensors and non-tensors are not taken down the CUDA path."""
    assert not _tensors.is_cuda_tensor(torch.zeros(2))
    assert not _tensors.is_cuda_tensor(np.zeros(2))

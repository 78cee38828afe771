"""wisp.watch / wisp.unwatch on a real torch module (CPU)."""

from __future__ import annotations

from typing import Any

import pytest

import wisp

from .integrations_support import require

torch = require("torch")


def train(model: Any, steps: int, grads: dict[int, Any] | None = None) -> None:
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(8, 4, generator=torch.Generator().manual_seed(1))
    for _ in range(steps):
        opt.zero_grad()
        loss = model(x).pow(2).mean()
        loss.backward()
        if grads is not None:
            grads[wisp.run.step] = model.weight.grad.clone()
        opt.step()
        wisp.log({"loss": loss.item()})


def test_watch_logs_gradient_and_parameter_histograms_every_log_freq(tmp_path: Any) -> None:
    """With log='all', log_freq=2 the 2nd, 4th and 6th training steps get gradient and
    parameter histograms in the same row as that step's loss, binning every element."""
    run = wisp.init(project="watch")
    model = torch.nn.Linear(4, 3)
    wisp.watch(model, log="all", log_freq=2)
    grads: dict[int, Any] = {}
    train(model, 6, grads)
    with torch.no_grad():
        model(torch.zeros(1, 4))  # evaluation passes don't count as steps
    wisp.finish()
    data = wisp.open_run(run.dir)
    steps, hists = data.scalars("gradients/weight")
    assert steps == [1, 3, 5]
    assert data.scalars("parameters/bias")[0] == [1, 3, 5]
    assert data.scalars("gradients/bias")[0] == [1, 3, 5]
    assert data.scalars("loss")[0] == list(range(6))
    for step, hist in zip(steps, hists, strict=True):
        assert hist["_type"] == "histogram"
        assert len(hist["bins"]) == 65 and len(hist["counts"]) == 64
        assert sum(hist["counts"]) == 12 and hist["nan"] == 0 and hist["inf"] == 0
        g = grads[step]
        assert hist["bins"][0] == pytest.approx(g.min().item())
        assert hist["bins"][-1] == pytest.approx(g.max().item())


def test_unwatch_removes_the_hooks(tmp_path: Any) -> None:
    """After unwatch() no more histograms are logged."""
    run = wisp.init(project="watch")
    model = torch.nn.Linear(4, 3)
    wisp.watch(model, log_freq=1)
    train(model, 2)
    wisp.unwatch(model)
    train(model, 2)
    wisp.finish()
    data = wisp.open_run(run.dir)
    assert data.scalars("gradients/weight")[0] == [0, 1]
    assert not data.scalars("parameters/weight")[0]  # log="gradients" is the default


def test_histogram_counts_nan_and_inf_apart() -> None:
    """The device histogram bins finite values and counts NaN and inf separately."""
    from wisp.integrations._watch import DeviceHistogram

    t = torch.tensor([0.0, 1.0, 2.0, 3.0, float("nan"), float("inf"), -float("inf")])
    value = DeviceHistogram(t, bins=3).resolve(None)  # type: ignore[arg-type]
    assert value["counts"] == [1, 1, 2]
    assert value["bins"] == [0.0, 1.0, 2.0, 3.0]
    assert value["nan"] == 1 and value["inf"] == 2


def test_watch_refuses_bad_arguments() -> None:
    """Bad log modes, log_freq and non-modules raise UsageError naming the argument."""
    wisp.init(project="watch", mode="disabled")
    model = torch.nn.Linear(2, 2)
    with pytest.raises(wisp.UsageError, match="log must be"):
        wisp.watch(model, log="weights")
    with pytest.raises(wisp.UsageError, match="log_freq"):
        wisp.watch(model, log_freq=0)
    with pytest.raises(wisp.UsageError, match=r"torch\.nn\.Module"):
        wisp.watch(object())


def test_watch_needs_a_run() -> None:
    """watch() before init() raises RunStateError."""
    with pytest.raises(wisp.RunStateError, match="init"):
        wisp.watch(torch.nn.Linear(2, 2))


class _Wrapper(torch.nn.Module):  # type: ignore[misc]
    """Like a LightningModule: training code calls a submodule, never ``wrapper(x)``."""

    def __init__(self) -> None:
        super().__init__()
        self.net = torch.nn.Sequential(
            torch.nn.Linear(4, 3), torch.nn.Tanh(), torch.nn.Linear(3, 2)
        )


def test_watch_counts_passes_that_only_call_submodules(tmp_path: Any) -> None:
    """A watched model whose own forward never runs (training calls model.net) still gets
    histograms of every parameter, named from the watched model, once per training pass."""
    run = wisp.init(project="watch")
    model = _Wrapper()
    wisp.watch(model, log="all", log_freq=2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(8, 4, generator=torch.Generator().manual_seed(1))
    for _ in range(4):
        opt.zero_grad()
        loss = model.net(x).pow(2).mean()  # three submodule calls: still one pass
        loss.backward()
        opt.step()
        wisp.log({"loss": loss.item()})
    wisp.finish()
    data = wisp.open_run(run.dir)
    for name in ("net.0.weight", "net.0.bias", "net.2.weight", "net.2.bias"):
        assert data.scalars(f"gradients/{name}")[0] == [1, 3], name
        assert data.scalars(f"parameters/{name}")[0] == [1, 3], name
    _, hists = data.scalars("gradients/net.0.weight")
    assert all(sum(h["counts"]) == 12 for h in hists)


def test_watch_parameters_only_counts_one_pass_per_backward(tmp_path: Any) -> None:
    """With log='parameters' (no gradient hooks) a pass still ends at backward, so two
    submodule calls per step count once."""
    run = wisp.init(project="watch")
    model = _Wrapper()
    wisp.watch(model, log="parameters", log_freq=1)
    x = torch.randn(8, 4)
    for _ in range(3):
        h = model.net[0](x)
        loss = model.net[2](h).sum()  # two top-level calls in one pass
        loss.backward()
        wisp.log({"loss": loss.item()})
    wisp.finish()
    assert wisp.open_run(run.dir).scalars("parameters/net.2.bias")[0] == [0, 1, 2]


def test_watch_pass_ends_even_when_the_first_parameter_is_unused(tmp_path: Any) -> None:
    """A parameter that gets no gradient (an unused first layer) does not stop the count:
    every trainable parameter's hook ends the pass."""
    run = wisp.init(project="watch")
    model = _Wrapper()
    wisp.watch(model, log="all", log_freq=1)
    x = torch.randn(8, 3)
    for _ in range(3):
        loss = model.net[2](x).sum()  # net.0 (the first parameters) never used
        loss.backward()
        wisp.log({"loss": loss.item()})
    wisp.finish()
    assert wisp.open_run(run.dir).scalars("gradients/net.2.weight")[0] == [0, 1, 2]

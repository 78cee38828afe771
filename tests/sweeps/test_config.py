"""The sweep file: wandb's format checked, unknown fields named, values transformed."""

from __future__ import annotations

import math

import pytest

from wisp.errors import UsageError
from wisp.sweeps._config import build_command, load_sweep_file, parse_config

BASE = {"method": "random", "parameters": {"lr": {"min": 0.0, "max": 1.0}}}


@pytest.mark.parametrize(
    ("config", "field"),
    [
        ({**BASE, "metod": "grid"}, "'metod'"),
        ({**BASE, "metric": {"name": "loss", "goall": "minimize"}}, "metric.'goall'"),
        ({**BASE, "parameters": {"lr": {"min": 0, "max": 1, "maxx": 2}}}, "parameters.lr.'maxx'"),
        (
            {**BASE, "parameters": {"opt": {"parameters": {"m": {"valuez": [1]}}}}},
            "parameters.opt.m.'valuez'",
        ),
        (
            {
                **BASE,
                "metric": {"name": "l"},
                "early_terminate": {"type": "hyperband", "min_iter": 1, "etta": 3},
            },
            "early_terminate.'etta'",
        ),
    ],
)
def test_unknown_field_is_refused_with_its_name(config: dict, field: str) -> None:
    """Every unknown field, at any depth, is refused and the error names it with its path."""
    with pytest.raises(UsageError, match="unknown field " + field.replace(".", r"\.")):
        parse_config(config)


def test_bad_values_are_named() -> None:
    """Bad method, goal, distribution and bounds each give an error naming the field."""
    with pytest.raises(UsageError, match="method"):
        parse_config({**BASE, "method": "hill"})
    with pytest.raises(UsageError, match=r"metric\.goal"):
        parse_config({**BASE, "metric": {"name": "l", "goal": "up"}})
    with pytest.raises(UsageError, match=r"parameters\.lr\.distribution 'beta'"):
        parse_config({**BASE, "parameters": {"lr": {"distribution": "beta", "min": 0, "max": 1}}})
    with pytest.raises(UsageError, match=r"parameters\.lr needs min < max"):
        parse_config({**BASE, "parameters": {"lr": {"min": 1.0, "max": 0.5}}})
    with pytest.raises(UsageError, match="bayes' needs a metric"):
        parse_config({**BASE, "method": "bayes"})
    with pytest.raises(UsageError, match=r"grid' needs discrete parameters; parameters\.lr"):
        parse_config({**BASE, "method": "grid"})


def test_distributions_are_inferred_and_transformed() -> None:
    """min/max infer int_uniform or uniform as wandb does; quantised and normal ones transform."""
    cfg = parse_config(
        {
            "method": "random",
            "parameters": {
                "epochs": {"min": 1, "max": 5},
                "lr": {"min": 0.1, "max": 0.5},
                "bs": {"distribution": "q_uniform", "min": 0, "max": 100, "q": 10},
                "w": {"distribution": "normal", "mu": 2.0, "sigma": 0.5},
                "lg": {"distribution": "log_uniform", "min": -2.0, "max": 0.0},
                "fixed": {"value": "adam"},
                "nest": {"parameters": {"m": {"values": [0.8, 0.9]}}},
            },
        }
    )
    dims = {d.name: d for d in cfg.dimensions}
    assert dims["epochs"].dist == "int_uniform" and dims["lr"].dist == "uniform"
    assert dims["bs"].to_value(37.0) == 40
    assert dims["w"].to_value(0.5) == pytest.approx(2.0)
    assert dims["lg"].internal()[1:] == (pytest.approx(math.exp(-2)), 1.0, True)
    params = cfg.params_for(
        {"epochs": 3, "lr": 0.2, "bs": 10.0, "w": 0.5, "lg": 0.5, "nest\x1fm": 1}
    )
    assert params["fixed"] == "adam" and params["nest"] == {"m": 0.9} and params["epochs"] == 3


def test_command_macros_expand_like_wandb() -> None:
    """${env} ${interpreter} ${program} ${args} ${args_no_hyphens} ${args_json} expand."""
    cfg = parse_config(
        {
            **BASE,
            "program": "train.py",
            "command": [
                "${env}",
                "${interpreter}",
                "${program}",
                "--fixed",
                "${args}",
                "${args_no_hyphens}",
                "${args_json}",
            ],
        }
    )
    argv = build_command(cfg, {"lr": 0.5, "opt": {"m": 1}}, "/py", "train.py")
    assert argv == [
        "/usr/bin/env",
        "/py",
        "train.py",
        "--fixed",
        "--lr=0.5",
        '--opt={"m": 1}',
        "lr=0.5",
        'opt={"m": 1}',
        '{"lr": 0.5, "opt": {"m": 1}}',
    ]


def test_yaml_file_is_read(tmp_path) -> None:
    """A YAML sweep file loads into the dict the checker takes."""
    p = tmp_path / "s.yaml"
    p.write_text("method: grid\nparameters:\n  a:\n    values: [1, 2]\n")
    assert parse_config(load_sweep_file(p)).dimensions[0].values == [1, 2]

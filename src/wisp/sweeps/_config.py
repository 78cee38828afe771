"""The sweep file: wandb's sweep configuration (YAML or dict), checked and normalised.

Format version 1.  Top-level keys: ``method`` (grid | random | bayes), ``metric``
({name, goal, target}), ``parameters``, ``early_terminate`` ({type: hyperband, min_iter |
max_iter, eta, s}), ``program``, ``command``, ``run_cap``, ``name``, ``description``,
``project`` and ``entity`` (accepted, unused).  A parameter has ``value``, ``values``
(+ ``probabilities``), a ``distribution`` with ``min``/``max``/``q``/``mu``/``sigma``, or
nested ``parameters``.  Anything else is refused with the field named (docs/sweeps.md).

Every searched parameter becomes one *dimension*: the search library samples an internal
value (a float, an int, or an index into ``values``) and :meth:`Dimension.to_value` turns it
into the value the trial sees, so distributions the library lacks (normal, quantised, ...)
are transforms of a uniform one.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping

from wisp.errors import UsageError, install_hint

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "FORMAT_VERSION",
    "Dimension",
    "SweepConfig",
    "build_command",
    "format_arg",
    "load_sweep_file",
    "parse_config",
]

FORMAT_VERSION = 1

METHODS = ("grid", "random", "bayes")
GOALS = ("minimize", "maximize")
_TOP = frozenset(
    {
        "method",
        "metric",
        "parameters",
        "early_terminate",
        "program",
        "command",
        "run_cap",
        "name",
        "description",
        "project",
        "entity",
    }
)
_METRIC = frozenset({"name", "goal", "target"})
_EARLY = frozenset({"type", "min_iter", "max_iter", "eta", "s", "strict"})
_PARAM = frozenset(
    {"value", "values", "probabilities", "distribution", "min", "max", "q", "mu", "sigma"}
)
#: distribution -> fields it needs (besides the optional q of the q_ ones)
DISTRIBUTIONS: dict[str, tuple[str, ...]] = {
    "constant": ("value",),
    "categorical": ("values",),
    "int_uniform": ("min", "max"),
    "uniform": ("min", "max"),
    "q_uniform": ("min", "max"),
    "log_uniform": ("min", "max"),
    "log_uniform_values": ("min", "max"),
    "q_log_uniform": ("min", "max"),
    "q_log_uniform_values": ("min", "max"),
    "inv_log_uniform": ("min", "max"),
    "inv_log_uniform_values": ("min", "max"),
    "normal": (),
    "q_normal": (),
    "log_normal": (),
    "q_log_normal": (),
}
_MACROS = (
    "${env}",
    "${interpreter}",
    "${program}",
    "${args}",
    "${args_no_hyphens}",
    "${args_json}",
    "${args_no_boolean_flags}",
)
DEFAULT_COMMAND = ["${env}", "${interpreter}", "${program}", "${args}"]
_EPS = 1e-6  # normal distributions sample a quantile in (eps, 1 - eps)


def _num(where: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise UsageError(f"sweep config: {where} must be a finite number, got {value!r}")
    return float(value)


class Dimension:
    """One searched parameter: its dotted name, distribution and bounds."""

    __slots__ = ("dist", "hi", "lo", "mu", "name", "probabilities", "q", "sigma", "values")

    def __init__(self, name: str, dist: str, **kw: Any) -> None:
        self.name = name
        self.dist = dist
        self.lo: float = kw.get("lo", 0.0)
        self.hi: float = kw.get("hi", 0.0)
        self.q: float | None = kw.get("q")
        self.mu: float = kw.get("mu", 0.0)
        self.sigma: float = kw.get("sigma", 1.0)
        self.values: list[Any] = kw.get("values", [])
        self.probabilities: list[float] | None = kw.get("probabilities")

    def internal(self) -> tuple[str, float, float, bool]:
        """(kind, low, high, log) of the value the search library samples.

        kind is ``"index"`` (0..len(values)-1), ``"int"`` or ``"float"``.
        """
        d = self.dist
        if d == "categorical":
            if self.probabilities is not None:  # weighted: a quantile picks the value
                return ("float", 0.0, 1.0, False)
            return ("index", 0, len(self.values) - 1, False)
        if d == "int_uniform":
            return ("int", self.lo, self.hi, False)
        if d in ("uniform", "q_uniform"):
            return ("float", self.lo, self.hi, False)
        if d in ("log_uniform_values", "q_log_uniform_values"):
            return ("float", self.lo, self.hi, True)
        if d in ("log_uniform", "q_log_uniform"):  # min/max are natural-log exponents
            return ("float", math.exp(self.lo), math.exp(self.hi), True)
        if d == "inv_log_uniform_values":  # 1/x is log-uniform between min and max
            return ("float", 1 / self.hi, 1 / self.lo, True)
        if d == "inv_log_uniform":  # log(1/x) uniform between min and max
            return ("float", math.exp(-self.hi), math.exp(-self.lo), True)
        return ("float", _EPS, 1 - _EPS, False)  # normal family: a quantile

    def grid_points(self) -> list[Any]:
        """Internal values a grid search visits (refused for continuous distributions)."""
        if self.dist == "categorical":
            return list(range(len(self.values)))
        if self.dist == "int_uniform":
            return list(range(int(self.lo), int(self.hi) + 1))
        if self.dist == "q_uniform" and self.q:
            n = math.floor((self.hi - self.lo) / self.q + 1e-9)
            return [self.lo + i * self.q for i in range(n + 1)]
        raise UsageError(
            f"sweep config: method 'grid' needs discrete parameters; parameters.{self.name} "
            f"has distribution {self.dist!r} (use values, int_uniform or q_uniform)"
        )

    def to_value(self, x: Any) -> Any:
        """The trial's value for the sampled internal value ``x``."""
        d = self.dist
        if d == "categorical":
            if isinstance(x, float) and self.probabilities is not None:
                acc = 0.0
                for value, p in zip(self.values, self.probabilities, strict=True):
                    acc += p
                    if x < acc:
                        return value
                return self.values[-1]
            return self.values[int(x)]
        if d == "int_uniform":
            return int(x)
        if d in ("normal", "q_normal", "log_normal", "q_log_normal"):
            from statistics import NormalDist

            z = NormalDist(self.mu, self.sigma).inv_cdf(float(x))
            v = math.exp(z) if "log" in d else z
        else:
            v = float(x)
        if d.startswith("q_"):
            q = self.q if self.q is not None else 1.0
            v = round(v / q) * q
            if float(q).is_integer() and float(v).is_integer():
                return int(v)
        return v


class SweepConfig:
    """A checked sweep configuration (``raw`` keeps what the user wrote)."""

    def __init__(
        self,
        raw: dict[str, Any],
        method: str,
        metric: dict[str, Any] | None,
        dimensions: list[Dimension],
        constants: dict[str, Any],
        early_terminate: dict[str, Any] | None,
        command: list[str],
        program: str | None,
        run_cap: int | None,
    ) -> None:
        self.raw = raw
        self.method = method
        self.metric = metric
        self.dimensions = dimensions
        self.constants = constants
        self.early_terminate = early_terminate
        self.command = command
        self.program = program
        self.run_cap = run_cap

    @property
    def goal(self) -> str:
        return str((self.metric or {}).get("goal", "minimize"))

    def params_for(self, internal: Mapping[str, Any]) -> dict[str, Any]:
        """The nested parameter dict a trial gets for the library's ``internal`` sample."""
        out: dict[str, Any] = {}
        flat = dict(self.constants)
        for dim in self.dimensions:
            flat[dim.name] = dim.to_value(internal[dim.name])
        for dotted, value in flat.items():
            cur = out
            *parents, leaf = dotted.split("\x1f")
            for p in parents:
                cur = cur.setdefault(p, {})
            cur[leaf] = value
        return out


def _unknown(where: str, got: Mapping[str, Any], allowed: frozenset[str]) -> None:
    for key in got:
        if key not in allowed:
            raise UsageError(
                f"sweep config: unknown field {where}{key!r} "
                f"(allowed: {', '.join(sorted(allowed))})"
            )


def _parse_param(
    path: str, name: str, spec: Any, dims: list[Dimension], consts: dict[str, Any]
) -> None:
    where = f"parameters.{path.replace(chr(31), '.')}"
    if not isinstance(spec, Mapping):
        raise UsageError(f"sweep config: {where} must be a mapping, got {spec!r}")
    if "parameters" in spec:
        _unknown(f"{where}.", spec, frozenset({"parameters"}))
        nested = spec["parameters"]
        if not isinstance(nested, Mapping) or not nested:
            raise UsageError(f"sweep config: {where}.parameters must be a non-empty mapping")
        for k, v in nested.items():
            _parse_param(f"{path}\x1f{k}", str(k), v, dims, consts)
        return
    _unknown(f"{where}.", spec, _PARAM)
    dist = spec.get("distribution")
    if dist is None:  # inferred as wandb does
        if "value" in spec:
            dist = "constant"
        elif "values" in spec:
            dist = "categorical"
        elif "min" in spec and "max" in spec:
            both_int = all(
                isinstance(spec[k], int) and not isinstance(spec[k], bool) for k in ("min", "max")
            )
            dist = "int_uniform" if both_int else "uniform"
        else:
            raise UsageError(
                f"sweep config: {where} needs value, values, min/max or a distribution"
            )
    if dist not in DISTRIBUTIONS:
        raise UsageError(
            f"sweep config: {where}.distribution {dist!r} is not supported "
            f"(supported: {', '.join(DISTRIBUTIONS)})"
        )
    for need in DISTRIBUTIONS[dist]:
        if need not in spec:
            raise UsageError(f"sweep config: {where} with distribution {dist!r} needs {need!r}")
    if dist == "constant":
        consts[path] = spec["value"]
        return
    kw: dict[str, Any] = {}
    if dist == "categorical":
        values = spec["values"]
        if not isinstance(values, list) or not values:
            raise UsageError(f"sweep config: {where}.values must be a non-empty list")
        kw["values"] = list(values)
        probs = spec.get("probabilities")
        if probs is not None:
            if not isinstance(probs, list) or len(probs) != len(values):
                raise UsageError(
                    f"sweep config: {where}.probabilities must be a list as long as values"
                )
            p = [_num(f"{where}.probabilities", x) for x in probs]
            if any(x < 0 for x in p) or abs(sum(p) - 1) > 1e-6:
                raise UsageError(f"sweep config: {where}.probabilities must be >= 0 and sum to 1")
            kw["probabilities"] = p
    if "min" in spec or "max" in spec:
        kw["lo"] = _num(f"{where}.min", spec.get("min"))
        kw["hi"] = _num(f"{where}.max", spec.get("max"))
        if kw["lo"] >= kw["hi"]:
            raise UsageError(f"sweep config: {where} needs min < max, got {kw['lo']} >= {kw['hi']}")
        if dist.endswith("_values") and kw["lo"] <= 0:
            raise UsageError(f"sweep config: {where} with {dist!r} needs min > 0")
        if dist == "int_uniform" and not (kw["lo"].is_integer() and kw["hi"].is_integer()):
            raise UsageError(f"sweep config: {where} with 'int_uniform' needs integer min/max")
    if "q" in spec:
        kw["q"] = _num(f"{where}.q", spec["q"])
        if kw["q"] <= 0:
            raise UsageError(f"sweep config: {where}.q must be > 0")
    if "mu" in spec:
        kw["mu"] = _num(f"{where}.mu", spec["mu"])
    if "sigma" in spec:
        kw["sigma"] = _num(f"{where}.sigma", spec["sigma"])
        if kw["sigma"] <= 0:
            raise UsageError(f"sweep config: {where}.sigma must be > 0")
    dims.append(Dimension(path, dist, **kw))


def parse_config(config: Any) -> SweepConfig:
    """Check a sweep configuration (a dict, as wandb takes it); UsageError names the field."""
    if not isinstance(config, Mapping):
        raise UsageError(f"sweep config must be a mapping, got {type(config).__name__}")
    import json

    try:
        raw = json.loads(json.dumps(config))
    except (TypeError, ValueError) as exc:
        raise UsageError(f"sweep config must be JSON-like data: {exc}") from None
    _unknown("", raw, _TOP)
    method = raw.get("method")
    if method not in METHODS:
        raise UsageError(
            f"sweep config: method must be one of {', '.join(METHODS)}, got {method!r}"
        )
    metric = raw.get("metric")
    if metric is not None:
        if not isinstance(metric, Mapping):
            raise UsageError("sweep config: metric must be a mapping with name and goal")
        _unknown("metric.", metric, _METRIC)
        if not isinstance(metric.get("name"), str) or not metric["name"]:
            raise UsageError("sweep config: metric.name must be a non-empty string")
        if metric.get("goal", "minimize") not in GOALS:
            raise UsageError(
                f"sweep config: metric.goal must be minimize or maximize, got {metric['goal']!r}"
            )
        if "target" in metric:
            _num("metric.target", metric["target"])
    elif method == "bayes":
        raise UsageError("sweep config: method 'bayes' needs a metric (name and goal)")
    params = raw.get("parameters")
    if not isinstance(params, Mapping) or not params:
        raise UsageError("sweep config: parameters must be a non-empty mapping")
    dims: list[Dimension] = []
    consts: dict[str, Any] = {}
    for k, v in params.items():
        if "\x1f" in k or not k:
            raise UsageError(f"sweep config: bad parameter name {k!r}")
        _parse_param(k, k, v, dims, consts)
    if method == "grid":
        for d in dims:
            d.grid_points()  # raises for continuous ones
    early = raw.get("early_terminate")
    if early is not None:
        if not isinstance(early, Mapping):
            raise UsageError("sweep config: early_terminate must be a mapping")
        _unknown("early_terminate.", early, _EARLY)
        if early.get("type") != "hyperband":
            raise UsageError(
                f"sweep config: early_terminate.type must be 'hyperband', got {early.get('type')!r}"
            )
        if metric is None:
            raise UsageError("sweep config: early_terminate needs a metric")
        if "min_iter" not in early and "max_iter" not in early:
            raise UsageError("sweep config: early_terminate needs min_iter or max_iter")
        for k in ("min_iter", "max_iter", "eta", "s"):
            if k in early and (
                not isinstance(early[k], (int, float))
                or isinstance(early[k], bool)
                or early[k] <= 0
            ):
                raise UsageError(f"sweep config: early_terminate.{k} must be a positive number")
        if early.get("eta", 3) < 2:
            raise UsageError("sweep config: early_terminate.eta must be >= 2")
    run_cap = raw.get("run_cap")
    if run_cap is not None and (
        not isinstance(run_cap, int) or isinstance(run_cap, bool) or run_cap <= 0
    ):
        raise UsageError(f"sweep config: run_cap must be a positive integer, got {run_cap!r}")
    program = raw.get("program")
    if program is not None and not isinstance(program, str):
        raise UsageError("sweep config: program must be a string")
    command = raw.get("command", DEFAULT_COMMAND)
    if not isinstance(command, list) or not all(isinstance(c, str) for c in command) or not command:
        raise UsageError("sweep config: command must be a non-empty list of strings")
    if program is None and any("${program}" in c for c in command):
        program = None  # allowed for wisp.agent(function=); the CLI agent checks it
    return SweepConfig(raw, method, metric, dims, consts, early, command, program, run_cap)


def load_sweep_file(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read a YAML (or JSON) sweep file into a dict (needs PyYAML for YAML)."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if os.fspath(path).endswith(".json"):
        import json

        data: Any = json.loads(text)
    else:
        try:
            import yaml
        except ImportError:
            raise UsageError(
                f"reading a YAML sweep file needs PyYAML: {install_hint('sweeps')}"
            ) from None
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise UsageError(f"sweep file {os.fspath(path)}: not valid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise UsageError(f"sweep file {os.fspath(path)} must hold a mapping")
    return data


def format_arg(value: Any) -> str:
    """A parameter value as wandb writes it on the command line."""
    if isinstance(value, str):
        return value
    import json

    return json.dumps(value)


def build_command(
    cfg: SweepConfig, params: Mapping[str, Any], interpreter: str, program: str | None
) -> list[str]:
    """The trial's argv: ``command`` with its macros expanded (docs/sweeps.md)."""
    import json

    args = [f"--{k}={format_arg(v)}" for k, v in params.items()]
    out: list[str] = []
    for part in cfg.command:
        if part == "${env}":
            out.append("/usr/bin/env")
        elif part == "${interpreter}":
            out.append(interpreter)
        elif part == "${program}":
            if program is None:
                raise UsageError("sweep config: command uses ${program} but program is not set")
            out.append(program)
        elif part == "${args}":
            out.extend(args)
        elif part == "${args_no_hyphens}":
            out.extend(a[2:] for a in args)
        elif part == "${args_json}":
            out.append(json.dumps(dict(params)))
        elif part == "${args_no_boolean_flags}":
            for k, v in params.items():
                if v is True:
                    out.append(f"--{k}")
                elif v is not False:
                    out.append(f"--{k}={format_arg(v)}")
        else:
            out.append(part)
    return out

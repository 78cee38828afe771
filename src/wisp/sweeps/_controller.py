"""The sweep controller: sampling by Optuna over a sweep's stored state.

The state (the sweep and its trials) lives in a :class:`SweepStore`: a local SQLite file
offline (``_local.py``) or the wisp server's database online (``_remote.py``).  The
controller keeps nothing of its own: to hand out a trial it reads every trial, rebuilds an
in-memory Optuna study from them, asks the sampler, and inserts the new trial under the next
trial number.  Trial numbers are unique in the store, so when two agents race, one insert
fails and that agent reads again and re-samples: several agents never get the same grid point,
and a restarted controller loses nothing.

Trial states: ``running``, ``finished``, ``failed`` (the program exited non-zero),
``stopped`` (early termination, or the sweep was cancelled), ``crashed`` (its agent died:
no heartbeat, or its pid is gone on this host).  Sweep states: ``running``, ``paused``,
``finished``, ``stopped`` (no new trials, running ones finish), ``cancelled`` (running
trials are stopped too).
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable

from wisp.errors import UsageError, WispError, install_hint
from wisp.sweeps._config import SweepConfig, parse_config

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Protocol

    class SweepStore(Protocol):
        """Where a sweep's state lives; every value is JSON-like."""

        def create_sweep(self, sweep: dict[str, Any]) -> None: ...
        def get_sweep(self, sweep_id: str) -> dict[str, Any]: ...
        def set_sweep_state(self, sweep_id: str, state: str) -> None: ...
        def list_trials(self, sweep_id: str) -> list[dict[str, Any]]: ...
        def add_trial(self, sweep_id: str, trial: dict[str, Any]) -> bool: ...
        def update_trial(
            self, sweep_id: str, number: int, fields: dict[str, Any], only_running: bool = False
        ) -> bool: ...
else:
    SweepStore = object

__all__ = [
    "SWEEP_STATES",
    "TRIAL_STATES",
    "Controller",
    "SweepStore",
    "new_sweep",
    "require_optuna",
]

SWEEP_STATES = ("running", "paused", "finished", "stopped", "cancelled")
TRIAL_STATES = ("running", "finished", "failed", "stopped", "crashed")
#: a running trial whose agent has not beaten for this long is crashed
HEARTBEAT_TIMEOUT = 60.0


def require_optuna() -> Any:
    try:
        import optuna
    except ImportError:
        raise UsageError(f"sweeps need Optuna: {install_hint('sweeps')}") from None
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return optuna


def new_sweep(config: Any, project: str | None, seed: int | None = None) -> dict[str, Any]:
    """A new sweep record for ``config`` (checked here), ready for ``SweepStore.create_sweep``."""
    cfg = parse_config(config)
    from wisp._init import new_run_id

    return {
        "id": new_run_id(),
        "project": project or cfg.raw.get("project") or os.environ.get("WISP_PROJECT") or None,
        "name": cfg.raw.get("name"),
        "config": cfg.raw,
        "state": "running",
        "seed": int.from_bytes(os.urandom(3), "big") if seed is None else int(seed),
        "created_at": time.time(),
    }


def _same_host_dead(trial: dict[str, Any]) -> bool:
    from wisp._meta import process_alive

    host = trial.get("host")
    return host == os.uname().nodename and not process_alive(trial.get("agent_pid"), host)


class Controller:
    """Hands out trials of one sweep and records what they report."""

    def __init__(
        self, store: SweepStore, sweep_id: str, *, get_time: Callable[[], float] = time.time
    ) -> None:
        self.store = store
        self.sweep_id = sweep_id
        self.sweep = store.get_sweep(sweep_id)
        self.config: SweepConfig = parse_config(self.sweep["config"])
        self.seed = int(self.sweep.get("seed") or 0)
        self._time = get_time
        self._optuna = require_optuna()
        self._dists = self._distributions()

    # -- Optuna ------------------------------------------------------------------------------

    def _distributions(self) -> dict[str, Any]:
        d = self._optuna.distributions
        out: dict[str, Any] = {}
        for dim in self.config.dimensions:
            if self.config.method == "grid":
                points = dim.grid_points()
                out[dim.name] = d.CategoricalDistribution(points)
                continue
            kind, lo, hi, log = dim.internal()
            if kind == "index":
                out[dim.name] = d.CategoricalDistribution(list(range(int(hi) + 1)))
            elif kind == "int":
                out[dim.name] = d.IntDistribution(int(lo), int(hi))
            else:
                out[dim.name] = d.FloatDistribution(lo, hi, log=log)
        return out

    def _sampler(self, number: int) -> Any:
        s = self._optuna.samplers
        method = self.config.method
        if method == "grid":  # one seed for the sweep: the grid's order must not change
            return s.GridSampler(
                {dim.name: dim.grid_points() for dim in self.config.dimensions}, seed=self.seed
            )
        seed = (self.seed * 100_003 + number) % (2**31)
        if method == "random":
            return s.RandomSampler(seed=seed)
        import warnings

        with warnings.catch_warnings():  # both options are "experimental" in Optuna 4
            warnings.simplefilter("ignore", self._optuna.exceptions.ExperimentalWarning)
            return s.TPESampler(seed=seed, multivariate=True, constant_liar=True)

    def _pruner(self) -> Any:
        et = self.config.early_terminate
        p = self._optuna.pruners
        if et is None:
            return p.NopPruner()
        eta = int(et.get("eta", 3))
        if "max_iter" in et:
            max_iter = int(et["max_iter"])
            s = int(et.get("s", 2))
            min_iter = int(et.get("min_iter", max(1, round(max_iter / eta**s))))
        else:
            min_iter, max_iter = int(et["min_iter"]), None
        if max_iter is None:  # wandb's brackets at min_iter * eta**k, with no top
            return p.SuccessiveHalvingPruner(min_resource=min_iter, reduction_factor=eta)
        return p.HyperbandPruner(min_resource=min_iter, max_resource=max_iter, reduction_factor=eta)

    def study(self, trials: list[dict[str, Any]], number: int = 0) -> Any:
        """An in-memory Optuna study holding ``trials`` (crashed ones are left out)."""
        o = self._optuna
        ts = o.trial.TrialState
        direction = "maximize" if self.config.goal == "maximize" else "minimize"
        st = o.create_study(
            study_name=self.sweep_id,
            direction=direction,
            sampler=self._sampler(number),
            pruner=self._pruner(),
        )
        for t in trials:
            state = t["state"]
            inter = {int(k): float(v) for k, v in (t.get("intermediate") or {}).items()}
            value = t.get("value")
            if state == "crashed":
                continue
            if state == "running":
                o_state, value = ts.RUNNING, None
            elif state == "finished" and value is not None and math.isfinite(value):
                o_state = ts.COMPLETE
            elif state == "stopped":
                o_state, value = ts.PRUNED, None
            else:
                o_state, value = ts.FAIL, None
            internal = t["internal"]
            dists = {k: self._dists[k] for k in internal if k in self._dists}
            st.add_trial(
                o.trial.create_trial(
                    state=o_state,
                    value=value,
                    params={k: internal[k] for k in dists},
                    distributions=dists,
                    system_attrs=t.get("system_attrs") or {},
                    intermediate_values=inter,
                )
            )
        return st

    # -- trials ------------------------------------------------------------------------------

    def reap(self) -> list[int]:
        """Mark running trials whose agent is gone as crashed; returns their numbers."""
        now = self._time()
        out = []
        for t in self.store.list_trials(self.sweep_id):
            if t["state"] != "running":
                continue
            stale = now - float(t.get("heartbeat_at") or 0) > HEARTBEAT_TIMEOUT
            if (stale or _same_host_dead(t)) and self.store.update_trial(
                self.sweep_id,
                t["number"],
                {"state": "crashed", "finished_at": now},
                only_running=True,
            ):
                out.append(t["number"])
        return out

    def done_reason(self, trials: list[dict[str, Any]]) -> str | None:
        """Why the sweep hands out no more trials (None while it does)."""
        live = [t for t in trials if t["state"] != "crashed"]
        cfg = self.config
        if cfg.run_cap is not None and len(live) >= cfg.run_cap:
            return f"run_cap {cfg.run_cap} reached"
        if cfg.method == "grid":
            size = 1
            for dim in cfg.dimensions:
                size *= len(dim.grid_points())
            covered = {(t.get("system_attrs") or {}).get("grid_id") for t in live}
            if len(covered - {None}) >= size:
                return f"all {size} grid points done"
        target = (cfg.metric or {}).get("target")
        if target is not None:
            sign = -1 if cfg.goal == "maximize" else 1
            for t in live:
                v = t.get("value")
                if t["state"] == "finished" and v is not None and sign * (v - target) <= 0:
                    return f"metric target {target} reached"
        return None

    def next_trial(self, run_id: str, agent: dict[str, Any]) -> dict[str, Any] | None:
        """Claim the next trial for ``run_id``, or None when the sweep is done.

        ``agent`` is ``{"agent_id", "agent_pid", "host"}``.
        """
        for _attempt in range(1000):
            trials = self.store.list_trials(self.sweep_id)
            if self.done_reason(trials) is not None:
                return None
            number = max((t["number"] for t in trials), default=-1) + 1
            # random sampling needs no history: keep claiming O(1) in the number of trials
            st = self.study([] if self.config.method == "random" else trials, number)
            if self.config.dimensions:
                internal = dict(st.ask(fixed_distributions=self._dists).params)
                attrs = dict(st.get_trials(deepcopy=False)[-1].system_attrs)  # grid_id, ...
            else:
                internal, attrs = {}, {}
            now = self._time()
            trial = {
                "number": number,
                "run_id": run_id,
                "internal": internal,
                "system_attrs": _jsonable_attrs(attrs),
                "params": self.config.params_for(internal),
                "state": "running",
                "value": None,
                "intermediate": {},
                "created_at": now,
                "heartbeat_at": now,
                "finished_at": None,
                **agent,
            }
            if self.store.add_trial(self.sweep_id, trial):
                return trial
        raise WispError(f"sweep {self.sweep_id}: could not claim a trial in 1000 attempts")

    def report(self, trial: dict[str, Any], values: list[float]) -> bool:
        """Record the metric's values so far (``values[i]`` at iteration i+1) and beat.

        Returns True when early termination says the trial should stop.
        """
        inter = {str(i + 1): v for i, v in enumerate(values) if math.isfinite(v)}
        fields: dict[str, Any] = {"heartbeat_at": self._time(), "intermediate": inter}
        self.store.update_trial(self.sweep_id, trial["number"], fields, only_running=True)
        trial["intermediate"] = inter
        if self.config.early_terminate is None or not inter:
            return False
        trials = [
            t for t in self.store.list_trials(self.sweep_id) if t["number"] != trial["number"]
        ]
        me = dict(trial, state="running")
        st = self.study([*trials, me], me["number"])
        prune = bool(st.pruner.prune(st, st.get_trials(deepcopy=False)[-1]))
        # successive halving remembers each rung's value in system attrs: keep them
        attrs = _jsonable_attrs(dict(st.get_trials(deepcopy=False)[-1].system_attrs))
        if attrs != (trial.get("system_attrs") or {}):
            trial["system_attrs"] = attrs
            self.store.update_trial(self.sweep_id, trial["number"], {"system_attrs": attrs})
        return prune

    def finish(self, trial: dict[str, Any], state: str, value: float | None) -> None:
        if value is not None and not math.isfinite(value):
            value = None
        self.store.update_trial(
            self.sweep_id,
            trial["number"],
            {"state": state, "value": value, "finished_at": self._time()},
        )
        self.finish_sweep_if_done()

    def finish_sweep_if_done(self) -> str | None:
        """Mark a running sweep ``finished`` once it is done and no trial runs; the reason."""
        trials = self.store.list_trials(self.sweep_id)
        reason = self.done_reason(trials)
        if (
            reason is not None
            and not any(t["state"] == "running" for t in trials)
            and self.store.get_sweep(self.sweep_id)["state"] == "running"
        ):
            self.store.set_sweep_state(self.sweep_id, "finished")
        return reason


def _jsonable_attrs(attrs: dict[str, Any]) -> dict[str, Any]:
    import json

    return dict(json.loads(json.dumps(attrs, default=list)))

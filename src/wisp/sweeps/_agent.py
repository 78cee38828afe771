"""Sweep agents: claim a trial, run it, read its metric, repeat.

``run_agent()`` (``wisp agent``) starts each trial as a subprocess with ``subprocess`` (the
agent's own Python is never forked) and passes parameters as wandb does: ``--name=value``
arguments through the sweep's ``command``, and ``wisp.config`` through ``WISP_SWEEP_*``
environment variables read by ``init()`` (``_hook.py``).  While the trial runs the agent
beats (a heartbeat in the sweep's state), reads the metric from the run file as it arrives,
and stops the trial (SIGTERM, state ``stopped``) when early termination or ``wisp sweep
--cancel`` says so.  ``run_in_process()`` (``wisp.agent(function=)``) calls a function per
trial in this process.
"""

from __future__ import annotations

import glob
import logging
import math
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable

from wisp.sweeps._config import build_command
from wisp.sweeps._controller import Controller
from wisp.sweeps._hook import ENV_ID, ENV_PARAMS, ENV_RUN_ID

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from wisp.sweeps._controller import SweepStore

__all__ = ["AGENT_LOG", "MetricReader", "run_agent", "run_in_process"]

#: how often a running trial's metric is read and the agent beats (seconds)
REPORT_INTERVAL = 1.0
#: how long a stopped trial gets to finish before SIGKILL
STOP_GRACE = 10.0
#: the logger of the agent's lines (each trial, the sweep's state): ``wisp agent`` shows them
AGENT_LOG = "wisp.agent"
log = logging.getLogger(AGENT_LOG)


def _say(msg: str, level: int = logging.INFO) -> None:
    log.log(level, "wisp agent: %s", msg)


class MetricReader:
    """Reads one metric of a run (found by id under ``<base>/wisp``) as it arrives."""

    def __init__(self, base_dir: str, run_id: str, metric: str | None) -> None:
        self.base_dir = base_dir
        self.run_id = run_id
        self.metric = metric
        self.run_dir: str | None = None
        self._size = -1
        self._values: list[float] = []
        self._summary: Any = None

    def _find(self) -> str | None:
        if self.run_dir is None:
            hits = glob.glob(os.path.join(self.base_dir, "wisp", f"run-*-{self.run_id}"))
            self.run_dir = hits[0] if hits else None
        return self.run_dir

    def values(self) -> list[float]:
        """Every value of the metric logged so far, in order (re-read when the file grew)."""
        run_dir = self._find()
        if run_dir is None or self.metric is None:
            return self._values
        from wisp._reader import find_run_file, open_run
        from wisp.errors import RunFileError

        try:
            size = os.path.getsize(find_run_file(run_dir))
            if size == self._size:
                return self._values
            run = open_run(run_dir)
        except (OSError, RunFileError):
            return self._values
        self._size = size
        m = self.metric
        self._values = [
            float(r[m])
            for r in run.history(keys=[m])
            if isinstance(r.get(m), (int, float)) and not isinstance(r.get(m), bool)
        ]
        self._summary = run.summary.get(m)
        return self._values

    def final(self) -> float | None:
        """The run's value of the metric: its summary, else the last logged value."""
        self._size = -1
        values = self.values()
        s = self._summary
        if isinstance(s, (int, float)) and not isinstance(s, bool) and math.isfinite(s):
            return float(s)
        return values[-1] if values else None


def agent_info() -> dict[str, Any]:
    return {"agent_id": os.urandom(6).hex(), "agent_pid": os.getpid(), "host": os.uname().nodename}


def _trial_env(sweep: dict[str, Any], trial: dict[str, Any], base_dir: str) -> dict[str, str]:
    import json

    env = {k: v for k, v in os.environ.items() if not k.startswith("WISP_SWEEP")}
    env[ENV_ID] = sweep["id"]
    env[ENV_RUN_ID] = trial["run_id"]
    env[ENV_PARAMS] = json.dumps(trial["params"])
    env["WISP_DIR"] = base_dir
    if sweep.get("project"):
        env["WISP_SWEEP_PROJECT"] = sweep["project"]
    return env


def _claim(ctl: Controller, agent: dict[str, Any]) -> dict[str, Any] | None:
    from wisp._init import new_run_id

    ctl.reap()
    trial = ctl.next_trial(new_run_id(), agent)
    if trial is None:
        reason = ctl.finish_sweep_if_done()
        _say(f"sweep {ctl.sweep_id} has no more trials ({reason})")
    return trial


def _sweep_state(ctl: Controller) -> str:
    return str(ctl.store.get_sweep(ctl.sweep_id)["state"])


def _wait_runnable(ctl: Controller, sleep: Callable[[float], None]) -> bool:
    """Wait while the sweep is paused; False once it no longer hands out trials."""
    said = False
    while True:
        state = _sweep_state(ctl)
        if state == "running":
            return True
        if state != "paused":
            _say(f"sweep {ctl.sweep_id} is {state}")
            return False
        if not said:
            _say(f"sweep {ctl.sweep_id} is paused; waiting (`wisp sweep --resume`)")
            said = True
        sleep(2.0)


def run_agent(
    store: SweepStore,
    sweep_id: str,
    base_dir: str,
    *,
    count: int | None = None,
    report_interval: float = REPORT_INTERVAL,
    sleep: Callable[[float], None] = time.sleep,
) -> int:
    """Run trials of ``sweep_id`` as subprocesses until done or ``count`` ran; returns how many."""
    ctl = Controller(store, sweep_id)
    cfg = ctl.config
    if cfg.program is None and any("${program}" in c for c in cfg.command):
        from wisp.errors import UsageError

        raise UsageError(f"sweep {sweep_id}: the sweep config has no program to run")
    agent = agent_info()
    done = 0
    while count is None or done < count:
        if not _wait_runnable(ctl, sleep):
            break
        trial = _claim(ctl, agent)
        if trial is None:
            break
        argv = build_command(cfg, trial["params"], sys.executable, cfg.program)
        _say(f"trial {trial['number']} (run {trial['run_id']}): {' '.join(argv)}")
        state, value = _run_subprocess(ctl, trial, argv, base_dir, report_interval)
        _say(f"trial {trial['number']} {state}" + ("" if value is None else f": {value}"))
        done += 1
    return done


def _run_subprocess(
    ctl: Controller, trial: dict[str, Any], argv: list[str], base_dir: str, interval: float
) -> tuple[str, float | None]:
    reader = MetricReader(base_dir, trial["run_id"], (ctl.config.metric or {}).get("name"))
    env = _trial_env(ctl.sweep, trial, base_dir)
    try:
        proc = subprocess.Popen(argv, env=env)
    except OSError as exc:
        _say(f"cannot start {argv[0]}: {exc}", logging.WARNING)
        ctl.finish(trial, "failed", None)
        return "failed", None
    stopped = False
    killer: threading.Timer | None = None
    next_report = time.monotonic() + interval
    waiter = _Waiter(proc)
    try:
        while True:
            got = waiter.wait(max(0.0, next_report - time.monotonic()))
            if got is not None:
                rc = got
                break
            next_report = time.monotonic() + interval
            prune = ctl.report(trial, reader.values())
            if not stopped and (prune or _sweep_state(ctl) == "cancelled"):
                why = "early termination" if prune else "cancelled"
                _say(f"stopping trial {trial['number']} ({why})")
                stopped = True
                proc.terminate()
                killer = threading.Timer(STOP_GRACE, _kill_if_alive, (proc,))
                killer.daemon = True
                killer.start()
    except KeyboardInterrupt:
        waiter.close()
        _say("interrupted: stopping the trial")
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
        try:
            proc.wait(STOP_GRACE)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        ctl.finish(trial, "stopped", reader.final())
        raise
    waiter.close()
    if killer is not None:
        killer.cancel()
    value = reader.final()
    ctl.report(trial, reader.values())  # the last values, and the rungs it reached
    state = "stopped" if stopped else ("finished" if rc == 0 else "failed")
    if not stopped and rc == 0 and value is None and ctl.config.metric:
        _say(f"trial {trial['number']} logged no {ctl.config.metric['name']!r}", logging.WARNING)
    ctl.finish(trial, state, value)
    return state, value


class _Waiter:
    """Waits for a child with a pidfd where Linux has one (wakes at its exit, no polling)."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc
        self.fd: int | None = None
        pidfd_open = getattr(os, "pidfd_open", None)
        if pidfd_open is not None:
            try:
                self.fd = pidfd_open(proc.pid)
            except OSError:
                self.fd = None

    def wait(self, timeout: float) -> int | None:
        """The exit code, or None if the child still runs after ``timeout`` seconds."""
        if self.fd is None:
            try:
                return self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                return None
        import select

        ready, _w, _x = select.select([self.fd], [], [], timeout)
        if ready:
            return self.proc.wait()
        return self.proc.poll()

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def _kill_if_alive(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.kill()


def run_in_process(
    store: SweepStore,
    store_factory: Callable[[], SweepStore],
    sweep_id: str,
    base_dir: str,
    function: Callable[[], Any],
    *,
    count: int | None = None,
) -> int:
    """Call ``function`` once per trial in this process (each call its own run)."""
    import json
    import traceback

    from wisp import _current

    ctl = Controller(store, sweep_id)
    agent = agent_info()
    done = 0
    while count is None or done < count:
        if not _wait_runnable(ctl, time.sleep):
            break
        trial = _claim(ctl, agent)
        if trial is None:
            break
        saved = {
            k: os.environ.get(k) for k in (ENV_ID, ENV_RUN_ID, ENV_PARAMS, "WISP_SWEEP_PROJECT")
        }
        os.environ[ENV_ID] = sweep_id
        os.environ[ENV_RUN_ID] = trial["run_id"]
        os.environ[ENV_PARAMS] = json.dumps(trial["params"])
        if ctl.sweep.get("project"):
            os.environ["WISP_SWEEP_PROJECT"] = ctl.sweep["project"]
        beat = _Heartbeat(store_factory, sweep_id, trial["number"])
        beat.start()
        state = "finished"
        run_dir = None
        try:
            function()
        except KeyboardInterrupt:
            state = "stopped"
            raise
        except Exception:  # noqa: BLE001 - a failing trial must not end the sweep
            traceback.print_exc()
            state = "failed"
        finally:
            beat.stop()
            current = _current.run
            if current is not None and current.id == trial["run_id"]:
                run_dir = current.dir
                _current.finish(0 if state == "finished" else 1)
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
            reader = MetricReader(base_dir, trial["run_id"], (ctl.config.metric or {}).get("name"))
            if run_dir is not None:
                reader.run_dir = run_dir
            value = reader.final()
            ctl.report(trial, reader.values())
            ctl.finish(trial, state, value)
        done += 1
    return done


class _Heartbeat:
    """Beats for an in-process trial from a thread with its own store connection."""

    def __init__(self, factory: Callable[[], SweepStore], sweep_id: str, number: int) -> None:
        self._factory = factory
        self._sweep_id = sweep_id
        self._number = number
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="wisp-sweep-heartbeat", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5.0)

    def _loop(self) -> None:
        store = self._factory()
        while not self._stop.wait(10.0):
            try:
                store.update_trial(
                    self._sweep_id, self._number, {"heartbeat_at": time.time()}, only_running=True
                )
            except Exception:  # noqa: BLE001 - a missed beat is retried; 60 s of them = crashed
                continue
        close = getattr(store, "close", None)
        if close is not None:
            close()

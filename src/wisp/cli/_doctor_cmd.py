"""``wisp doctor``: the tracker-debugging checklist as one command.

Every check yields one :class:`~wisp._doctor.Check`, the type ``wisp.doctor()``
uses too (ok / warn / fail, a one-line message and, unless ok, a one-line fix;
``--json`` names the message ``detail``).  Slow probes (import timing, torch) run in
subprocesses concurrently, each with a deadline, so the report stays under
~2 s in a fresh environment.  The deadlines stretch with the machine's load (:func:`deadline`):
on a busy shared machine a probe that is only slow is not reported as hung, and on an idle
one a hung probe is still reported after the base deadline.  ``wisp.doctor()``'s
environment checks are appended.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from importlib.util import find_spec
from typing import Any

from wisp._doctor import Check
from wisp.cli._term import EXIT, color
from wisp.errors import install_hint

__all__ = ["Check", "cmd_doctor", "run_checks"]

OTHER_TRACKERS = ("wandb", "mlflow", "neptune", "comet_ml", "clearml", "aim", "tensorboardX")
_DEADLINE = 1.5  # seconds for each subprocess probe on an idle machine (deadline())
_ENVIRONMENT = ("distributed",)  # wisp.doctor() checks that `wisp doctor` shows
_TORCH_DEADLINE = 20.0
_MAX_STRETCH = 4.0  # a deadline grows at most this much with the load


def load_factor() -> float:
    """How much slower than on an idle machine a probe may run here: the 1-minute load
    average per CPU this process may use, from 1 (idle) to :data:`_MAX_STRETCH`."""
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):  # no load average on this platform
        return 1.0
    affinity = getattr(os, "sched_getaffinity", None)
    cpus = len(affinity(0)) if affinity is not None else (os.cpu_count() or 1)
    return min(_MAX_STRETCH, max(1.0, load / max(1, cpus)))


def deadline(seconds: float) -> float:
    """A probe's deadline on this machine now: ``seconds`` on an idle machine, longer under
    load (:func:`load_factor`)."""
    return seconds * load_factor()


def _py(code: str, timeout: float, env: dict[str, str] | None = None) -> tuple[int, str]:
    try:
        res = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            env=env,
        )
    except subprocess.TimeoutExpired:
        return -1, f"timed out after {timeout:.1f}s"
    return res.returncode, (res.stdout if res.returncode == 0 else res.stderr).strip()


_IMPORT_PROBE = """
import sys, time
n = len(sys.modules); t = time.perf_counter()
import {mod}
dt = time.perf_counter() - t
print(len(sys.modules) - n, dt)
"""


def check_import() -> list[Check]:
    code, out = _py(_IMPORT_PROBE.format(mod="wisp"), deadline(_DEADLINE))
    if code != 0:
        return [
            Check(
                "import wisp",
                "fail",
                out.splitlines()[-1] if out else "failed",
                f"reinstall wisp: {install_hint()} (in a checkout: pip install -e .)",
            )
        ]
    mods, dt = out.split()
    ms = float(dt) * 1000
    status = "ok" if ms <= 50 and int(mods) <= 40 else "warn"
    note = " (no .pyc cache: PYTHONDONTWRITEBYTECODE is set)" if sys.dont_write_bytecode else ""
    return [
        Check(
            "import wisp",
            status,
            f"{ms:.1f} ms, {mods} new modules{note}",
            ""
            if status == "ok"
            else "something imports heavy modules at `import wisp`; "
            "run python -X importtime -c 'import wisp'",
        )
    ]


def check_other_trackers() -> list[Check]:
    installed = [m for m in OTHER_TRACKERS if find_spec(m) is not None]
    if not installed:
        return [Check("other trackers", "ok", "none installed")]
    results: dict[str, str] = {}
    limit = _DEADLINE  # not stretched: only a figure, and their imports load the machine

    def probe(mod: str) -> None:
        code, out = _py(_IMPORT_PROBE.format(mod=mod), limit)
        if code == 0:
            mods, dt = out.split()
            results[mod] = f"{mod} {float(dt) * 1000:.0f} ms/{mods} modules"
        else:
            results[mod] = f"{mod} >{limit:.1f} s" if code == -1 else f"{mod} fails to import"

    def prober(mod: str) -> Callable[[], None]:
        return lambda: probe(mod)

    _parallel([prober(m) for m in installed], limit + 0.5)
    return [Check("other trackers", "ok", ", ".join(results.get(m, m) for m in installed))]


_TORCH_PROBE = """
import os, sys, threading, time, multiprocessing as mp
def ctx():
    maps = open("/proc/self/maps").read() if os.path.exists("/proc/self/maps") else ""
    return torch.cuda.is_initialized(), "libcuda" in maps
import torch
before = ctx()
import wisp
run = wisp.init(project="wisp-doctor", dir=sys.argv[1] if len(sys.argv) > 1 else {tmp!r},
                settings={{"system_interval": 0.05, "console": "off", "mode": "offline",
                          "git": False}})
time.sleep(0.15)
threads = threading.active_count()
run.finish()
after = ctx()
print(repr((torch.__version__, torch.version.cuda, before, after, threads)))
"""


def check_torch(tmp: str) -> list[Check]:
    if find_spec("torch") is None:
        return [Check("torch / CUDA context", "ok", "torch not installed")]
    code, out = _py(_TORCH_PROBE.format(tmp=tmp), deadline(_TORCH_DEADLINE))
    if code != 0:
        return [
            Check(
                "torch / CUDA context",
                "warn",
                f"probe failed: {out.splitlines()[-1] if out else 'no output'}",
                "python -c 'import torch' to see why",
            )
        ]
    import ast

    version, cuda, before, after, _threads = ast.literal_eval(out.splitlines()[-1])
    detail = (
        f"torch {version}, CUDA {cuda or 'none (CPU build)'}; CUDA context before/after "
        f"wisp.init: {'yes' if before[0] else 'no'}/{'yes' if after[0] else 'no'}"
    )
    if before != after:
        return [
            Check(
                "torch / CUDA context",
                "fail",
                detail + " (wisp changed it)",
                "report a wisp bug; meanwhile WISP_SYSTEM_METRICS=0",
            )
        ]
    return [Check("torch / CUDA context", "ok", detail)]


_THREAD_PROBE = """
import sys, threading, time, wisp
run = wisp.init(project="wisp-doctor", dir=sys.argv[1],
                settings={"console": "off", "mode": "offline", "git": False})
time.sleep(0.05)
print(threading.active_count(), ",".join(sorted(t.name for t in threading.enumerate())))
run.finish()
"""


def check_multiprocessing(tmp: str) -> list[Check]:
    import multiprocessing

    method = (
        multiprocessing.get_start_method(allow_none=True)
        or (multiprocessing.get_all_start_methods()[0])
    )
    if method != "fork":
        return [Check("multiprocessing", "ok", f"start method {method!r}")]
    limit = deadline(_DEADLINE)
    try:
        res = subprocess.run(
            [sys.executable, "-c", _THREAD_PROBE, tmp],
            capture_output=True,
            text=True,
            timeout=limit,
            check=False,
        )
        count, names = res.stdout.split()
        alive = f"{count} threads alive during a run ({names})"
    except subprocess.TimeoutExpired:  # slow only from load is given longer (deadline())
        alive = f"thread count unknown: a run in a child process did not finish in {limit:.1f} s"
    except ValueError:
        last = res.stderr.strip().splitlines()[-1:] or [f"exit code {res.returncode}"]
        alive = f"thread count unknown: a run in a child process failed ({last[0]})"
    return [
        Check(
            "multiprocessing",
            "warn",
            f"start method 'fork'; {alive}",
            "forked children get an inert run: call wisp.init() in the child, or "
            "multiprocessing.set_start_method('spawn')",
        )
    ]


def check_nvml() -> list[Check]:
    has_gpu = os.path.exists("/dev/nvidia0") or os.path.exists("/proc/driver/nvidia")
    try:
        import pynvml
    except ImportError:
        if has_gpu:
            return [
                Check(
                    "NVML (GPU metrics)",
                    "warn",
                    "NVIDIA GPU present, nvidia-ml-py missing",
                    "pip install nvidia-ml-py",
                )
            ]
        return [Check("NVML (GPU metrics)", "ok", "no NVIDIA GPU")]
    try:
        pynvml.nvmlInit()
        try:
            n = pynvml.nvmlDeviceGetCount()
            driver = pynvml.nvmlSystemGetDriverVersion()
        finally:
            pynvml.nvmlShutdown()
    except pynvml.NVMLError as exc:
        status = "warn" if has_gpu else "ok"
        return [
            Check(
                "NVML (GPU metrics)",
                status,
                f"NVML unavailable: {exc}",
                "check the NVIDIA driver (nvidia-smi)" if has_gpu else "",
            )
        ]
    driver = driver.decode() if isinstance(driver, bytes) else driver
    return [Check("NVML (GPU metrics)", "ok", f"{n} GPU(s), driver {driver}")]


def check_disk(base: str) -> list[Check]:
    probe = base
    while not os.path.exists(probe):
        probe = os.path.dirname(probe) or "/"
    free = shutil.disk_usage(probe).free
    gib = free / 2**30
    writable = os.access(probe, os.W_OK)
    detail = f"{gib:.1f} GiB free under {base}"
    if not writable:
        return [
            Check(
                "disk", "fail", detail + " (not writable)", "set WISP_DIR to a writable directory"
            )
        ]
    if free < 512 * 2**20:
        return [
            Check(
                "disk",
                "fail",
                detail,
                "free space or set WISP_DIR elsewhere; `wisp gc` deletes fully synced runs",
            )
        ]
    if free < 5 * 2**30:
        return [Check("disk", "warn", detail, "`wisp gc` deletes fully synced runs")]
    return [Check("disk", "ok", detail)]


def check_config() -> list[Check]:
    from wisp._userconfig import config_path, read_config

    path = config_path()
    if not os.path.exists(path):
        return [Check("config file", "ok", f"none at {path}")]
    try:
        read_config(path)
    except (OSError, ValueError) as exc:
        return [Check("config file", "fail", f"{path}: {exc}", "run `wisp login URL` again")]
    mode = os.stat(path).st_mode & 0o777
    if mode & 0o077:
        return [
            Check(
                "config file",
                "warn",
                f"{path} is mode {mode:o}; it holds an API key",
                f"chmod 600 {path}",
            )
        ]
    return [Check("config file", "ok", f"{path} (mode 600)")]


def check_server(url: str | None, key: str | None) -> list[Check]:
    if not url:
        return [Check("server", "ok", "none configured (runs stay offline)")]
    from email.utils import parsedate_to_datetime

    from wisp.cli._remote import http_get

    sent = time.time()
    try:
        status, headers, _ = http_get(f"{url.rstrip('/')}/api/v1/projects", key, timeout=1.5)
    except OSError as exc:
        return [
            Check(
                "server",
                "fail",
                f"{url} unreachable: {exc}",
                "start it (`wisp server`) or fix the URL (`wisp login URL`)",
            )
        ]
    rtt = time.time() - sent
    if status in (401, 403):
        return [
            Check(
                "server",
                "fail",
                f"{url} refused the API key (HTTP {status})",
                "`wisp login URL --key KEY` with a key from `wisp server keys create`",
            )
        ]
    if status >= 400:
        return [
            Check(
                "server",
                "fail",
                f"{url} answered HTTP {status}",
                "is this a wisp server? check the URL",
            )
        ]
    out = [Check("server", "ok", f"{url} reachable ({rtt * 1000:.0f} ms), key accepted")]
    date = {k.lower(): v for k, v in headers.items()}.get("date")
    if date:
        skew = parsedate_to_datetime(date).timestamp() - (sent + rtt / 2)
        ok = abs(skew) < 5
        out.append(
            Check(
                "clock skew",
                "ok" if ok else "warn",
                f"{skew:+.1f} s vs the server",
                "" if ok else "sync clocks (NTP); run times on the dashboard will be off",
            )
        )
    return out


def check_last_runs(base: str) -> list[Check]:
    from wisp.cli._runs import find_runs

    runs = find_runs(base)[-5:]
    if not runs:
        return [Check("last runs", "ok", "no local runs yet")]
    from wisp._reader import open_run
    from wisp._rundir import read_rejected
    from wisp.errors import WispError

    problems = []
    for d in runs:
        try:
            data = open_run(d)
        except (WispError, OSError, ValueError) as exc:
            problems.append(f"{os.path.basename(d)} unreadable ({exc})")
            continue
        fin = data.finish or {}
        bits = [f"{k}: {v}" for k, v in (fin.get("failures") or {}).items()]
        if fin.get("backpressure_waits"):
            bits.append(f"{fin['backpressure_waits']} backpressure waits")
        if data.state == "crashed":
            bits.append("crashed")
        if data.ignored_bytes:
            bits.append(f"{data.ignored_bytes} torn bytes")
        kinds: dict[str, int] = {}
        for rec in data.records.get("warning", []):
            kind = str(rec.get("kind") or rec.get("message") or "warning")
            kinds[kind] = kinds.get(kind, 0) + 1
        bits += [f"{n} warning record(s) ({k})" for k, n in kinds.items()]
        rejected = len(read_rejected(d))
        if rejected:
            bits.append(
                f"{rejected} record(s) refused by the server, set aside in rejected.jsonl "
                "(`wisp sync --retry-rejected`)"
            )
        if bits:
            problems.append(f"{data.name}: {', '.join(bits)}")
    if problems:
        return [
            Check(
                "last runs",
                "warn",
                "; ".join(problems[:3]),
                "`wisp show RUN` for details; background failures never stop training "
                "but lose data",
            )
        ]
    return [Check("last runs", "ok", f"{len(runs)} recent run(s), no background failures")]


def check_safety() -> list[Check]:
    """The checks of ``wisp.doctor()`` that describe the environment.

    Its other checks (start method, torch, runs, threads, signals) describe the calling
    process's own runs; for ``wisp doctor`` the child-process probe above covers them.
    """
    from wisp._doctor import doctor

    return [c for c in doctor() if c.name in _ENVIRONMENT]


def _parallel(jobs: list[Callable[[], Any]], timeout: float) -> None:
    threads = [threading.Thread(target=j, daemon=True) for j in jobs]
    for t in threads:
        t.start()
    end = time.monotonic() + timeout
    for t in threads:
        t.join(max(0.0, end - time.monotonic()))


def check_settings() -> tuple[Any, list[Check]]:
    """The settings init() would use, and what is wrong with them (a bad value, an unknown
    ``WISP_*`` name); defaults when they cannot be read."""
    import warnings

    from wisp._settings import Settings, unknown_env
    from wisp.errors import UsageError

    checks = [
        Check("settings", "warn", f"{var} is not a wisp variable{hint}", "see docs/settings.md")
        for var, hint in unknown_env(os.environ)
    ]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the unknown names are the checks above
            settings = Settings.resolve()
    except UsageError as exc:
        checks.append(Check("settings", "fail", str(exc), "fix the variable or setting named"))
        return Settings(), checks
    return settings, checks or [Check("settings", "ok", "readable")]


#: what the probes import when they run, imported before they start: two threads importing
#: one module at once may see it half initialised ("partially initialized module")
_PROBE_IMPORTS = (
    "ast",
    "email.utils",
    "multiprocessing",
    "wisp._doctor",
    "wisp._reader",
    "wisp._rundir",
    "wisp._userconfig",
    "wisp.cli._remote",
    "wisp.cli._runs",
)


def run_checks(base: str) -> list[Check]:
    import importlib

    for name in _PROBE_IMPORTS:
        importlib.import_module(name)
    settings, setting_checks = check_settings()
    run_base = os.path.abspath(settings.dir or base)
    with tempfile.TemporaryDirectory(prefix="wisp-doctor-") as tmp:
        slots: dict[str, list[Check]] = {}
        probes: dict[str, Callable[[], list[Check]]] = {
            "import": check_import,
            "trackers": check_other_trackers,
            "multiprocessing": lambda: check_multiprocessing(tmp),
            "torch": lambda: check_torch(tmp),
            "nvml": check_nvml,
            "disk": lambda: check_disk(run_base),
            "config": check_config,
            "server": lambda: check_server(settings.server_url, settings.api_key),
            "runs": lambda: check_last_runs(run_base),
            "safety": check_safety,
        }

        def job(name: str, fn: Callable[[], list[Check]]) -> Callable[[], None]:
            def go() -> None:
                try:
                    slots[name] = fn()
                except Exception as exc:  # noqa: BLE001 - one broken probe must not hide the rest
                    slots[name] = [
                        Check(
                            name,
                            "warn",
                            f"check failed: {type(exc).__name__}: {exc}",
                            "report a wisp bug",
                        )
                    ]

            return go

        _parallel([job(n, f) for n, f in probes.items()], deadline(_TORCH_DEADLINE) + 2)
    out: list[Check] = list(setting_checks)
    for name in probes:
        out += slots.get(name, [Check(name, "warn", "did not finish in time", "")])
    return out


def cmd_doctor(args: argparse.Namespace) -> int:
    started = time.monotonic()
    checks = run_checks(args.dir)
    elapsed = time.monotonic() - started
    failed = any(c.status == "fail" for c in checks)
    if args.json:
        rows = [{"name": n, "status": s, "detail": m, "fix": f} for n, s, m, f in checks]
        print(json.dumps({"checks": rows, "seconds": elapsed}))
    else:
        tint = {"ok": "green", "warn": "yellow", "fail": "red"}
        width = max(len(c.name) for c in checks)
        for c in checks:
            print(f"{color(c.status.ljust(4), tint[c.status])}  {c.name.ljust(width)}  {c.message}")
            if c.fix and c.status != "ok":
                print(f"{'':4}  {'':{width}}  {color('fix: ' + c.fix, 'dim')}")
        counts = {s: sum(c.status == s for c in checks) for s in ("ok", "warn", "fail")}
        print(
            f"\n{counts['ok']} ok, {counts['warn']} warn, {counts['fail']} fail in {elapsed:.2f}s"
        )
    return EXIT["failed"] if failed else EXIT["ok"]

"""System metrics: a sampler, run by the run's writer thread, that records SYSTEM records (type 8).

Payload (format version 1, see docs/run-file.md)::

    {"ts": <unix seconds>, "values": {"system/cpu_percent": 12.5, ...}}

Keys (all optional; a key is left out when the platform cannot provide it):

``system/cpu_percent``         CPU used by this process and its children, % of one core
``system/cpu_system_percent``  CPU used by the whole machine, % of all cores
``system/rss_mb``              resident memory of this process and its children, MiB
``system/mem_percent``         memory used by the machine, %
``system/mem_available_mb``    memory available to new processes, MiB
``system/disk_read_mbps``      block-device reads, MiB/s (whole machine)
``system/disk_write_mbps``     block-device writes, MiB/s
``system/disk_used_percent``   usage of the file system holding the run directory, %
``system/net_recv_mbps``       bytes received over non-loopback interfaces, MiB/s
``system/net_sent_mbps``       bytes sent, MiB/s
``system/gpu.<i>.util``        GPU utilisation, % (NVML)
``system/gpu.<i>.mem_util``    GPU memory-controller utilisation, % (NVML)
``system/gpu.<i>.mem_used_mb`` GPU memory used, MiB (NVML)
``system/gpu.<i>.mem_percent`` GPU memory used, % (NVML)
``system/gpu.<i>.temp_c``      GPU temperature, °C (NVML)
``system/gpu.<i>.power_w``     GPU power draw, W (NVML)

Sources: ``/proc`` on Linux, else psutil when installed, else what ``os`` can
tell.  GPUs are read through NVML only (``pip install nvidia-ml-py``, imported
lazily by the first sample, on the writer thread); CUDA is never touched, so sampling never
creates a CUDA context.  Rates are computed between two samples, so the first
sample has none.  Failures are counted and reported once, never raised.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable

from wisp._logging import logger

TYPE_CHECKING = False  # typing costs ~15 ms to import; only type checkers need it
if TYPE_CHECKING:
    from typing import Any

__all__ = ["SystemSampler", "read_sample"]


_MB = 1024.0 * 1024.0
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
_CLK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _read(path: str) -> str:
    with open(path, encoding="ascii", errors="replace") as f:
        return f.read()


def _children(pid: int) -> list[int]:
    """Direct children of ``pid`` from /proc/<pid>/task/*/children."""
    out: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tasks:
        try:
            out.extend(int(c) for c in _read(f"/proc/{pid}/task/{tid}/children").split())
        except (OSError, ValueError):
            continue
    return out


def _descendants(pid: int, limit: int = 256) -> list[int]:
    seen: list[int] = []
    todo = _children(pid)
    while todo and len(seen) < limit:
        child = todo.pop()
        if child in seen:
            continue
        seen.append(child)
        todo.extend(_children(child))
    return seen


def _proc_rss(pid: int) -> int:
    try:
        return int(_read(f"/proc/{pid}/statm").split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        return 0


def _proc_cpu_ticks(pid: int) -> int:
    """utime + stime of ``pid`` (not its children), in clock ticks."""
    try:
        stat = _read(f"/proc/{pid}/stat")
        fields = stat[stat.rindex(")") + 2 :].split()
        return int(fields[11]) + int(fields[12])
    except (OSError, ValueError, IndexError):
        return 0


class _Counters:
    """Cumulative counters at one instant; rates come from two of them."""

    __slots__ = (
        "cpu_s",
        "disk_read",
        "disk_write",
        "net_recv",
        "net_sent",
        "sys_busy",
        "sys_total",
        "t",
    )

    def __init__(self) -> None:
        self.t = 0.0
        self.cpu_s: float | None = None
        self.sys_busy: float | None = None
        self.sys_total: float | None = None
        self.disk_read: float | None = None
        self.disk_write: float | None = None
        self.net_recv: float | None = None
        self.net_sent: float | None = None


def _whole_disks() -> set[str] | None:
    try:
        return {d for d in os.listdir("/sys/block") if not d.startswith(("loop", "ram", "zram"))}
    except OSError:
        return None


class _ProcSource:
    """Linux: everything from /proc, no dependencies."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.disks = _whole_disks()

    def read(self, values: dict[str, float], c: _Counters) -> None:
        pids = [self.pid, *_descendants(self.pid)]
        values["system/rss_mb"] = sum(_proc_rss(p) for p in pids) / _MB
        # children that already exited count through os.times()
        c.cpu_s = sum(_proc_cpu_ticks(p) for p in pids) / _CLK
        cpu = _read("/proc/stat").split("\n", 1)[0].split()[1:]
        ticks = [float(x) for x in cpu]
        idle = ticks[3] + (ticks[4] if len(ticks) > 4 else 0.0)
        c.sys_total = sum(ticks[:8])
        c.sys_busy = c.sys_total - idle
        mem: dict[str, int] = {}
        for line in _read("/proc/meminfo").splitlines():
            name, _, rest = line.partition(":")
            if name in ("MemTotal", "MemAvailable"):
                mem[name] = int(rest.split()[0]) * 1024
        if "MemTotal" in mem and "MemAvailable" in mem and mem["MemTotal"]:
            values["system/mem_percent"] = 100.0 * (1 - mem["MemAvailable"] / mem["MemTotal"])
            values["system/mem_available_mb"] = mem["MemAvailable"] / _MB
        try:
            read = write = 0
            for line in _read("/proc/diskstats").splitlines():
                f = line.split()
                if len(f) >= 10 and (self.disks is None or f[2] in self.disks):
                    read += int(f[5]) * 512
                    write += int(f[9]) * 512
            c.disk_read, c.disk_write = float(read), float(write)
        except (OSError, ValueError):
            pass
        try:
            recv = sent = 0
            for line in _read("/proc/net/dev").splitlines()[2:]:
                name, _, rest = line.partition(":")
                if name.strip() == "lo":
                    continue
                f = rest.split()
                recv += int(f[0])
                sent += int(f[8])
            c.net_recv, c.net_sent = float(recv), float(sent)
        except (OSError, ValueError, IndexError):
            pass


class _PsutilSource:
    """Other platforms with psutil installed."""

    def __init__(self, pid: int) -> None:
        import psutil

        self.psutil = psutil
        self.proc = psutil.Process(pid)

    def read(self, values: dict[str, float], c: _Counters) -> None:
        ps = self.psutil
        procs = [self.proc]
        with contextlib.suppress(ps.Error):
            procs += self.proc.children(recursive=True)
        rss = 0
        cpu = 0.0
        for p in procs:
            try:
                rss += p.memory_info().rss
                t = p.cpu_times()
                cpu += t.user + t.system
            except ps.Error:
                continue
        values["system/rss_mb"] = rss / _MB
        c.cpu_s = cpu
        t = ps.cpu_times()
        c.sys_total = sum(t)
        c.sys_busy = c.sys_total - t.idle
        vm = ps.virtual_memory()
        values["system/mem_percent"] = float(vm.percent)
        values["system/mem_available_mb"] = vm.available / _MB
        d = ps.disk_io_counters()
        if d is not None:
            c.disk_read, c.disk_write = float(d.read_bytes), float(d.write_bytes)
        n = ps.net_io_counters()
        if n is not None:
            c.net_recv, c.net_sent = float(n.bytes_recv), float(n.bytes_sent)


class _OsSource:
    """Last resort: this process's CPU time only."""

    def read(self, values: dict[str, float], c: _Counters) -> None:
        t = os.times()
        c.cpu_s = t.user + t.system + t.children_user + t.children_system


class _Nvml:
    """Per-GPU readings through NVML.  Never imports or initialises CUDA."""

    def __init__(self) -> None:
        import pynvml

        pynvml.nvmlInit()
        self.nv = pynvml
        self.handles = [
            pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(pynvml.nvmlDeviceGetCount())
        ]

    def read(self, values: dict[str, float]) -> None:
        nv = self.nv
        for i, h in enumerate(self.handles):
            p = f"system/gpu.{i}."
            readings: list[tuple[str, Callable[[Any], Any]]] = [
                ("util", lambda h: nv.nvmlDeviceGetUtilizationRates(h).gpu),
                ("mem_util", lambda h: nv.nvmlDeviceGetUtilizationRates(h).memory),
                ("temp_c", lambda h: nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU)),
                ("power_w", lambda h: nv.nvmlDeviceGetPowerUsage(h) / 1000.0),
            ]
            for key, fn in readings:
                try:
                    values[p + key] = float(fn(h))
                except nv.NVMLError:
                    continue
            try:
                m = nv.nvmlDeviceGetMemoryInfo(h)
                values[p + "mem_used_mb"] = m.used / _MB
                if m.total:
                    values[p + "mem_percent"] = 100.0 * m.used / m.total
            except nv.NVMLError:
                pass

    def close(self) -> None:
        with contextlib.suppress(self.nv.NVMLError):
            self.nv.nvmlShutdown()


def _make_source(pid: int) -> _ProcSource | _PsutilSource | _OsSource:
    if os.path.exists(f"/proc/{pid}/statm"):
        return _ProcSource(pid)
    try:
        return _PsutilSource(pid)
    except ImportError:
        return _OsSource()


def _rate(new: float | None, old: float | None, dt: float) -> float | None:
    if new is None or old is None or dt <= 0:
        return None
    return max(0.0, new - old) / dt


class SystemSampler:
    """Samples the machine when :meth:`sample_once` is called: a run's writer thread calls
    it every ``interval`` seconds (``Writer.every``), so the sampler has no thread of its own.

    ``emit(payload)`` receives each sample.  ``get_time`` (wall clock, for ``ts``) and
    ``get_monotonic`` (for rates) are injectable.
    """

    def __init__(
        self,
        emit: Callable[[dict[str, Any]], None],
        *,
        disk_path: str | None = None,
        gpus: bool = True,
        get_time: Callable[[], float] = time.time,
        get_monotonic: Callable[[], float] = time.monotonic,
        pid: int | None = None,
    ) -> None:
        self.emit = emit
        self.disk_path = disk_path
        self.gpus = gpus
        self._get_time = get_time
        self._mono = get_monotonic
        self._pid = os.getpid() if pid is None else pid
        self._source: _ProcSource | _PsutilSource | _OsSource | None = None
        self._nvml: _Nvml | None = None
        self._nvml_tried = False
        self._last: _Counters | None = None
        self.samples = 0
        self.failures = 0

    def close(self) -> None:
        """Release NVML (a later sample opens it again)."""
        if self._nvml is not None:
            self._nvml.close()
            self._nvml = None
            self._nvml_tried = False

    def sample_once(self) -> dict[str, Any] | None:
        """Take one sample and emit it; returns the payload (None if it failed)."""
        try:
            payload = self._sample()
            self.emit(payload)
        except Exception as exc:  # noqa: BLE001 - a sampler failure must never reach training
            self.failures += 1
            if self.failures == 1:
                logger().warning(
                    "wisp: system metrics sample failed (%s: %s); counting further failures",
                    type(exc).__name__,
                    exc,
                )
            return None
        self.samples += 1
        return payload

    def _sample(self) -> dict[str, Any]:
        if self._source is None:
            self._source = _make_source(self._pid)
        values: dict[str, float] = {}
        c = _Counters()
        c.t = self._mono()
        self._source.read(values, c)
        last = self._last
        if last is not None:
            dt = c.t - last.t
            cpu = _rate(c.cpu_s, last.cpu_s, dt)
            if cpu is not None:
                values["system/cpu_percent"] = 100.0 * cpu
            if c.sys_total is not None and last.sys_total is not None:
                total = c.sys_total - last.sys_total
                busy = _rate(c.sys_busy, last.sys_busy, 1.0)
                if total > 0 and busy is not None:
                    values["system/cpu_system_percent"] = 100.0 * busy / total
            for key, new, old in (
                ("disk_read_mbps", c.disk_read, last.disk_read),
                ("disk_write_mbps", c.disk_write, last.disk_write),
                ("net_recv_mbps", c.net_recv, last.net_recv),
                ("net_sent_mbps", c.net_sent, last.net_sent),
            ):
                r = _rate(new, old, dt)
                if r is not None:
                    values["system/" + key] = r / _MB
        self._last = c
        if self.disk_path is not None:
            try:
                st = os.statvfs(self.disk_path)  # what shutil.disk_usage does, without shutil
                total = st.f_blocks * st.f_frsize
                if total:
                    used = (st.f_blocks - st.f_bfree) * st.f_frsize
                    values["system/disk_used_percent"] = 100.0 * used / total
            except OSError:
                pass
        if self.gpus:
            self._read_gpus(values)
        return {"ts": self._get_time(), "values": values}

    def _read_gpus(self, values: dict[str, float]) -> None:
        if not self._nvml_tried:
            self._nvml_tried = True
            try:
                self._nvml = _Nvml()
            except ImportError:
                self._nvml = None  # nvidia-ml-py not installed: no GPU metrics
            except Exception as exc:  # noqa: BLE001 - NVMLError (no driver/GPU) and friends
                logger().debug("wisp: NVML unavailable: %s", exc)
                self._nvml = None
        if self._nvml is not None:
            self._nvml.read(values)


def read_sample(interval: float = 0.1, disk_path: str | None = None) -> dict[str, Any]:
    """Two samples ``interval`` apart, for ``wisp doctor`` and tests: the second one."""
    out: list[dict[str, Any]] = []
    s = SystemSampler(out.append, disk_path=disk_path)
    s.sample_once()
    time.sleep(interval)
    s.sample_once()
    s.close()
    return out[-1] if out else {"ts": time.time(), "values": {}}

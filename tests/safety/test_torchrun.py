"""A real ``torchrun`` launch: two gloo ranks that talk, recorded by wisp as docs/safety.md says."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

import wisp

from ._proc import child_env

STEPS = 10

RANK_SCRIPT = """
import json
import multiprocessing as mp
import os
import signal
import sys
import threading

import torch
import torch.distributed as dist

import wisp

mode = sys.argv[1]
dist.init_process_group("gloo")
rank = dist.get_rank()
reduced = torch.tensor([float(rank + 1)])
dist.all_reduce(reduced)  # the ranks really talk: 1 + 2 on every rank
assert reduced.item() == 3.0, reduced

before = {
    "threads": sorted(t.name for t in threading.enumerate()),
    "sigterm": repr(signal.getsignal(signal.SIGTERM)),
    "sigint": repr(signal.getsignal(signal.SIGINT)),
    "excepthook": repr(sys.excepthook),
    "cuda": torch.cuda.is_initialized(),
    "start": mp.get_start_method(allow_none=True),
}
run = wisp.init(project="ddp", config={"lr": 0.1}, ranks=mode)
for step in range(STEPS):
    wisp.log({"loss": step * 10 + rank + 0.25, "reduced": reduced.item()})
during = {
    "threads": sorted(t.name for t in threading.enumerate()),
    "sigterm": repr(signal.getsignal(signal.SIGTERM)),
    "sigint": repr(signal.getsignal(signal.SIGINT)),
    "excepthook": repr(sys.excepthook),
}
run.finish()
dist.barrier()  # both ranks have finished their runs before either exits
dist.destroy_process_group()
report = {
    "rank": rank,
    "mode": run.mode,
    "id": run.id,
    "dir": run.dir,
    "elastic_id": os.environ.get("TORCHELASTIC_RUN_ID"),
    "parent": os.getppid(),
    "before": before,
    "during": during,
    "cuda": torch.cuda.is_initialized(),
    "start": mp.get_start_method(allow_none=True),
}
with open(f"report-rank{rank}.json", "w") as f:
    json.dump(report, f)
""".replace("STEPS", str(STEPS))


def _torchrun(tmp_path: Path, ranks: str, *launch: str) -> tuple[int, dict[int, dict[str, Any]]]:
    """Launch the script with torchrun on 2 CPU ranks; (launcher pid, rank -> its report)."""
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(RANK_SCRIPT))
    env = child_env(
        tmp_path,
        PYTHONWARNINGS="error",  # the launcher and both ranks, like -W error
        GLOO_SOCKET_IFNAME="lo",  # everything on loopback
        OMP_NUM_THREADS="1",
    )
    for name in ("MASTER_ADDR", "MASTER_PORT", "GROUP_RANK", "ROLE_RANK"):
        env.pop(name, None)
    cmd = [sys.executable, "-m", "torch.distributed.run", *launch, "--nproc_per_node=2"]
    proc = subprocess.Popen(
        [*cmd, str(script), ranks],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # the launcher and its ranks, to kill together on a hang
    )
    try:
        out, _ = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        pytest.fail(f"torchrun hung for 120 s; output: {out[-4000:]}")
    assert proc.returncode == 0, out[-4000:]
    reports = {}
    for rank in (0, 1):
        report = json.loads((tmp_path / f"report-rank{rank}.json").read_text())
        assert report["rank"] == rank
        reports[rank] = report
    return proc.pid, reports


def _assert_untouched(report: dict[str, Any]) -> None:
    """CUDA never initialised and the start method never set, before wisp or after finish()."""
    assert report["before"]["cuda"] is False and report["cuda"] is False
    assert report["before"]["start"] is None and report["start"] is None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _assert_merged(run_dir: Path, run_id: str) -> None:
    """Both ranks' files in ``run_dir`` merge into one run with distinct, exact per-rank series."""
    assert sorted(p.name for p in run_dir.iterdir()) == [
        "run.json",
        "run.rank1.json",
        "run.rank1.wisp",
        "run.wisp",
    ]
    data = wisp.open_run(run_dir)
    assert data.id == run_id and sorted(data.ranks) == [0, 1]
    assert data.state == "finished" and data.config == {"lr": 0.1}
    assert data.metadata["ranks"] == [0, 1]
    for rank in (0, 1):
        assert data.scalars(f"rank{rank}/loss") == (
            list(range(STEPS)),
            [step * 10 + rank + 0.25 for step in range(STEPS)],
        )
        assert data.scalars(f"rank{rank}/reduced")[1] == [3.0] * STEPS
        assert data.summary[f"rank{rank}/loss"] == (STEPS - 1) * 10 + rank + 0.25
        part = data.ranks[rank]
        assert part.id == run_id and part.state == "finished"
        assert part.metadata["rank"] == {"rank": rank, "world_size": 2, "local_rank": rank}
    keys = data.keys()
    assert "loss" not in keys and {"rank0/loss", "rank1/loss"} <= set(keys)
    # rank 0's rows, then rank 1's; no row mixes the ranks
    prefixes = [{k.split("/")[0] for k in row if not k.startswith("_")} for row in data.history()]
    assert prefixes == [{"rank0"}] * STEPS + [{"rank1"}] * STEPS


def test_default_only_rank_zero_records(tmp_path: Path) -> None:
    """Under torchrun, rank 0 records the run and rank 1 gets a disabled run: no file, thread or hook."""
    _, reports = _torchrun(tmp_path, "zero", "--standalone")
    zero, one = reports[0], reports[1]
    assert zero["mode"] == "offline" and one["mode"] == "disabled"
    assert one["dir"] is None
    assert one["during"] == {k: v for k, v in one["before"].items() if k in one["during"]}
    assert "wisp-writer" in zero["during"]["threads"]
    # the only files under wisp/ are rank 0's run: no claim file, no rank-1 file
    files = sorted(str(p.relative_to(tmp_path)) for p in (tmp_path / "wisp").rglob("*"))
    run_name = Path(zero["dir"]).name
    assert files == [f"wisp/{run_name}", f"wisp/{run_name}/run.json", f"wisp/{run_name}/run.wisp"]
    data = wisp.open_run(zero["dir"])
    assert data.id == zero["id"] and data.state == "finished" and not data.ranks
    assert data.scalars("loss") == (list(range(STEPS)), [s * 10 + 0.25 for s in range(STEPS)])
    assert data.metadata["rank"] == {"rank": 0, "world_size": 2, "local_rank": 0}
    for report in reports.values():
        _assert_untouched(report)


def test_all_ranks_share_torchelastic_run_id(tmp_path: Path) -> None:
    """ranks="all" under torchrun --standalone: both ranks write one directory under TORCHELASTIC_RUN_ID, merged per rank."""
    _, reports = _torchrun(tmp_path, "all", "--standalone")
    elastic = reports[0]["elastic_id"]
    assert elastic and elastic != "none" and reports[1]["elastic_id"] == elastic
    for report in reports.values():
        assert report["mode"] == "offline" and report["id"] == elastic
        assert "wisp-writer" in report["during"]["threads"]
        _assert_untouched(report)
    assert reports[0]["dir"] == reports[1]["dir"]
    run_dir = Path(reports[0]["dir"])
    assert sorted((tmp_path / "wisp").glob("run-*")) == [run_dir]
    _assert_merged(run_dir, elastic)


def test_all_ranks_share_fallback_id_without_rendezvous_id(tmp_path: Path) -> None:
    """ranks="all" under a static torchrun launch (TORCHELASTIC_RUN_ID "none"): the fallback id is shared."""
    port = _free_port()
    launcher, reports = _torchrun(
        tmp_path, "all", "--nnodes=1", "--master-addr=127.0.0.1", f"--master-port={port}"
    )
    run_id = reports[0]["id"]
    for report in reports.values():
        assert report["elastic_id"] == "none"
        assert report["parent"] == launcher  # the launcher pid the fallback hashes
        assert report["mode"] == "offline" and report["id"] == run_id
        _assert_untouched(report)
    assert run_id.startswith("r") and len(run_id) == 16
    assert reports[0]["dir"] == reports[1]["dir"]
    run_dir = Path(reports[0]["dir"])
    assert sorted((tmp_path / "wisp").glob("run-*")) == [run_dir]
    _assert_merged(run_dir, run_id)

"""PyTorch: DataLoader fork workers while logging, and CUDA/start method left untouched."""

from __future__ import annotations

from pathlib import Path

import wisp

from ._proc import only_run, run_script

DATALOADER = """
import multiprocessing as mp

import torch
from torch.utils.data import DataLoader, Dataset

import wisp


class Squares(Dataset):
    def __len__(self):
        return 512

    def __getitem__(self, i):
        wisp.log({"worker_item": i})  # the parent's run, in the worker's own segment file
        return torch.tensor([float(i)]), torch.tensor([float(i * i)])


if __name__ == "__main__":
    import warnings

    # torch warns that 4 workers exceed this 2-core machine's suggestion; that is the point
    warnings.filterwarnings("ignore", message="This DataLoader will create")
    run = wisp.init(project="loader")
    loader = DataLoader(
        Squares(), batch_size=8, num_workers=4, multiprocessing_context=mp.get_context("fork")
    )
    it = iter(loader)
    seen = 0
    for x, y in it:
        wisp.log({"batch_sum": float(y.sum()), "batch_first": float(x[0, 0])})
        seen += len(x)
    workers = list(it._workers)
    it._shutdown_workers()
    codes = [w.exitcode for w in workers]
    run.finish()
    print("seen", seen, "codes", codes)
"""


def test_dataloader_fork_workers_while_logging(tmp_path: Path) -> None:
    """A 4-worker fork DataLoader iterated while logging every batch completes, workers exit 0, and all 512 worker values are recorded."""
    proc = run_script(tmp_path, DATALOADER, timeout=180)
    assert proc.returncode == 0, proc.stderr
    assert "seen 512 codes [0, 0, 0, 0]" in proc.stdout
    data = only_run(tmp_path)
    assert data.state == "finished"
    got = list(data.history())
    assert [r["batch_first"] for r in got if "batch_first" in r] == [
        float(8 * b) for b in range(64)
    ]
    assert sorted(r["worker_item"] for r in got if "worker_item" in r) == list(range(512))
    assert len(data.forks) == 4
    # the parent's file: no worker row in it
    assert all("worker_item" not in r for r in wisp.open_run(data.path).history())


UNTOUCHED = """
import multiprocessing as mp
import sys

import torch

import wisp

assert "torch" in sys.modules
run = wisp.init(project="cuda", config={"device": "cpu"})
for i in range(200):
    t = torch.tensor(float(i))
    wisp.log({"loss": t.item(), "step_i": i})
run.summary["best"] = 0.0
print("cuda during", torch.cuda.is_initialized())
run.finish()
checks = {c.name: c for c in wisp.doctor()}
print("cuda after", torch.cuda.is_initialized())
print("start method", mp.get_start_method(allow_none=True))
print("doctor torch", checks["torch"].status, checks["torch"].message)
"""


def test_torch_cuda_and_start_method_untouched(tmp_path: Path) -> None:
    """With torch imported, init/log/finish/doctor leave CUDA uninitialised and no start method set."""
    proc = run_script(tmp_path, UNTOUCHED, timeout=120)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "cuda during False" in out and "cuda after False" in out
    assert "start method None" in out
    assert "doctor torch ok before wisp's first init(): torch imported, CUDA not initialised" in out
    data = only_run(tmp_path)
    assert [r["step_i"] for r in data.history()] == list(range(200))

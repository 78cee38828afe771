"""Distributed launches: rank 0 records by default; ranks="all" writes one file per rank."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import wisp
from tests._procs import stop
from wisp import _ranks

from ._proc import child_env

RANK_SCRIPT = """
import os
import sys

import wisp

run = wisp.init(project="ddp", config={"lr": 0.1}, ranks=sys.argv[1])
rank = int(os.environ["RANK"])
for step in range(20):
    wisp.log({"loss": step * 10 + rank})
run.finish()
print(run.mode, run.id)
"""


def _launch(tmp_path: Path, ranks: str, world: int = 3, **extra: str) -> list[str]:
    script = tmp_path / "ddp.py"
    script.write_text(RANK_SCRIPT)
    procs = []
    for rank in range(world):
        env = child_env(
            tmp_path,
            RANK=str(rank),
            LOCAL_RANK=str(rank),
            WORLD_SIZE=str(world),
            MASTER_ADDR="127.0.0.1",
            MASTER_PORT="29500",
            **extra,
        )
        procs.append(
            subprocess.Popen(
                [sys.executable, "-W", "error", str(script), ranks],
                cwd=tmp_path,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    outs = []
    try:
        for p in procs:
            try:
                out, err = p.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                pytest.fail("a rank hung")
            assert p.returncode == 0, err
            outs.append(out.strip())
    finally:
        for p in procs:
            stop(p)
    return outs


def test_default_only_rank_zero_records(tmp_path: Path) -> None:
    """Without ranks="all", rank 0 writes the run and other ranks get no-op disabled runs."""
    outs = _launch(tmp_path, "zero")
    assert outs[0].startswith("offline") and outs[1].startswith("disabled")
    assert outs[2].startswith("disabled")
    dirs = list((tmp_path / "wisp").glob("run-*"))
    assert len(dirs) == 1
    assert sorted(p.name for p in dirs[0].iterdir()) == ["run.json", "run.wisp"]
    data = wisp.open_run(dirs[0])
    assert data.scalars("loss")[1] == [s * 10 for s in range(20)]
    assert data.metadata["rank"] == {"rank": 0, "world_size": 3, "local_rank": 0}


def test_all_ranks_share_one_run_and_merge_distinct(tmp_path: Path) -> None:
    """ranks="all": one run id and directory, a file per rank, merged with rank<N>/ keys."""
    outs = _launch(tmp_path, "all")
    ids = {o.split()[1] for o in outs}
    assert len(ids) == 1 and all(o.startswith("offline") for o in outs)
    dirs = list((tmp_path / "wisp").glob("run-*"))
    assert len(dirs) == 1
    names = sorted(p.name for p in dirs[0].iterdir())
    assert names == sorted(
        [
            "run.json",
            "run.wisp",
            "run.rank1.json",
            "run.rank1.wisp",
            "run.rank2.json",
            "run.rank2.wisp",
        ]
    )
    data = wisp.open_run(dirs[0])
    assert data.id in ids and sorted(data.ranks) == [0, 1, 2]
    assert data.state == "finished" and data.config == {"lr": 0.1}
    for rank in range(3):
        steps, values = data.scalars(f"rank{rank}/loss")
        assert steps == list(range(20))
        assert values == [s * 10 + rank for s in range(20)]
        assert data.summary[f"rank{rank}/loss"] == 190 + rank
        assert data.ranks[rank].metadata["rank"]["rank"] == rank
    merged_keys = data.keys()
    assert "loss" not in merged_keys and "rank0/loss" in merged_keys
    # one rank's file alone reads unprefixed
    alone = wisp.open_run(dirs[0] / "run.rank2.wisp")
    assert alone.scalars("loss")[1][-1] == 192


def test_merged_state_shows_a_crashed_rank(tmp_path: Path) -> None:
    """A merged run whose rank 1 never finished reads as crashed, not finished."""
    _launch(tmp_path, "all", world=2)
    run_dir = next((tmp_path / "wisp").glob("run-*"))
    raw = (run_dir / "run.rank1.wisp").read_bytes()
    finish_at = raw.rindex(b'{"state"') - 9  # drop rank 1's finish record
    (run_dir / "run.rank1.wisp").write_bytes(raw[:finish_at])
    data = wisp.open_run(run_dir)
    assert data.ranks[0].state == "finished" and data.ranks[1].state == "crashed"
    assert data.state == "crashed" and data.finish is None


def test_relaunch_with_same_id_gets_a_fresh_directory(tmp_path: Path) -> None:
    """A second launch with the same TORCHELASTIC_RUN_ID records a new directory, not appends."""
    for _ in range(2):
        outs = _launch(tmp_path, "all", world=2, TORCHELASTIC_RUN_ID="job42")
        assert {o.split()[1] for o in outs} == {"job42"}
    dirs = sorted((tmp_path / "wisp").glob("run-*"), key=lambda d: d.name.count("-2-job42"))
    assert len(dirs) == 2 and dirs[1].name.endswith("-2-job42")
    for run_dir in dirs:
        data = wisp.open_run(run_dir)
        assert data.id == "job42" and sorted(data.ranks) == [0, 1]
        assert data.scalars("rank1/loss") == (list(range(20)), [s * 10 + 1 for s in range(20)])


def test_shared_run_id_follows_the_launch() -> None:
    """Ranks of one launch compute the same id; torchrun's run id wins when it is set."""
    env = {"MASTER_ADDR": "10.0.0.1", "MASTER_PORT": "29500", "WORLD_SIZE": "8"}
    assert _ranks.shared_run_id(env) == _ranks.shared_run_id(dict(env))
    assert _ranks.shared_run_id({**env, "MASTER_PORT": "29501"}) != _ranks.shared_run_id(env)
    assert _ranks.shared_run_id({**env, "TORCHELASTIC_RUN_ID": "job/42"}) == "job-42"
    assert _ranks.shared_run_id({**env, "TORCHELASTIC_RUN_ID": "none"}).startswith("r")
    assert _ranks.detect({}) is None
    assert _ranks.detect({"RANK": "3", "WORLD_SIZE": "4"}) == (3, 4, 3)
    with pytest.raises(wisp.UsageError, match="RANK"):
        _ranks.detect({"RANK": "x"})

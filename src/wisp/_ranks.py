"""Distributed training: which rank this process is, and where ranks meet on disk.

Under a torchrun-style launcher (``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK`` in the
environment) the default (setting ``ranks="zero"``) is that rank 0 records and
every other rank gets a disabled, no-op run.  With ``ranks="all"`` every rank
records into the same run directory, for the same run id:

    run.wisp / run.json                 rank 0
    run.rank<N>.wisp / run.rank<N>.json rank N > 0

The ranks agree on the run id without talking to each other: ``init(id=...)``
if given, else ``TORCHELASTIC_RUN_ID`` (set by torchrun, shared by all ranks
unless it is ``"none"``), else a hash of ``MASTER_ADDR``, ``MASTER_PORT``,
``WORLD_SIZE`` and the launcher's pid (right on one node; for several nodes
pass ``id=`` or torchrun's ``--rdzv-id``).  They agree on the directory through
a claim file ``<dir>/wisp/.ranks-<id>``, created atomically by whichever rank
comes first (format: one line, the run directory's name; version 1).  A later
launch with the same id finds its rank's file already in that directory and
moves on to ``.ranks-<id>.2`` (directory ``run-<stamp>-2-<id>``), then ``.3``...
"""

from __future__ import annotations

import os
from collections import namedtuple
from collections.abc import Mapping

from wisp._rundir import dir_name, rank_file_names  # rank_file_names: re-exported
from wisp.errors import UsageError

TYPE_CHECKING = False  # typing costs ~15 ms to import; only type checkers need it

__all__ = ["RankInfo", "claim_run_dir", "detect", "rank_file_names", "shared_run_id"]


if TYPE_CHECKING:
    from typing import NamedTuple

    class RankInfo(NamedTuple):
        rank: int
        world_size: int
        local_rank: int
else:
    #: This process's place in a distributed launch.
    RankInfo = namedtuple("RankInfo", "rank world_size local_rank")


def _int(environ: Mapping[str, str], name: str, default: int | None) -> int | None:
    raw = environ.get(name, "").strip()
    if not raw:
        return default
    try:
        return int(raw)
    except ValueError:
        raise UsageError(f"environment variable {name} must be an integer, got {raw!r}") from None


def detect(environ: Mapping[str, str] | None = None) -> RankInfo | None:
    """This process's rank, or None outside a distributed launch."""
    env = os.environ if environ is None else environ
    rank = _int(env, "RANK", None)
    if rank is None:
        return None
    world = _int(env, "WORLD_SIZE", 1) or 1
    local = _int(env, "LOCAL_RANK", rank)
    return RankInfo(rank, world, rank if local is None else local)


def shared_run_id(environ: Mapping[str, str] | None = None) -> str:
    """A run id every rank of one launch computes alike."""
    env = os.environ if environ is None else environ
    elastic = env.get("TORCHELASTIC_RUN_ID", "").strip()
    if elastic and elastic != "none":
        cleaned = "".join(c if c.isalnum() or c in "-_" else "-" for c in elastic)[:64]
        if cleaned:
            return cleaned
    key = "|".join(
        (
            env.get("MASTER_ADDR", ""),
            env.get("MASTER_PORT", ""),
            env.get("WORLD_SIZE", ""),
            str(os.getppid()),
        )
    )
    import hashlib

    return "r" + hashlib.sha256(key.encode()).hexdigest()[:15]


def claim_run_dir(wisp_dir: str, run_id: str, stamp: str, own_file: str) -> str:
    """The run directory name all ranks of this launch use, claimed by the first rank.

    A claim whose directory already holds ``own_file`` (this rank's run file)
    belongs to an earlier launch with the same id (a re-run with the same
    ``--rdzv-id`` or ``id=``, or a torchrun restart): every rank then moves on to
    the next generation's claim, so each launch gets a fresh directory.
    """
    os.makedirs(wisp_dir, exist_ok=True)
    generation = 1
    while True:
        suffix = "" if generation == 1 else f".{generation}"
        claim = os.path.join(wisp_dir, f".ranks-{run_id}{suffix}")
        middle = "" if generation == 1 else f"{generation}-"
        name = _claim(claim, dir_name(stamp, f"{middle}{run_id}"))
        if not os.path.exists(os.path.join(wisp_dir, name, own_file)):
            return name
        generation += 1


def _claim(claim: str, candidate: str) -> str:
    """``candidate`` if this rank creates ``claim``, else the name already in it."""
    tmp = f"{claim}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(candidate + "\n")
    try:
        os.link(tmp, claim)  # atomic: exactly one rank's link succeeds
        return candidate
    except FileExistsError:
        with open(claim, encoding="utf-8") as f:
            name = f.read().strip()
        if not name or os.sep in name or name.startswith("."):
            from wisp.errors import RunFileError

            raise RunFileError(f"{claim} does not name a run directory: {name!r}") from None
        return name
    finally:
        os.unlink(tmp)

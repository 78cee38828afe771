"""``wisp.Api`` over a local folder: forks and rewound runs read as every other reader sees
them; ``parent``, ``forks()`` and the rows set aside."""

from __future__ import annotations

from pathlib import Path

import pytest

import wisp
from wisp.errors import UsageError


@pytest.fixture
def family(tmp_path: Path) -> dict[str, str]:
    """A 100-step run rewound to 80 (then 81..90 logged) and a fork of it at 50 (51..60)."""
    d = str(tmp_path)
    parent = wisp.init(project="p", dir=d, mode="offline", config={"lr": 1})
    for i in range(100):
        parent.log({"loss": float(i)})
    parent.finish()
    fork = wisp.init(fork_from=f"{parent.id}?_step=50", dir=d)
    for i in range(51, 61):
        fork.log({"loss": -float(i)})
    fork.finish()
    back = wisp.init(resume_from=f"{parent.id}?_step=80", dir=d)
    for i in range(81, 91):
        back.log({"loss": 1000.0 + i})
    back.finish()
    return {"parent": parent.id, "fork": fork.id, "dir": d}


def test_scan_history_series_and_export_read_a_forks_view(family: dict[str, str]) -> None:
    """scan_history, history (series) and the long-table export give the fork's view: the
    parent's 0..50 then the fork's 51..60."""
    api = wisp.Api(dir=family["dir"])
    run = api.run(f"p/{family['fork']}")
    want = [(s, float(s)) for s in range(51)] + [(s, -float(s)) for s in range(51, 61)]
    assert [(r["_step"], r["loss"]) for r in run.scan_history(keys=["loss"])] == want
    rows = run.history(keys=["loss"], pandas=False, samples=1000)
    assert [(r["_step"], r["loss"]) for r in rows] == want
    pd = pytest.importorskip("pandas")
    table = api.runs("p", filters={"id": family["fork"]}).histories(keys=["loss"])
    assert isinstance(table, pd.DataFrame)
    assert list(zip(table["step"], table["loss"], strict=True)) == want
    assert run.summary == {"loss": -60.0} and run.config == {"lr": 1}


def test_parent_and_forks_link_the_family(family: dict[str, str]) -> None:
    """run.parent is the run forked from, fork_step the step, forks() the runs forked off."""
    api = wisp.Api(dir=family["dir"])
    fork = api.run(f"p/{family['fork']}")
    assert fork.parent is not None and fork.parent.id == family["parent"]
    assert fork.fork_step == 50 and fork.forks() == []
    parent = api.run(f"p/{family['parent']}")
    assert parent.parent is None and parent.fork_step is None
    assert [r.id for r in parent.forks()] == [family["fork"]]


def test_rows_set_aside_are_listed_scanned_and_restored(family: dict[str, str]) -> None:
    """The rewound run's history leaves the old 81..99 out; set_aside() lists them,
    scan_set_aside() reads them, and restore_set_aside() brings them back as a new run: a
    fork at 80 holding them."""
    api = wisp.Api(dir=family["dir"])
    run = api.run(f"p/{family['parent']}")
    steps = [r["_step"] for r in run.scan_history(keys=["loss"])]
    assert steps == list(range(91))
    assert run.set_aside() == [
        {"rewind": 0, "step": 80, "rows": 19, "min_step": 81, "max_step": 99}
    ]
    aside = list(run.scan_set_aside())
    assert [(r["_step"], r["loss"], r["_rewind"]) for r in aside] == [
        (s, float(s), 0) for s in range(81, 100)
    ]
    restored = run.restore_set_aside()
    assert restored.parent is not None and restored.parent.id == run.id
    assert restored.fork_step == 80 and restored.config == {"lr": 1}
    got = [(r["_step"], r["loss"]) for r in restored.scan_history(keys=["loss"])]
    assert got == [(s, float(s)) for s in range(100)]
    assert [r["_step"] for r in run.scan_history(keys=["loss"])] == steps  # left as it is
    with pytest.raises(UsageError, match="out of range"):
        run.restore_set_aside(3)
    with pytest.raises(UsageError, match="no rows set aside"):
        api.run(f"p/{family['fork']}").restore_set_aside()

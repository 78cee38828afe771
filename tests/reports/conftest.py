"""Fixtures for the reports suite: runs logged offline by the real SDK into the test's folder."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import wisp

LRS = [1e-3, 1e-4, 1e-3, 3e-4]
STEPS = 50


def log_run(lr: float, tags: list[str], steps: int = STEPS, **kw: Any) -> str:
    """One finished offline run of project ``spiral``; returns its id."""
    run = wisp.init(project="spiral", mode="offline", config={"lr": lr}, tags=tags, **kw)
    for s in range(steps):
        run.log({"val/loss": lr * 1000 / (s + 1), "acc": s / steps})
    run.summary["best"] = lr * 10
    run.finish()
    return str(run.id)


@pytest.fixture
def runs(tmp_path: Path) -> list[str]:
    """Four runs: three tagged ``sweep`` (two share lr 1e-3), one untagged."""
    return [log_run(lr, ["sweep"] if i < 3 else []) for i, lr in enumerate(LRS)]


REPORT = """---
title: LR sweep
project: spiral
runsets:
  sweep: {filter: "tags contains 'sweep'", group: config.lr}   # grouped by lr
  base:  {runs: [RUN0, RUN3]}
---
Warm-up above 3e-4 *diverges*; see the band below.

```wisp-panel
type: line
runset: sweep          # a comment kept on a round trip
y: [val/loss]
band: minmax
```

```python
# a code block is Markdown, not a panel
```

```wisp-panel
type: bar
runset: base
y: [best]
```
"""


def report_text(ids: list[str]) -> str:
    return REPORT.replace("RUN0", ids[0]).replace("RUN3", ids[3])

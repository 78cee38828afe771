"""wisp.doctor(): a structured report of start method, torch/CUDA, failures, threads, signals."""

from __future__ import annotations

import json
from pathlib import Path

from ._proc import run_script

DOCTOR = """
import json
import os
import signal

import wisp
from wisp._values import Deferred


class Broken(Deferred):
    def resolve(self, ctx):
        raise OSError("disk on fire")


def report():
    return [list(c) for c in wisp.doctor()]


before = report()
signal.signal(signal.SIGTERM, lambda *a: None)
run = wisp.init(project="doc")
wisp.log({"ok": 1})
wisp.log({"bad": Broken()})
run.summary["ok"]  # waits for the writer
live = report()
signal.signal(signal.SIGTERM, signal.SIG_DFL)  # replaces wisp's handler
replaced = report()
pid = os.fork()
if pid == 0:
    with open("child.json", "w") as f:
        json.dump(report(), f)
    os._exit(0)
os.waitpid(pid, 0)
try:
    run.finish()
except wisp.errors.WriterError:
    pass
after = report()
print(json.dumps({"before": before, "live": live, "replaced": replaced, "after": after}))
"""


def _by_name(items: list[list[str]]) -> dict[str, list[str]]:
    return {name: [status, message, fix] for name, status, message, fix in items}


def test_doctor_reports_process_runs_and_failures(tmp_path: Path) -> None:
    """doctor() lists (name, status, message, fix) items that track the process and its runs."""
    proc = run_script(tmp_path, DOCTOR, timeout=60)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    for items in got.values():
        assert all(len(i) == 4 and i[1] in ("ok", "warn", "fail") for i in items)
    before = _by_name(got["before"])
    assert before["start method"][0] == "ok" and "not set" in before["start method"][1]
    assert "not imported" in before["torch"][1]
    assert before["signals"][1] == "no run started yet; nothing hooked"

    live = _by_name(got["live"])
    run_item = next(v for k, v in live.items() if k.startswith("run "))
    assert (
        run_item[0] == "warn" and "value 'bad': 1" in run_item[1] and "disk on fire" in run_item[1]
    )
    assert (
        live["threads"][0] == "ok" and "1 wisp writer threads for 1 live runs" in live["threads"][1]
    )
    assert "SIGTERM: hooked" in live["signals"][1]

    replaced = _by_name(got["replaced"])
    assert replaced["signals"][0] == "warn" and replaced["signals"][2]

    after = _by_name(got["after"])
    run_after = next(v for k, v in after.items() if k.startswith("run "))
    assert run_after[0] == "warn" and run_after[1].startswith("finished: background failures")
    assert "0 wisp writer threads for 0 live runs" in after["threads"][1]

    child = _by_name(json.loads((tmp_path / "child.json").read_text()))
    assert "forked from pid" in child["process"][1]
    assert child["threads"][0] == "ok"

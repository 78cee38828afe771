"""`wisp doctor` (src/wisp/cli/_doctor_cmd.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from tests.cli._helpers import make_run, wisp_cli
from tests.cli.fake_server import fake_server


def _checks(res: Any) -> dict[str, dict[str, Any]]:
    return {c["name"]: c for c in json.loads(res.stdout)["checks"]}


def test_doctor_complete_report(tmp_path: Path) -> None:
    """doctor prints one ok/warn/fail line per checklist item, with a fix under every non-ok line."""
    make_run(tmp_path, "wisp.log({'x': 1})")
    res = wisp_cli("doctor", cwd=tmp_path, timeout=240)  # probes get longer under load
    assert res.returncode == 0, res.stdout + res.stderr
    lines = res.stdout.splitlines()
    for name in (
        "import wisp",
        "other trackers",
        "multiprocessing",
        "torch / CUDA context",
        "NVML (GPU metrics)",
        "disk",
        "config file",
        "server",
        "last runs",
    ):
        line = next(x for x in lines if name in x)
        assert line.split()[0] in ("ok", "warn", "fail"), line
    for i, line in enumerate(lines):
        if line.startswith(("warn", "fail")):
            assert lines[i + 1].strip().startswith("fix: "), line
    assert "\x1b[" not in res.stdout
    checks = _checks(wisp_cli("doctor", "--json", cwd=tmp_path, timeout=240))
    assert checks["torch / CUDA context"]["status"] == "ok"
    assert (
        "no/no" in checks["torch / CUDA context"]["detail"]
        or "not installed" in checks["torch / CUDA context"]["detail"]
    )
    assert checks["last runs"]["detail"].startswith("1 recent run(s)")
    assert "threads alive during a run" in checks["multiprocessing"]["detail"]


def test_doctor_server_checks(tmp_path: Path) -> None:
    """doctor reports an accepted key and clock skew, a refused key as fail (exit 1), and a bad config mode."""
    cfg = tmp_path / "wisp-config.json"
    with fake_server("good", skew=120.0) as url:
        cfg.write_text(json.dumps({"server_url": url, "api_key": "good"}))
        os.chmod(cfg, 0o644)
        res = wisp_cli("doctor", "--json", cwd=tmp_path)
        checks = _checks(res)
        assert res.returncode == 0
        assert checks["server"]["status"] == "ok" and "key accepted" in checks["server"]["detail"]
        assert checks["clock skew"]["status"] == "warn"
        assert checks["clock skew"]["detail"].startswith("+1")  # about +120 s
        assert (
            checks["config file"]["status"] == "warn"
            and "chmod 600" in checks["config file"]["fix"]
        )
        res = wisp_cli("doctor", "--json", cwd=tmp_path, env={"WISP_API_KEY": "bad"})
    assert res.returncode == 1
    assert _checks(res)["server"]["status"] == "fail"
    res = wisp_cli("doctor", cwd=tmp_path, env={"WISP_SERVER_URL": "http://127.0.0.1:9"})
    assert res.returncode == 1 and "unreachable" in res.stdout


def test_doctor_reports_background_failures(tmp_path: Path) -> None:
    """Failure counters in the finish record of a recent run show up as a warning."""
    from wisp._runfile import HEADER, RecordType, encode_record

    run = tmp_path / "wisp" / "run-20250101_000000-abc"
    run.mkdir(parents=True)
    recs = [
        (RecordType.RUN, {"run_id": "abc", "name": "flaky", "project": "p", "created_at": 1.0}),
        (
            RecordType.FINISH,
            {
                "state": "finished",
                "exit_code": 0,
                "finished_at": 2.0,
                "failures": {"write": 3},
                "backpressure_waits": 7,
            },
        ),
    ]
    data = HEADER + b"".join(encode_record(t, json.dumps(p).encode()) for t, p in recs)
    (run / "run.wisp").write_bytes(data)
    checks = _checks(wisp_cli("doctor", "--json", cwd=tmp_path))
    assert checks["last runs"]["status"] == "warn"
    assert checks["last runs"]["detail"] == "flaky: write: 3, 7 backpressure waits"


def test_doctor_reports_left_out_values_and_set_aside_records(tmp_path: Path) -> None:
    """WARNING records (values the writer left out) and rejected.jsonl entries of a recent run are counted."""
    from wisp._rundir import add_rejected
    from wisp._runfile import HEADER, RecordType, encode_record

    run = tmp_path / "wisp" / "run-20250101_000000-abd"
    run.mkdir(parents=True)
    recs = [
        (RecordType.RUN, {"run_id": "abd", "name": "poisoned", "project": "p", "created_at": 1.0}),
        (
            RecordType.WARNING,
            {"kind": "value", "where": "'n' at step 3", "reason": "x", "count": 1},
        ),
        (
            RecordType.WARNING,
            {"kind": "value", "where": "'n' at step 4", "reason": "x", "count": 2},
        ),
        (RecordType.FINISH, {"state": "finished", "exit_code": 0, "failures": {"value": 2}}),
    ]
    data = HEADER + b"".join(encode_record(t, json.dumps(p).encode()) for t, p in recs)
    (run / "run.wisp").write_bytes(data)
    add_rejected(str(run), {"offset": 10, "type": 2, "reason": "422: NUL", "data": None})
    checks = _checks(wisp_cli("doctor", "--json", cwd=tmp_path))
    detail = checks["last runs"]["detail"]
    assert checks["last runs"]["status"] == "warn"
    assert "value: 2" in detail and "2 warning record(s) (value)" in detail
    assert "1 record(s) refused by the server" in detail


def test_doctor_reports_bad_settings_and_unknown_wisp_variables(tmp_path: Path) -> None:
    """doctor names a bad setting's variable (fail) and an unknown WISP_* name with a suggestion (warn) instead of stopping."""
    env = {"WISP_MODE": "onlin", "WISP_SERVR_URL": "http://h:1"}
    res = wisp_cli("doctor", "--json", cwd=tmp_path, env=env)
    assert res.returncode == 1, res.stdout + res.stderr
    rows = [c for c in json.loads(res.stdout)["checks"] if c["name"] == "settings"]
    assert any(
        c["status"] == "warn"
        and "WISP_SERVR_URL" in c["detail"]
        and "WISP_SERVER_URL" in c["detail"]
        for c in rows
    ), rows
    assert any(c["status"] == "fail" and "WISP_MODE" in c["detail"] for c in rows), rows
    assert "Traceback" not in res.stderr


def _busy(monkeypatch: Any, load: float) -> None:
    """Pretend the 1-minute load average is ``load`` on 2 CPUs."""
    monkeypatch.setattr(os, "getloadavg", lambda: (load, load, load))
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)


def _slow_children(monkeypatch: Any, tmp_path: Path, body: str) -> None:
    """Child interpreters started from here run ``body`` first (a ``sitecustomize``)."""
    site = tmp_path / "site"
    site.mkdir(parents=True)
    (site / "sitecustomize.py").write_text(body)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]))


def test_probe_deadlines_stretch_with_the_load_average(monkeypatch: Any) -> None:
    """A deadline is its base on an idle machine, load-per-CPU times longer under load, at most 4x."""
    from wisp.cli._doctor_cmd import deadline

    for load, want in ((0.3, 1.5), (2.0, 1.5), (6.0, 4.5), (40.0, 6.0)):
        _busy(monkeypatch, load)
        assert deadline(1.5) == want, load


def _thread_check(tmp_path: Path) -> str:
    import multiprocessing

    import pytest

    from wisp.cli._doctor_cmd import check_multiprocessing

    if (multiprocessing.get_start_method(allow_none=True) or "fork") != "fork":
        pytest.skip("the thread probe runs only where the start method is fork")
    (check,) = check_multiprocessing(str(tmp_path))
    return check.message


def test_thread_probe_slow_from_load_still_counts_the_threads(
    monkeypatch: Any, tmp_path: Path
) -> None:
    """On a loaded machine (load 8 on 2 CPUs) a run in a child that takes 2.5 s, over the
    idle deadline of 1.5 s, is waited for and its threads are counted."""
    _busy(monkeypatch, 8.0)
    _slow_children(monkeypatch, tmp_path, "import time\ntime.sleep(2.5)\n")
    assert "threads alive during a run" in _thread_check(tmp_path)


def test_thread_probe_reports_a_hung_or_failing_child_on_an_idle_machine(
    monkeypatch: Any, tmp_path: Path
) -> None:
    """On an idle machine a child run that hangs is reported after 1.5 s, and one that fails
    with its error: the longer deadlines under load hide neither."""
    import time

    _busy(monkeypatch, 0.1)
    _slow_children(monkeypatch, tmp_path, "import time\ntime.sleep(60)\n")
    began = time.monotonic()
    msg = _thread_check(tmp_path)
    assert "did not finish in 1.5 s" in msg and time.monotonic() - began < 10
    _slow_children(monkeypatch, tmp_path / "broken", "raise SystemExit('wisp cannot start here')\n")
    msg = _thread_check(tmp_path)
    assert "a run in a child process failed" in msg and "wisp cannot start here" in msg

"""``wisp sweep`` and ``wisp agent`` (docs/sweeps.md)."""

from __future__ import annotations

import argparse
import json
import os

from wisp.cli._term import EXIT, CliError, log_lines, table

__all__ = ["cmd_agent", "cmd_sweep"]

_ACTIONS = ("stop", "cancel", "pause", "resume")


def cmd_sweep(args: argparse.Namespace) -> int:
    import wisp.sweeps as sweeps

    chosen = [a for a in (*_ACTIONS, "status") if getattr(args, a)]
    if len(chosen) > 1 or (chosen and args.config):
        raise CliError("give a sweep file, or one of --stop/--cancel/--pause/--resume/--status")
    if chosen and chosen[0] in _ACTIONS:
        sweep_id = getattr(args, chosen[0])
        state = sweeps.set_state(sweep_id, chosen[0], dir=args.dir)
        args.out.say(f"sweep {sweep_id}: {state}")
        args.out.data(sweep_id=sweep_id, state=state)
        return EXIT["ok"]
    if chosen:
        return _status(sweeps.sweep_status(args.status, dir=args.dir), args.json)
    if not args.config:
        raise CliError("no sweep file given", "wisp sweep sweep.yaml [--project P]")
    sweep_id = sweeps.sweep(args.config, project=args.project, dir=args.dir)
    default = os.environ.get("WISP_DIR") or "."  # what `wisp agent` finds by itself
    where = "" if os.path.abspath(args.dir) == os.path.abspath(default) else f" --dir {args.dir}"
    args.out.say(sweep_id)  # stdout: the id alone, for scripts; what to run next on stderr
    args.out.say(f"wisp: run trials with: wisp agent {sweep_id}{where}", err=True)
    args.out.data(sweep_id=sweep_id, agent=f"wisp agent {sweep_id}{where}")
    return EXIT["ok"]


def _status(info: dict[str, object], as_json: bool) -> int:
    if as_json:
        print(json.dumps(info, indent=1))
        return EXIT["ok"]
    trials = info.pop("trials")
    assert isinstance(trials, list)
    print(f"sweep {info['id']} ({info['state']}), project {info.get('project') or '-'}")
    rows = [
        [
            str(t["number"]),
            t["run_id"],
            t["state"],
            "" if t["value"] is None else f"{t['value']:g}",
            json.dumps(t["params"]),
        ]
        for t in trials
    ]
    print(table(["#", "run", "state", "value", "params"], rows))
    return EXIT["ok"]


def cmd_agent(args: argparse.Namespace) -> int:
    import wisp.sweeps as sweeps

    if args.count is not None and args.count <= 0:
        raise CliError("--count must be a positive integer")
    from wisp.sweeps._agent import AGENT_LOG

    with log_lines(AGENT_LOG, args.out):
        sweeps.agent(args.sweep_id, count=args.count, dir=args.dir)
    args.out.data(sweep_id=args.sweep_id)
    return EXIT["ok"]

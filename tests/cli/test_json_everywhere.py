"""Every `wisp` command takes --json and answers with one JSON document on stdout (its
exit code inside), errors included: what agents parse instead of text."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from tests.cli._helpers import make_run, wisp_cli
from wisp.cli import _parser
from wisp.testing import Server


def _commands(parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ()) -> list[Any]:
    out = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                out.append(((*prefix, name), sub))
                out += _commands(sub, (*prefix, name))
    return out


def _doc(res: Any) -> dict[str, Any]:
    doc = json.loads(res.stdout)  # one document: a second one would not parse
    assert isinstance(doc, dict)
    return doc


def test_every_command_has_json() -> None:
    """Each command and sub-command of the parser accepts --json (wisp mcp excepted: its
    stdout is the MCP protocol itself)."""
    missing = [
        " ".join(path)
        for path, sub in _commands(_parser())
        if "--json" not in sub._option_string_actions and path != ("mcp",)
    ]
    assert missing == []


def test_local_commands_answer_in_json(tmp_path: Path) -> None:
    """ls, show, export, gc, import, skills and a usage error each print one document."""
    run_dir = make_run(tmp_path, 'run.log({"loss": 1.0})')
    cwd = tmp_path
    ls = _doc(wisp_cli("ls", "--json", "--dir", str(tmp_path), cwd=cwd))
    rid = ls["runs"][0]["id"]
    assert _doc(wisp_cli("show", rid, "--json", "--dir", str(tmp_path), cwd=cwd))["id"] == rid
    out = tmp_path / "h.csv"
    exp = _doc(wisp_cli("export", rid, "-o", str(out), "--json", "--dir", str(tmp_path), cwd=cwd))
    assert exp["written"] == str(out) and exp["rows"] > 0 and exp["exit_code"] == 0
    gc = _doc(wisp_cli("gc", "--dry-run", "--json", "--dir", str(tmp_path), cwd=cwd))
    assert gc["deleted"] == [] and gc["kept"] == 1 and gc["dry_run"] is True
    bad = wisp_cli("show", "nope", "--json", "--dir", str(tmp_path), cwd=cwd)
    err = _doc(bad)
    assert bad.returncode == 2 and err["exit_code"] == 2 and "nope" in err["error"]["message"]
    to_stdout = wisp_cli("export", rid, "-o", "-", "--json", "--dir", str(tmp_path), cwd=cwd)
    assert _doc(to_stdout)["error"]["hint"] == "give one with -o FILE"
    assert run_dir.exists()


def test_server_commands_answer_in_json(tmp_path: Path) -> None:
    """server users/teams/projects/keys, login and sync against a real server process."""
    with Server(tmp_path / "srv") as srv:
        db = ["--db", srv.db_url]
        cwd = tmp_path
        added = _doc(
            wisp_cli("server", "users", "add", "bob", "--no-password", "--json", *db, cwd=cwd)
        )
        assert added == {"user": "bob", "admin": False, "password": False, "exit_code": 0}
        team = _doc(wisp_cli("server", "teams", "add", "lab", "--json", *db, cwd=cwd))
        assert team["team"] == "lab"
        key = _doc(wisp_cli("server", "keys", "create", "--json", *db, cwd=cwd))
        revoked = _doc(wisp_cli("server", "keys", "revoke", key["id"], "--json", *db, cwd=cwd))
        assert revoked["revoked"] == key["id"]
        login = _doc(wisp_cli("login", srv.url, "--key", srv.key, "--json", cwd=cwd))
        assert login["server_url"] == srv.url and login["verified"] is True
        make_run(tmp_path)
        synced = _doc(
            wisp_cli(
                "sync",
                "--all",
                "--json",
                "--dir",
                str(tmp_path),
                "--server",
                srv.url,
                "--key",
                srv.key,
                cwd=cwd,
            )
        )
        assert synced["synced"] == 1 and synced["exit_code"] == 0

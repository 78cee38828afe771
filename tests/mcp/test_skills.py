"""`wisp skills install`: the skill file each agent reads, and the commands it names work."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.cli._helpers import wisp_cli


def test_install_writes_each_agents_file(tmp_path: Path) -> None:
    """claude, cursor and codex files are written; AGENTS.md keeps its own text on reinstall."""
    (tmp_path / "AGENTS.md").write_text("# Our rules\nBe nice.\n")
    for _ in range(2):
        res = wisp_cli("skills", "--root", str(tmp_path), "--json", cwd=tmp_path)
        assert res.returncode == 0, res.stderr
    written = json.loads(res.stdout)["written"]
    assert len(written) == 3
    claude = (tmp_path / ".claude/skills/wisp/SKILL.md").read_text()
    assert claude.startswith("---\nname: wisp\n")
    agents = (tmp_path / "AGENTS.md").read_text()
    assert agents.startswith("# Our rules\nBe nice.\n")
    assert agents.count("<!-- wisp:begin -->") == 1
    assert (tmp_path / ".cursor/rules/wisp.mdc").read_text().startswith("---\ndescription:")


def test_every_command_the_skill_names_exists(tmp_path: Path) -> None:
    """Each `wisp X` the skill text shows is a real command with its options (--help works)."""
    from wisp.mcp._skills import skill_text

    text = skill_text()
    commands = set(re.findall(r"`wisp (\w+)", text))
    assert {"ls", "show", "query"} <= commands
    for cmd in commands:
        res = wisp_cli(cmd, "--help", cwd=tmp_path)
        assert res.returncode == 0, (cmd, res.stderr)
        for opt in re.findall(rf"`wisp {cmd} [^`]*`", text):
            for flag in re.findall(r"(--[a-z-]+)", opt):
                assert flag in res.stdout, (cmd, flag)

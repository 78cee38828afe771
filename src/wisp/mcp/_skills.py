"""``wisp skills install``: write the agent skill file (``skill.md`` in this package).

Where each agent reads skills, relative to the project folder:

- claude: ``.claude/skills/wisp/SKILL.md`` (front matter with ``name`` and ``description``)
- codex: ``AGENTS.md`` (a section between ``<!-- wisp:begin -->`` and ``<!-- wisp:end -->``,
  replaced in place on a later install, the rest of the file kept)
- cursor: ``.cursor/rules/wisp.mdc``
"""

from __future__ import annotations

import os
from importlib import resources

__all__ = ["AGENTS", "install", "skill_text"]

AGENTS = ("claude", "codex", "cursor")
BEGIN, END = "<!-- wisp:begin -->", "<!-- wisp:end -->"


def skill_text() -> str:
    return resources.files("wisp.mcp").joinpath("skill.md").read_text(encoding="utf-8")


def _body(text: str) -> str:
    """The skill without its front matter."""
    if text.startswith("---\n"):
        end = text.index("\n---\n", 4)
        return text[end + 5 :].lstrip("\n")
    return text


def _write(path: str, text: str) -> None:
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def install(agent: str, root: str = ".") -> list[str]:
    """Write the skill for ``agent`` (or ``"all"``) under ``root``; the paths written."""
    text = skill_text()
    written = []
    for name in AGENTS if agent == "all" else (agent,):
        if name == "claude":
            path = os.path.join(root, ".claude", "skills", "wisp", "SKILL.md")
            _write(path, text)
        elif name == "cursor":
            path = os.path.join(root, ".cursor", "rules", "wisp.mdc")
            head = (
                "---\ndescription: Track, watch and compare ML training runs with wisp\n"
                "alwaysApply: false\n---\n"
            )
            _write(path, head + _body(text))
        else:
            path = os.path.join(root, "AGENTS.md")
            section = f"{BEGIN}\n{_body(text).rstrip()}\n{END}\n"
            old = ""
            if os.path.exists(path):
                with open(path, encoding="utf-8") as f:
                    old = f.read()
            if BEGIN in old and END in old:
                start, stop = old.index(BEGIN), old.index(END) + len(END)
                new = old[:start] + section.rstrip("\n") + old[stop:]
            else:
                new = (old.rstrip("\n") + "\n\n" if old.strip() else "") + section
            _write(path, new)
        written.append(os.path.abspath(path))
    return written

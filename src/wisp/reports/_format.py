"""The report file: Markdown with YAML front matter and fenced ``wisp-panel`` blocks.

Format version 1 (``FORMAT_VERSION``; docs/reports.md)::

    ---
    wisp-report: 1                 # the format version (optional; 1 when absent)
    title: LR sweep on the small model
    project: spiral                # "entity/project" or "project"
    description: one line          # optional
    runsets:                       # name -> run set
      sweep: {filter: "config.lr > 1e-4 and tags contains 'sweep'", group: config.lr}
      base:  {runs: [r8f2k, r91aa]}
    ---
    Any Markdown.

    ```wisp-panel
    type: line
    runset: sweep                  # or inline: runs: "config.lr < 1" | [id, ...] | {run set}
    y: [val/loss]
    ```

A run set (``_panels.RunSet``): ``filter`` (the runs filter language, one grammar:
``wisp.server.query.filter``), ``runs`` (explicit run ids: exactly these runs; a filter beside
them is kept as a note and not applied), ``group`` (a field or a list of up to 5: runs with
equal values are drawn as one line with a band), ``max_step`` (points after it are not
drawn) and ``frozen_at`` (ISO time of ``wisp report freeze``, which writes ``runs`` and
``max_step``).  Panel blocks are YAML mappings (``_panels.Panel``, the panel types and
their fields); a panel block opens with a line of three or more backticks or tildes then
``wisp-panel`` and closes with the same fence.  Other fenced code blocks are Markdown and
are never read as panels.

Round trip: ``parse(text).text()`` gives ``text`` back byte for byte; a block or front
matter that was changed (``freeze``, ``add_panel``) is written anew with ``yaml.safe_dump``
(comments inside it are not kept), everything else as it was.  PyYAML is the
``reports`` extra, imported when a file is read or written.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from wisp.errors import UsageError, install_hint

__all__ = [
    "FORMAT_VERSION",
    "Document",
    "PanelBlock",
    "TextBlock",
    "dump_yaml",
    "load_yaml",
    "parse",
]

FORMAT_VERSION = 1
_FENCE = re.compile(r"^( {0,3})(`{3,}|~{3,})[ \t]*([^\s`]*)[^`]*$")
_INSTALL = f"reading and writing reports needs PyYAML: {install_hint('reports')}"


def _yaml() -> Any:
    try:
        import yaml
    except ImportError:
        raise UsageError(_INSTALL) from None
    return yaml


def load_yaml(text: str, where: str) -> Any:
    """The YAML document ``text``; UsageError naming ``where`` when it is not valid YAML."""
    yaml = _yaml()
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise UsageError(f"{where}: not valid YAML: {exc}") from None


def dump_yaml(data: Any) -> str:
    """``data`` as YAML in insertion order, lists and mappings of plain values on one line
    (``y: [val/loss]``), unicode kept, long lines not folded."""
    out: str = _yaml().safe_dump(
        data, sort_keys=False, allow_unicode=True, width=10_000, default_flow_style=None
    )
    return out


@dataclass
class TextBlock:
    """Markdown between panels, verbatim (newlines included)."""

    text: str


@dataclass
class PanelBlock:
    """One ``wisp-panel`` block: its YAML mapping, the line it starts on (1-based) and, while
    unchanged, its original text (fences included)."""

    spec: dict[str, Any]
    line: int = 0
    raw: str | None = None

    def text(self) -> str:
        if self.raw is not None:
            return self.raw
        return "```wisp-panel\n" + dump_yaml(self.spec) + "```\n"


@dataclass
class Document:
    """A parsed report file: front matter (``meta``) and the body's blocks, in order."""

    meta: dict[str, Any] = field(default_factory=dict)
    blocks: list[TextBlock | PanelBlock] = field(default_factory=list)
    raw_meta: str | None = None  # the front matter as written, "---" lines included

    def text(self) -> str:
        head = self.raw_meta
        if head is None:
            head = "---\n" + dump_yaml(self.meta) + "---\n"
        return head + "".join(b.text if isinstance(b, TextBlock) else b.text() for b in self.blocks)


def _front_matter(lines: list[str], source: str) -> tuple[dict[str, Any], str | None, int]:
    """(meta, its raw text, index of the first body line)."""
    if not lines or lines[0].rstrip("\r\n") != "---":
        raise UsageError(f"{source}: a report starts with a '---' line opening its front matter")
    for i in range(1, len(lines)):
        if lines[i].rstrip("\r\n") in ("---", "..."):
            meta = load_yaml("".join(lines[1:i]), f"{source}: front matter") or {}
            if not isinstance(meta, dict):
                raise UsageError(f"{source}: the front matter must be a mapping (key: value)")
            version = meta.get("wisp-report", FORMAT_VERSION)
            if version != FORMAT_VERSION:
                raise UsageError(
                    f"{source}: wisp-report: format version {version!r} is not supported "
                    f"(this wisp reads version {FORMAT_VERSION}); upgrade wisp"
                )
            return meta, "".join(lines[: i + 1]), i + 1
    raise UsageError(f"{source}: the front matter opened on line 1 is never closed with '---'")


def parse(text: str, source: str = "report") -> Document:
    """The document in ``text``; UsageError naming ``source`` and the line for what is wrong."""
    if not isinstance(text, str):
        raise UsageError(f"{source}: a report is text, got {type(text).__name__}")
    lines = text.splitlines(keepends=True)
    meta, raw_meta, i = _front_matter(lines, source)
    doc = Document(meta=meta, raw_meta=raw_meta)
    pending: list[str] = []
    fence: tuple[str, int] | None = None  # an open non-panel fence: (char, length)
    while i < len(lines):
        line = lines[i]
        m = _FENCE.match(line.rstrip("\r\n"))
        if fence is not None:
            if m and m.group(2)[0] == fence[0] and len(m.group(2)) >= fence[1] and not m.group(3):
                fence = None
            pending.append(line)
            i += 1
            continue
        if m and m.group(3) == "wisp-panel":
            start, mark = i, m.group(2)
            j = i + 1
            while j < len(lines):
                c = _FENCE.match(lines[j].rstrip("\r\n"))
                if c and c[2][0] == mark[0] and len(c[2]) >= len(mark) and not c[3]:
                    break
                j += 1
            if j == len(lines):
                raise UsageError(f"{source}: line {start + 1}: wisp-panel block is never closed")
            where = f"{source}: line {start + 1}: wisp-panel"
            spec = load_yaml("".join(lines[start + 1 : j]), where)
            if not isinstance(spec, dict):
                raise UsageError(f"{where}: a panel is a YAML mapping (type: line, ...)")
            if pending:
                doc.blocks.append(TextBlock("".join(pending)))
                pending = []
            doc.blocks.append(PanelBlock(spec, start + 1, "".join(lines[start : j + 1])))
            i = j + 1
            continue
        if m:
            fence = (m.group(2)[0], len(m.group(2)))
        pending.append(line)
        i += 1
    if pending:
        doc.blocks.append(TextBlock("".join(pending)))
    return doc

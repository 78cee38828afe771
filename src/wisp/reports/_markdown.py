"""The Markdown of a report's prose as HTML: a small, safe subset, standard library only.

Blocks: ATX headings, paragraphs, fenced code, block quotes, lists (``-``, ``*``, ``+``,
``1.``), thematic breaks, pipe tables.  Inline: code spans, ``**strong**``, ``*em*``/
``_em_``, links (http, https, mailto, ``#`` and relative targets only).  Raw HTML is shown as
text and images are links, so an exported report runs no script and fetches nothing.
"""

from __future__ import annotations

import html
import re

__all__ = ["to_html"]

_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)[ \t#]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
_RULE = re.compile(r"^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$")
_ITEM = re.compile(r"^ {0,3}([-*+]|\d{1,9}[.)])[ \t]+(.*)$")
_QUOTE = re.compile(r"^ {0,3}> ?(.*)$")
_TABLE_SEP = re.compile(r"^ *\|? *:?-{3,}:? *(\| *:?-{3,}:? *)*\|? *$")
_INLINE = re.compile(
    r"(?P<code>`+)(?P<codetext>.+?)(?P=code)"
    r"|!?\[(?P<text>[^\]]*)\]\((?P<url>[^)\s]*)\)"
    r"|\*\*(?P<strong>.+?)\*\*"
    r"|(?<![\w*])[*_](?P<em>[^*_\s](?:.*?[^*_\s])?)[*_](?![\w*])"
)
_SAFE_URL = re.compile(r"^(https?:|mailto:|#|[^:]*$)", re.IGNORECASE)


def _inline(text: str) -> str:
    out: list[str] = []
    pos = 0
    for m in _INLINE.finditer(text):
        out.append(html.escape(text[pos : m.start()]))
        if m.group("code"):
            out.append(f"<code>{html.escape(m.group('codetext').strip())}</code>")
        elif m.group("url") is not None:
            url = m.group("url")
            label = _inline(m.group("text")) or html.escape(url)
            if _SAFE_URL.match(url):
                out.append(f'<a href="{html.escape(url)}">{label}</a>')
            else:
                out.append(label)
        elif m.group("strong") is not None:
            out.append(f"<strong>{_inline(m.group('strong'))}</strong>")
        else:
            out.append(f"<em>{_inline(m.group('em'))}</em>")
        pos = m.end()
    out.append(html.escape(text[pos:]))
    return "".join(out)


def _cells(line: str) -> list[str]:
    line = line.strip()
    line = line[1:] if line.startswith("|") else line
    line = line[:-1] if line.endswith("|") else line
    return [c.strip() for c in line.split("|")]


def to_html(text: str) -> str:
    """``text`` (Markdown) as HTML."""
    lines = text.splitlines()
    out: list[str] = []
    para: list[str] = []
    i = 0

    def flush() -> None:
        if para:
            out.append(f"<p>{_inline(' '.join(s.strip() for s in para))}</p>")
            para.clear()

    while i < len(lines):
        line = lines[i]
        if not line.strip():
            flush()
            i += 1
            continue
        m = _FENCE.match(line)
        if m:
            flush()
            mark, code = m.group(1), []
            i += 1
            while i < len(lines) and not lines[i].strip().startswith(mark):
                code.append(lines[i])
                i += 1
            i += 1
            out.append(f"<pre><code>{html.escape(chr(10).join(code))}</code></pre>")
            continue
        m = _HEADING.match(line)
        if m:
            flush()
            n = len(m.group(1))
            out.append(f"<h{n}>{_inline(m.group(2))}</h{n}>")
            i += 1
            continue
        if _RULE.match(line) and not para:
            out.append("<hr>")
            i += 1
            continue
        if _QUOTE.match(line):
            flush()
            quoted = []
            while i < len(lines) and (q := _QUOTE.match(lines[i])):
                quoted.append(q.group(1))
                i += 1
            out.append(f"<blockquote>{to_html(chr(10).join(quoted))}</blockquote>")
            continue
        m = _ITEM.match(line)
        if m:
            flush()
            tag = "ol" if m.group(1)[0].isdigit() else "ul"
            items: list[str] = []
            while i < len(lines) and lines[i].strip():
                im = _ITEM.match(lines[i])
                if im:
                    items.append(im.group(2))
                else:
                    items[-1] += " " + lines[i].strip()
                i += 1
            body = "".join(f"<li>{_inline(t)}</li>" for t in items)
            out.append(f"<{tag}>{body}</{tag}>")
            continue
        if "|" in line and i + 1 < len(lines) and _TABLE_SEP.match(lines[i + 1]):
            flush()
            head = "".join(f"<th>{_inline(c)}</th>" for c in _cells(line))
            rows = []
            i += 2
            while i < len(lines) and "|" in lines[i] and lines[i].strip():
                rows.append("".join(f"<td>{_inline(c)}</td>" for c in _cells(lines[i])))
                i += 1
            body = "".join(f"<tr>{r}</tr>" for r in rows)
            out.append(f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
            continue
        para.append(line)
        i += 1
    flush()
    return "\n".join(out)

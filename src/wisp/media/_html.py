"""``wisp.Html``: an HTML document (a report, an interactive plot) logged as a file.

Stored value (docs/run-file.md, "Typed values", ``html`` version 1)::

    {"_type": "html", "path": "media/<hash>.html", "caption": str or null}

The file is UTF-8 HTML.  With ``inject=True`` (the default, as in wandb) a
``<meta charset="utf-8">`` and a small base stylesheet are put at the start of
the document's ``<head>`` (one is added when there is none).  The dashboard
never shows it as same-origin HTML: it sits in an ``<iframe sandbox>`` without
``allow-same-origin`` and the server sends it with a ``Content-Security-Policy``
whose ``sandbox`` directive gives it an opaque origin (see wisp.server).
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING, Any

from wisp._deferred import Deferred
from wisp.errors import UsageError
from wisp.media._common import check_caption, check_file

if TYPE_CHECKING:
    from wisp._deferred import ResolveContext

__all__ = ["INJECT", "Html"]

VERSION = 1
_WHAT = "wisp.Html"
INJECT = (
    '<meta charset="utf-8"><style>body{font-family:system-ui,sans-serif;font-size:14px;'
    "margin:8px;color:#222}table{border-collapse:collapse}td,th{border:1px solid #ccc;"
    "padding:2px 6px}</style>"
)
_HEAD = re.compile(r"<head(\s[^>]*)?>", re.IGNORECASE)
_HTML = re.compile(r"<html(\s[^>]*)?>", re.IGNORECASE)


class Html(Deferred):
    """HTML given as a string, an open text file, or the path of an ``.html`` file.

    A string ending in ``.html``/``.htm`` without ``<`` is read as a path, unless
    ``data_is_not_path=True`` (wandb's argument)."""

    __slots__ = ("_path", "_resolved", "_text", "caption", "inject")

    def __init__(
        self,
        data: Any,
        inject: bool = True,
        data_is_not_path: bool = False,
        caption: str | None = None,
    ) -> None:
        self.caption = check_caption(_WHAT, caption)
        if not isinstance(inject, bool):
            raise UsageError(f"{_WHAT}(inject=...) must be True or False, got {inject!r}")
        self.inject = inject
        self._resolved: dict[str, Any] | None = None
        self._path: str | None = None
        self._text: str | None = None
        if hasattr(data, "__fspath__") or (
            isinstance(data, str)
            and not data_is_not_path
            and data.lower().endswith((".html", ".htm"))
            and "<" not in data
        ):
            self._path = check_file(_WHAT, os.fspath(data), (".html", ".htm"))[0]
        elif isinstance(data, str):
            self._text = data
        elif hasattr(data, "read"):
            text = data.read()
            if not isinstance(text, str):
                raise UsageError(f"{_WHAT}(file) must be opened in text mode")
            self._text = text
        else:
            raise UsageError(
                f"{_WHAT}(data) has type {type(data).__name__}; expected an HTML string, a text "
                "file or the path of an .html file"
            )

    def estimate_bytes(self) -> int:
        if self._text is not None:
            return len(self._text)
        return os.path.getsize(self._path) if self._path else 0

    def resolve(self, ctx: ResolveContext) -> dict[str, Any]:
        if self._resolved is None:
            text = self._text
            if text is None:
                assert self._path is not None
                with open(self._path, encoding="utf-8", errors="replace") as f:
                    text = f.read()
            if self.inject:
                text = inject(text)
            self._text = None
            self._resolved = {
                "_type": "html",
                "path": ctx.save_media(text.encode("utf-8", "surrogatepass"), ".html"),
                "caption": self.caption,
            }
        return self._resolved

    def __repr__(self) -> str:
        return f"<wisp.Html caption={self.caption!r}>"


def inject(text: str) -> str:
    """``text`` with :data:`INJECT` at the start of its ``<head>``."""
    m = _HEAD.search(text)
    if m:
        return text[: m.end()] + INJECT + text[m.end() :]
    m = _HTML.search(text)
    if m:
        return text[: m.end()] + "<head>" + INJECT + "</head>" + text[m.end() :]
    return "<head>" + INJECT + "</head>" + text

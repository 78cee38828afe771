"""Uploading runs to a wisp server: transport, uploader thread, ``wisp.sync()``.

Private package; the public surface is ``wisp.sync`` and the online mode of
``wisp.init``.  See docs/sync.md.
"""

from __future__ import annotations

__all__: list[str] = []

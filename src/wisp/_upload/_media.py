"""The files a run's records refer to, sent to the server before the records.

Media (images, tables, audio ...) are named by ``path`` in a record; each goes up by
sha256 (``HEAD`` then ``PUT`` when missing) and the record gains a ``sha256``.  Files saved
into the run (FILE records, ``files/...``) go up once, when the server lacks them.  Only
files inside the run directory are sent.  :meth:`MediaSender.wire` is a record's payload
as the server takes it (history rows as JSON, media uploaded).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from typing import Any

from wisp._runfile import Record, RecordType, history_json
from wisp._upload._describe import refers_to_files
from wisp._upload._transport import ApiClient

__all__ = ["MAX_SAVED_BYTES", "MediaSender"]

log = logging.getLogger("wisp")
MAX_SAVED_BYTES = 128 * 1024 * 1024  # saved files sent with the run (read whole, in memory)

_dumps = json.JSONEncoder(allow_nan=True, separators=(",", ":"), ensure_ascii=False).encode


class MediaSender:
    """Sends one run directory's media and saved files through ``client``, each once."""

    def __init__(self, run_dir: str, client: ApiClient) -> None:
        self.run_dir = run_dir
        self.client = client
        self.sent = 0  # files the server lacked and got from us
        self._known: set[str] = set()  # digests the server has (or that are not sent)

    def wire(self, rec: Record) -> bytes:
        """A record's payload as JSON for the server (media uploaded, refs gain sha256)."""
        payload = rec.payload
        if rec.type == RecordType.HISTORY:  # binary columns in the file, JSON on the wire
            return history_json(payload, self._upload_refs if refers_to_files(payload) else None)
        if rec.type == RecordType.FILE:
            self._upload_saved(payload)
            return payload
        if refers_to_files(payload):
            return self._with_media(payload)
        return payload

    def _inside(self, rel: str) -> str | None:
        """The real path of ``rel`` when it is a file inside the run directory."""
        root = os.path.realpath(self.run_dir)
        full = os.path.realpath(os.path.join(root, rel))
        if not full.startswith(root + os.sep) or not os.path.isfile(full):
            return None
        return full

    def _send(self, digest: str, data: bytes) -> None:
        """``data`` to the server unless it has it (asked once per digest)."""
        if digest in self._known:
            return
        if not self.client.has_media(digest):
            self.client.put_media(digest, data)
            self.sent += 1
        self._known.add(digest)

    def _upload_saved(self, payload: bytes) -> None:
        """The bytes of a file saved into the run (``files/...``, its sha256 recorded at save
        time), so servers serve it: sent once, when the server lacks it.  A file that changed
        since it was recorded, or is over :data:`MAX_SAVED_BYTES`, is not sent (logged once;
        large files belong in artifacts, which stream)."""
        obj = json.loads(payload)
        rel, digest = obj.get("path"), obj.get("sha256")
        if not isinstance(rel, str) or not isinstance(digest, str) or digest in self._known:
            return
        full = self._inside(rel)
        if full is None:
            return
        if os.path.getsize(full) > MAX_SAVED_BYTES:
            log.warning(
                "wisp: %s is over %d MiB: not uploaded with the run (log it as a wisp.Artifact)",
                full,
                MAX_SAVED_BYTES >> 20,
            )
            self._known.add(digest)
            return
        with open(full, "rb") as f:
            data = f.read()
        if hashlib.sha256(data).hexdigest() != digest:
            log.warning("wisp: %s changed after it was saved: not uploaded", full)
            self._known.add(digest)
        else:
            self._send(digest, data)

    def _with_media(self, payload: bytes) -> bytes:
        obj = json.loads(payload)
        changed = self._upload_refs(obj)
        return _dumps(obj).encode("utf-8") if changed else payload

    def _upload_refs(self, obj: Any) -> bool:
        changed = False
        if isinstance(obj, dict):
            path = obj.get("path")
            if isinstance(path, str) and "sha256" not in obj:
                digest = self._upload_media(path)
                if digest is not None:
                    obj["sha256"] = digest
                    changed = True
            for v in obj.values():
                if isinstance(v, (dict, list)):
                    changed = self._upload_refs(v) or changed
        elif isinstance(obj, list):
            for v in obj:
                if isinstance(v, (dict, list)):
                    changed = self._upload_refs(v) or changed
        return changed

    def _upload_media(self, rel: str) -> str | None:
        full = self._inside(rel)
        if full is None:
            return None  # only files inside the run directory are uploaded
        with open(full, "rb") as f:
            data = f.read()
        digest = hashlib.sha256(data).hexdigest()
        if digest not in self._known and full.endswith(".table.json"):
            self._upload_table_images(data)
        self._send(digest, data)
        return digest

    def _upload_table_images(self, data: bytes) -> None:
        """Upload the images a table file refers to (the file itself is sent unchanged, so
        readers find them by the sha256 in their ``media/<sha256>.png`` names)."""
        try:
            table = json.loads(data)
        except ValueError:
            return  # not a table we can read: send it as it is
        if isinstance(table, dict):
            self._upload_refs(table.get("data"))

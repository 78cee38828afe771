"""The artifact manifest: what one version holds (format version 1).

A manifest is JSON::

    {"version": 1,
     "type": "dataset",
     "entries": {
        "train/0001.png": {"digest": "<sha256 hex>", "size": 1234},
        "labels":          {"ref": "s3://bucket/labels.csv", "digest": "<etag or sha256>",
                            "size": 99}}}

``entries`` maps a relative POSIX path (no ``..``, no leading ``/``) to either a stored
file (``digest`` is the sha256 of its bytes; the bytes live in the cache and on the
server under that digest) or a reference (``ref`` is a ``file://``, ``http(s)://`` or
``s3://`` URI; ``digest`` the checksum or ETag recorded when it was added, or ``""``
when none could be; nothing is copied).  An entry may carry ``extra`` (JSON object).

The *manifest digest* is the sha256 of the canonical JSON (sorted keys, no spaces) of
``{"entries": ...}`` (entries without ``extra``): two versions with the same files have
the same digest, so logging identical content again is the same version.  Metadata,
description and aliases are not part of it.  The server checks the same rule
(:func:`manifest_digest` and :func:`check_manifest` are shared by both sides).
"""

from __future__ import annotations

import hashlib
import json

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "MANIFEST_VERSION",
    "MAX_ENTRIES",
    "NAME_CHARS",
    "check_entry_path",
    "check_manifest",
    "check_name",
    "manifest_digest",
]

MANIFEST_VERSION = 1
MAX_ENTRIES = 1_000_000
MAX_PATH = 1024
REF_SCHEMES = ("file://", "http://", "https://", "s3://")
NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.")
MAX_NAME = 128
_HEX = frozenset("0123456789abcdef")


def check_name(name: Any, what: str = "name") -> str | None:
    """Why ``name`` is not a valid artifact name or alias, or None."""
    if not isinstance(name, str) or not name:
        return f"{what} must be a non-empty string"
    if len(name) > MAX_NAME:
        return f"{what} is longer than {MAX_NAME} characters"
    if not set(name) <= NAME_CHARS or name[0] == ".":
        return f"{what} {name!r} may hold only letters, digits, '-', '_' and '.'"
    return None


def check_entry_path(path: Any) -> str | None:
    """Why ``path`` is not a valid entry path, or None."""
    if not isinstance(path, str) or not path:
        return "entry paths must be non-empty strings"
    if len(path) > MAX_PATH:
        return f"entry path longer than {MAX_PATH} characters: {path[:40]!r}..."
    if path.startswith("/") or "\\" in path or "\x00" in path:
        return f"entry path {path!r} must be relative and use '/'"
    if any(p in ("", ".", "..") for p in path.split("/")):
        return f"entry path {path!r} has an empty, '.' or '..' part"
    return None


def is_sha256(s: Any) -> bool:
    return isinstance(s, str) and len(s) == 64 and set(s) <= _HEX


def check_manifest(doc: Any) -> str | None:
    """Why ``doc`` is not a valid manifest (version 1), or None."""
    if not isinstance(doc, dict):
        return "manifest must be an object"
    if doc.get("version") != MANIFEST_VERSION:
        return f"manifest version must be {MANIFEST_VERSION}"
    entries = doc.get("entries")
    if not isinstance(entries, dict):
        return "manifest.entries must be an object"
    if len(entries) > MAX_ENTRIES:
        return f"manifest has more than {MAX_ENTRIES} entries"
    for path, e in entries.items():
        why = check_entry_path(path)
        if why:
            return why
        if not isinstance(e, dict):
            return f"entry {path!r} must be an object"
        size = e.get("size")
        if size is not None and (type(size) is not int or size < 0):
            return f"entry {path!r}: size must be an integer >= 0"
        ref = e.get("ref")
        if ref is None:
            if not is_sha256(e.get("digest")):
                return f"entry {path!r}: digest must be 64 lowercase hex digits"
            if size is None:
                return f"entry {path!r}: size is required"
        else:
            if not isinstance(ref, str) or not ref.startswith(REF_SCHEMES):
                return f"entry {path!r}: ref must be a file://, http(s):// or s3:// URI"
            if not isinstance(e.get("digest", ""), str):
                return f"entry {path!r}: digest must be a string"
        extra = e.get("extra")
        if extra is not None and not isinstance(extra, dict):
            return f"entry {path!r}: extra must be an object"
    return None


def _canonical_entry(e: dict[str, Any]) -> dict[str, Any]:
    return {k: e[k] for k in ("digest", "ref", "size") if e.get(k) is not None}


def manifest_digest(entries: dict[str, dict[str, Any]]) -> str:
    """The digest that identifies a version's content (see the module docstring)."""
    canon = {p: _canonical_entry(e) for p, e in entries.items()}
    blob = json.dumps({"entries": canon}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()


def make_manifest(type_: str, entries: dict[str, dict[str, Any]]) -> dict[str, Any]:
    return {"version": MANIFEST_VERSION, "type": type_, "entries": dict(sorted(entries.items()))}

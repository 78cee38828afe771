"""The run file: an append-only, CRC-framed log of one run (format version 1).

A run file is the source of truth for a run and the queue the uploader reads.
It is written by one writer thread, only ever appended to, and read back by
:func:`iter_records`, which stops cleanly at a torn or corrupt tail.

Layout (all integers little-endian)::

    header   16 bytes   magic b"WISPRUN\\0" | u16 version (=1) | u16 flags (=0) | u32 reserved (=0)
    record   9 + N      u32 N | u32 crc | u8 type | N bytes payload
    record   ...

``crc`` is the CRC-32 (zlib) of the 4 length bytes, the type byte and the
payload, so a damaged length, type or payload is detected alike.  ``N`` is at
most :data:`MAX_PAYLOAD`; a larger length is treated as corruption.

Payloads are UTF-8 JSON objects as written by Python's ``json`` module with
``allow_nan=True``: the non-standard tokens ``NaN``, ``Infinity`` and
``-Infinity`` carry non-finite floats.  A value in a history row that is a JSON
object is a typed value (``{"_type": "histogram", ...}``, see docs/run-file.md);
user keys are flat strings and never hold plain objects.

Record types (``RecordType``) and their payloads are specified in
docs/run-file.md.  Readers skip record types they do not know, so new types can
be added without a version bump; a change to the framing or to the meaning of
an existing type bumps :data:`FORMAT_VERSION`.
"""

from __future__ import annotations

import os
import struct
import zlib
from collections.abc import Iterator
from typing import BinaryIO, NamedTuple

from wisp.errors import CorruptRunFileError

__all__ = [
    "FORMAT_VERSION",
    "HEADER",
    "MAGIC",
    "MAX_PAYLOAD",
    "Record",
    "RecordType",
    "ScanResult",
    "encode_record",
    "iter_records",
    "scan",
]

MAGIC = b"WISPRUN\x00"
FORMAT_VERSION = 1
HEADER = MAGIC + struct.pack("<HHI", FORMAT_VERSION, 0, 0)
HEADER_SIZE = len(HEADER)
MAX_PAYLOAD = 64 * 1024 * 1024

_FRAME = struct.Struct("<IIB")
FRAME_SIZE = _FRAME.size
_LEN = struct.Struct("<I")


class RecordType:
    """Record type codes (the u8 in each frame)."""

    RUN = 1  # a writer segment starts: run id, writer id, metadata
    CONFIG = 2  # full config snapshot
    HISTORY = 3  # a batch of history rows
    SUMMARY = 4  # summary snapshot
    METRIC = 5  # define_metric
    FINISH = 6  # the run ended: state, exit code
    CONSOLE = 7  # captured console lines
    SYSTEM = 8  # system metric samples
    FILE = 9  # a file saved into the run directory
    ALERT = 10  # a user alert
    WARNING = 11  # a background failure, counted
    RESUME = 12  # a resumed segment continues an earlier run

    NAMES = {
        1: "run",
        2: "config",
        3: "history",
        4: "summary",
        5: "metric",
        6: "finish",
        7: "console",
        8: "system",
        9: "file",
        10: "alert",
        11: "warning",
        12: "resume",
    }


class Record(NamedTuple):
    """One framed record: its type code, raw payload and where it starts."""

    type: int
    payload: bytes
    offset: int


class ScanResult(NamedTuple):
    """How far a run file is readable."""

    records: int
    valid_end: int  # offset just past the last good record
    size: int  # bytes in the file when scanned
    ignored: int  # bytes after valid_end (torn or corrupt tail)


def encode_record(rtype: int, payload: bytes) -> bytes:
    """Frame one record (length, CRC, type, payload)."""
    n = len(payload)
    if n > MAX_PAYLOAD:
        raise ValueError(f"record payload of {n} bytes exceeds {MAX_PAYLOAD}")
    head = _LEN.pack(n) + bytes((rtype,))
    crc = zlib.crc32(payload, zlib.crc32(head))
    return _FRAME.pack(n, crc, rtype) + payload


def check_header(data: bytes, path: str = "<run file>") -> None:
    """Raise CorruptRunFileError unless ``data`` starts with a version-1 header."""
    if len(data) < HEADER_SIZE or data[:8] != MAGIC:
        raise CorruptRunFileError(f"{path}: not a wisp run file (bad magic)")
    (version,) = struct.unpack_from("<H", data, 8)
    if version != FORMAT_VERSION:
        raise CorruptRunFileError(
            f"{path}: run file format version {version} is not supported "
            f"(this wisp reads version {FORMAT_VERSION})"
        )


def _iter_buffer(data: bytes | memoryview, start: int) -> Iterator[Record]:
    pos = start
    end = len(data)
    unpack = _FRAME.unpack_from
    crc32 = zlib.crc32
    while pos + FRAME_SIZE <= end:
        n, crc, rtype = unpack(data, pos)
        if n > MAX_PAYLOAD:
            return
        body_start = pos + FRAME_SIZE
        body_end = body_start + n
        if body_end > end:
            return
        payload = bytes(data[body_start:body_end])
        if crc32(payload, crc32(bytes(data[pos : pos + 4]) + bytes((rtype,)))) != crc:
            return
        yield Record(rtype, payload, pos)
        pos = body_end


def iter_records(
    source: str | os.PathLike[str] | bytes, *, start: int = HEADER_SIZE
) -> Iterator[Record]:
    """Yield every intact record, stopping at the first torn or corrupt one.

    ``source`` is a path or the file's bytes.  ``start`` lets a tailing reader
    resume from a saved offset (it must be a record boundary).
    """
    if isinstance(source, bytes):
        data = source
        name = "<bytes>"
    else:
        name = os.fspath(source)
        with open(name, "rb") as f:
            data = f.read()
    check_header(data, name)
    yield from _iter_buffer(data, start)


def scan(source: str | os.PathLike[str] | bytes) -> ScanResult:
    """Count the intact records and the bytes of torn or corrupt tail."""
    if isinstance(source, bytes):
        data = source
    else:
        with open(os.fspath(source), "rb") as f:
            data = f.read()
    check_header(data)
    count = 0
    valid_end = HEADER_SIZE
    for rec in _iter_buffer(data, HEADER_SIZE):
        count += 1
        valid_end = rec.offset + FRAME_SIZE + len(rec.payload)
    return ScanResult(count, valid_end, len(data), len(data) - valid_end)


class RecordTail:
    """Reads records appended to a growing run file, from a saved offset.

    Used by uploaders and ``wisp sync --follow``: each :meth:`read` returns the
    complete records that appeared since the last call and never returns a
    partial one (a record still being written is picked up next time).
    """

    def __init__(self, path: str | os.PathLike[str], offset: int = HEADER_SIZE) -> None:
        self.path = os.fspath(path)
        self.offset = offset

    def read(self, max_bytes: int = 8 * 1024 * 1024) -> list[Record]:
        with open(self.path, "rb") as f:
            if self.offset == HEADER_SIZE or self.offset < HEADER_SIZE:
                check_header(f.read(HEADER_SIZE), self.path)
                self.offset = max(self.offset, HEADER_SIZE)
            f.seek(self.offset)
            data = f.read(max_bytes)
        records: list[Record] = []
        base = self.offset
        pos = 0
        for rec in _iter_buffer(data, 0):
            records.append(Record(rec.type, rec.payload, base + rec.offset))
            pos = rec.offset + FRAME_SIZE + len(rec.payload)
        if not records and len(data) == max_bytes >= FRAME_SIZE:
            # one record larger than the read window: read exactly that record
            n = _LEN.unpack_from(data, 0)[0]
            if n <= MAX_PAYLOAD:
                return self._read_one_large(n)
        self.offset = base + pos
        return records

    def _read_one_large(self, n: int) -> list[Record]:
        with open(self.path, "rb") as f:
            f.seek(self.offset)
            data = f.read(FRAME_SIZE + n)
        recs = list(_iter_buffer(data, 0))
        if not recs:
            return []
        rec = recs[0]
        out = [Record(rec.type, rec.payload, self.offset)]
        self.offset += FRAME_SIZE + n
        return out


def write_header(f: BinaryIO) -> None:
    """Write the file header to a new, empty run file."""
    f.write(HEADER)

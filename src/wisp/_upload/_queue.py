"""The upload queue: the run file's records from the cursor on, numbered, in batches.

:class:`RecordQueue` reads records with a :class:`~wisp._runfile.RecordTail` and gives
each its ``seq`` (its ordinal within its writer's segment: 0 is the segment's RUN record).
A batch holds records of one writer segment only.  :func:`encode_records` writes a batch as
the body of ``POST /runs/{key}/records`` (``wisp._wire.RecordsBody``), with set-aside
records (:func:`load_set_aside`, ``rejected.jsonl``) replaced by what is sent instead.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from wisp._rundir import Cursor, read_rejected
from wisp._runfile import FRAME_SIZE, HEADER_SIZE, Record, RecordTail, RecordType
from wisp._upload._rejected import placeholder
from wisp.errors import FatalApiError

__all__ = ["RecordQueue", "encode_records", "end_of", "load_set_aside"]

_dumps = json.JSONEncoder(allow_nan=True, separators=(",", ":"), ensure_ascii=False).encode

#: a record's file offset -> (type, payload) sent in its place
SetAside = dict[int, tuple[int, bytes]]


def end_of(rec: Record) -> int:
    """The file offset just after ``rec``."""
    return rec.offset + FRAME_SIZE + len(rec.payload)


def load_set_aside(run_dir: str) -> SetAside:
    """Records set aside before (422, ``rejected.jsonl``): the WARNING payload sent in
    their place, or for a history record with some bad rows, its good rows."""
    out: SetAside = {}
    for e in read_rejected(run_dir):
        if "offset" not in e:
            continue
        if e.get("type") == RecordType.HISTORY and e.get("good") is not None:
            out[e["offset"]] = (RecordType.HISTORY, _dumps(e["good"]).encode("utf-8"))
        else:
            out[e["offset"]] = (RecordType.WARNING, placeholder(e))
    return out


def encode_records(
    writer_id: str,
    first_seq: int,
    batch: list[Record],
    *,
    wire: Callable[[Record], bytes],
    instead: SetAside | None,
    compress: bool,
) -> bytes:
    """A ``wisp._wire.RecordsBody``, written byte by byte (payloads are JSON already;
    ``wire`` makes one so); a record in ``instead`` is replaced by what it maps to."""
    parts = [
        b'{"writer_id":',
        _dumps(writer_id).encode(),
        b',"first_seq":',
        str(first_seq).encode(),
        b',"records":[',
    ]
    for i, rec in enumerate(batch):
        other = instead.get(rec.offset) if instead else None
        if other is None:
            rtype, payload = rec.type, wire(rec)
        else:
            rtype, payload = other
        parts.append(b'{"type":%d,"data":' % rtype if i == 0 else b',{"type":%d,"data":' % rtype)
        parts.append(payload)
        parts.append(b"}")
    parts.append(b"]}")
    raw = b"".join(parts)
    if not compress:
        return raw
    import zlib

    z = zlib.compressobj(1, zlib.DEFLATED, 31)  # gzip container, fast level
    return z.compress(raw) + z.flush()


class RecordQueue:
    """Records of the run file at ``path`` read from ``cursor`` on and not acknowledged yet."""

    def __init__(self, path: str, cursor: Cursor) -> None:
        self.path = path
        self.tail = RecordTail(path, cursor.offset)
        # (writer_id, seq, record) read but not yet acknowledged, in file order
        self.pending: list[tuple[str, int, Record]] = []
        self._read_writer = cursor.writer_id
        self._read_seq = cursor.acked_seq + 1
        self.finish_seen = False  # the last record read is the run's finish record

    def fill(self, max_bytes: int) -> None:
        """Read what the file has now (about ``max_bytes``) into :attr:`pending`."""
        for rec in self.tail.read(max_bytes):
            if rec.type == RecordType.RUN:
                wid = json.loads(rec.payload).get("writer_id")
                if wid != self._read_writer:
                    self._read_writer, self._read_seq = wid, 0
            self.finish_seen = rec.type == RecordType.FINISH
            if self._read_writer is None:
                raise FatalApiError(f"{self.path}: records before the first run record")
            self.pending.append((self._read_writer, self._read_seq, rec))
            self._read_seq += 1

    def batch(self, max_bytes: int, max_records: int | None) -> tuple[str, int, list[Record], int]:
        """``(writer_id, first_seq, records, size)``: the next pending records of one writer
        segment, about ``max_bytes`` of payload (one record at least)."""
        writer_id, first_seq = self.pending[0][0], self.pending[0][1]
        batch: list[Record] = []
        size = 0
        for wid, _seq, rec in self.pending:
            if wid != writer_id or (batch and size + len(rec.payload) > max_bytes):
                break
            if max_records is not None and len(batch) >= max_records:
                break
            batch.append(rec)
            size += len(rec.payload) + 24
        return writer_id, first_seq, batch, size

    def acked(self, n: int) -> None:
        """The first ``n`` pending records are on the server."""
        del self.pending[:n]

    def restart(self, writer_id: str, acked_seq: int, cursor: Cursor, max_bytes: int) -> None:
        """Read the file again from the start, skipping the records of ``writer_id`` up to
        ``acked_seq``; ``cursor`` (a fresh one) moves past the records skipped."""
        self.pending.clear()
        self.tail.offset = HEADER_SIZE
        self._read_writer, self._read_seq = None, 0
        while True:
            self.fill(max_bytes)
            if not self.pending:
                return
            keep = [p for p in self.pending if not (p[0] == writer_id and p[1] <= acked_seq)]
            if keep:
                self.pending = keep
                return
            wid, seq, last = self.pending[-1]
            cursor.offset = end_of(last)
            cursor.writer_id, cursor.acked_seq = wid, seq
            self.pending.clear()

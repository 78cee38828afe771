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
``allow_nan=True`` (the non-standard tokens ``NaN``, ``Infinity`` and
``-Infinity`` carry non-finite floats), except HISTORY records, which are a
binary columnar batch (JSON encoding of floats cost ~8 us a row; this costs
well under 1 us)::

    history  u32 H | H bytes JSON header | column data
    header   {"blocks": [{"rows": n, "keys": [k, ...], "cols": ["d"|"q"|"j", ...],
                          "index": bool}, ...]}
    block    [u32 x n row indices, if "index"] | i64 x n steps | f64 x n timestamps |
             one column per key: "d" f64 x n, "q" i64 x n, "j" u32 L + L bytes JSON list

Rows of a batch are grouped into blocks by their exact key sequence; a batch
with more than one block stores each row's position in the batch ("index").
A value in a history row that is a JSON object is a typed value
(``{"_type": "histogram", ...}``, see docs/run-file.md); user keys are flat
strings and never hold plain objects.  :func:`decode_payload` turns any record
into its JSON-like form (history: ``{"rows": [[step, ts, {k: v}], ...]}``).

Record types (``RecordType``, defined in ``wisp._protocol`` and re-exported
here) and their payloads are specified in docs/run-file.md.  Readers skip record
types they do not know, so new types can be added without a version bump; a
change to the framing or to the meaning of an existing type bumps
:data:`FORMAT_VERSION`.
"""

from __future__ import annotations

import json
import os
import struct
import sys
import zlib
from array import array
from collections import namedtuple
from collections.abc import Callable, Iterator, Sequence
from itertools import chain
from math import isfinite
from operator import itemgetter

from wisp._protocol import RecordType  # re-exported: the one definition is in _protocol
from wisp.errors import CorruptRunFileError

__all__ = [
    "FORMAT_VERSION",
    "HEADER",
    "MAGIC",
    "MAX_PAYLOAD",
    "Record",
    "RecordType",
    "ScanResult",
    "decode_history",
    "decode_payload",
    "encode_history",
    "encode_history_batch",
    "encode_record",
    "frame_types",
    "history_columns",
    "history_json",
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


TYPE_CHECKING = False  # typing costs ~15 ms to import; only type checkers need it
if TYPE_CHECKING:
    from typing import Any, NamedTuple

    class Record(NamedTuple):
        type: int
        payload: bytes
        offset: int

    class ScanResult(NamedTuple):
        records: int
        valid_end: int
        size: int
        ignored: int
else:
    #: One framed record: its type code, raw payload and where it starts.
    Record = namedtuple("Record", "type payload offset")
    #: How far a run file is readable: intact records, offset past the last one,
    #: file size, and bytes of torn or corrupt tail ignored.
    ScanResult = namedtuple("ScanResult", "records valid_end size ignored")


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


def frame_types(path: str | os.PathLike[str]) -> Iterator[int]:
    """The type of each complete record in ``path``, in order, hopping over payloads.

    Checks neither the header nor CRCs: for files whose records were already
    verified (acknowledged by a server), where reading every payload would be waste.
    """
    with open(os.fspath(path), "rb") as f:
        f.seek(HEADER_SIZE)
        size = os.fstat(f.fileno()).st_size
        pos = HEADER_SIZE
        while pos + FRAME_SIZE <= size:
            n, _crc, rtype = _FRAME.unpack(f.read(FRAME_SIZE))
            pos += FRAME_SIZE + n
            if pos > size:
                return
            yield rtype
            f.seek(pos)


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
                head = f.read(HEADER_SIZE)
                if len(head) < HEADER_SIZE and MAGIC.startswith(head):
                    return []  # a run file just created: its writer has not flushed the header
                check_header(head, self.path)
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


# -- history batches ----------------------------------------------------------------------------

_U32 = struct.Struct("<I")
_SWAP = sys.byteorder != "little"
_json_dumps = json.JSONEncoder(allow_nan=True, separators=(",", ":"), ensure_ascii=False).encode


def _le(a: array[Any]) -> bytes:
    if _SWAP:
        a = array(a.typecode, a)
        a.byteswap()
    return a.tobytes()


def _column(values: Sequence[Any]) -> tuple[str, bytes]:
    types = set(map(type, values))
    if len(types) == 1:
        kind = types.pop()
        if kind is float:
            return "d", _le(array("d", values))
        if kind is int:
            try:
                return "q", _le(array("q", values))
            except OverflowError:  # past int64: keep exact in JSON
                pass
    data = _json_dumps(values).encode("utf-8")
    return "j", _U32.pack(len(data)) + data


# a row's step, timestamp and values are its last three items: [step, time, values], or a
# writer's queued (ROW, step, time, values) as it is (no copy of each row to encode it)
_first = itemgetter(-3)
_second = itemgetter(-2)
_third = itemgetter(-1)


def encode_history(rows: Sequence[Sequence[Any]]) -> bytes:
    """Encode ``[[step, timestamp, {key: value}], ...]`` as one HISTORY payload (each row
    may have more items before these three: they are read from its end)."""
    return encode_history_batch(rows)[0]


def _values_of_block(dicts: list[dict[str, Any]]) -> list[Any]:
    """Every value of same-shaped dicts, row after row (one C loop, one list)."""
    return list(chain.from_iterable(map(dict.values, dicts)))


def encode_history_batch(rows: Sequence[Sequence[Any]]) -> tuple[bytes, bool]:
    """:func:`encode_history`, and whether the rows all have the same keys in the same
    order (then the last row holds every key's last value: the writer's summary).

    Rows with the same keys (in the same order) form one block.  No object is made per row
    (a transpose with ``zip`` would make two: enough, in a 256-row batch, to set off a
    garbage collection in the user's process every batch): a block's values are read off
    its dicts into one list in one C loop (``chain``), typed in one pass; an all-float
    block is converted to one ``array`` whose strided slices are its columns.  Mixed
    blocks go column by column over strided slices of the same list.
    """
    dicts = list(map(_third, rows))
    groups: dict[tuple[str, ...], list[int] | None]
    first = list(dicts[0]) if dicts else []
    # one shape: every dict's keys, end to end, repeat the first's (keys are unique in a
    # dict, so each dict then has exactly those keys in that order); compared by identity
    # first, as logged keys usually are the same string objects
    one_shape = list(chain.from_iterable(dicts)) == first * len(dicts)
    if one_shape:  # the usual batch
        groups = {tuple(first): None} if dicts else {}
    else:
        groups = {}
        for i, d in enumerate(dicts):
            keys = tuple(d)
            g = groups.get(keys)
            if g is None:
                groups[keys] = [i]
            else:
                g.append(i)
    indexed = len(groups) > 1
    blocks = []
    parts: list[bytes] = []
    for keys, idx in groups.items():
        if idx is None:
            block_rows, block_dicts = rows, dicts
        else:
            block_rows = [rows[i] for i in idx]
            block_dicts = [dicts[i] for i in idx]
            parts.append(_le(array("I", idx)))
        parts.append(_le(array("q", map(_first, block_rows))))
        parts.append(_le(array("d", map(_second, block_rows))))
        width = len(keys)
        values = _values_of_block(block_dicts)
        if width and set(map(type, values)) == {float}:
            table = array("d", values)
            cols = ["d"] * width
            parts.extend(_le(table[j::width]) for j in range(width))
        else:
            cols = []
            for j in range(width):
                code, data = _column(values[j::width])
                cols.append(code)
                parts.append(data)
        blocks.append({"rows": len(block_rows), "keys": list(keys), "cols": cols, "index": indexed})
    header = _json_dumps({"blocks": blocks}).encode("utf-8")
    return b"".join([_U32.pack(len(header)), header, *parts]), one_shape


def _take(payload: bytes, pos: int, typecode: str, n: int) -> tuple[list[Any], int]:
    a = array(typecode)
    end = pos + n * a.itemsize
    if end > len(payload):
        raise ValueError("history payload is shorter than its header says")
    a.frombytes(payload[pos:end])
    if _SWAP:
        a.byteswap()
    return a.tolist(), end


def decode_history(payload: bytes) -> list[list[Any]]:
    """Decode one HISTORY payload back into ``[[step, timestamp, {key: value}], ...]``."""
    (hlen,) = _U32.unpack_from(payload, 0)
    header = json.loads(payload[4 : 4 + hlen])
    pos = 4 + hlen
    out: list[list[Any]] = []
    placed: list[tuple[list[int], list[list[Any]]]] = []
    for block in header["blocks"]:
        n = block["rows"]
        index: list[int] = []
        if block["index"]:
            index, pos = _take(payload, pos, "I", n)
        steps, pos = _take(payload, pos, "q", n)
        stamps, pos = _take(payload, pos, "d", n)
        columns = []
        for code in block["cols"]:
            if code == "j":
                (length,) = _U32.unpack_from(payload, pos)
                col = json.loads(payload[pos + 4 : pos + 4 + length])
                pos += 4 + length
            else:
                col, pos = _take(payload, pos, code, n)
            columns.append(col)
        keys = block["keys"]
        block_rows = [
            [steps[i], stamps[i], dict(zip(keys, [c[i] for c in columns], strict=True))]
            for i in range(n)
        ]
        if block["index"]:
            placed.append((index, block_rows))
        else:
            out.extend(block_rows)
    if placed:
        total = sum(len(b) for _, b in placed)
        ordered: list[list[Any]] = [[] for _ in range(total)]
        for index, block_rows in placed:
            for i, row in zip(index, block_rows, strict=True):
                ordered[i] = row
        out.extend(ordered)
    return out


Columns = dict[str, tuple[list[int], list[float], list[float]]]


def history_columns(payload: bytes, out: Columns, want: set[str] | None = None) -> None:
    """Append one HISTORY payload's numeric values of the keys in ``want`` (all: None) to
    ``out`` (key -> (steps, timestamps, values), in logged order), straight from its columns:
    no row is built, other keys' columns are skipped.  Booleans, text, ``None`` and typed
    values are left out; integers become floats."""
    (hlen,) = _U32.unpack_from(payload, 0)
    header = json.loads(payload[4 : 4 + hlen])
    pos = 4 + hlen
    placed: dict[str, list[tuple[int, int, float, float]]] = {}
    for block in header["blocks"]:
        n = block["rows"]
        keys = block["keys"]
        if want is not None and want.isdisjoint(keys):
            pos += (4 if block["index"] else 0) * n + 16 * n
            for code in block["cols"]:
                pos += 4 + _U32.unpack_from(payload, pos)[0] if code == "j" else 8 * n
            continue
        index: list[int] = []
        if block["index"]:
            index, pos = _take(payload, pos, "I", n)
        steps, pos = _take(payload, pos, "q", n)
        stamps, pos = _take(payload, pos, "d", n)
        for key, code in zip(keys, block["cols"], strict=True):
            if want is not None and key not in want:
                pos += 4 + _U32.unpack_from(payload, pos)[0] if code == "j" else 8 * n
                continue
            if code == "j":
                (length,) = _U32.unpack_from(payload, pos)
                col = json.loads(payload[pos + 4 : pos + 4 + length])
                pos += 4 + length
                rows = [i for i, v in enumerate(col) if type(v) is float or type(v) is int]
                st, ts = [steps[i] for i in rows], [stamps[i] for i in rows]
                vs = [float(col[i]) for i in rows]
                idx = [index[i] for i in rows] if index else []
            else:
                vs, pos = _take(payload, pos, code, n)
                if code == "q":
                    vs = [float(v) for v in vs]
                st, ts, idx = steps, stamps, index
            if idx:  # rows of several blocks interleave: put back in logged order below
                placed.setdefault(key, []).extend(zip(idx, st, ts, vs, strict=True))
                continue
            got = out.get(key)
            if got is None:
                out[key] = (list(st), list(ts), list(vs))
            else:
                got[0].extend(st)
                got[1].extend(ts)
                got[2].extend(vs)
    for key, pts in placed.items():
        pts.sort()
        got = out.setdefault(key, ([], [], []))
        for _, step, stamp, v in pts:
            got[0].append(step)
            got[1].append(stamp)
            got[2].append(v)


def _wire_column(payload: bytes, pos: int, code: str, n: int) -> tuple[list[Any], str, int]:
    """One column's values and the %-format spec that writes each as JSON text."""
    if code == "j":
        (length,) = _U32.unpack_from(payload, pos)
        end = pos + 4 + length
        if end > len(payload):
            raise ValueError("history payload is shorter than its header says")
        return json.loads(payload[pos + 4 : end]), "j", end
    col, end = _take(payload, pos, code, n)
    if code == "q":
        return col, "%d", end
    if isfinite(sum(col)):  # cheap all-finite test (an overflowing sum just takes the safe path)
        return col, "%r", end  # float repr is JSON's text for a finite float
    # NaN/Infinity tokens as json writes them; numbers never contain a comma
    return _json_dumps(col)[1:-1].split(","), "%s", end


def history_json(
    payload: bytes, on_json_column: Callable[[list[Any]], object] | None = None
) -> bytes:
    """One HISTORY payload as the JSON ``{"rows": [[step, ts, {k: v}], ...]}`` (UTF-8).

    Byte for byte ``json.dumps({"rows": decode_history(payload)}, allow_nan=True,
    separators=(",", ":"), ensure_ascii=False)``, but written from whole columns by
    one %-format per block instead of building a Python object per value.
    ``on_json_column`` sees each decoded "j" column (strings, typed values, mixed
    types) before it is written and may change its values in place (the uploader
    adds ``sha256`` to media references).
    """
    (hlen,) = _U32.unpack_from(payload, 0)
    header = json.loads(payload[4 : 4 + hlen])
    pos = 4 + hlen
    parts: list[str] = []
    placed: list[tuple[list[int], list[str]]] = []
    for block in header["blocks"]:
        n = block["rows"]
        index: list[int] = []
        if block["index"]:
            index, pos = _take(payload, pos, "I", n)
        steps, pos = _take(payload, pos, "q", n)
        stamps, spec, pos = _wire_column(payload, pos, "d", n)
        columns: list[list[Any]] = [steps, stamps]
        fmt = ["[%d,", spec, ",{"]
        for i, (key, code) in enumerate(zip(block["keys"], block["cols"], strict=True)):
            col, spec, pos = _wire_column(payload, pos, code, n)
            if spec == "j":
                if len(col) != n:
                    raise ValueError("history column length does not match its block")
                if on_json_column is not None:
                    on_json_column(col)
                col, spec = list(map(_json_dumps, col)), "%s"
            columns.append(col)
            name = _json_dumps(key).replace("%", "%%")
            fmt.append(f"{name}:{spec}" if i == 0 else f",{name}:{spec}")
        fmt.append("}]")
        if not n:
            continue
        row = "".join(fmt)
        if block["index"]:  # rows of several blocks interleave: place each row by its index
            placed.append((index, list(map(row.__mod__, zip(*columns, strict=True)))))
        else:
            parts.append(
                ",".join([row] * n) % tuple(chain.from_iterable(zip(*columns, strict=True)))
            )
    if placed:
        ordered = [""] * sum(len(t) for _, t in placed)
        for index, texts in placed:
            for i, text in zip(index, texts, strict=True):
                ordered[i] = text
        parts.extend(ordered)
    return ('{"rows":[' + ",".join(parts) + "]}").encode("utf-8")


def decode_payload(rtype: int, payload: bytes) -> Any:
    """Any record's payload as JSON-like data (history as ``{"rows": [...]}``)."""
    if rtype == RecordType.HISTORY:
        return {"rows": decode_history(payload)}
    return json.loads(payload)

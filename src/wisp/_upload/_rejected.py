"""Records the server refuses, and forked children's segments: the uploader's side paths.

* **Set aside** (a 422 for one record, docs/sync.md): :func:`set_aside_entry` builds the
  ``rejected.jsonl`` entry (file format owned by :mod:`wisp._rundir`) and, for a history
  record, splits its rows by the protocol's row rule so only the bad rows are set aside;
  :func:`placeholder` is the WARNING record ``{"kind": "rejected", ...}`` sent in the
  record's place so the sequence has no gap and the server counts it.
* **Retry** (``wisp sync --retry-rejected``): :func:`retry_rejected` sends each set-aside
  record as a writer segment of its own, followed by ``{"kind": "recovered"}``.
* **Fork segments** (``run.fork<PID>.wisp``, docs/safety.md): :func:`upload_segments`.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from typing import Any

from wisp._protocol import row_problem
from wisp._rundir import add_rejected, fork_files, read_rejected, write_rejected
from wisp._runfile import Record, RecordType, iter_records
from wisp._upload._transport import ApiClient, Conflict
from wisp.errors import FatalApiError

__all__ = [
    "placeholder",
    "retry_rejected",
    "set_aside_entry",
    "side_warning",
    "upload_segments",
]

_dumps = json.JSONEncoder(allow_nan=True, separators=(",", ":"), ensure_ascii=False).encode


def placeholder(entry: dict[str, Any]) -> bytes:
    """The WARNING record sent in place of a set-aside record (the server counts these)."""
    reason = str(entry.get("reason", ""))[:1000]
    doc = {"kind": "rejected", "type": entry.get("type"), "seq": entry.get("seq"), "reason": reason}
    return _dumps(doc).encode("utf-8")


def set_aside_entry(
    writer_id: str, seq: int, rec: Record, data: Any, exc: FatalApiError, *, split: bool
) -> tuple[dict[str, Any], bytes | None]:
    """The ``rejected.jsonl`` entry for refused record ``rec`` (``data``: its JSON as sent),
    and, when ``split`` and it is a history record with good and bad rows, the good rows'
    payload to send in its place (the entry then holds only the bad rows)."""
    good_payload = None
    reason = str(exc)
    if split and rec.type == RecordType.HISTORY and isinstance(data, dict):
        rows = data.get("rows")
        if isinstance(rows, list):
            bad = [r for r in rows if row_problem(r) is not None]
            good = [r for r in rows if row_problem(r) is None]
            if bad and good:
                good_payload = _dumps({"rows": good}).encode("utf-8")
                data = {"rows": bad}
                reason = f"{exc} [rows: {row_problem(bad[0])}]"
    entry = {
        "writer_id": writer_id,
        "seq": seq,
        "offset": rec.offset,
        "type": rec.type,
        "status": exc.status,
        "reason": reason,
        "rejected_at": time.time(),
        "data": data,
    }
    if good_payload is not None:  # the rows sent in its place, for a later uploader
        entry["good"] = json.loads(good_payload)
    return entry, good_payload


def side_warning(client: ApiClient, run_id: str, entry: dict[str, Any]) -> None:
    """Tell the server about a set-aside part whose seq carried good rows: a WARNING record
    in a writer segment of its own (``rejected-<writer>-<seq>``; resending is harmless)."""
    side = {
        "writer_id": f"rejected-{str(entry['writer_id'])[:32]}-{entry['seq']}",
        "first_seq": 0,
        "records": [{"type": RecordType.WARNING, "data": json.loads(placeholder(entry))}],
    }
    client.post_records(run_id, _dumps(side).encode("utf-8"), gzip=False)


def retry_rejected(client: ApiClient, run_id: str, run_dir: str) -> int:
    """Send each set-aside record again, as a writer segment of its own
    (``retry-<writer>-<seq>``, so resending is harmless), followed by a WARNING record
    ``{"kind": "recovered"}`` the server subtracts from its count; keep the ones still
    refused (with the new reason) in ``rejected.jsonl``.  Returns how many got through."""
    keep = []
    recovered = 0
    for e in read_rejected(run_dir):
        wid = f"retry-{str(e.get('writer_id', ''))[:32]}-{e.get('seq')}"
        note = {"kind": "recovered", "type": e.get("type"), "seq": e.get("seq")}
        body = {
            "writer_id": wid,
            "first_seq": 0,
            "records": [
                {"type": e.get("type"), "data": e.get("data")},
                {"type": RecordType.WARNING, "data": note},
            ],
        }
        try:
            client.post_records(run_id, _dumps(body).encode("utf-8"), gzip=False)
        except FatalApiError as exc:
            if exc.status != 422:
                raise
            keep.append({**e, "reason": str(exc), "rejected_at": time.time()})
            continue
        recovered += 1
    write_rejected(run_dir, keep)
    return recovered


def upload_segments(
    client: ApiClient,
    run_id: str,
    run_dir: str,
    *,
    encode: Callable[[str, int, list[Record]], bytes],
    wire: Callable[[Record], bytes],
    batch_bytes: int,
    compress: bool,
) -> int:
    """Send what forked children logged (``run.fork<PID>.wisp``), each file as the writer
    segment its RUN record names, from seq 0 (the server skips what it has).  Their RUN
    records are not sent (the run exists; a RUN record would mark it running again), nor
    summaries or finish records (they write none).  A refused record is set aside as in
    the run file.  Returns how many records were set aside."""
    rejected = 0
    for path in fork_files(run_dir):
        writer_id = None
        records: list[Record] = []
        for rec in iter_records(path):
            if rec.type == RecordType.RUN:
                writer_id = json.loads(rec.payload).get("writer_id")
            elif rec.type not in (RecordType.SUMMARY, RecordType.FINISH):
                records.append(rec)
        if writer_id is None or not records:
            continue
        seq = 0
        limit = 1 << 30
        while seq < len(records):
            batch: list[Record] = []
            size = 0
            for rec in records[seq:]:
                if batch and (size + len(rec.payload) > batch_bytes or len(batch) >= limit):
                    break
                batch.append(rec)
                size += len(rec.payload) + 24
            try:
                answer = client.post_records(run_id, encode(writer_id, seq, batch), gzip=compress)
            except FatalApiError as exc:
                if exc.status != 422:
                    raise
                if len(batch) > 1:  # find the refused record(s): one at a time
                    limit = 1
                    continue
                entry, _ = set_aside_entry(
                    writer_id, seq, batch[0], json.loads(wire(batch[0])), exc, split=False
                )
                entry["file"] = os.path.basename(path)
                add_rejected(run_dir, entry)
                rejected += 1
                records[seq] = Record(RecordType.WARNING, placeholder(entry), batch[0].offset)
                continue
            if isinstance(answer, Conflict):
                seq = answer.acked_seq + 1
                continue
            seq = max(seq + len(batch), answer + 1)
    return rejected

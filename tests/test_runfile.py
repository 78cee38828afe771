"""The run file's framing and the history codec (src/wisp/_runfile.py)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from wisp import _runfile as rf
from wisp.errors import CorruptRunFileError


def _file(records: list[tuple[int, bytes]]) -> bytes:
    return rf.HEADER + b"".join(rf.encode_record(t, p) for t, p in records)


def test_records_round_trip_with_offsets() -> None:
    """Encoded records read back with their types, payloads and offsets."""
    data = _file([(rf.RecordType.CONFIG, b'{"a":1}'), (rf.RecordType.FINISH, b"{}")])
    recs = list(rf.iter_records(data))
    assert [(r.type, r.payload) for r in recs] == [(2, b'{"a":1}'), (6, b"{}")]
    assert recs[0].offset == rf.HEADER_SIZE
    assert recs[1].offset == rf.HEADER_SIZE + rf.FRAME_SIZE + 7


def test_truncation_at_every_offset_of_last_record_keeps_earlier_records() -> None:
    """A file cut at any byte of its last record reads back every earlier record, and counts the rest as ignored."""
    earlier = [(rf.RecordType.CONFIG, json.dumps({"i": i}).encode()) for i in range(5)]
    full = _file([*earlier, (rf.RecordType.SUMMARY, b'{"summary":{"loss":0.5}}')])
    last_start = len(_file(earlier))
    for cut in range(last_start, len(full)):
        data = full[:cut]
        recs = list(rf.iter_records(data))
        assert [r.payload for r in recs] == [p for _, p in earlier], cut
        info = rf.scan(data)
        assert info.records == 5
        assert info.valid_end == last_start
        assert info.ignored == cut - last_start
    assert rf.scan(full).records == 6 and rf.scan(full).ignored == 0


def test_corrupt_byte_stops_reading_at_that_record() -> None:
    """A flipped bit in a payload, length or type byte ends the readable prefix at that record."""
    good = [(rf.RecordType.CONFIG, b'{"x":1}')] * 3
    data = bytearray(_file(good))
    second = rf.HEADER_SIZE + rf.FRAME_SIZE + 7
    for pos in (second, second + 8, second + rf.FRAME_SIZE + 2):  # length, type, payload
        bad = bytearray(data)
        bad[pos] ^= 0x01
        assert len(list(rf.iter_records(bytes(bad)))) == 1, pos


def test_absurd_length_is_treated_as_corruption() -> None:
    """A length beyond the payload limit is never trusted (no huge allocation, reading stops)."""
    data = _file([(2, b"{}")]) + (rf.MAX_PAYLOAD + 1).to_bytes(4, "little") + b"\0" * 5
    assert rf.scan(data).records == 1


def test_bad_magic_and_future_version_are_refused(tmp_path: Path) -> None:
    """Files that are not version-1 run files raise CorruptRunFileError naming the problem."""
    p = tmp_path / "x.wisp"
    p.write_bytes(b"not a run file at all")
    with pytest.raises(CorruptRunFileError, match="bad magic"):
        list(rf.iter_records(p))
    p.write_bytes(rf.MAGIC + (2).to_bytes(2, "little") + b"\0" * 6)
    with pytest.raises(CorruptRunFileError, match="version 2"):
        list(rf.iter_records(p))


def test_record_tail_returns_only_complete_records(tmp_path: Path) -> None:
    """A tailing reader picks up records as they are appended and never returns a partial one."""
    p = tmp_path / "run.wisp"
    rec = rf.encode_record(2, b'{"n":1}')
    p.write_bytes(rf.HEADER + rec + rec[:5])
    tail = rf.RecordTail(p)
    assert [r.payload for r in tail.read()] == [b'{"n":1}']
    assert tail.read() == []
    with p.open("ab") as f:
        f.write(rec[5:] + rec)
    got = tail.read()
    assert len(got) == 2 and tail.offset == p.stat().st_size


def test_record_tail_reads_a_record_larger_than_its_window(tmp_path: Path) -> None:
    """One record bigger than the read window is still returned whole."""
    p = tmp_path / "run.wisp"
    big = json.dumps({"x": "y" * 5000}).encode()
    p.write_bytes(rf.HEADER + rf.encode_record(2, big) + rf.encode_record(2, b"{}"))
    tail = rf.RecordTail(p)
    assert [r.payload for r in tail.read(max_bytes=1000)] == [big]
    assert [r.payload for r in tail.read(max_bytes=1000)] == [b"{}"]


def test_history_codec_keeps_types_order_and_non_finite_values() -> None:
    """Rows with mixed key sets and value types decode to exactly what was encoded, in order."""
    rows = [
        [0, 1.5, {"loss": 0.25, "n": 3, "ok": True}],
        [1, 2.5, {"loss": math.nan, "n": 4, "ok": False}],
        [2, 3.5, {"other": "text", "none": None}],
        [3, 4.5, {"loss": math.inf, "n": 2**70, "ok": True}],
        [4, 5.5, {"h": {"_type": "histogram", "counts": [1, 2]}, "l": [1, 2.5]}],
        [5, 6.5, {"loss": -math.inf, "n": -1, "ok": None}],
    ]
    out = rf.decode_history(rf.encode_history(rows))
    assert len(out) == len(rows)
    for got, want in zip(out, rows, strict=True):
        assert got[0] == want[0] and got[1] == want[1]
        assert list(got[2]) == list(want[2])
        for k, v in want[2].items():
            g = got[2][k]
            assert type(g) is type(v), (k, g, v)
            assert (math.isnan(g) and math.isnan(v)) if isinstance(v, float) and v != v else g == v


def test_decode_payload_gives_json_form_of_every_record() -> None:
    """decode_payload turns history into rows and other records into their JSON object."""
    assert rf.decode_payload(rf.RecordType.CONFIG, b'{"config":{"a":1}}') == {"config": {"a": 1}}
    hist = rf.encode_history([[7, 1.0, {"x": 1.0}]])
    assert rf.decode_payload(rf.RecordType.HISTORY, hist) == {"rows": [[7, 1.0, {"x": 1.0}]]}


def _slow_wire(payload: bytes) -> bytes:
    dumps = json.JSONEncoder(allow_nan=True, separators=(",", ":"), ensure_ascii=False).encode
    return dumps({"rows": rf.decode_history(payload)}).encode("utf-8")


def test_history_json_is_the_json_of_the_decoded_rows() -> None:
    """history_json writes, byte for byte, the JSON of decode_history's rows for any batch."""
    big = 2**53 + 1
    batches = [
        [],
        [[i, 1.7e9 + i * 0.01, {"loss": i * 0.001 + 3, "n": i}] for i in range(300)],
        [
            [0, 1.5, {"loss": 0.25, "n": big, "ok": True, 'we"ird%s\\': 1e300}],
            [1, math.nan, {"loss": math.nan, "n": -big, "ok": False, 'we"ird%s\\': -0.0}],
            [2, 3.5, {"other": 'text, with "quotes" ] and %d', "none": None, "é": "ü"}],
            [3, math.inf, {"loss": math.inf, "n": 2**70, "ok": True, 'we"ird%s\\': 5e-324}],
            [4, 5.5, {"h": {"_type": "histogram", "counts": [1, 2]}, "l": [1, math.nan]}],
            [5, 6.5, {"loss": -math.inf, "n": -1, "ok": None, 'we"ird%s\\': 1.0}],
            [6, 7.5, {"other": "x", "none": None, "é": "v"}],
            [2**62, -1.0, {"loss": 1e308, "n": 0, "ok": 1, 'we"ird%s\\': 1.0}],
        ],
        [[i, 1.0, {"a": math.nan if i % 3 else 1.0, "b": [i]}] for i in range(10)],
    ]
    for rows in batches:
        payload = rf.encode_history(rows)
        fast = rf.history_json(payload)
        assert fast == _slow_wire(payload)
        # and it parses back to the logged rows, types and NaNs included (repr shows both)
        assert repr(json.loads(fast)["rows"]) == repr(rows)


def test_history_json_lets_the_caller_change_json_columns() -> None:
    """The on_json_column hook sees typed values before they are written, and its edits show."""
    rows = [[0, 1.0, {"img": {"_type": "image", "path": "media/a.png"}, "x": 1.0}]]

    def add_hash(values: list[Any]) -> None:
        for v in values:
            v["sha256"] = "ab" * 32

    out = json.loads(rf.history_json(rf.encode_history(rows), add_hash))
    assert out["rows"][0][2]["img"] == {
        "_type": "image",
        "path": "media/a.png",
        "sha256": "ab" * 32,
    }
    assert out["rows"][0][2]["x"] == 1.0


def test_history_codec_interleaved_shapes_and_an_empty_row() -> None:
    """Rows of different keys (or key order), interleaved, and an empty row come back as
    they went in, row by row."""
    rows: list[list[Any]] = [
        [0, 1.0, {"a": 1.0, "b": 2}],
        [1, 2.0, {"b": 3, "a": 4.0}],
        [2, 3.0, {}],
        [3, 4.0, {"a": 5.0, "b": 6}],
        [4, 5.0, {"s": "x", "n": None, "t": True}],
    ]
    back = rf.decode_history(rf.encode_history(rows))
    assert back == rows
    assert [list(r[2]) for r in back] == [list(r[2]) for r in rows]


def test_history_batch_round_trips_mixed_shapes_and_types_and_says_when_one_shape() -> None:
    """Random batches of rows with mixed key orders and value types decode to what was encoded, and encode_history_batch says one shape exactly when every row has the same keys in the same order."""
    import random

    rng = random.Random(1)
    values: list[Any] = [1.5, 2, True, None, "s", math.inf, 2**70, -3, [1, 2], {"x": 1}]
    shapes = [("a", "b"), ("b", "a"), ("a",), ("c", "a", "b"), ()]
    for _ in range(500):
        rows = [
            [i, 1.5 * i, {k: rng.choice(values[: rng.randint(1, 10)]) for k in shape}]
            for i, shape in enumerate(rng.choice(shapes[: rng.randint(1, 5)]) for _ in range(9))
        ]
        payload, one_shape = rf.encode_history_batch(rows)
        assert payload == rf.encode_history(rows)
        back = rf.decode_history(payload)
        assert back == rows
        assert [list(r[2]) for r in back] == [list(r[2]) for r in rows]  # key order kept
        assert [[type(v) for v in r[2].values()] for r in back] == [
            [type(v) for v in r[2].values()] for r in rows
        ]
        assert one_shape == (len({tuple(r[2]) for r in rows}) == 1)

"""Ingestion: validate a batch of run-file records, then apply it exactly once.

A batch is ``(run_id, writer_id, first_seq, records)``; record ``i`` has sequence
number ``first_seq + i``.  Inside one transaction the writer's acknowledged
sequence is locked, records at or below it are skipped, the rest are applied and
the new acknowledged sequence is stored, so a retried or duplicated batch changes
nothing.  Everything is validated before the transaction starts.
"""

from __future__ import annotations

import json
import math
from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from wisp._protocol import (
    MAX_EXIT_CODE,
    MAX_KEY_LENGTH,
    MAX_MEDIA_KIND_LENGTH,
    MAX_NAME_LENGTH,
    MAX_NOTES_LENGTH,
    MAX_STEP,
    MAX_STREAM_LENGTH,
    MAX_TAG_LENGTH,
    MAX_TAGS,
    MAX_TIMESTAMP,
    RUN_STATES,
    RecordType,
    project_problem,
    step_problem,
)
from wisp.server.http.problem import Problem, clean_json, clean_str, invalid
from wisp.server.http.routes import convert
from wisp.server.schemas.runs import MetricSpec, RecordsBody

__all__ = ["Column", "Prepared", "prepare_batch", "prepare_records", "run_put_cols"]

STATES = RUN_STATES
_NF = {math.inf: 2, -math.inf: 3}
RUN_FIELDS = ("project", "name", "tags", "notes", "group", "job_type", "created_at")


def nf_code(v: float) -> int:
    """0 finite, 1 NaN, 2 +inf, 3 -inf (the ``points.nf`` column)."""
    if v - v == 0.0:
        return 0
    return 1 if v != v else _NF[v]


@dataclass
class Column:
    """The numeric points of one key in one history record, column-wise.

    ``values[i]`` is None where the number is not finite and ``nfs[i]`` says which;
    ``nfs`` is None when every value is finite.
    """

    key: str
    steps: Sequence[int]
    times: Sequence[float]
    values: Sequence[float | None]
    nfs: Sequence[int] | None


@dataclass
class Prepared:
    """One validated record, ready to apply: ``kind`` and its converted payload."""

    kind: int
    data: dict[str, Any]
    points: list[Column] = field(default_factory=list)
    extras: list[tuple[int, float, str]] = field(default_factory=list)
    media: list[tuple[str, int, float, str, Any]] = field(default_factory=list)


def _finite_column(
    col: Sequence[Any],
) -> tuple[Sequence[float | None], Sequence[int] | None] | None:
    """``(values, nfs)`` for a column of plain numbers, or None to take the general path."""
    types = set(map(type, col))
    if not types <= {float, int}:
        return None
    if types != {float}:
        try:
            col = list(map(float, col))
        except OverflowError:
            return None
    if math.isfinite(sum(col)):  # non-finite values absorb: a finite sum means all finite
        return col, None
    return [v if v - v == 0.0 else None for v in col], [nf_code(v) for v in col]


def _fast_history(rows: list[Any], fld: str) -> Prepared | None:
    """The common shape at C speed: every row a valid ``[step, ts, {...}]`` with the same
    keys (in the same order) and plain numbers.  None when anything differs; the general
    path then validates row by row and names the offending field."""
    if not rows or set(map(type, rows)) != {list} or set(map(len, rows)) != {3}:
        return None
    steps, tss, dicts = zip(*rows, strict=True)
    if set(map(type, steps)) != {int} or min(steps) < 0 or max(steps) >= MAX_STEP:
        return None
    if set(map(type, dicts)) != {dict}:
        return None
    shapes = set(map(tuple, dicts))
    if len(shapes) != 1:
        return None
    keys = shapes.pop()
    if not keys:
        return None
    times = _finite_column(tss)
    if times is None or times[1] is not None:
        return None
    prep = Prepared(RecordType.HISTORY, {})
    # machine arrays (8 bytes a number, not a 32-byte float object and its slot): a batch
    # of millions of points is held once, compactly, until it is written
    step_a, time_a = array("q", steps), array("d", cast("list[float]", times[0]))
    for k, col in zip(keys, zip(*map(dict.values, dicts), strict=True), strict=True):
        vals = _finite_column(col)
        if vals is None:
            return None
        finite = cast("list[float]", vals[0])  # no None where nfs is None
        values = array("d", finite) if vals[1] is None else vals[0]
        prep.points.append(Column(k, step_a, time_a, values, vals[1]))
    return prep


def _num(value: Any, fld: str) -> float:
    if type(value) not in (int, float) or not math.isfinite(value):
        raise invalid(fld, "expected a finite number")
    return float(value)


def _when(value: Any, fld: str) -> float:
    """A timestamp: a number of seconds from 0 to ``MAX_TIMESTAMP`` (the year 3000)."""
    t = _num(value, fld)
    if not 0.0 <= t <= MAX_TIMESTAMP:
        raise invalid(fld, f"expected a time in seconds since the epoch, 0 to {MAX_TIMESTAMP:.0f}")
    return t


def check_project(value: Any, fld: str) -> str:
    if not isinstance(value, str):
        raise invalid(fld, f"expected a string, got {type(value).__name__}")
    problem = project_problem(value)
    if problem is not None:
        raise invalid(fld, problem)
    return value


def check_tags(value: Any, fld: str) -> list[str]:
    if not isinstance(value, list) or len(value) > MAX_TAGS:
        raise invalid(fld, f"expected a list of at most {MAX_TAGS} strings")
    return [clean_str(t, f"{fld}[{i}]", MAX_TAG_LENGTH) for i, t in enumerate(value)]


def check_run_fields(data: dict[str, Any], prefix: str) -> dict[str, Any]:
    """Validated run columns from a run body or a run record (unknown keys ignored here)."""
    out: dict[str, Any] = {}
    if "project" in data:
        out["project"] = check_project(data["project"], f"{prefix}project")
    if data.get("name") is not None:
        out["name"] = clean_str(data["name"], f"{prefix}name", MAX_NAME_LENGTH)
    if data.get("tags") is not None:
        out["tags"] = check_tags(data["tags"], f"{prefix}tags")
    if data.get("notes") is not None:
        out["notes"] = clean_str(data["notes"], f"{prefix}notes", MAX_NOTES_LENGTH)
    for src, col in (("group", "run_group"), ("job_type", "job_type")):
        if src in data:
            v = data[src]
            out[col] = None if v is None else clean_str(v, f"{prefix}{src}", MAX_NAME_LENGTH)
    if data.get("created_at") is not None:
        out["created_at"] = _when(data["created_at"], f"{prefix}created_at")
    return out


def run_put_cols(body: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """The run columns and ``by_project`` of a ``PUT /runs/{id}`` body (already converted to
    :class:`~wisp.server.schemas.runs.RunBody`, so its fields have their types)."""
    cols = check_run_fields(body, "")
    for src, col in (("config", "config"), ("metadata", "meta")):
        if body.get(src) is not None:
            cols[col] = clean_json(body[src], src)
    if body.get("state") is not None:
        cols["state"] = body["state"]
    return cols, body.get("by_project") is True


def prepare_batch(
    raw: Any, pause: Callable[[], None] | None = None
) -> tuple[RecordsBody, list[Prepared]]:
    """A ``POST /runs/{id}/records`` body ``{writer_id, first_seq, records}``: its envelope
    and its validated records (a :class:`Problem` names the bad field).  ``pause`` is
    called between records (the server's reads go first: :mod:`wisp.server.readfirst`)."""
    if not isinstance(raw, dict):
        raise invalid("body", "expected a JSON object {writer_id, first_seq, records}")
    envelope = {k: v for k, v in raw.items() if k != "records"}
    b: RecordsBody = convert({**envelope, "records": []}, RecordsBody, "body")
    return b, prepare_records(raw.get("records"), pause=pause)


def _prep_history(data: dict[str, Any], fld: str) -> Prepared:
    rows = data.get("rows")
    if type(rows) is not list:
        raise invalid(f"{fld}.rows", "expected a list of [step, timestamp, {key: value}] rows")
    prep = _fast_history(rows, fld)
    if prep is None:
        prep = _slow_history(rows, fld)
    for c in prep.points:
        k = c.key
        clean_str(k, f"{fld}.rows.<key>", MAX_KEY_LENGTH)
        if not k:
            raise invalid(f"{fld}.rows.<key>", "keys must not be empty")
    for m in prep.media:
        clean_str(m[0], f"{fld}.rows.<key>", MAX_KEY_LENGTH)
    return prep


def _slow_history(rows: list[Any], fld: str) -> Prepared:
    prep = Prepared(RecordType.HISTORY, {})
    pts: list[tuple[str, int, float, float | None, int]] = []
    dumps = json.dumps
    for i, row in enumerate(rows):
        if type(row) is not list or len(row) != 3:
            raise invalid(f"{fld}.rows[{i}]", "expected [step, timestamp, {key: value}]")
        step, ts, vals = row
        if type(step) is not int or not 0 <= step < MAX_STEP:  # the protocol's step rule
            why = step_problem(step) if type(step) is int else f"an integer, got {step!r}"
            raise invalid(f"{fld}.rows[{i}][0]", f"step {why}")
        tt = type(ts)
        if (tt is not float and tt is not int) or not math.isfinite(ts):
            raise invalid(f"{fld}.rows[{i}][1]", "expected a finite unix timestamp")
        ts = float(ts)
        if type(vals) is not dict:
            raise invalid(f"{fld}.rows[{i}][2]", "expected an object of {key: value}")
        other: dict[str, Any] | None = None
        for k, v in vals.items():
            t = type(v)
            if t is float:
                if v - v == 0.0:
                    pts.append((k, step, ts, v, 0))
                else:
                    pts.append((k, step, ts, None, nf_code(v)))
            elif t is int:
                try:
                    pts.append((k, step, ts, float(v), 0))
                except OverflowError:
                    other = other if other is not None else {}
                    other[k] = v
            elif t is dict:
                vf = f"{fld}.rows[{i}][2].{k}"
                kind = v.get("_type")
                if not isinstance(kind, str):
                    raise invalid(vf, "objects must be typed values with a string '_type'")
                prep.media.append(
                    (k, step, ts, clean_str(kind, vf, MAX_MEDIA_KIND_LENGTH), clean_json(v, vf))
                )
            else:
                other = other if other is not None else {}
                other[k] = v
        if other is not None:
            clean_json(other, f"{fld}.rows[{i}][2]")
            prep.extras.append((step, ts, dumps(other, allow_nan=True)))
    by_key: dict[str, list[tuple[str, int, float, float | None, int]]] = {}
    for p in pts:
        got = by_key.get(p[0])
        if got is None:
            by_key[p[0]] = [p]
        else:
            got.append(p)
    for k, ps in by_key.items():
        _, steps, times, values, nfs = zip(*ps, strict=True)
        prep.points.append(Column(k, steps, times, values, nfs if any(nfs) else None))
    return prep


def _prep_console(data: dict[str, Any], fld: str) -> Prepared:
    lines = data.get("lines")
    items = lines if isinstance(lines, list) else [data]
    out = []
    for i, ln in enumerate(items):
        lf = f"{fld}.lines[{i}]" if isinstance(lines, list) else fld
        if isinstance(ln, list) and len(ln) == 3:  # the run file's [ts, stream, text]
            ln = {"ts": ln[0], "stream": ln[1], "text": ln[2]}
        if not isinstance(ln, dict):
            raise invalid(lf, "expected [ts, stream, text] or an object {ts, stream, text}")
        ts = _num(ln.get("ts", ln.get("time", 0.0)), f"{lf}.ts")
        stream = clean_str(ln.get("stream", "stdout"), f"{lf}.stream", MAX_STREAM_LENGTH)
        text = clean_str(ln.get("text", ""), f"{lf}.text")
        out.append((ts, stream, text))
    return Prepared(RecordType.CONSOLE, {"lines": out})


def _prep_system(data: dict[str, Any], fld: str) -> Prepared:
    """A system sample becomes points of its ``system/*`` keys, at step = its time in ms."""
    ts = _num(data.get("ts"), f"{fld}.ts")
    if not 0 <= ts * 1000 < MAX_STEP:
        raise invalid(f"{fld}.ts", "expected a unix timestamp >= 0")
    step = int(ts * 1000)
    prep = Prepared(RecordType.HISTORY, {})
    for k, v in data["values"].items():
        clean_str(k, f"{fld}.values.<key>", MAX_KEY_LENGTH)
        if not k or type(v) not in (int, float) or (type(v) is int and abs(v) > 1 << 1000):
            continue  # only numbers chart; anything else in a sample is ignored
        f = float(v)
        nf = nf_code(f)
        col = Column(k, (step,), (ts,), (None if nf else f,), (nf,) if nf else None)
        prep.points.append(col)
    return prep


def _prep_one(kind: int, data: dict[str, Any], fld: str) -> Prepared:
    if kind == RecordType.HISTORY:
        return _prep_history(data, fld)
    if kind == RecordType.RUN:
        cols = check_run_fields(data, f"{fld}.")
        meta = {k: v for k, v in data.items() if k not in RUN_FIELDS}
        return Prepared(RecordType.RUN, {"cols": cols, "meta": clean_json(meta, f"{fld}")})
    if kind in (RecordType.CONFIG, RecordType.SUMMARY):
        name = "config" if kind == RecordType.CONFIG else "summary"
        body = data.get(name)
        if not isinstance(body, dict):
            raise invalid(f"{fld}.{name}", "expected an object")
        return Prepared(kind, {name: clean_json(body, f"{fld}.{name}")})
    if kind == RecordType.METRIC:
        convert(data, MetricSpec, fld)
        name = clean_str(data.get("name"), f"{fld}.name", MAX_KEY_LENGTH)
        return Prepared(RecordType.METRIC, {"name": name, "spec": clean_json(data, fld)})
    if kind == RecordType.FINISH:
        state = data.get("state", "finished")
        if state not in STATES:
            raise invalid(f"{fld}.state", f"expected one of {', '.join(STATES)}")
        fin = data.get("finished_at")
        code = data.get("exit_code")
        if code is not None and (type(code) is not int or abs(code) >= MAX_EXIT_CODE):
            raise invalid(f"{fld}.exit_code", "expected a 32-bit integer or null")
        return Prepared(
            RecordType.FINISH,
            {
                "state": state,
                "finished_at": None if fin is None else _when(fin, f"{fld}.finished_at"),
                "exit_code": code,
            },
        )
    if kind == RecordType.CONSOLE:
        return _prep_console(data, fld)
    if kind == RecordType.SYSTEM and isinstance(data.get("values"), dict):
        return _prep_system(data, fld)
    return Prepared(kind, {"text": json.dumps(clean_json(data, fld))})


def prepare_records(
    records: Any, fld: str = "records", *, pause: Callable[[], None] | None = None
) -> list[Prepared]:
    """Validate the ``records`` array of a batch; a :class:`Problem` names the bad field.
    ``pause()``, if given, is called before each record."""
    if not isinstance(records, list):
        raise invalid(fld, "expected a list of {type, data} records")
    out = []
    for i, rec in enumerate(records):
        if pause is not None:
            pause()
        rf = f"{fld}[{i}]"
        if not isinstance(rec, dict | list | str | int | float | None):
            rec = _decode_raw(rec, rf)  # a record left undecoded by decode_batch
        if not isinstance(rec, dict):
            raise invalid(rf, "expected an object {type, data}")
        kind = rec.get("type")
        if type(kind) is not int or not 0 <= kind <= 255:
            raise invalid(f"{rf}.type", "expected a record type code 0-255")
        data = rec.get("data")
        if not isinstance(data, dict):
            raise invalid(f"{rf}.data", "expected the record's JSON object payload")
        out.append(_prep_one(kind, data, f"{rf}.data"))
    return out


def _decode_raw(raw: Any, fld: str) -> Any:
    from wisp.server.http.body import loads

    try:
        return loads(bytes(raw))
    except (ValueError, RecursionError):
        raise invalid(fld, "not valid JSON") from None


Clock = Callable[[], float]


def conflict(acked: int) -> Problem:
    return Problem(
        409,
        "seq_gap",
        f"first_seq is beyond the acknowledged sequence + 1 (acked_seq={acked}); resume from it",
        "first_seq",
        {"acked_seq": acked},
    )

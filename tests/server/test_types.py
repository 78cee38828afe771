"""The declared API types: the SDK's stdlib bodies agree with the server's Structs, and the
committed dashboard types are generated from the current declarations."""

from __future__ import annotations

import json
import subprocess
import types
import typing
from pathlib import Path
from typing import Any

import msgspec
import pytest

from wisp import _wire
from wisp.server.http.openapi import dumps, openapi_document
from wisp.server.http.problem import Problem
from wisp.server.http.routes import convert
from wisp.server.schemas import artifacts as AT
from wisp.server.schemas import runs as T
from wisp.server.schemas import sweeps as ST

ROOT = Path(__file__).resolve().parents[2]
WEB = ROOT / "web"


def _base(tp: Any) -> Any:
    """``str | None`` -> ``str``; ``Annotated[list[...], Meta]`` -> ``list``; ``Literal`` -> ``str``."""
    args = [a for a in typing.get_args(tp) if a not in (type(None), msgspec.UnsetType)]
    origin = typing.get_origin(tp)
    if origin is typing.Annotated:
        return _base(args[0])
    if origin is typing.Literal:
        return type(args[0])
    if origin in (typing.Union, types.UnionType):
        return _base(args[0]) if len(args) == 1 else tuple(_base(a) for a in args)
    return origin or tp


@pytest.mark.parametrize(
    ("wire", "struct"),
    [
        (_wire.RunBody, T.RunBody),
        (_wire.RecordsBody, T.RecordsBody),
        (_wire.RecordIn, T.RecordIn),
        (_wire.SweepBody, ST.SweepBody),
        (_wire.SweepStateBody, ST.SweepStateBody),
        (_wire.TrialBody, ST.TrialBody),
        (_wire.TrialFields, ST.TrialFields),
        (_wire.ArtifactMissingBody, AT.ArtifactMissingBody),
        (_wire.ArtifactCommitBody, AT.ArtifactCommitBody),
        (_wire.ArtifactUseBody, AT.ArtifactUseBody),
        (_wire.ArtifactAliasBody, AT.ArtifactAliasBody),
    ],
)
def test_sdk_bodies_match_server_types(wire: Any, struct: Any) -> None:
    """Each body the SDK sends names the same fields, with the same types, as the server's."""
    hints = typing.get_type_hints(wire, include_extras=True)
    fields = {f.name: f for f in msgspec.structs.fields(struct)}
    assert set(hints) == set(fields)
    for name, f in fields.items():
        want = _base(f.type)
        got = _base(hints[name])
        assert got == want, (name, got, want)
        assert (name in wire.__required_keys__) == f.required, name


def test_run_record_fields_are_run_body_fields() -> None:
    """The run fields the uploader copies from the RUN record are all RunBody fields."""
    assert set(_wire.RUN_RECORD_FIELDS) <= set(_wire.RunBody.__annotations__)


class _Recorder:
    """A transport that keeps every request and answers as a server that accepts them."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, str, bytes | None]] = []

    def request(
        self, method: str, path: str, body: bytes | None, headers: dict[str, str], timeout: float
    ) -> Any:
        from wisp._upload._transport import Response

        self.sent.append((method, path, body))
        answer: dict[str, Any] = {"run": {}, "ok": True}
        if path.endswith("/records") and body is not None:
            doc = json.loads(body)
            answer = {"acked_seq": doc["first_seq"] + len(doc["records"]) - 1}
        return Response(200, {"content-type": "application/json"}, json.dumps(answer).encode())

    def close(self) -> None:
        pass


def test_what_the_uploader_sends_decodes_as_the_server_types(tmp_path: Path) -> None:
    """The run body and record batches the uploader sends decode as RunBody and RecordsBody."""
    import wisp
    from wisp._upload._transport import ApiClient
    from wisp._upload._uploader import Uploader

    run = wisp.init(project="p", dir=str(tmp_path), mode="offline", config={"lr": 0.1})
    run.log({"loss": 1.0})
    run.finish()
    run_dir = next((tmp_path / "wisp").iterdir())
    rec = _Recorder()
    up = Uploader(str(run_dir), ApiClient("http://127.0.0.1:9", "k", transport=rec), compress=False)
    assert up.run(lambda: True, give_up_after=10)
    puts = [b for m, p, b in rec.sent if m == "PUT" and b is not None]
    batches = [b for m, p, b in rec.sent if p.endswith("/records") and b is not None]
    assert puts and batches
    for body in puts:
        assert msgspec.json.decode(body, type=T.RunBody).project == "p"
    for body in batches:
        assert msgspec.json.decode(body, type=T.RecordsBody).records


def test_a_bad_body_names_the_field() -> None:
    """Decoding through a declared type answers 422 naming the offending member."""
    with pytest.raises(Problem) as e:
        convert({"writer_id": "w", "first_seq": -1, "records": []}, T.RecordsBody, "body")
    assert (e.value.status, e.value.field) == (422, "first_seq")
    with pytest.raises(Problem) as e:
        convert({"writer_id": "w", "first_seq": 0}, T.RecordsBody, "body")
    assert e.value.field == "records"
    with pytest.raises(Problem) as e:
        convert({"nope": 1}, T.RunBody, "body")
    assert e.value.field == "nope"


def test_committed_openapi_json_is_current() -> None:
    """web/openapi.json is exactly what the server declares now (regenerate: make api-types)."""
    committed = (WEB / "openapi.json").read_text()
    assert committed == dumps(openapi_document()), "stale web/openapi.json: run make api-types"


def test_committed_typescript_types_are_current(tmp_path: Path) -> None:
    """web/src/api.gen.ts is what openapi-typescript makes of the current document."""
    gen = WEB / "node_modules" / ".bin" / "openapi-typescript"
    assert gen.exists(), "web/node_modules is missing: run make web (npm ci) first"
    doc = tmp_path / "openapi.json"
    doc.write_text(dumps(openapi_document()))
    out = tmp_path / "api.gen.ts"
    script = json.loads((WEB / "package.json").read_text())["scripts"]["gen:api"]
    args = script.split()[1:]  # openapi-typescript openapi.json -o src/api.gen.ts [flags]
    args = [
        str(doc) if a == "openapi.json" else str(out) if a == "src/api.gen.ts" else a for a in args
    ]
    subprocess.run([str(gen), *args], check=True, capture_output=True, timeout=120, cwd=WEB)
    committed = (WEB / "src" / "api.gen.ts").read_text()
    assert committed == out.read_text(), "stale web/src/api.gen.ts: run make api-types"


def test_sweep_bodies_the_controller_builds_decode_as_the_server_types() -> None:
    """A new sweep and the state lists the controller uses agree with the sweep Structs."""
    from wisp.sweeps._controller import SWEEP_STATES, TRIAL_STATES, new_sweep

    cfg = {"method": "grid", "metric": {"name": "loss"}, "parameters": {"lr": {"values": [1, 2]}}}
    sweep = new_sweep(cfg, "p")
    body = msgspec.json.decode(json.dumps(sweep), type=ST.SweepBody)
    assert (body.id, body.project, body.state) == (sweep["id"], "p", "running")
    assert typing.get_args(ST.SweepState) == SWEEP_STATES
    assert typing.get_args(ST.TrialState) == TRIAL_STATES

"""The wire protocol module: one definition of record types, states, limits and ids (src/wisp/_protocol.py)."""

from __future__ import annotations

import re

import pytest

from wisp import _protocol as P


def test_record_types_have_one_definition() -> None:
    """The run file re-exports the protocol's RecordType, and every code has a distinct name."""
    from wisp import _runfile

    assert _runfile.RecordType is P.RecordType
    codes = {v for k, v in vars(P.RecordType).items() if k.isupper() and k != "NAMES"}
    assert codes == set(P.RecordType.NAMES) and len(codes) == 12
    assert len(set(P.RecordType.NAMES.values())) == len(codes)


def test_run_states_are_the_servers_states() -> None:
    """The server accepts exactly the protocol's run states in a FINISH record."""
    from wisp.server.store import ingest

    assert ingest.STATES == P.RUN_STATES
    assert P.RunState.CRASHED in P.RUN_STATES and len(set(P.RUN_STATES)) == 5


@pytest.mark.parametrize(
    "value",
    ["a", "run-1_X", "z" * 64, "", "z" * 65, "a b", "é", "\u212a", "a/b", "a.b", 5, None],
)
def test_id_rule_matches_the_servers_regex(value: object) -> None:
    """is_valid_id (SDK, no `re`) and ID_PATTERN (server routes) agree, including non-ASCII lookalikes."""
    by_regex = isinstance(value, str) and re.fullmatch(P.ID_PATTERN, value, re.ASCII) is not None
    assert P.is_valid_id(value) is by_regex
    assert (P.id_problem(value) is None) is by_regex


def test_init_refuses_an_id_the_server_would_refuse() -> None:
    """init(id=...) applies the protocol's id rule: the Kelvin sign lower-cases to 'k' but is refused."""
    import wisp
    from wisp.errors import UsageError

    with pytest.raises(UsageError, match="1-64 letters"):
        wisp.init(id="\u212a", mode="disabled")


def test_key_limit_is_enforced_alike_by_sdk_and_server() -> None:
    """A key one character over MAX_KEY_LENGTH is refused by log()'s checks and by server ingestion."""
    from wisp._values import prepare_row
    from wisp.errors import UsageError
    from wisp.server.http.problem import Problem
    from wisp.server.store.ingest import prepare_records

    ok, bad = "k" * P.MAX_KEY_LENGTH, "k" * (P.MAX_KEY_LENGTH + 1)
    assert P.key_problem(ok) is None and P.key_problem(bad) is not None
    assert prepare_row({ok: 1.0})[0] == {ok: 1.0}
    with pytest.raises(UsageError, match=str(P.MAX_KEY_LENGTH)):
        prepare_row({bad: 1.0})
    rows = [[0, 1.0, {bad: 1.0}]]
    with pytest.raises(Problem, match=str(P.MAX_KEY_LENGTH)):
        prepare_records([{"type": P.RecordType.HISTORY, "data": {"rows": rows}}])
    good = prepare_records([{"type": P.RecordType.HISTORY, "data": {"rows": [[0, 1.0, {ok: 1}]]}}])
    assert good[0].kind == P.RecordType.HISTORY


def test_step_limit_is_the_servers() -> None:
    """A step at MAX_STEP is refused by the server; one below is stored."""
    from wisp.server.http.problem import Problem
    from wisp.server.store.ingest import prepare_records

    top = P.MAX_STEP - 1
    prepare_records([{"type": P.RecordType.HISTORY, "data": {"rows": [[top, 1.0, {"a": 1}]]}}])
    with pytest.raises(Problem):
        prepare_records(
            [{"type": P.RecordType.HISTORY, "data": {"rows": [[P.MAX_STEP, 1.0, {"a": 1}]]}}]
        )


def test_protocol_is_cheap_to_import() -> None:
    """The protocol module imports nothing but __future__ (no re, no typing), so init() stays fast."""
    import json
    import subprocess
    import sys

    code = (
        "import json, sys; before = set(sys.modules); import wisp._protocol; "
        "print(json.dumps(sorted(set(sys.modules) - before)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert set(json.loads(out.stdout)) <= {"wisp", "wisp._protocol", "wisp.errors", "__future__"}


# -- one definition of what is valid: what the SDK accepts, the server accepts ------------------

_BAD_TEXT = ["a\x00b", "\ud800", "x\udcff", "y" * (P.MAX_STRING_LENGTH + 1)]


@pytest.mark.parametrize("text", [*_BAD_TEXT, "ok", "é😀"])
def test_text_rule_is_the_servers_rule(text: str) -> None:
    """text_problem() refuses exactly what the server's clean_str answers 422 for."""
    from wisp.server.http.problem import Problem, clean_str

    try:
        clean_str(text, "f")
        server_ok = True
    except Problem:
        server_ok = False
    assert (P.text_problem(text) is None) is server_ok


@pytest.mark.parametrize("text", [*_BAD_TEXT[:3], "ok�", "😀"])
def test_clean_text_makes_every_string_storable(text: str) -> None:
    """clean_text() replaces NUL and each lone surrogate with one U+FFFD and keeps the rest."""
    out = P.clean_text(text)
    assert P.text_problem(out) is None
    assert len(out) == len(text)
    assert out == text or P.REPLACEMENT in out


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ({"a": 1 << 64}, "integer out of range"),
        ({"a": "x" * (P.MAX_STRING_LENGTH + 1)}, "over the limit"),
        ({"k\x00": 1}, "NUL"),
        ({"k" * (P.MAX_JSON_KEY_LENGTH + 1): 1}, "over the limit"),
        ({1: 1}, "keys must be strings"),
        ({"a": object()}, "unsupported JSON value"),
    ],
)
def test_clean_json_refuses_what_the_server_refuses(
    value: dict[object, object], reason: str
) -> None:
    """The SDK's JSON check and the server's clean_json refuse the same values, naming the field."""
    from wisp.server.http.problem import Problem, clean_json

    with pytest.raises(P.Invalid, match=reason) as got:
        P.clean_json(value, "config")
    assert got.value.field.startswith("config")
    with pytest.raises(Problem):
        clean_json(value, "config")


def test_clean_json_refuses_nesting_past_the_depth_limit() -> None:
    """A config nested 100 deep is refused by both sides; 64 deep is accepted by both."""
    from wisp.server.http.problem import Problem, clean_json

    def nest(n: int) -> dict[str, object]:
        out: dict[str, object] = {}
        for _ in range(n):
            out = {"a": out}
        return out

    with pytest.raises(P.Invalid, match="nested deeper"):
        P.clean_json(nest(100), "config")
    with pytest.raises(Problem):
        clean_json(nest(100), "config")
    assert P.clean_json(nest(P.MAX_DEPTH), "c") == clean_json(nest(P.MAX_DEPTH), "c")


def test_sanitised_json_is_accepted_by_the_server() -> None:
    """NUL and lone surrogates in JSON strings are replaced by the SDK, and the result passes the server."""
    from wisp.server.http.problem import clean_json

    value = {"a": ["x\x00", {"b": "\udcff"}], "c": "ok"}
    cleaned = P.clean_json(value, "config")
    assert cleaned == {"a": ["x\ufffd", {"b": "\ufffd"}], "c": "ok"}
    assert clean_json(cleaned, "config") == cleaned


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        ("proj", True),
        ("vision/detector", True),  # owned by the user or team "vision"
        ("a/b/c", False),
        ("Vision/b", False),  # an entity is a user or team name
        ("a/", False),
        ("/b", False),
        ("a\nb", False),
        ("", False),
        ("  ", False),
        ("p" * 129, False),
    ],
)
def test_project_rule_is_the_servers_rule(value: str, ok: bool) -> None:
    """project_problem() and the server's check_project accept the same project names."""
    from wisp.server.http.problem import Problem
    from wisp.server.store.ingest import check_project

    assert (P.project_problem(value) is None) is ok
    if ok:
        assert check_project(value, "p") == value
    else:
        with pytest.raises(Problem):
            check_project(value, "p")


def test_step_rule_matches_the_servers_column() -> None:
    """Steps 0 .. 2**62-1 are valid; 2**62 and -1 are not (the server's signed 64-bit column)."""
    assert P.step_problem(0) is None and P.step_problem(P.MAX_STEP - 1) is None
    assert P.step_problem(P.MAX_STEP) is not None and P.step_problem(-1) is not None


def test_step_refusal_names_the_keys_and_the_rule() -> None:
    """log()'s refusal of a step out of range names up to five keys, the step and the rule."""
    msg = P.step_refusal([f"k{i}" for i in range(7)], 2**62)
    assert msg.startswith("log() of 'k0', 'k1', 'k2', 'k3', 'k4', ... refused: step must be")
    assert "< 2**62, got 4611686018427387904" in msg

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
    from wisp.server import _ingest

    assert _ingest.STATES == P.RUN_STATES
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
    from wisp.server._ingest import prepare_records
    from wisp.server._problem import Problem

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
    from wisp.server._ingest import prepare_records
    from wisp.server._problem import Problem

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

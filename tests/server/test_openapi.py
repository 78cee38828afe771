"""Property-based fuzz of every endpoint in the OpenAPI document: no 5xx, ever."""

from __future__ import annotations

from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings

from wisp.server._openapi import openapi_document


@pytest.fixture
def fuzz_app(app: Any, keys: dict[str, str], store: Any) -> Any:
    """The app with one run and one history batch, so reads hit real data."""
    from wisp.server._ingest import prepare_records

    store.put_run("r1", {"project": "p", "config": {"lr": 0.1}})
    rows = [[i, 1.0 + i, {"loss": 1.0 / (i + 1), "s": "x"}] for i in range(100)]
    store.ingest("r1", "w1", 0, prepare_records([{"type": 3, "data": {"rows": rows}}]))
    app.state.fuzz_key = keys["write"]
    return app


def test_no_server_errors(fuzz_app: Any) -> None:
    """Whatever the fuzzer sends to any documented operation, the server answers below 500."""
    schema = schemathesis.openapi.from_asgi("/api/openapi.json", fuzz_app)
    headers = {"Authorization": f"Bearer {fuzz_app.state.fuzz_key}"}
    seen = []
    for result in schema.get_all_operations():
        op = result.ok()
        seen.append(f"{op.method.upper()} {op.path}")

        @given(case=op.as_strategy())
        @settings(
            max_examples=15,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        def check(case: Any) -> None:
            resp = case.call(headers=headers)
            assert resp.status_code < 500, (case.method, case.formatted_path, resp.text[:500])

        check()
    assert len(seen) == 31  # 15 run/media/query operations, 16 people/keys/audit


def test_document_lists_every_route(app: Any) -> None:
    """Every /api/v1 route of the app is described in the OpenAPI document."""
    documented = set(openapi_document()["paths"])
    routed = {r.path for r in app.routes if r.path.startswith("/api/v1")}
    assert routed == documented

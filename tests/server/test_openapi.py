"""The generated OpenAPI document: complete, and the server keeps to it under fuzzing."""

from __future__ import annotations

from typing import Any

import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)
from starlette.routing import Route

from wisp.server.http.openapi import openapi_document

CHECKS = (
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
    content_type_conformance,
)
# the 404 catch-all, the dashboard, and /mcp (the MCP protocol, documented in docs/agents.md)
NOT_ENDPOINTS = {"/api/{rest:path}", "/{path:path}", "/mcp"}


def _fuzz_app(app: Any, keys: dict[str, str], store: Any) -> Any:
    """The app with one run, one history batch and console lines, so reads hit real data."""
    from wisp.server.store.ingest import prepare_records

    store.put_run("r1", {"project": "p", "config": {"lr": 0.1}})
    rows = [[i, 1.0 + i, {"loss": 1.0 / (i + 1), "s": "x"}] for i in range(100)]
    store.ingest("r1", "w1", 0, prepare_records([{"type": 3, "data": {"rows": rows}}]))
    app.state.fuzz_key = keys["write"]
    return app


def test_every_endpoint_keeps_to_the_document(app: Any, keys: dict[str, str], store: Any) -> None:
    """Whatever the fuzzer sends to any operation, answers are below 500 and match the document."""
    fuzz_app = _fuzz_app(app, keys, store)
    schema = schemathesis.openapi.from_asgi("/api/openapi.json", fuzz_app)
    headers = {"Authorization": f"Bearer {fuzz_app.state.fuzz_key}"}
    seen = []
    for result in schema.get_all_operations():
        op = result.ok()
        seen.append(f"{op.method.upper()} {op.path}")

        @given(case=op.as_strategy())
        @settings(
            max_examples=10,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        def check(case: Any) -> None:
            case.call_and_validate(headers=headers, checks=CHECKS)

        check()
    seen.append("GET /api/openapi.json")  # schemathesis does not fuzz the document itself
    assert set(seen) == {f"{m} {p}" for m, p in _routed(app)}


def _routed(app: Any) -> set[tuple[str, str]]:
    out = set()
    for r in app.routes:
        if not isinstance(r, Route) or r.path in NOT_ENDPOINTS:
            continue
        methods = set(r.methods or ()) - ({"HEAD"} if r.methods != {"HEAD"} else set())
        out |= {(m, r.path) for m in methods}
    return out


def test_document_lists_every_route(app: Any) -> None:
    """Every route of the app but the dashboard and the 404 catch-all is documented, and no more."""
    doc = openapi_document()
    documented = {(m.upper(), p) for p, ops in doc["paths"].items() for m in ops}
    assert _routed(app) == documented
    assert ("GET", "/api/v1/series") in documented


def test_served_document_is_the_generated_one(app: Any) -> None:
    """/api/openapi.json serves the document generated from the declarations, without a key."""
    from starlette.testclient import TestClient

    resp = TestClient(app).get("/api/openapi.json")
    assert resp.status_code == 200
    assert resp.json() == openapi_document()
    assert resp.json()["openapi"].startswith("3.1")

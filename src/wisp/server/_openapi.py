"""The OpenAPI 3.0 document of API v1, written by hand (served at ``/api/openapi.json``)."""

from __future__ import annotations

from typing import Any

__all__ = ["openapi_document"]

_ID = {"type": "string", "pattern": "^[A-Za-z0-9_-]{1,64}$"}
_SHA = {"type": "string", "pattern": "^[0-9a-f]{64}(\\.[A-Za-z0-9]{1,10})?$"}
_ERR = {"$ref": "#/components/responses/Error"}


def _p(name: str, schema: dict[str, Any], where: str = "query", required: bool = False) -> Any:
    return {"name": name, "in": where, "required": required or where == "path", "schema": schema}


def _ok(schema: dict[str, Any] | None = None, desc: str = "OK") -> dict[str, Any]:
    if schema is None:
        return {"description": desc}
    return {"description": desc, "content": {"application/json": {"schema": schema}}}


def _op(
    summary: str,
    params: list[Any],
    responses: dict[str, Any],
    body: dict[str, Any] | None = None,
    scope: str = "read",
) -> dict[str, Any]:
    op: dict[str, Any] = {
        "summary": summary,
        "parameters": params,
        "responses": {**responses, "4XX": _ERR},
        "security": [{"bearer": []}],
        "x-wisp-scope": scope,
    }
    if body is not None:
        op["requestBody"] = {"required": True, "content": body}
    return op


_RUN = {
    "type": "object",
    "properties": {
        k: {"type": t}
        for k, t in {
            "id": "string",
            "project": "string",
            "name": "string",
            "state": "string",
            "tags": "array",
            "notes": "string",
            "created_at": "number",
            "duration": "number",
            "config": "object",
            "summary": "object",
        }.items()
    },
}
_RUN_BODY = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "project": {"type": "string", "minLength": 1, "maxLength": 128},
        "name": {"type": "string"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "notes": {"type": "string"},
        "group": {"type": "string", "nullable": True},
        "job_type": {"type": "string", "nullable": True},
        "config": {"type": "object"},
        "metadata": {"type": "object"},
        "state": {"type": "string", "enum": ["running", "finished", "failed", "killed", "crashed"]},
        "created_at": {"type": "number"},
    },
}
_RECORDS = {
    "type": "object",
    "required": ["writer_id", "first_seq", "records"],
    "properties": {
        "writer_id": _ID,
        "first_seq": {"type": "integer", "minimum": 0},
        "records": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["type", "data"],
                "properties": {
                    "type": {"type": "integer", "minimum": 0, "maximum": 255},
                    "data": {"type": "object"},
                },
            },
        },
    },
}
_ACK = {"type": "object", "properties": {"acked_seq": {"type": "integer"}}}


def _admin_paths() -> dict[str, Any]:
    from wisp.server._admin_api import admin_openapi_paths  # people, keys, audit

    return admin_openapi_paths()


def openapi_document() -> dict[str, Any]:
    """The document; docs/http-api.md describes the same endpoints with examples."""
    run_id = _p("run_id", _ID, "path")
    v1 = "/api/v1"
    paths: dict[str, Any] = {
        f"{v1}/runs/{{run_id}}": {
            "put": _op(
                "Create or update a run (idempotent upsert)",
                [run_id],
                {"200": _ok({"type": "object", "properties": {"run": _RUN}})},
                {"application/json": {"schema": _RUN_BODY}},
                "write",
            ),
            "get": _op("One run with metadata and metric keys", [run_id], {"200": _ok(_RUN)}),
        },
        f"{v1}/runs/{{run_id}}/records": {
            "post": _op(
                "Append a batch of run-file records exactly once",
                [run_id],
                {"200": _ok(_ACK), "409": _ok(_ACK, "first_seq beyond acked_seq + 1")},
                {"application/json": {"schema": _RECORDS}},
                "write",
            )
        },
        f"{v1}/runs/{{run_id}}/writers/{{writer_id}}": {
            "get": _op(
                "Acknowledged sequence of a writer (-1 if unknown)",
                [run_id, _p("writer_id", _ID, "path")],
                {"200": _ok(_ACK)},
            )
        },
        f"{v1}/runs/{{run_id}}/heartbeat": {
            "post": _op("Mark a run as alive", [run_id], {"200": _ok()}, None, "write")
        },
        f"{v1}/runs/{{run_id}}/history": {
            "get": _op(
                "Full history rows, streamed as CSV or JSON lines",
                [
                    run_id,
                    _p("format", {"type": "string", "enum": ["csv", "jsonl"]}),
                    _p("keys", {"type": "string"}),
                ],
                {
                    "200": {
                        "description": "rows",
                        "content": {
                            "text/csv": {"schema": {"type": "string"}},
                            "application/x-ndjson": {"schema": {"type": "string"}},
                        },
                    }
                },
            )
        },
        f"{v1}/runs/{{run_id}}/media": {
            "get": _op(
                "Typed values (images, histograms, ...) logged in a run",
                [run_id, _p("key", {"type": "string"}), _p("limit", {"type": "integer"})],
                {"200": _ok({"type": "object", "properties": {"media": {"type": "array"}}})},
            )
        },
        f"{v1}/runs/{{run_id}}/console": {
            "get": _op(
                "Captured console lines after an id",
                [run_id, _p("after", {"type": "integer"}), _p("limit", {"type": "integer"})],
                {"200": _ok({"type": "object", "properties": {"lines": {"type": "array"}}})},
            )
        },
        f"{v1}/media/{{sha256}}": {
            "head": _op("Is this media file stored?", [_p("sha256", _SHA, "path")], {"200": _ok()}),
            "get": _op(
                "Media file bytes",
                [_p("sha256", _SHA, "path")],
                {"200": {"description": "bytes", "content": {"*/*": {"schema": {}}}}},
            ),
            "put": _op(
                "Upload a media file by its sha256",
                [_p("sha256", _SHA, "path")],
                {"200": _ok(), "201": _ok(None, "stored")},
                {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}}},
                "write",
            ),
        },
        f"{v1}/projects": {
            "get": _op(
                "Projects with run counts",
                [],
                {"200": _ok({"type": "object", "properties": {"projects": {"type": "array"}}})},
            )
        },
        f"{v1}/projects/{{project}}/runs": {
            "get": _op(
                "Runs of a project, filtered, sorted and paginated on the server",
                [
                    _p("project", {"type": "string", "minLength": 1, "maxLength": 128}, "path"),
                    _p("filter", {"type": "string"}),
                    _p("sort", {"type": "string"}),
                    _p("order", {"type": "string", "enum": ["asc", "desc"]}),
                    _p("limit", {"type": "integer", "minimum": 1, "maximum": 1000}),
                    _p("offset", {"type": "integer", "minimum": 0}),
                    _p("group", {"type": "string"}),
                ],
                {
                    "200": _ok(
                        {
                            "type": "object",
                            "properties": {
                                "runs": {"type": "array", "items": _RUN},
                                "total": {"type": "integer"},
                            },
                        }
                    )
                },
            )
        },
        f"{v1}/filter/parse": {
            "get": _op(
                "A runs filter parsed to its expression tree (the dashboard evaluates it)",
                [_p("filter", {"type": "string"})],
                {
                    "200": _ok(
                        {
                            "type": "object",
                            "properties": {
                                "filter": {"type": "string"},
                                "version": {"type": "integer"},
                                "tree": {"type": "object", "nullable": True},
                            },
                        }
                    )
                },
            )
        },
        f"{v1}/series": {
            "get": _op(
                "Metric series, downsampled to at most `buckets` buckets",
                [
                    _p("runs", {"type": "string"}, required=True),
                    _p("keys", {"type": "string"}, required=True),
                    _p("x", {"type": "string"}),
                    _p("min", {"type": "number"}),
                    _p("max", {"type": "number"}),
                    _p("after", {"type": "number"}),
                    _p("buckets", {"type": "integer", "minimum": 1, "maximum": 100000}),
                ],
                {"200": _ok({"type": "object", "properties": {"series": {"type": "array"}}})},
            )
        },
    }
    return {
        "openapi": "3.0.3",
        "info": {
            "title": "wisp tracking server",
            "version": "1",
            "description": "See docs/http-api.md. Errors: {error: {code, message, field}}.",
        },
        "paths": {**paths, **_admin_paths()},
        "components": {
            "securitySchemes": {
                "bearer": {"type": "http", "scheme": "bearer"},
                "session": {"type": "apiKey", "in": "cookie", "name": "wisp_session"},
            },
            "responses": {
                "Error": {
                    "description": "client error",
                    "content": {
                        "application/json": {
                            "schema": {
                                "type": "object",
                                "properties": {
                                    "error": {
                                        "type": "object",
                                        "properties": {
                                            "code": {"type": "string"},
                                            "message": {"type": "string"},
                                            "field": {"type": "string"},
                                        },
                                    }
                                },
                            }
                        }
                    },
                }
            },
        },
    }

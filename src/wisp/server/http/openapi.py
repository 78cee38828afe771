"""The OpenAPI 3.1 document of API v1, generated from the declared endpoints.

Nothing here describes an endpoint: paths, parameters, bodies and responses come
from the :func:`~wisp.server.http.routes.endpoint` declarations and the msgspec
Structs in :mod:`wisp.server.schemas` (through ``msgspec.json.schema_components``).  Served at
``/api/openapi.json``; ``python -m wisp.server.http.openapi`` prints it (the
dashboard's TypeScript types are generated from that output, see web/package.json).
"""

from __future__ import annotations

import functools
import json
import sys
from typing import Any

import msgspec
from starlette.responses import Response

from wisp._protocol import MAX_ENTITY_LENGTH
from wisp.server.http.routes import RAW, Endpoint, In, endpoint, endpoints
from wisp.server.schemas.runs import ErrorBody

__all__ = ["DocApi", "api_classes", "openapi_bytes", "openapi_document"]

_REF = "#/components/schemas/{name}"


def api_classes() -> list[type]:
    """The classes whose ``@endpoint`` methods make up the API (the app routes the same)."""
    from wisp.server.views.admin import AdminApi
    from wisp.server.views.artifacts import ArtifactApi
    from wisp.server.views.automations import AutomationApi
    from wisp.server.views.export import ExportApi
    from wisp.server.views.lineage import LineageApi
    from wisp.server.views.reports import ReportApi
    from wisp.server.views.runs import Api
    from wisp.server.views.sweeps import SweepApi
    from wisp.server.views.uploads import UploadApi
    from wisp.server.views.workspaces import WorkspaceApi

    return [
        Api,
        DocApi,
        SweepApi,
        ExportApi,
        ArtifactApi,
        UploadApi,
        AdminApi,
        WorkspaceApi,
        ReportApi,
        LineageApi,
        AutomationApi,
    ]


_ENTITY_PARAM = {
    "name": "entity",
    "in": "path",
    "required": True,
    "description": "the user or team owning the project: its full name is entity/project",
    "schema": {"type": "string", "minLength": 1, "maxLength": MAX_ENTITY_LENGTH},
}


def all_endpoints() -> list[Endpoint]:
    return [e for cls in api_classes() for e in endpoints(cls)]


def _params(
    typ: type | None, where: str, schemas: dict[str, Any], used: dict[str, Any]
) -> list[Any]:
    if typ is None:
        return []
    comp = schemas[typ.__name__]
    required = set(comp.get("required", ()))
    out = []
    for name, schema in comp["properties"].items():
        schema = dict(schema)
        p: dict[str, Any] = {"name": name, "in": where, "required": name in required}
        if where == "path":
            p["required"] = True
        if "description" in schema:
            p["description"] = schema.pop("description")
        p["schema"] = schema
        out.append(p)
    used.pop(typ.__name__, None)
    return out


def _content(spec: Any, refs: dict[type, Any]) -> dict[str, Any] | None:
    if spec is None:
        return None
    if isinstance(spec, dict):
        return {ctype: {"schema": schema} for ctype, schema in spec.items()}
    return {"application/json": {"schema": refs[spec]}}


def _types(eps: list[Endpoint]) -> list[type]:
    out: list[type] = [ErrorBody]
    for e in eps:
        out += [t for t in (e.path_params, e.query) if t is not None]
        if isinstance(e.body, type):
            out.append(e.body)
        out += [t for t in e.responses.values() if isinstance(t, type)]
    return list(dict.fromkeys(out))


def _structs(base: type = msgspec.Struct) -> dict[str, type]:
    out: dict[str, type] = {}
    sub: type
    for sub in base.__subclasses__():
        out[sub.__name__] = sub
        out.update(_structs(sub))
    return out


def _open_objects(node: Any) -> Any:
    """Say what ``{"type": "object"}`` means (any members) so TypeScript gets an index type."""
    if isinstance(node, dict):
        if node == {"type": "object"}:
            return {"type": "object", "additionalProperties": True}
        return {k: _open_objects(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_open_objects(v) for v in node]
    return node


def openapi_document() -> dict[str, Any]:
    """The document, built from the endpoint declarations and their types."""
    eps = all_endpoints()
    types = _types(eps)
    schemas_list, components = msgspec.json.schema_components(types, ref_template=_REF)
    refs = dict(zip(types, schemas_list, strict=True))
    schemas = dict(components)
    kept = dict(components)  # path/query Structs become parameters, not components
    paths: dict[str, Any] = {}
    error = {"$ref": "#/components/responses/Error"}
    for e in eps:
        params = _params(e.path_params, "path", schemas, kept)
        if e.entity:
            params.insert(0, _ENTITY_PARAM)
        params += _params(e.query, "query", schemas, kept)
        responses: dict[str, Any] = {}
        for status, spec in sorted(e.responses.items()):
            resp: dict[str, Any] = {"description": "OK" if status < 300 else "see the error"}
            content = _content(spec, refs)
            if content is not None:
                resp["content"] = content
            responses[str(status)] = resp
        responses.setdefault("4XX", error)
        op_id = f"{e.name}_in_entity" if e.entity else e.name
        op: dict[str, Any] = {"operationId": op_id, "summary": e.summary}
        if e.description:
            op["description"] = e.description
        op["parameters"] = params
        if e.body is RAW:
            schema: dict[str, Any] = {"type": "string", "format": "binary"}
            op["requestBody"] = {"required": True, "content": {e.body_content: {"schema": schema}}}
        elif e.body is not None:
            schema = refs[e.body]
            op["requestBody"] = {"required": True, "content": {e.body_content: {"schema": schema}}}
        op["responses"] = responses
        if e.scope != "public":
            op["security"] = [{"bearer": []}, {"session": []}]
        op["x-wisp-scope"] = e.scope
        paths.setdefault(e.full_path, {})[e.method.lower()] = op
    classes = _structs()
    for name, comp in kept.items():
        if getattr(classes.get(name), "open_members", False):  # more members than declared
            comp["additionalProperties"] = True
    doc: dict[str, Any] = _open_objects(
        {
            "openapi": "3.1.0",
            "info": {
                "title": "wisp tracking server",
                "version": "1",
                "description": "Generated from the server's declared types; docs/http-api.md "
                "explains the protocol. Errors: {error: {code, message, field}}.",
            },
            "paths": paths,
            "components": {
                "schemas": kept,
                "securitySchemes": {
                    "bearer": {"type": "http", "scheme": "bearer"},
                    "session": {"type": "apiKey", "in": "cookie", "name": "wisp_session"},
                },
                "responses": {
                    "Error": {
                        "description": "client error",
                        "content": {"application/json": {"schema": refs[ErrorBody]}},
                    }
                },
            },
        }
    )
    return doc


def dumps(doc: dict[str, Any]) -> str:
    """The document as the committed ``web/openapi.json`` holds it (stable, readable)."""
    return json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


@functools.cache
def openapi_bytes() -> bytes:
    return json.dumps(openapi_document(), separators=(",", ":")).encode()


class DocApi:
    """The endpoint serving this document (beside the handler classes it describes)."""

    def __init__(self, store: Any, settings: Any, blobs: Any) -> None:
        pass

    @endpoint(
        "GET",
        "/api/openapi.json",
        scope="public",
        summary="This OpenAPI document",
        responses={200: {"application/json": {"type": "object"}}},
    )
    async def openapi(self, r: In) -> Response:
        return Response(openapi_bytes(), media_type="application/json")


def main() -> None:
    sys.stdout.write(dumps(openapi_document()))


if __name__ == "__main__":
    main()

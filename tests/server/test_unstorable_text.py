"""Text no database can store (NUL, a lone surrogate) in any path, query or body field of any
documented operation is a 4xx naming it, on SQLite and PostgreSQL (src/wisp/server/http/routes.py,
_auth.py)."""

from __future__ import annotations

import json
import re
from typing import Any

from starlette.testclient import TestClient

_OPS = ("get", "post", "put", "patch", "delete", "head")


def _requests(doc: dict[str, Any], bad_path: str, bad_text: str) -> list[tuple[str, str, Any]]:
    """(method, url, body) for each path parameter, query parameter and body field in turn."""
    out: list[tuple[str, str, Any]] = []
    for path, ops in doc["paths"].items():
        names = re.findall(r"{(\w+)}", path)
        for method, op in ops.items():
            if method not in _OPS:
                continue
            for name in names:
                url = path
                for n in names:
                    url = url.replace("{" + n + "}", bad_path if n == name else "x")
                out.append((method, url, None))
            base = re.sub(r"{\w+}", "x", path)
            for prm in op.get("parameters", []):
                if prm.get("in") == "query":
                    out.append((method, f"{base}?{prm['name']}={bad_path}", None))
            schema = op.get("requestBody", {}).get("content", {}).get("application/json", {})
            ref = schema.get("schema", {}).get("$ref", "")
            fields = doc["components"]["schemas"].get(ref.split("/")[-1], {}).get("properties", {})
            out += [(method, base, {f: bad_text}) for f in fields]
    return out


def test_nul_and_lone_surrogates_anywhere_are_refused_not_500(app: Any, store: Any) -> None:
    """Every operation answers below 500 when a parameter or body field holds NUL or a lone
    surrogate, called with a site admin's key so that no rights check answers first."""
    uid = store.users.add_user("root", admin=True)
    key = store.create_key("admin", "probe", uid)[1]
    c = TestClient(app, raise_server_exceptions=False)
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    doc = c.get("/api/openapi.json").json()
    failures = []
    for bad_path, bad_text in (("a%00b", "a\x00b"), ("a%ED%A0%80b", "a\ud800b")):
        for method, url, body in _requests(doc, bad_path, bad_text):
            content = None if body is None else json.dumps(body).encode()
            prefix = "" if url.startswith("/api/") else "/api/v1"
            r = c.request(method.upper(), prefix + url, headers=headers, content=content)
            if r.status_code >= 500:
                failures.append((method, url, body, r.status_code))
    assert not failures, failures

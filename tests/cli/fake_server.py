"""An HTTP test double for what a real wisp server can't produce here: a skewed clock."""

from __future__ import annotations

import email.utils
import http.server
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def fake_server(key: str, skew: float = 0.0) -> Iterator[str]:
    """Serve GET /api/v1/projects: 200 for ``key``, 401 otherwise; Date header off by ``skew``."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            ok = self.headers.get("Authorization") == f"Bearer {key}"
            body = json.dumps({"projects": []} if ok else {"error": {"code": "auth"}}).encode()
            self.send_response(200 if ok else 401)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def send_header(self, keyword: str, value: str) -> None:
            if keyword == "Date":
                value = email.utils.formatdate(time.time() + skew, usegmt=True)
            super().send_header(keyword, value)

        def log_message(self, *args: object) -> None:
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}"
    finally:
        srv.shutdown()
        srv.server_close()
        t.join(5)

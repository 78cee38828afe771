"""Server-Timing (wisp.server.http.timing): every answer says how long the server took."""

from __future__ import annotations

import re
from typing import Any

_DUR = re.compile(r"app;dur=\d+\.\d")


def test_answers_carry_the_server_s_time_to_respond(api: Any) -> None:
    """A read, a write and a refused request each carry ``Server-Timing: app;dur=<ms>``."""
    got = api.put("/api/v1/runs/t1", json={"project": "timing"})
    assert got.status_code == 200 and _DUR.fullmatch(got.headers["server-timing"])
    got = api.get("/api/v1/projects/timing/runs")
    assert got.status_code == 200 and _DUR.fullmatch(got.headers["server-timing"])
    got = api.get("/api/v1/runs/nosuchrun", headers={"Authorization": "Bearer nope"})
    assert got.status_code == 401 and _DUR.fullmatch(got.headers["server-timing"])

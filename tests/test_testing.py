"""wisp.testing (src/wisp/testing.py): a real server process with a key, restartable, stopped on exit."""

from __future__ import annotations

import urllib.error
import urllib.request
from pathlib import Path

import pytest

from wisp.testing import Server, free_port, server_fixture

pytest.importorskip("uvicorn")

wisp_server = server_fixture()


def test_server_answers_with_its_key_and_refuses_without(wisp_server: Server) -> None:
    """The fixture's server is a real, authenticated server: its key reads, no key is a 401."""
    assert wisp_server.running
    assert wisp_server.get("/projects") == {"projects": []}
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(f"{wisp_server.url}/api/v1/projects", timeout=10)
    assert e.value.code == 401
    e.value.close()


def test_restart_keeps_port_and_data_and_exit_stops(tmp_path: Path) -> None:
    """stop() then start() serves the same database on the same port; leaving the block stops it."""
    port = free_port()
    with Server(tmp_path, port=port, no_auth=True) as srv:
        req = urllib.request.Request(
            f"{srv.url}/api/v1/runs/r1",
            data=b'{"project": "p"}',
            method="PUT",
            headers={"Authorization": f"Bearer {srv.key}", "Content-Type": "application/json"},
        )
        urllib.request.urlopen(req, timeout=10).close()
        srv.stop()
        assert not srv.running
        srv.start()
        assert srv.url.endswith(f":{port}")
        assert srv.get("/runs/r1")["project"] == "p"
        read_key = srv.create_key("read")
        assert read_key.startswith("wisp_r_")
    assert not srv.running
    with pytest.raises(OSError):
        urllib.request.urlopen(f"{srv.url}/api/openapi.json", timeout=2)


def test_a_server_whose_port_was_taken_meanwhile_moves_to_another(tmp_path: Path) -> None:
    """When another process takes the port chosen for a Server before it binds, the Server starts on a new port and its url names that one, never talking to the squatter."""
    import socket

    srv = Server(tmp_path)
    taken = srv.port
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", taken))
        squatter.listen()
        with srv:
            assert srv.port != taken and srv.url.endswith(f":{srv.port}")
            assert srv.get("/projects") is not None

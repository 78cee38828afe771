"""``wisp report push|pull|versions|diff|revert|export ID`` against a real server process."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli._helpers import wisp_cli
from wisp.testing import Server

REPORT = """---
title: Remote
project: remote
runsets:
  all: {}
---
First text.

```wisp-panel
type: line
runset: all
y: [loss]
```

```wisp-panel
type: media
runset: all
key: pic
```
"""


@pytest.fixture
def server(tmp_path: Path) -> Server:
    with Server(tmp_path / "srv") as srv:
        yield srv


def _log(server: Server, tmp_path: Path) -> str:
    import wisp

    run = wisp.init(project="remote", dir=str(tmp_path), config={"lr": 0.1},
                    settings={"server_url": server.url, "api_key": server.key})  # fmt: skip
    import numpy as np

    for s in range(20):
        run.log({"loss": 1 / (s + 1)})
    run.log({"pic": wisp.Image(np.zeros((4, 4, 3), dtype=np.uint8))})
    run.finish()
    return str(run.id)


def test_push_twice_pull_diff_revert_and_export(server: Server, tmp_path: Path) -> None:
    """Two pushes make two versions; pull, diff, revert and export from the server work."""
    rid = _log(server, tmp_path)
    env = {"WISP_SERVER_URL": server.url, "WISP_API_KEY": server.key}
    path = tmp_path / "r.md"
    path.write_text(REPORT)
    out = wisp_cli("report", "push", str(path), cwd=tmp_path, env=env)
    assert out.returncode == 0, out.stderr
    report_id = out.stdout.strip()
    assert "version 1" in out.stderr
    path.write_text(REPORT.replace("First text.", "Second text."))
    out = wisp_cli("report", "push", str(path), "--id", report_id, cwd=tmp_path, env=env)
    assert out.returncode == 0 and "version 2" in out.stderr, out.stderr
    out = wisp_cli("report", "versions", report_id, "--project", "remote", cwd=tmp_path, env=env)
    assert out.stdout.count("\nv") + out.stdout.startswith("v") == 2, out.stdout
    out = wisp_cli("report", "diff", f"remote/{report_id}", "1", "2", cwd=tmp_path, env=env)
    assert "-First text.\n+Second text.\n" in out.stdout
    out = wisp_cli("report", "revert", report_id, "1", "--project", "remote", cwd=tmp_path, env=env)
    assert "version 3" in out.stdout, out.stderr
    pulled = tmp_path / "pulled.md"
    out = wisp_cli(
        "report", "pull", f"remote/{report_id}", "-o", str(pulled), cwd=tmp_path, env=env
    )
    assert out.returncode == 0 and pulled.read_text() == REPORT
    html = tmp_path / "r.html"
    out = wisp_cli("report", "export", report_id, "--project", "remote", "--html", str(html),
                   cwd=tmp_path, env=env)  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert rid in html.read_text() and 'src="data:image/png;base64,' in html.read_text()
    import urllib.request

    url = f"{server.url}/api/v1/projects/remote/reports/{report_id}/html"
    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {server.key}"})
    with urllib.request.urlopen(req, timeout=60) as res:  # the server draws it from its store
        assert 'src="data:image/png;base64,' in res.read().decode()
    import wisp

    with wisp.Api(server_url=server.url, api_key=server.key) as api:
        ref = api.report(f"remote/{report_id}")
        assert ref.version == 3 and ref.report.title == "Remote"
        assert [v["version"] for v in ref.versions()] == [1, 2, 3]

"""Audio, video, HTML, point clouds and wisp.plot charts reach a real server by sha256."""

from __future__ import annotations

import hashlib
import urllib.request
from pathlib import Path

import numpy as np

import wisp


def test_every_media_kind_is_uploaded_and_listed(server, tmp_path: Path, no_run: None) -> None:  # type: ignore[no-untyped-def]
    """After sync, each value's file is on the server byte for byte (sha256 added to the
    value) and the run's media list holds each typed value."""
    run = wisp.init(project="kinds", dir=str(tmp_path), mode="offline")
    wisp.log(
        {
            "a": wisp.Audio(np.zeros(800, dtype=np.int16), sample_rate=8000),
            "v": wisp.Video(np.zeros((2, 3, 8, 8), dtype=np.uint8), format="gif"),
            "h": wisp.Html("<p>hi</p>"),
            "o": wisp.Object3D(np.ones((5, 3), dtype=np.float32)),
            "c": wisp.plot.confusion_matrix(preds=[0, 1], y_true=[0, 0]),
        },
        step=3,
    )
    run.finish()
    (res,) = wisp.sync([run.dir], server_url=server.url, api_key=server.key)
    assert res.media == 5
    row = next(wisp.open_run(run.dir).history())
    for key in "avhoc":
        local = (Path(run.dir) / row[key]["path"]).read_bytes()
        sha = hashlib.sha256(local).hexdigest()
        with urllib.request.urlopen(f"{server.url}/api/v1/media/{sha}", timeout=10) as resp:
            assert resp.read() == local
    req = urllib.request.Request(
        f"{server.url}/api/v1/runs/{run.id}/media",
        headers={"Authorization": f"Bearer {server.key}"},
    )
    with urllib.request.urlopen(req, timeout=10) as resp:
        import json

        items = {m["key"]: m for m in json.load(resp)["media"]}
    assert {k: items[k]["type"] for k in "avhoc"} == {
        "a": "audio",
        "v": "video",
        "h": "html",
        "o": "object3d",
        "c": "chart",
    }
    assert items["c"]["chart"] == "confusion" and len(items["c"]["sha256"]) == 64
    assert items["o"]["points"] == 5 and items["o"]["step"] == 3

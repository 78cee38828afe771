"""`wisp export RUN --media DIR` copies a run's media files into a folder by key and step."""

from __future__ import annotations

from pathlib import Path

from tests.cli._helpers import make_run, wisp_cli


def test_export_media_writes_files_by_key_and_step(tmp_path: Path) -> None:
    """Each media value becomes DIR/<key>/<step>.<ext> (gallery items numbered), byte for byte."""
    run_dir = make_run(
        tmp_path,
        """
        import numpy as np
        for step in range(2):
            wisp.log({"clip/a": wisp.Audio(np.full(10, step, dtype=np.int16), sample_rate=100),
                      "page": wisp.Html(f"<p>{step}</p>"), "loss": 1.0,
                      "imgs": [wisp.Image(np.full((2, 2), i, dtype=np.uint8)) for i in range(2)]},
                     step=step)
        """,
        name="alpha",
    )
    res = wisp_cli("export", "alpha", "--media", "out", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert "wrote 8 media files" in res.stderr
    out = tmp_path / "out"
    got = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    assert got == [
        "clip/a/0.wav",
        "clip/a/1.wav",
        "imgs/0_0.png",
        "imgs/0_1.png",
        "imgs/1_0.png",
        "imgs/1_1.png",
        "page/0.html",
        "page/1.html",
    ]
    import wisp

    data = wisp.open_run(run_dir)
    assert (out / "page/1.html").read_bytes() == Path(
        data.media_files("page")[1][1][0]
    ).read_bytes()
    res = wisp_cli("export", "alpha", "--media", "only", "--keys", "page", cwd=tmp_path)
    assert sorted(p.name for p in (tmp_path / "only").rglob("*.*")) == ["0.html", "1.html"]

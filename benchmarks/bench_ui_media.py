"""Media tab benchmark in a real browser (Debian's Chromium driven by Playwright).

A run with ``--videos`` 16-frame videos and ``--clips`` 1 s audio clips (distinct
content, one key each) and a run with a ``--points`` point cloud are logged by the
real SDK and imported by a real ``wisp ui``.  Chromium then measures:

- media tab first paint: navigation to the first media sections drawn (target with
  100 videos + 100 clips: <= 1 s), and how many video/audio files were downloaded by
  then and after 1 s more (target: only those on screen);
- point cloud: navigation to the cloud drawn, then the time per orbit step (a real
  mouse drag; each step timed until the frame is read back with ``readPixels``, so
  the rendering has finished).  Headless Chromium here renders WebGL in software
  (SwiftShader, no GPU), so frame times are far above a desktop GPU's.

Usage: python benchmarks/bench_ui_media.py [--videos 100] [--clips 100] [--points 1000000]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_ui import CHROMIUM, CHROMIUM_ARGS, STATIC, UI, _get, _pct

FILL = """
import sys, numpy as np, wisp
videos, clips, points = map(int, sys.argv[1:4])
settings = {"system_metrics": False, "console": "off", "git": False}
run = wisp.init(project="bench-media", name="many-media", settings=settings)
t = np.arange(16000) / 16000
for i in range(videos):
    f = np.full((16, 3, 64, 64), i % 256, dtype=np.uint8); f[:, 0, 0, 0] = i // 256
    wisp.log({f"video/{i:03d}": wisp.Video(f, fps=8)}, step=0)
for i in range(clips):
    wisp.log({f"audio/{i:03d}": wisp.Audio(np.sin(t * (100 + i)).astype(np.float32),
                                           sample_rate=16000)}, step=0)
run.finish()
run = wisp.init(project="bench-media", name="cloud",
                settings={**settings, "max_value_bytes": 64 << 20})
rng = np.random.default_rng(0)
xyz = rng.normal(size=(points, 3)).astype(np.float32)
rgb = np.clip(np.abs(xyz) * 80, 0, 255)
wisp.log({"cloud": wisp.Object3D(np.column_stack([xyz, rgb]))}, step=0)
run.finish()
"""

FIRST = """() => { const s = [...document.querySelectorAll('section.media-item')];
  return s.length > 0 ? performance.now() : false; }"""
COUNT = """() => performance.getEntriesByType('resource')
  .filter(e => /\\.(mp4|wav)$/.test(e.name)).length"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--videos", type=int, default=100)
    ap.add_argument("--clips", type=int, default=100)
    ap.add_argument("--points", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    if not STATIC.exists():
        raise SystemExit("build the dashboard first: make web")
    if not os.path.exists(CHROMIUM):
        raise SystemExit("needs Debian's chromium: make chromium")
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp:
        work, data = Path(tmp) / "work", Path(tmp) / "data"
        work.mkdir()
        data.mkdir()
        env = {**os.environ, "WISP_DIR": str(work)}
        t0 = time.perf_counter()
        sizes = [args.videos, args.clips, args.points]
        subprocess.run(
            [sys.executable, "-c", FILL, *map(str, sizes)], cwd=work, env=env, check=True
        )
        print(f"fill: logged in {time.perf_counter() - t0:.1f} s")
        ui = UI(work, data)
        try:
            deadline = time.monotonic() + 900
            ids: dict[str, str] = {}
            while time.monotonic() < deadline and len(ids) < 2:
                rows = _get(f"{ui.url}/api/v1/projects/bench-media/runs")["runs"]
                ids = {r["name"]: r["id"] for r in rows if r["state"] == "finished"}
                time.sleep(0.5)
            want = args.videos + args.clips
            while time.monotonic() < deadline:
                if len(_get(f"{ui.url}/api/v1/runs/{ids['many-media']}/media")["media"]) >= want:
                    break
                time.sleep(0.5)
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                ctx = browser.new_context(viewport={"width": 1280, "height": 860})
                ctx.new_page().goto(ui.url + "/#/")  # warm the app cache
                paint, fetched, later = [], [], []
                for _ in range(args.repeat):
                    pg = ctx.new_page()
                    pg.goto(f"{ui.url}/#/p/bench-media/r/{ids['many-media']}?tab=media")
                    paint.append(
                        pg.wait_for_function(FIRST, polling="raf", timeout=60_000).json_value()
                    )
                    fetched.append(pg.evaluate(COUNT))
                    pg.wait_for_timeout(1000)
                    later.append(pg.evaluate(COUNT))
                    pg.close()
                pg = ctx.new_page()
                t_nav = time.perf_counter()
                pg.goto(f"{ui.url}/#/p/bench-media/r/{ids['cloud']}?tab=media")
                pg.wait_for_selector('.scene3d[data-drawn="1"]', timeout=120_000)
                drawn = time.perf_counter() - t_nav
                canvas = pg.locator(".scene3d canvas")
                box = canvas.bounding_box()
                assert box is not None
                cx, cy = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
                pg.mouse.move(cx, cy)
                pg.mouse.down()
                frames = []
                read = """c => { const gl = c.getContext('webgl2'); const b = new Uint8Array(4);
                    gl.readPixels(0, 0, 1, 1, gl.RGBA, gl.UNSIGNED_BYTE, b); return b[0]; }"""
                for i in range(20):
                    t = time.perf_counter()
                    pg.mouse.move(cx + 6 * (i + 1), cy + 2 * (i + 1))
                    canvas.evaluate(read)
                    frames.append((time.perf_counter() - t) * 1000)
                pg.mouse.up()
                browser.close()
        finally:
            ui.close()
    print(
        f"media tab, {args.videos} videos + {args.clips} audio clips: first paint p50 "
        f"{_pct(paint, 0.5):.0f} ms (max {max(paint):.0f}; target <= 1000); media files "
        f"downloaded at first paint {max(fetched)}, 1 s later {max(later)} of {want}"
    )
    print(
        f"point cloud, {args.points:,} points: drawn {drawn * 1000:.0f} ms after navigation; "
        f"orbit step p50 {_pct(frames, 0.5):.0f} ms, p99 {_pct(frames, 0.99):.0f} ms "
        "(software WebGL)"
    )


if __name__ == "__main__":
    main()

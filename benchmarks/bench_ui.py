"""Dashboard benchmark in a real browser (Debian's Chromium driven by Playwright).

Runs are logged by the real SDK into a temporary directory, then a real ``wisp ui``
(server on SQLite + the sync uploader importing the run directories) serves them, and
Chromium measures, with ``performance.now()`` inside the page:

- run page: a run with many metrics, time from navigation to every chart in the first
  viewport drawn (the issue's target: 100 metrics x 100k points, <= 1 s);
- compare: 10 runs on one metric, time from navigation to the chart drawn (10 x 1M,
  <= 1 s); drag-zoom to the zoomed window drawn (<= 200 ms; drawn at once from the
  min/max buckets already held), and, separately, drag-zoom to the server's
  full-resolution data for that window drawn;
- runs table: 10,000 runs, click-to-painted sort and Enter-to-painted filter (<= 200 ms).

Each figure is the p50 of ``--repeat`` runs (p99/max beside it).  Filling 100 x 100k
and 10 x 1M points through the SDK and the importer takes minutes on a 2-core machine, so
the defaults are scaled down (``--points``, ``--run-points``) and the N used is printed.
The 10,000-run table is written through the server's ingestion code (the same
``prepare_records`` + ``Store.ingest`` the HTTP API calls), because importing 10,000 SDK
run directories one by one is an import-throughput test, not a dashboard one.

Usage: python benchmarks/bench_ui.py [--metrics 100] [--points 20000] [--runs 10]
       [--run-points 200000] [--table-runs 10000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
STATIC = ROOT / "src" / "wisp" / "server" / "static" / "index.html"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"]

FILL = """
import math, sys, wisp
metrics, points, runs, run_points = map(int, sys.argv[1:5])
settings = {"system_metrics": False, "console": "off", "git": False}
run = wisp.init(project="bench", name="many-metrics", settings=settings)
names = [f"group{j // 10}/metric{j:03d}" for j in range(metrics)]
for s in range(points):
    wisp.log({n: math.sin(s * 1e-3 + j) + j for j, n in enumerate(names)}, step=s)
run.finish()
for r in range(runs):
    run = wisp.init(project="bench", name=f"compare-{r}", config={"seed": r}, settings=settings)
    for s in range(run_points):
        wisp.log({"loss": 1.0 / (1 + s * 1e-4) + 0.01 * math.sin(s + r) + 0.05 * r}, step=s)
    run.finish()
"""


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=60) as r:
        return json.load(r)


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def seed_table(db_url: str, n: int) -> float:
    """``n`` finished runs with config and summary, through the server's ingestion code."""
    from wisp.server import open_store
    from wisp.server.store.ingest import prepare_records

    rng = random.Random(0)
    store = open_store(db_url)
    t0 = time.perf_counter()
    try:
        for i in range(n):
            rid = f"t{i:05d}"
            lr = 10 ** rng.uniform(-5, -1)
            store.put_run(rid, {"project": "table", "name": f"run-{i:05d}"})
            recs = [
                {"type": 1, "data": {"project": "table", "name": f"run-{i:05d}", "host": "h"}},
                {"type": 2, "data": {"config": {"lr": lr, "bs": rng.choice([32, 64, 128])}}},
                {"type": 4, "data": {"summary": {"acc": rng.random(), "loss": rng.random()}}},
                {"type": 6, "data": {"state": rng.choice(["finished", "failed"])}},
            ]
            store.ingest(rid, "w", 0, prepare_records(recs))
    finally:
        store.close()
    return time.perf_counter() - t0


class UI:
    def __init__(self, work: Path, data: Path) -> None:
        from wisp._ui import ui

        self.stop = threading.Event()
        ready = threading.Event()
        box: dict[str, str] = {}

        def on_ready(url: str) -> None:
            box["url"] = url
            ready.set()

        self.thread = threading.Thread(
            target=ui,
            kwargs={
                "port": _port(),
                "dir": str(work),
                "data": str(data),
                "poll_interval": 0.25,
                "stop": self.stop,
                "ready": on_ready,
            },
            daemon=True,
        )
        self.thread.start()
        if not ready.wait(1800):
            raise SystemExit("wisp ui did not start")
        self.url = box["url"]

    def close(self) -> None:
        self.stop.set()
        self.thread.join(60)


def _wait_imported(url: str, runs: int, points: int, deadline: float) -> dict[str, str]:
    """Wait until every logged run is on the server with all its points; name -> id."""
    while time.monotonic() < deadline:
        rows = _get(f"{url}/api/v1/projects/bench/runs?limit=1000")["runs"]
        ids = {r["name"]: r["id"] for r in rows if r["state"] == "finished"}
        if len(ids) == runs + 1:
            last = ids[f"compare-{runs - 1}"] if runs else ids["many-metrics"]
            key = "loss" if runs else ""
            q = urllib.parse.urlencode({"runs": last, "keys": key, "buckets": 10})
            s = _get(f"{url}/api/v1/series?{q}")["series"] if key else [{"count": points}]
            if s and s[0]["count"] == points:
                return ids
        time.sleep(0.5)
    raise SystemExit("the runs were not imported in time")


FIRST_CHARTS = """() => {
  const cells = [...document.querySelectorAll('[data-cell]')].filter(c => {
    const r = c.getBoundingClientRect(); return r.top < innerHeight && r.bottom > 0; });
  if (!cells.length) return false;
  const ok = cells.every(c => c.querySelector('figure.chart[data-drawn]'));
  return ok ? [performance.now(), cells.length] : false;
}"""


def bench_run_page(ctx: Any, url: str, rid: str, repeat: int) -> tuple[list[float], int]:
    times, shown = [], 0
    for _ in range(repeat):
        pg = ctx.new_page()
        pg.goto(f"{url}/#/p/bench/r/{rid}")
        t, shown = pg.wait_for_function(FIRST_CHARTS, polling="raf", timeout=60_000).json_value()
        times.append(t)
        pg.close()
    return times, shown


def bench_compare(
    ctx: Any, url: str, ids: list[str], total: int, repeat: int
) -> tuple[list[float], list[float], list[float]]:
    """Drawn; drag-zoom to the zoomed view drawn; drag-zoom to the full-resolution refetch drawn."""
    drawn, zoom, refined = [], [], []
    sel = 'figure.chart[data-key="loss"]'
    for _ in range(repeat):
        pg = ctx.new_page()
        pg.goto(f"{url}/#/p/bench/compare?runs={','.join(ids)}")
        t = pg.wait_for_function(
            f"() => {{ const d = document.querySelector('{sel}')?.dataset;"
            " return d && d.drawn && +d.count === "
            + str(total)
            + " ? performance.now() : false; }",
            polling="raf",
            timeout=60_000,
        ).json_value()
        drawn.append(t)
        # drag-zoom over 5% of the x range, timed from mouseup
        d0 = pg.locator(sel).evaluate("el => ({...el.dataset})")
        before, drawn0 = int(d0.get("fetches") or 0), int(d0.get("drawn") or 0)
        pg.evaluate(
            f"() => document.querySelector('{sel} .u-over').addEventListener('mouseup',"
            " () => { window.__t0 = performance.now(); }, {capture: true, once: true})"
        )
        box = pg.locator(f"{sel} .u-over").bounding_box()
        y = box["y"] + box["height"] / 2
        pg.mouse.move(box["x"] + box["width"] * 0.40, y)
        pg.mouse.down()
        pg.mouse.move(box["x"] + box["width"] * 0.45, y, steps=4)
        pg.mouse.up()
        # the zoomed window on screen (from the data held, or the refetch if that is first)
        zoom.append(
            pg.wait_for_function(
                f"b => {{ const d = document.querySelector('{sel}').dataset;"
                " return d.zoomed === '1' && +d.drawn > b"
                " ? performance.now() - window.__t0 : false; }",
                arg=drawn0,
                polling="raf",
                timeout=30_000,
            ).json_value()
        )
        # the server's full-resolution data for the window drawn
        refined.append(
            pg.wait_for_function(
                f"b => {{ const d = document.querySelector('{sel}').dataset;"
                " return d.zoomed === '1' && +d.fetches > b"
                " ? performance.now() - window.__t0 : false; }",
                arg=before,
                polling="raf",
                timeout=30_000,
            ).json_value()
        )
        pg.close()
    return drawn, zoom, refined


def bench_table(ctx: Any, url: str, n: int, repeat: int) -> tuple[float, list[float], list[float]]:
    pg = ctx.new_page()
    pg.goto(f"{url}/#/p/table?cols=config.lr,config.bs,summary.acc")
    load = pg.wait_for_function(
        f"() => document.querySelector('#run-count')?.textContent === '{n} runs'"
        " ? performance.now() : false",
        polling="raf",
        timeout=120_000,
    ).json_value()
    sort, filt = [], []
    header = pg.locator('.th[data-col="summary.acc"]')
    for i in range(repeat * 2):
        pg.evaluate(
            "() => document.addEventListener('click', () => { window.__t0 = performance.now(); },"
            " {capture: true, once: true})"
        )
        header.click()
        want = "descending" if i % 2 == 0 else "ascending"
        sort.append(
            pg.wait_for_function(
                "w => document.querySelector('.th[data-col=\"summary.acc\"]')"
                ".getAttribute('aria-sort') === w && document.querySelector('#runs-scroller .tr')"
                " ? performance.now() - window.__t0 : false",
                arg=want,
                polling="raf",
            ).json_value()
        )
    filters = ["config.lr < 0.001", "config.lr < 0.01 and state = finished"]
    expect = {}
    for f in filters:
        q = urllib.parse.urlencode({"filter": f, "limit": 1})
        expect[f] = _get(f"{url}/api/v1/projects/table/runs?{q}")["total"]
    for i in range(repeat * 2):
        f = filters[i % 2]
        pg.fill("#filter", f)
        pg.evaluate(
            "() => document.addEventListener('keydown', () => { window.__t0 = performance.now(); },"
            " {capture: true, once: true})"
        )
        pg.press("#filter", "Enter")
        text = f"{expect[f]} run" + ("" if expect[f] == 1 else "s")
        filt.append(
            pg.wait_for_function(
                "t => document.querySelector('#run-count').textContent === t"
                " ? performance.now() - window.__t0 : false",
                arg=text,
                polling="raf",
                timeout=60_000,
            ).json_value()
        )
    pg.close()
    return load, sort, filt


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--metrics", type=int, default=100)
    ap.add_argument("--points", type=int, default=20_000, help="points per metric (run page)")
    ap.add_argument("--runs", type=int, default=10, help="runs in the compare view")
    ap.add_argument("--run-points", type=int, default=200_000, help="points per compared run")
    ap.add_argument("--table-runs", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=5)
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
        sizes = [args.metrics, args.points, args.runs, args.run_points]
        t0 = time.perf_counter()
        subprocess.run(
            [sys.executable, "-c", FILL, *map(str, sizes)], cwd=work, env=env, check=True
        )
        t_log = time.perf_counter() - t0
        t_seed = seed_table(f"sqlite:///{data / 'wisp.db'}", args.table_runs)
        t0 = time.perf_counter()
        ui = UI(work, data)
        try:
            ids = _wait_imported(ui.url, args.runs, args.run_points, time.monotonic() + 1800)
            t_import = time.perf_counter() - t0
            total_pts = args.metrics * args.points + args.runs * args.run_points
            print(
                f"fill: SDK logged {total_pts:,} points in {t_log:.1f} s, wisp ui imported them"
                f" in {t_import:.1f} s; {args.table_runs:,} table runs seeded in {t_seed:.1f} s"
            )
            compare_ids = [ids[f"compare-{r}"] for r in range(args.runs)]
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                ctx = browser.new_context(viewport={"width": 1280, "height": 860})
                ctx.new_page().goto(ui.url + "/#/")  # warm the browser's cache of the app
                run_page, shown = bench_run_page(ctx, ui.url, ids["many-metrics"], args.repeat)
                drawn, zoom, refined = bench_compare(
                    ctx, ui.url, compare_ids, args.runs * args.run_points, args.repeat
                )
                load, sort, filt = bench_table(ctx, ui.url, args.table_runs, args.repeat)
                browser.close()
        finally:
            ui.close()
    rp = f"{args.metrics} metrics x {args.points:,} pts ({shown} charts in view)"
    cp = f"{args.runs} runs x {args.run_points:,} pts"
    tr = f"{args.table_runs:,} runs"
    rows = [
        ("run page: first charts drawn", rp, run_page, 1000),
        ("compare: chart drawn", cp, drawn, 1000),
        ("compare: zoom re-render", cp, zoom, 200),
        ("compare: zoom full-res data drawn", cp, refined, None),
        ("runs table: sort (click->paint)", tr, sort, 200),
        ("runs table: filter (Enter->paint)", tr, filt, 200),
        ("runs table: first load", tr, [load], None),
    ]
    print(f"{'measure':<36}{'N':<46}{'p50 ms':>9}{'max ms':>9}{'target':>9}")
    for name, n, xs, target in rows:
        tgt = f"<={target}" if target else "-"
        print(f"{name:<36}{n:<46}{_pct(xs, 0.5):>9.0f}{max(xs):>9.0f}{tgt:>9}")


if __name__ == "__main__":
    main()

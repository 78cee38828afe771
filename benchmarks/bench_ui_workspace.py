"""Grouping, workspaces and the 100,000-run table in a real browser (Debian's Chromium).

The issue's targets, measured with ``performance.now()`` inside the page against a real
``wisp ui`` server on SQLite:

- runs table of 100,000 runs: first rows on screen (navigation -> first page painted,
  <= 1 s), sort (click -> painted, <= 200 ms) and filter (Enter -> painted, <= 200 ms) once
  the table holds every run;
- a grouped chart of 100 runs x 100k points (mean + min-max band, 4 groups by config.lr):
  navigation -> drawn (<= 1 s), and the grouped-series request alone on the server;
- a saved workspace of 50 panels: navigation -> every panel in the viewport drawn (<= 1 s;
  the page draws only the panels in or near the viewport), then scrolling to the last
  panel -> drawn.

The table's runs are inserted in bulk into the runs table (the rows the ingestion code
writes; importing 100,000 run directories is an import benchmark, not a dashboard one); the
points go through the server's ingestion code (``prepare_records`` + ``Store.ingest``),
which writes the compressed chunks (and their aggregates) the grouped series reads.
Scaled-down sizes are allowed (``--group-points``) and printed.

Usage: python benchmarks/bench_ui_workspace.py [--table-runs 100000] [--group-runs 100]
       [--group-points 100000] [--panels 50] [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_ui import CHROMIUM, CHROMIUM_ARGS, STATIC, UI, _pct, bench_table

LRS = (0.1, 0.03, 0.01, 0.001)


def seed(db_url: str, table_runs: int, group_runs: int, points: int, panels: int) -> None:
    """The three projects (table, groups, panels); prints how long each took."""
    from wisp.server import open_store
    from wisp.server.store import schema as S
    from wisp.server.store.ingest import prepare_records

    rng = random.Random(0)
    store = open_store(db_url)
    try:
        t0 = time.perf_counter()
        rows = []
        for i in range(table_runs):
            rows.append(
                {
                    "id": f"t{i:06d}",
                    "given_id": f"t{i:06d}",
                    "project": "table",
                    "name": f"run-{i:06d}",
                    "state": rng.choice(["finished", "failed"]),
                    "tags": [],
                    "notes": "",
                    "run_group": None,
                    "job_type": None,
                    "config": {"lr": 10 ** rng.uniform(-5, -1), "bs": rng.choice([32, 64, 128])},
                    "summary": {"acc": rng.random(), "loss": rng.random()},
                    "meta": {},
                    "created_at": 1.7e9 + i,
                    "finished_at": 1.7e9 + i + 60,
                    "exit_code": 0,
                    "last_seen": 1.7e9 + i + 60,
                    "owner_id": None,
                }
            )
        with store.engine.begin() as conn:
            for j in range(0, len(rows), 5000):
                conn.execute(S.runs.insert(), rows[j : j + 5000])
        t_table = time.perf_counter() - t0
        t0 = time.perf_counter()
        for r in range(group_runs):
            rid = f"g{r:03d}"
            lr = LRS[r % len(LRS)]
            store.put_run(rid, {"project": "groups", "name": f"trial-{r:03d}"})
            recs: list[dict[str, Any]] = [{"type": 2, "data": {"config": {"lr": lr}}}]
            chunk = []
            for s in range(points):
                v = 1.0 / (1 + s * lr * 1e-2) + 0.05 * math.sin(s * 0.01 + r)
                chunk.append([s, 1.7e9 + s, {"loss": v}])
                if len(chunk) == 20_000:
                    recs.append({"type": 3, "data": {"rows": chunk}})
                    chunk = []
            if chunk:
                recs.append({"type": 3, "data": {"rows": chunk}})
            recs.append({"type": 6, "data": {"state": "finished"}})
            for seq, rec in enumerate(recs):
                store.ingest(rid, "w", seq, prepare_records([rec]))
        t_group = time.perf_counter() - t0
        t0 = time.perf_counter()
        for r in range(8):
            rid = f"w{r:03d}"
            store.put_run(rid, {"project": "panels", "name": f"w-{r}"})
            rows2 = [
                [s, 1.7e9 + s, {f"m{k:02d}": math.sin(s * 0.01 + k + r) for k in range(panels)}]
                for s in range(1000)
            ]
            recs = [{"type": 2, "data": {"config": {"lr": LRS[r % 4]}}}]
            recs.append({"type": 3, "data": {"rows": rows2}})
            store.ingest(rid, "w", 0, prepare_records(recs))
        t_panels = time.perf_counter() - t0
    finally:
        store.close()
    print(
        f"seeded: {table_runs:,} table runs in {t_table:.1f} s; {group_runs} runs x "
        f"{points:,} points in {t_group:.1f} s; {panels}-metric runs in {t_panels:.1f} s"
    )


def _post(url: str, body: dict[str, Any]) -> Any:
    req = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "X-CSRF-Token": "bench"},
        method="POST",
    )
    with urllib.request.urlopen(req, timeout=120) as r:
        return json.load(r)


def bench_first_rows(ctx: Any, url: str, repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        pg = ctx.new_page()
        pg.goto(f"{url}/#/p/table?cols=config.lr,config.bs,summary.acc")
        out.append(
            pg.wait_for_function(
                "() => document.querySelector('#runs-scroller .tr[data-run]')"
                " ? performance.now() : false",
                polling="raf",
                timeout=60_000,
            ).json_value()
        )
        pg.close()
    return out


def bench_grouped(ctx: Any, url: str, repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        pg = ctx.new_page()
        pg.goto(f"{url}/#/p/groups/w?group=config.lr")
        out.append(
            pg.wait_for_function(
                "() => { const p = document.querySelector('#ws-grid [data-panel][data-drawn]');"
                " return p && +p.dataset.lines === 4 ? performance.now() : false; }",
                polling="raf",
                timeout=120_000,
            ).json_value()
        )
        pg.close()
    return out


IN_VIEW_DRAWN = """n => {
  const ps = [...document.querySelectorAll('#ws-grid [data-panel]')];
  const seen = ps.filter(p => { const r = p.getBoundingClientRect();
    return r.bottom > 0 && r.top < window.innerHeight; });
  return ps.length === n && seen.length > 0 && seen.every(p => p.dataset.drawn)
    ? performance.now() : false; }"""


def bench_restore(
    ctx: Any, url: str, panels: int, repeat: int
) -> tuple[list[float], list[float], int]:
    """Navigation -> every panel in the viewport drawn (the others are drawn as they come
    into view); then scrolling to the last panel -> drawn.  Also how many were drawn."""
    spec = {
        "panels": [{"id": f"p{k}", "keys": [f"m{k:02d}"], "smooth": 0.3} for k in range(panels)],
        "group_by": ["config.lr"],
        "band": "std",
    }
    w = _post(f"{url}/api/v1/projects/panels/workspaces", {"name": "50", "spec": spec})
    out, scroll = [], []
    drawn = 0
    for _ in range(repeat):
        pg = ctx.new_page()
        pg.goto(f"{url}/#/p/panels/w/{w['id']}")
        out.append(
            pg.wait_for_function(
                IN_VIEW_DRAWN, arg=panels, polling="raf", timeout=60_000
            ).json_value()
        )
        drawn = pg.locator("#ws-grid [data-panel][data-drawn]").count()
        last = f"p{panels - 1}"
        pg.evaluate(
            "id => { window.__t0 = performance.now();"
            ' document.querySelector(`[data-panel="${id}"]`).scrollIntoView(); }',
            last,
        )
        scroll.append(
            pg.wait_for_function(
                'id => document.querySelector(`[data-panel="${id}"]`).dataset.drawn'
                " ? performance.now() - window.__t0 : false",
                arg=last,
                polling="raf",
                timeout=60_000,
            ).json_value()
        )
        pg.close()
    return out, scroll, drawn


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--table-runs", type=int, default=100_000)
    ap.add_argument("--group-runs", type=int, default=100)
    ap.add_argument("--group-points", type=int, default=100_000)
    ap.add_argument("--panels", type=int, default=50)
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
        db = f"sqlite:///{data / 'wisp.db'}"
        seed(db, args.table_runs, args.group_runs, args.group_points, args.panels)
        ui = UI(work, data)
        try:
            body = {"keys": ["loss"], "group_by": ["config.lr"], "buckets": 1000}
            server = []
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                _post(f"{ui.url}/api/v1/projects/groups/series/grouped", body)
                server.append((time.perf_counter() - t0) * 1000)
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                ctx = browser.new_context(viewport={"width": 1280, "height": 860})
                ctx.new_page().goto(ui.url + "/#/")
                first = bench_first_rows(ctx, ui.url, args.repeat)
                load, sort, filt = bench_table(ctx, ui.url, args.table_runs, args.repeat)
                grouped = bench_grouped(ctx, ui.url, args.repeat)
                restore, scroll, drawn = bench_restore(ctx, ui.url, args.panels, args.repeat)
                browser.close()
        finally:
            ui.close()
    tr = f"{args.table_runs:,} runs"
    gr = f"{args.group_runs} runs x {args.group_points:,} pts, 4 groups"
    rows = [
        ("runs table: first rows painted", tr, first, 1000),
        ("runs table: every run loaded", tr, [load], None),
        ("runs table: sort (click->paint)", tr, sort, 200),
        ("runs table: filter (Enter->paint)", tr, filt, 200),
        ("grouped series request (server)", gr, server, None),
        ("grouped chart: mean+band drawn", gr, grouped, 1000),
        (
            f"workspace: {args.panels} panels restored",
            f"8 runs x 1,000 pts, grouped; {drawn} in view drawn",
            restore,
            1000,
        ),
        ("workspace: scroll to last panel", "fetched and drawn on arrival", scroll, None),
    ]
    print(f"{'measure':<36}{'N':<40}{'p50 ms':>9}{'max ms':>9}{'target':>9}")
    for name, n, xs, target in rows:
        tgt = f"<={target}" if target else "-"
        print(f"{name:<36}{n:<40}{_pct(xs, 0.5):>9.0f}{max(xs):>9.0f}{tgt:>9}")


if __name__ == "__main__":
    main()

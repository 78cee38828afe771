// One metric chart (uPlot on canvas) for one or more runs.
//  - every run is drawn as its bucket line plus a faint min/max band from the server's
//    downsampling, so a single spike is always visible;
//  - smoothing (EMA or time-weighted) draws the smoothed line with the raw one faint behind;
//  - drag to zoom redraws at once from the points already held (their min/max band keeps
//    every extreme in the window honest), then re-queries the server for that x range at full
//    resolution and swaps it in; double-click or Escape resets (from the held whole-run data,
//    then refreshed); live updates fetch only points after the last known x.
import uPlot from "uplot";
import { Buffer, ema, fetchSeries, twema } from "./series";
import { cssVar, fmtNum, h } from "./util";

export interface ChartRun {
  id: string;
  label: string;
  color: string;
}

export interface ViewOpts {
  x: string; // step | time | relative | <step metric key>
  smooth: number; // 0 .. 0.99
  smoothMode: "ema" | "time";
  logY: boolean;
}

export const registry = new Set<MetricChart>();
const w = window as unknown as { __wisp?: Record<string, unknown> };
w.__wisp = { ...w.__wisp, charts: registry };

function withAlpha(hex: string, a: number): string {
  const n = parseInt(hex.slice(1), 16);
  return `rgba(${(n >> 16) & 255},${(n >> 8) & 255},${n & 255},${a})`;
}

export class MetricChart {
  readonly el: HTMLElement;
  private plotEl: HTMLElement;
  private tip: HTMLElement;
  private status: HTMLElement;
  private u: uPlot | null = null;
  private bufs = new Map<string, Buffer>();
  private fullBufs: Map<string, Buffer> | null = null; // the last unzoomed data
  private zoom: [number, number] | null = null;
  private loading: Promise<void> | null = null;
  private loaded = false;
  fetches = 0;
  drawMs = 0;

  constructor(
    readonly key: string,
    private runs: ChartRun[],
    private view: ViewOpts,
    private onZoom?: (range: [number, number] | null) => void,
  ) {
    this.plotEl = h("div", { class: "plot" });
    this.tip = h("div", { class: "tip", hidden: true });
    this.status = h("span", { class: "muted small" });
    const reset = h("button", { class: "small", title: "Reset zoom (Esc)", onclick: () => this.setZoom(null) }, "reset");
    this.el = h(
      "figure",
      { class: "chart", "data-key": key, tabindex: 0, "aria-label": `chart ${key}` },
      h("figcaption", {}, h("span", { class: "key" }, key), this.status, reset),
      this.plotEl,
      this.tip,
    );
    this.el.addEventListener("keydown", (e) => {
      if (e.key === "Escape") this.setZoom(null);
    });
    registry.add(this);
  }

  get isZoomed(): boolean {
    return this.zoom !== null;
  }

  private buckets(): number {
    const w = this.plotEl.clientWidth || 600;
    return Math.max(200, Math.min(2000, Math.round(w * 1.5)));
  }

  /** (Re)load the chart's data for the current zoom range at full resolution. */
  load(): Promise<void> {
    const zoom = this.zoom;
    const p = fetchSeries({
      runs: this.runs.map((r) => r.id),
      keys: [this.key],
      x: this.view.x,
      min: zoom?.[0],
      max: zoom?.[1],
      buckets: this.buckets(),
    }).then((series) => {
      if (zoom !== this.zoom) return; // superseded
      this.fetches++;
      this.bufs = new Map();
      for (const s of series) this.bufs.set(s.run, Buffer.from(s));
      if (zoom === null) this.fullBufs = this.bufs;
      this.loaded = true;
      this.render();
    });
    this.loading = p.catch((e) => {
      this.status.textContent = ` error: ${(e as Error).message}`;
    });
    return this.loading;
  }

  /** Fetch only points after the last x we hold (live updates).  Returns points added. */
  async poll(): Promise<number> {
    if (!this.loaded || this.zoom) return 0;
    let after: number | undefined;
    for (const r of this.runs) {
      const b = this.bufs.get(r.id);
      const lx = b?.lastX;
      if (lx === undefined) {
        after = undefined;
        break;
      }
      after = after === undefined ? lx : Math.min(after, lx);
    }
    const series = await fetchSeries({
      runs: this.runs.map((r) => r.id),
      keys: [this.key],
      x: this.view.x,
      buckets: this.buckets(),
      after,
    });
    this.fetches++;
    let added = 0;
    for (const s of series) {
      let b = this.bufs.get(s.run);
      if (!b) {
        b = new Buffer();
        this.bufs.set(s.run, b);
      }
      added += b.append(s, this.buckets());
    }
    if (added) this.render();
    return added;
  }

  setZoom(range: [number, number] | null, notify = true): Promise<void> {
    if (range === null && this.zoom === null) return Promise.resolve();
    this.zoom = range;
    if (notify) this.onZoom?.(range);
    this.preview();
    return this.load();
  }

  /** Draw the new zoom window now from the data held; `load()` refines it. */
  private preview(): void {
    if (!this.u || !this.loaded) return;
    const t0 = performance.now();
    if (this.zoom) {
      this.u.setScale("x", { min: this.zoom[0], max: this.zoom[1] });
      this.status.textContent = " (zoomed)";
      this.el.dataset.zoomed = "1";
    } else if (this.fullBufs) {
      this.bufs = this.fullBufs;
      this.render();
    } else return;
    this.el.dataset.previewMs = (performance.now() - t0).toFixed(1);
  }

  setView(view: ViewOpts, reload: boolean): void {
    this.view = view;
    if (reload) {
      this.zoom = null;
      void this.load();
    } else this.render();
  }

  private build(): { data: uPlot.AlignedData; series: uPlot.Series[]; bands: uPlot.Band[] } {
    const { smooth, smoothMode, logY } = this.view;
    const tables: uPlot.AlignedData[] = [];
    const series: uPlot.Series[] = [{}];
    const bands: uPlot.Band[] = [];
    const fix = (a: (number | null)[]) => (logY ? a.map((v) => (v !== null && v > 0 ? v : null)) : a);
    let col = 1;
    for (const r of this.runs) {
      const b = this.bufs.get(r.id);
      if (!b || !b.x.length) continue;
      const cols: (number | null)[][] = [];
      const band = !b.raw;
      if (band) {
        cols.push(fix(b.max), fix(b.min));
        series.push(
          { label: `${r.label} max`, stroke: withAlpha(r.color, 0.35), width: 1, points: { show: false } },
          { label: `${r.label} min`, stroke: withAlpha(r.color, 0.35), width: 1, points: { show: false } },
        );
        bands.push({ series: [col, col + 1], fill: withAlpha(r.color, 0.12) });
        col += 2;
      }
      if (smooth > 0) {
        const sm = smoothMode === "time" ? twema(b.x, b.y, smooth) : ema(b.y, smooth);
        cols.push(fix(b.y), fix(sm));
        series.push(
          { label: `${r.label} raw`, stroke: withAlpha(r.color, 0.25), width: 1, points: { show: false } },
          { label: r.label, stroke: r.color, width: 1.75, points: { show: false } },
        );
        col += 2;
      } else {
        cols.push(fix(b.y));
        series.push({ label: r.label, stroke: r.color, width: 1.5, points: { show: b.x.length < 60 } });
        col += 1;
      }
      tables.push([b.x, ...cols] as unknown as uPlot.AlignedData);
    }
    const data = tables.length === 1 ? tables[0] : tables.length ? uPlot.join(tables) : ([[]] as unknown as uPlot.AlignedData);
    return { data, series, bands };
  }

  render(): void {
    const t0 = performance.now();
    const { data, series, bands } = this.build();
    this.u?.destroy();
    const fg = cssVar("--fg") || "#222";
    const grid = cssVar("--grid") || "#ddd";
    const axis = { stroke: fg, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid, width: 1 } };
    const isTime = this.view.x === "time";
    const width = this.plotEl.clientWidth || 480;
    const opts: uPlot.Options = {
      width,
      height: 200,
      legend: { show: false },
      series: series.map((s, i) => (i === 0 ? {} : { ...s, spanGaps: true })),
      bands,
      scales: {
        x: { time: isTime, ...(this.zoom ? { range: () => this.zoom as [number, number] } : {}) },
        y: { distr: this.view.logY ? 3 : 1 },
      },
      axes: [{ ...axis, size: 36 }, { ...axis, size: 56, values: (_u, vals) => vals.map((v) => fmtNum(v)) }],
      cursor: {
        sync: { key: "wisp" },
        drag: { x: true, y: false, setScale: false },
        points: { show: false },
      },
      hooks: {
        setSelect: [
          (u) => {
            if (u.select.width > 3) {
              const a = u.posToVal(u.select.left, "x");
              const b = u.posToVal(u.select.left + u.select.width, "x");
              u.setSelect({ left: 0, top: 0, width: 0, height: 0 }, false);
              this.setZoom([a, b]);
            }
          },
        ],
        setCursor: [(u) => this.readout(u)],
        draw: [(u) => this.annotate(u)],
      },
    };
    this.u = new uPlot(opts, data, this.plotEl);
    this.u.over.addEventListener("dblclick", () => this.setZoom(null));
    this.u.over.addEventListener("mouseleave", () => (this.tip.hidden = true));
    this.drawMs = performance.now() - t0;
    let pts = 0;
    let total = 0;
    for (const b of this.bufs.values()) {
      pts += b.x.length;
      total += b.count;
    }
    this.status.textContent = this.zoom ? " (zoomed)" : "";
    this.el.dataset.points = String(pts);
    this.el.dataset.count = String(total);
    this.el.dataset.fetches = String(this.fetches);
    this.el.dataset.zoomed = this.zoom ? "1" : "0";
  }

  /** Expose the plotted extremes for tests and screen readers. */
  private annotate(u: uPlot): void {
    let ymin = Infinity;
    let ymax = -Infinity;
    let xmin = Infinity;
    let xmax = -Infinity;
    for (const b of this.bufs.values()) {
      for (let i = 0; i < b.x.length; i++) {
        const lo = b.min[i] ?? b.y[i];
        const hi = b.max[i] ?? b.y[i];
        if (lo !== null && lo < ymin) ymin = lo;
        if (hi !== null && hi > ymax) ymax = hi;
      }
      if (b.x.length) {
        xmin = Math.min(xmin, b.x[0]);
        xmax = Math.max(xmax, b.x[b.x.length - 1]);
      }
    }
    const d = this.el.dataset;
    d.ymin = String(ymin);
    d.ymax = String(ymax);
    d.xmin = String(xmin);
    d.xmax = String(xmax);
    d.scaleXmin = String(u.scales.x.min);
    d.scaleXmax = String(u.scales.x.max);
    d.scaleYmin = String(u.scales.y.min);
    d.scaleYmax = String(u.scales.y.max);
    d.drawn = String(Number(d.drawn ?? 0) + 1);
  }

  private readout(u: uPlot): void {
    const idx = u.cursor.idx;
    if (idx === null || idx === undefined || u.cursor.left === undefined || u.cursor.left < 0) {
      this.tip.hidden = true;
      return;
    }
    const xv = u.data[0][idx];
    const rows: (HTMLElement | string)[] = [
      h("div", { class: "muted" }, `${this.view.x} ${this.view.x === "time" ? new Date(xv * 1000).toLocaleString() : fmtNum(xv)}`),
    ];
    u.series.forEach((s, i) => {
      const lab = typeof s.label === "string" ? s.label : "";
      if (i === 0 || !lab || / (min|max|raw)$/.test(lab)) return;
      const v = u.data[i][idx];
      if (v === null || v === undefined) return;
      rows.push(
        h("div", {}, h("span", { class: "swatch", style: `background:${s.stroke as string}` }), `${lab}: `, h("b", {}, fmtNum(v))),
      );
    });
    this.tip.replaceChildren(...rows);
    this.tip.hidden = false;
    const left = (u.cursor.left ?? 0) + 60;
    this.tip.style.left = `${Math.min(left, (this.plotEl.clientWidth || 400) - 160)}px`;
  }

  destroy(): void {
    this.u?.destroy();
    this.u = null;
    registry.delete(this);
  }
}

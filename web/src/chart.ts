// One chart (uPlot on canvas) of one or more metrics for one or more runs.
//  - every run is drawn as its bucket line plus a faint min/max band from the server's
//    downsampling, so a single spike is always visible;
//  - a value that is no finite number (NaN, inf, None, text) breaks the line (a bucket that
//    holds one is drawn as a gap) and puts a marker under the x axis; the tooltip counts them;
//  - smoothing (EMA or time-weighted) draws the smoothed line with the raw one faint behind;
//    the tooltip shows both;
//  - axis titles name the x choice and the metric, a legend names every line (click hides);
//  - drag to zoom redraws at once from the points already held (their min/max band keeps
//    every extreme in the window honest), then re-queries the server for that x range at full
//    resolution and swaps it in; double-click or Escape resets (from the held whole-run data,
//    then refreshed); live updates fetch only points after the last known x;
//  - ⤢ shows the chart full-screen (Escape leaves), ⚙ edits its metrics and x axis.
import uPlot from "uplot";
import { DASHES, PALETTE, withAlpha } from "./colors";
import { Buffer, ema, fetchSeries, twema } from "./series";
import { cssVar, fmtNum, h } from "./util";

export interface ChartRun {
  id: string;
  label: string;
  color: string;
  /** a fork (wisp.init(fork_from=...)): its history up to `step` is its parent's */
  fork?: { step: number; parent: string };
}

export interface ViewOpts {
  x: string; // step | time | relative | <step metric key>
  smooth: number; // 0 .. 0.99
  smoothMode: "ema" | "time";
  logY: boolean;
}

/** What the user changed on one chart: its x axis and the metrics drawn beside its own. */
export interface Custom {
  x?: string;
  keys?: string[];
}

export interface ChartOpts {
  /** [value, label] of the x axes offered in the chart's settings. */
  xChoices?: [string, string][];
  /** All metric keys that can be added to the chart. */
  allKeys?: () => string[];
  custom?: Custom;
  onCustom?: (c: Custom | null) => void;
}

export const registry = new Set<MetricChart>();

// Escape leaves a full-screen chart wherever the focus is (a click may have moved it out)
document.addEventListener("keydown", (e) => {
  if (e.key !== "Escape") return;
  for (const c of registry) if (c.isFull()) c.setFull(false);
});
const w = window as unknown as { __wisp?: Record<string, unknown> };
w.__wisp = { ...w.__wisp, charts: registry };

/** The axis title of an x choice. */
export function xTitle(x: string): string {
  return x === "time" ? "wall time" : x === "relative" ? "relative time (s)" : x;
}

interface Line {
  id: string; // run \n key
  run: ChartRun;
  key: string;
  label: string;
  color: string;
  dash: number[];
  buf: Buffer;
  main: number; // column of the drawn line
  sm: (number | null)[] | null; // smoothed values
}

function nearest(xs: number[], v: number): number {
  let lo = 0;
  let hi = xs.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (xs[mid] < v) lo = mid + 1;
    else hi = mid;
  }
  return lo > 0 && Math.abs(xs[lo - 1] - v) <= Math.abs(xs[lo] - v) ? lo - 1 : lo;
}

export class MetricChart {
  readonly el: HTMLElement;
  readonly keys: string[];
  private plotEl: HTMLElement;
  private tip: HTMLElement;
  private status: HTMLElement;
  private legend: HTMLElement;
  private u: uPlot | null = null;
  private bufs = new Map<string, Buffer>();
  private fullBufs: Map<string, Buffer> | null = null; // the last unzoomed data
  private zoom: [number, number] | null = null;
  private loading: Promise<void> | null = null;
  private loaded = false;
  private lines: Line[] = [];
  private hidden = new Set<string>();
  private full = false;
  fetches = 0;
  drawMs = 0;

  constructor(
    readonly key: string,
    private runs: ChartRun[],
    private view: ViewOpts,
    private onZoom?: (range: [number, number] | null) => void,
    private opts: ChartOpts = {},
  ) {
    this.keys = [key, ...(opts.custom?.keys ?? []).filter((k) => k !== key)];
    this.plotEl = h("div", { class: "plot" });
    this.tip = h("div", { class: "tip", hidden: true });
    this.status = h("span", { class: "muted small" });
    this.legend = h("ul", { class: "chart-legend" });
    const reset = h("button", { class: "small reset", title: "Reset zoom (Esc)", onclick: () => this.setZoom(null) }, "reset");
    const full = h("button", { class: "small full-btn", title: "Full screen (Esc leaves)", "aria-label": "full screen", onclick: () => this.setFull(!this.full) }, "⤢");
    const edit = h("button", { class: "small edit-btn", title: "Metrics and x axis of this chart", "aria-label": "chart settings", onclick: () => this.editor() }, "⚙");
    this.el = h(
      "figure",
      { class: "chart", "data-key": key, "data-keys": this.keys.join(","), tabindex: 0, "aria-label": `chart ${this.keys.join(", ")}` },
      h("figcaption", {}, h("span", { class: "key", title: this.keys.join(", ") }, this.keys.join(" · ")), this.status, h("span", { class: "tools" }, reset, edit, full)),
      this.plotEl,
      this.legend,
      this.tip,
    );
    this.el.addEventListener("keydown", (e) => {
      if (e.key !== "Escape") return;
      if (this.full) {
        e.stopPropagation(); // this chart only (the document's handler would close all)
        this.setFull(false);
      } else void this.setZoom(null);
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

  private bufKey(run: string, key: string): string {
    return `${run}\n${key}`;
  }

  /** (Re)load the chart's data for the current zoom range at full resolution. */
  load(): Promise<void> {
    const zoom = this.zoom;
    const p = fetchSeries({
      runs: this.runs.map((r) => r.id),
      keys: this.keys,
      x: this.view.x,
      min: zoom?.[0],
      max: zoom?.[1],
      buckets: this.buckets(),
    }).then((series) => {
      if (zoom !== this.zoom) return; // superseded
      this.fetches++;
      this.bufs = new Map();
      for (const s of series) this.bufs.set(this.bufKey(s.run, s.key), Buffer.from(s));
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
    outer: for (const r of this.runs) {
      for (const k of this.keys) {
        const lx = this.bufs.get(this.bufKey(r.id, k))?.lastX;
        if (lx === undefined) {
          after = undefined;
          break outer;
        }
        after = after === undefined ? lx : Math.min(after, lx);
      }
    }
    const series = await fetchSeries({
      runs: this.runs.map((r) => r.id),
      keys: this.keys,
      x: this.view.x,
      buckets: this.buckets(),
      after,
    });
    this.fetches++;
    let added = 0;
    for (const s of series) {
      const bk = this.bufKey(s.run, s.key);
      let b = this.bufs.get(bk);
      if (!b) {
        b = new Buffer();
        this.bufs.set(bk, b);
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

  setRuns(runs: ChartRun[]): void {
    this.runs = runs;
    if (this.loaded) this.render();
  }

  isFull(): boolean {
    return this.full;
  }

  setFull(on: boolean): void {
    this.full = on;
    this.el.classList.toggle("full", on);
    this.el.dataset.full = on ? "1" : "0";
    if (on) this.el.focus();
    if (this.loaded) this.render();
  }

  private build(): { data: uPlot.AlignedData; series: uPlot.Series[]; bands: uPlot.Band[] } {
    const { smooth, smoothMode, logY } = this.view;
    const tables: uPlot.AlignedData[] = [];
    const series: uPlot.Series[] = [{}];
    const bands: uPlot.Band[] = [];
    // log y: values <= 0 cannot be drawn; they are skipped (bridged), not shown as gaps
    const fix = (a: (number | null)[]): (number | null | undefined)[] => (logY ? a.map((v) => (v !== null && v <= 0 ? undefined : v)) : a);
    const multiKey = this.keys.length > 1;
    this.lines = [];
    let col = 1;
    this.keys.forEach((key, ki) => {
      this.runs.forEach((r) => {
        const b = this.bufs.get(this.bufKey(r.id, key));
        if (!b || !b.x.length) return;
        const color = multiKey && this.runs.length === 1 ? PALETTE[ki % PALETTE.length] : r.color;
        const dash = multiKey && this.runs.length > 1 ? DASHES[ki % DASHES.length] : [];
        const label = multiKey ? (this.runs.length > 1 ? `${r.label} · ${key}` : key) : r.label;
        const line: Line = { id: this.bufKey(r.id, key), run: r, key, label, color, dash, buf: b, main: 0, sm: null };
        this.lines.push(line);
        const show = !this.hidden.has(line.id);
        const cols: (number | null | undefined)[][] = [];
        // a bucket that holds a NaN / None / text is drawn as a gap
        const y = b.bad ? b.y.map((v, i) => (b.gaps[i] ? null : v)) : b.y;
        if (!b.raw) {
          cols.push(fix(b.max), fix(b.min));
          series.push(
            { label: `${label} max`, stroke: withAlpha(color, 0.35), width: 1, points: { show: false }, show },
            { label: `${label} min`, stroke: withAlpha(color, 0.35), width: 1, points: { show: false }, show },
          );
          bands.push({ series: [col, col + 1], fill: withAlpha(color, 0.12) });
          col += 2;
        }
        if (smooth > 0) {
          line.sm = smoothMode === "time" ? twema(b.x, y, smooth) : ema(y, smooth);
          cols.push(fix(y), fix(line.sm));
          series.push(
            { label: `${label} raw`, stroke: withAlpha(color, 0.25), width: 1, points: { show: false }, show },
            { label, stroke: color, width: 1.75, dash, points: { show: false }, show },
          );
          line.main = col + 1;
          col += 2;
        } else {
          cols.push(fix(y));
          series.push({ label, stroke: color, width: 1.5, dash, points: { show: b.x.length < 60 }, show });
          line.main = col;
          col += 1;
        }
        tables.push([b.x, ...cols] as unknown as uPlot.AlignedData);
      });
    });
    const data = tables.length === 1 ? tables[0] : tables.length ? uPlot.join(tables) : ([[]] as unknown as uPlot.AlignedData);
    return { data, series, bands };
  }

  render(): void {
    const t0 = performance.now();
    const { data, series, bands } = this.build();
    this.u?.destroy();
    const fg = cssVar("--fg") || "#222";
    const grid = cssVar("--grid") || "#ddd";
    const axis = { stroke: fg, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid, width: 1 }, labelSize: 16, labelFont: "12px system-ui, sans-serif" };
    const isTime = this.view.x === "time";
    const width = this.plotEl.clientWidth || 480;
    const height = this.full ? Math.max(240, innerHeight - 190) : 220;
    const opts: uPlot.Options = {
      width,
      height,
      legend: { show: false },
      series,
      bands,
      scales: {
        x: { time: isTime, ...(this.zoom ? { range: () => this.zoom as [number, number] } : {}) },
        y: { distr: this.view.logY ? 3 : 1 },
      },
      axes: [
        { ...axis, size: 30, label: xTitle(this.view.x) },
        { ...axis, size: 52, label: this.yTitle(), values: (_u, vals) => vals.map((v) => fmtNum(v)) },
      ],
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
              void this.setZoom([a, b]);
            }
          },
        ],
        setCursor: [(u) => this.readout(u)],
        draw: [(u) => this.annotate(u)],
      },
    };
    this.u = new uPlot(opts, data, this.plotEl);
    this.u.over.addEventListener("dblclick", () => void this.setZoom(null));
    this.u.over.addEventListener("mouseleave", () => (this.tip.hidden = true));
    this.drawMs = performance.now() - t0;
    let pts = 0;
    let total = 0;
    let bad = 0;
    for (const b of this.bufs.values()) {
      pts += b.x.length;
      total += b.count;
      bad += b.bad;
    }
    this.status.textContent = this.zoom ? " (zoomed)" : this.loaded && !this.lines.length ? ` no data against ${xTitle(this.view.x)}` : "";
    this.renderLegend();
    const d = this.el.dataset;
    d.points = String(pts);
    d.count = String(total);
    d.gaps = String(bad);
    d.fetches = String(this.fetches);
    d.zoomed = this.zoom ? "1" : "0";
    d.empty = this.lines.length ? "0" : "1";
    d.x = this.view.x;
    // uPlot draws the axis titles on the canvas; tests and screen readers read them here
    d.xTitle = xTitle(this.view.x);
    d.yTitle = this.yTitle();
    this.plotEl.setAttribute("aria-label", `${d.yTitle} against ${d.xTitle}`);
  }

  private yTitle(): string {
    return this.keys.length > 1 ? "value" : this.key;
  }

  private renderLegend(): void {
    this.legend.replaceChildren(
      ...this.lines.map((l) => {
        const off = this.hidden.has(l.id);
        const sw = h("span", { class: "swatch", style: `background:${l.color}` });
        if (l.dash.length) sw.style.background = `repeating-linear-gradient(90deg, ${l.color} 0 4px, transparent 4px 6px)`;
        return h(
          "li",
          {
            "data-run": l.run.id,
            "data-key": l.key,
            class: off ? "off" : "",
            title: off ? "show" : "hide",
            onclick: () => {
              if (off) this.hidden.delete(l.id);
              else this.hidden.add(l.id);
              this.render();
            },
          },
          sw,
          l.label,
          l.buf.bad ? h("span", { class: "gap-count", title: "values that are no finite number (NaN, inf, None, text)" }, ` ⚠ ${l.buf.bad}`) : "",
        );
      }),
    );
  }

  /** Mark non-finite values under the x axis; expose the plotted extremes for tests and screen readers. */
  private annotate(u: uPlot): void {
    const ctx = u.ctx;
    const pr = devicePixelRatio || 1;
    const bottom = u.bbox.top + u.bbox.height;
    const sz = 5 * pr;
    let marks = 0;
    ctx.save();
    for (const l of this.lines) {
      if (!l.buf.bad || this.hidden.has(l.id)) continue;
      ctx.fillStyle = l.color;
      ctx.strokeStyle = cssVar("--err") || "#b91c1c";
      ctx.lineWidth = pr;
      const { x, gaps } = l.buf;
      for (let i = 0; i < x.length; i++) {
        if (!gaps[i]) continue;
        const px = u.valToPos(x[i], "x", true);
        if (px < u.bbox.left - 1 || px > u.bbox.left + u.bbox.width + 1) continue;
        ctx.beginPath();
        ctx.moveTo(px, bottom - sz * 1.6);
        ctx.lineTo(px - sz, bottom);
        ctx.lineTo(px + sz, bottom);
        ctx.closePath();
        ctx.fill();
        ctx.stroke();
        marks++;
      }
    }
    ctx.restore();
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
    d.gapMarks = String(marks);
    this.markForks(u);
    d.drawn = String(Number(d.drawn ?? 0) + 1);
  }

  /** A fork's part from its parent is shaded and its fork step marked by a dashed line with
   * a label (DOM elements over the plot: tests read their geometry); against time or another
   * metric, at the x the server gives for the parent's last point (`fork_x`). */
  private markForks(u: uPlot): void {
    u.over.querySelectorAll(".fork-part, .fork-line").forEach((e) => e.remove());
    const shown = this.lines.filter((l) => !this.hidden.has(l.id));
    const drawn = new Set(shown.map((l) => l.run.id));
    const w = u.over.clientWidth || u.bbox.width / (devicePixelRatio || 1);
    for (const r of this.runs) {
      if (!r.fork || !drawn.has(r.id)) continue;
      const xs = shown.find((l) => l.run.id === r.id)?.buf.forkX ?? [];
      const at = this.view.x === "step" ? r.fork.step : xs[xs.length - 1];
      if (at === undefined) continue;
      const px = u.valToPos(at, "x");
      if (!Number.isFinite(px) || px < 0 || px > w) continue;
      const left = Math.max(0, u.valToPos(u.scales.x.min ?? at, "x"));
      const part = h("div", { class: "fork-part", "data-run": r.id, title: `${r.label}: steps up to ${r.fork.step} are ${r.fork.parent}'s` });
      Object.assign(part.style, { left: `${left}px`, width: `${Math.max(0, px - left)}px`, background: withAlpha(r.color, 0.07) });
      const label = this.runs.length > 1 ? `${r.label}: fork of ${r.fork.parent} at ${r.fork.step}` : `fork of ${r.fork.parent} at step ${r.fork.step}`;
      // the label on the side with room: left of the line (over the parent's part) past mid-plot
      const tag = h("span", { class: px > w / 2 ? "fork-label before" : "fork-label" }, label);
      const line = h("div", { class: "fork-line", "data-run": r.id, "data-step": r.fork.step, "data-x": at }, tag);
      Object.assign(line.style, { left: `${px}px`, borderLeftColor: r.color });
      u.over.append(part, line);
    }
  }

  private readout(u: uPlot): void {
    const idx = u.cursor.idx;
    if (idx === null || idx === undefined || u.cursor.left === undefined || u.cursor.left < 0) {
      this.tip.hidden = true;
      return;
    }
    const xv = u.data[0][idx];
    const smooth = this.view.smooth > 0;
    const rows: (HTMLElement | string)[] = [
      h("div", { class: "muted" }, `${xTitle(this.view.x)} ${this.view.x === "time" ? new Date(xv * 1000).toLocaleString() : fmtNum(xv)}`),
    ];
    for (const l of this.lines) {
      if (this.hidden.has(l.id)) continue;
      const b = l.buf;
      const i = nearest(b.x, xv);
      if (i >= b.x.length) continue;
      const v = b.y[i];
      const parts: (HTMLElement | string)[] = [h("span", { class: "swatch", style: `background:${l.color}` }), `${l.label}: `];
      if (smooth) parts.push(h("b", { class: "smoothed" }, fmtNum(l.sm?.[i] ?? null) || "–"), h("span", { class: "muted raw" }, ` raw ${v === null ? "–" : fmtNum(v)}`));
      else parts.push(h("b", { class: "raw" }, v === null ? "–" : fmtNum(v)));
      if (!b.raw && b.min[i] !== null && b.min[i] !== b.max[i]) parts.push(h("span", { class: "muted" }, ` [${fmtNum(b.min[i])} … ${fmtNum(b.max[i])}]`));
      if (b.gaps[i]) parts.push(h("span", { class: "gap-count" }, ` ⚠ ${b.gaps[i]} not finite`));
      rows.push(h("div", { "data-line": l.label }, ...parts));
    }
    this.tip.replaceChildren(...rows);
    this.tip.hidden = false;
    const left = (u.cursor.left ?? 0) + 60;
    this.tip.style.left = `${Math.min(left, (this.plotEl.clientWidth || 400) - 200)}px`;
  }

  /** The ⚙ panel: the chart's x axis and more metrics to draw on it. */
  private editor(): void {
    const old = this.el.querySelector(".chart-editor");
    if (old) {
      old.remove();
      return;
    }
    const xs = this.opts.xChoices ?? [["step", "step"]];
    const xSel = h("select", { class: "edit-x", "aria-label": "chart x axis" }, h("option", { value: "" }, "(page's choice)"));
    for (const [v, lab] of xs) xSel.append(h("option", { value: v, selected: this.opts.custom?.x === v }, lab));
    const extra = new Set(this.keys.slice(1));
    const keySel = h("select", { class: "edit-keys", multiple: true, size: 6, "aria-label": "more metrics" });
    for (const k of (this.opts.allKeys?.() ?? []).filter((k) => k !== this.key)) keySel.append(h("option", { value: k, selected: extra.has(k) }, k));
    const apply = h("button", { class: "small edit-apply" }, "apply");
    const reset = h("button", { class: "small edit-reset" }, "reset");
    apply.addEventListener("click", () => {
      const keys = [...keySel.selectedOptions].map((o) => o.value);
      this.opts.onCustom?.(xSel.value || keys.length ? { ...(xSel.value ? { x: xSel.value } : {}), ...(keys.length ? { keys } : {}) } : null);
    });
    reset.addEventListener("click", () => this.opts.onCustom?.(null));
    this.plotEl.before(
      h("div", { class: "chart-editor" }, h("label", {}, "x ", xSel), h("label", {}, "with ", keySel), h("span", {}, apply, " ", reset)),
    );
  }

  destroy(): void {
    this.u?.destroy();
    this.u = null;
    registry.delete(this);
  }
}

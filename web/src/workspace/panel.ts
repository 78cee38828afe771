// One workspace panel: a uPlot chart of one or more metrics, either per group (the server's
// mean or median line with a min–max or ±std band, workspace/page.ts fetches it) or per run
// (the raw series, for an ungrouped workspace).  The header moves, configures and removes
// the panel; the corner grip resizes it (height in px, width in grid columns); the header
// can also be dragged onto another panel to reorder.  A panel draws only while the page says
// it is in or near the viewport (`show`); data set while it is away is drawn when it returns.
import uPlot from "uplot";
import type { Series } from "../api";
import { ema, twema } from "../series";
import { cssVar, fmtNum, h } from "../util";
import type { GroupedSeries, PanelSpec } from "./api";

export interface RunLine {
  id: string;
  label: string;
  color: string;
}

export interface PanelData {
  grouped: GroupedSeries | null;
  groupColors: Map<string, string>;
  runs: RunLine[];
  series: Series[];
  agg: "mean" | "median";
  band: "minmax" | "std" | "none";
}

export interface PanelHost {
  changed(p: Panel, refetch: boolean): void;
  remove(p: Panel): void;
  move(p: Panel, to: number | string): void;
  keys(): string[];
  xAxes(): string[];
  columns(): number;
}

/** What a panel drew, by line label (tests and screen readers read it). */
export interface Drawn {
  x: number[];
  y: (number | null)[];
  lo?: (number | null)[];
  hi?: (number | null)[];
}

export const panels = new Map<string, Panel>();
const w = window as unknown as { __wisp?: Record<string, unknown> };
w.__wisp = { ...w.__wisp, panels };

function alpha(hex: string, a: number): string {
  const n = parseInt(hex.slice(1), 16);
  return `rgba(${(n >> 16) & 255},${(n >> 8) & 255},${n & 255},${a})`;
}

const DASH: number[][] = [[], [6, 3], [2, 3], [8, 3, 2, 3]];

export class Panel {
  readonly el: HTMLElement;
  private plot: HTMLElement;
  private caption: HTMLElement;
  private form: HTMLElement;
  private note: HTMLElement;
  private u: uPlot | null = null;
  private data: PanelData | null = null;
  private onScreen = false;
  private stale = false; // data or size changed while off screen
  drawn = new Map<string, Drawn>();
  drawMs = 0;

  constructor(
    public spec: PanelSpec,
    private host: PanelHost,
  ) {
    this.caption = h("span", { class: "panel-title" });
    this.note = h("span", { class: "muted small" }, " loading…"); // until its data comes
    this.plot = h("div", { class: "plot" });
    this.form = h("div", { class: "panel-form", hidden: true });
    const btn = (label: string, title: string, fn: () => void, cls = "") => h("button", { class: `small ${cls}`, title, "aria-label": title, onclick: fn }, label);
    const head = h(
      "div",
      { class: "panel-head", draggable: "true" },
      this.caption,
      this.note,
      h(
        "span",
        { class: "panel-tools" },
        btn("◀", "move left", () => this.host.move(this, -1), "move-left"),
        btn("▶", "move right", () => this.host.move(this, 1), "move-right"),
        btn("⚙", "configure", () => this.toggleForm(), "configure"),
        btn("✕", "remove panel", () => this.host.remove(this), "remove"),
      ),
    );
    head.addEventListener("dragstart", (e) => {
      e.dataTransfer?.setData("text/x-wisp-panel", this.spec.id);
      if (e.dataTransfer) e.dataTransfer.effectAllowed = "move";
    });
    const grip = h("span", { class: "panel-grip", title: "drag to resize", "aria-hidden": "true" });
    this.el = h("figure", { class: "ws-panel", "data-panel": spec.id, tabindex: 0 }, head, this.form, this.plot, grip);
    this.el.addEventListener("dragover", (e) => {
      if (e.dataTransfer?.types.includes("text/x-wisp-panel")) e.preventDefault();
    });
    this.el.addEventListener("drop", (e) => {
      const id = e.dataTransfer?.getData("text/x-wisp-panel");
      if (id && id !== this.spec.id) {
        e.preventDefault();
        this.host.move(panels.get(id)!, this.spec.id);
      }
    });
    this.grip(grip);
    this.layout();
    panels.set(spec.id, this);
  }

  /** Size from the spec: grid columns spanned and height. */
  layout(): void {
    this.el.style.gridColumn = `span ${Math.min(this.spec.w ?? 1, this.host.columns())}`;
    this.el.style.height = `${this.spec.h ?? 240}px`;
    const sm = this.spec.smooth ? ` · smoothing ${this.spec.smooth}` : "";
    this.caption.textContent = this.spec.title || this.spec.keys.join(", ");
    this.caption.title = `${this.spec.keys.join(", ")} vs ${this.spec.x ?? "step"}${sm}${this.spec.log_y ? " · log y" : ""}`;
    this.el.dataset.w = String(this.spec.w ?? 1);
    this.el.dataset.h = String(this.spec.h ?? 240);
  }

  private grip(grip: HTMLElement): void {
    grip.addEventListener("pointerdown", (e) => {
      e.preventDefault();
      grip.setPointerCapture(e.pointerId);
      const r0 = this.el.getBoundingClientRect();
      const cols = this.host.columns();
      const colW = (this.el.parentElement?.clientWidth ?? r0.width) / cols;
      const move = (ev: PointerEvent) => {
        const hpx = Math.round(Math.max(120, Math.min(1200, ev.clientY - r0.top)));
        const wcol = Math.max(1, Math.min(4, cols, Math.round((ev.clientX - r0.left) / colW)));
        if (hpx === this.spec.h && wcol === this.spec.w) return;
        this.spec = { ...this.spec, h: hpx, w: wcol };
        this.layout();
      };
      const up = () => {
        grip.removeEventListener("pointermove", move);
        grip.removeEventListener("pointerup", up);
        this.redraw();
        this.host.changed(this, false);
      };
      grip.addEventListener("pointermove", move);
      grip.addEventListener("pointerup", up);
    });
  }

  private toggleForm(): void {
    if (!this.form.hidden) {
      this.form.hidden = true;
      return;
    }
    const s = this.spec;
    const keys = h("input", { name: "keys", value: s.keys.join(", "), list: "ws-keys", "aria-label": "metrics (comma-separated)" });
    const title = h("input", { name: "title", value: s.title ?? "", placeholder: "title", "aria-label": "title" });
    const x = h("select", { name: "x", "aria-label": "x axis" });
    for (const v of this.host.xAxes()) x.append(h("option", { value: v, selected: v === (s.x ?? "step") }, v));
    const smooth = h("input", { name: "smooth", type: "number", min: 0, max: 0.99, step: 0.05, value: s.smooth ?? 0, "aria-label": "smoothing" });
    const mode = h("select", { name: "smooth_mode", "aria-label": "smoothing kind" }, h("option", { value: "ema" }, "EMA"), h("option", { value: "time", selected: s.smooth_mode === "time" }, "time-weighted"));
    const log = h("input", { name: "log_y", type: "checkbox", checked: !!s.log_y, "aria-label": "log y" });
    const ymin = h("input", { name: "y_min", type: "number", step: "any", value: s.y_min ?? "", placeholder: "auto", "aria-label": "y min" });
    const ymax = h("input", { name: "y_max", type: "number", step: "any", value: s.y_max ?? "", placeholder: "auto", "aria-label": "y max" });
    const width = h("select", { name: "w", "aria-label": "width in columns" });
    for (const n of [1, 2, 3, 4]) width.append(h("option", { value: n, selected: n === (s.w ?? 1) }, `${n}`));
    const err = h("span", { class: "error" });
    const apply = h("button", { class: "small apply", type: "submit" }, "apply");
    const form = h(
      "form",
      {},
      h("label", {}, "metrics ", keys),
      h("label", {}, "title ", title),
      h("label", {}, "x ", x),
      h("label", {}, "smoothing ", smooth, " ", mode),
      h("label", {}, log, " log y"),
      h("label", {}, "y ", ymin, " – ", ymax),
      h("label", {}, "width ", width),
      apply,
      err,
    );
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      const ks = keys.value.split(",").map((k) => k.trim()).filter(Boolean);
      if (!ks.length) {
        err.textContent = "name at least one metric";
        return;
      }
      const num = (el: HTMLInputElement) => (el.value === "" ? null : Number(el.value));
      const next: PanelSpec = {
        ...s,
        keys: ks.slice(0, 20),
        title: title.value,
        x: x.value,
        smooth: Math.max(0, Math.min(0.99, Number(smooth.value) || 0)),
        smooth_mode: mode.value === "time" ? "time" : "ema",
        log_y: log.checked,
        y_min: num(ymin),
        y_max: num(ymax),
        w: Number(width.value),
      };
      const refetch = next.keys.join("\n") !== s.keys.join("\n") || next.x !== s.x;
      this.spec = next;
      this.form.hidden = true;
      this.layout();
      this.redraw();
      this.host.changed(this, refetch);
    });
    this.form.replaceChildren(form);
    this.form.hidden = false;
    keys.focus();
  }

  setData(d: PanelData): void {
    this.data = d;
    this.redraw();
  }

  /** In (or near) the viewport or not: a panel coming back draws what changed meanwhile. */
  show(on: boolean): void {
    this.onScreen = on;
    this.el.dataset.onScreen = on ? "1" : "";
    if (on && this.stale) this.redraw();
  }

  private smooth(x: number[], y: (number | null)[]): (number | null)[] {
    const a = this.spec.smooth ?? 0;
    if (!a) return y;
    return this.spec.smooth_mode === "time" ? twema(x, y, a) : ema(y, a);
  }

  private build(): { tables: uPlot.AlignedData[]; series: uPlot.Series[]; bands: uPlot.Band[] } {
    const d = this.data!;
    const log = !!this.spec.log_y;
    const fix = (a: (number | null)[]) => (log ? a.map((v) => (v !== null && v > 0 ? v : null)) : a);
    const tables: uPlot.AlignedData[] = [];
    const series: uPlot.Series[] = [{}];
    const bands: uPlot.Band[] = [];
    this.drawn = new Map();
    let col = 1;
    const keys = this.spec.keys;
    if (d.grouped) {
      for (const g of d.grouped.groups) {
        const color = d.groupColors.get(g.label) ?? "#4e79a7";
        for (const s of g.series) {
          const ki = keys.indexOf(s.key);
          if (ki < 0) continue;
          const label = keys.length > 1 ? `${g.label} · ${s.key}` : g.label;
          const center = (d.agg === "median" ? s.median : s.mean) ?? [];
          const y = this.smooth(s.x, center);
          const cols: (number | null)[][] = [];
          let lo: (number | null)[] | undefined;
          let hi: (number | null)[] | undefined;
          if (d.band === "minmax" && s.min && s.max) [lo, hi] = [s.min, s.max];
          else if (d.band === "std" && s.mean && s.std) {
            const [mean, std] = [s.mean, s.std];
            lo = mean.map((m, i) => (m === null || std[i] === null ? null : m - std[i]!));
            hi = mean.map((m, i) => (m === null || std[i] === null ? null : m + std[i]!));
          }
          if (lo && hi) {
            cols.push(fix(lo), fix(hi));
            series.push(
              { label: `${label} lo`, stroke: alpha(color, 0.3), width: 1, points: { show: false } },
              { label: `${label} hi`, stroke: alpha(color, 0.3), width: 1, points: { show: false } },
            );
            bands.push({ series: [col + 1, col], fill: alpha(color, 0.15) });
            col += 2;
          }
          cols.push(fix(y));
          series.push({ label, stroke: color, width: 1.75, dash: DASH[ki % DASH.length], points: { show: s.x.length < 40 } });
          col += 1;
          tables.push([s.x, ...cols] as unknown as uPlot.AlignedData);
          this.drawn.set(label, { x: s.x, y, lo, hi });
        }
      }
    } else {
      const byRun = new Map(d.runs.map((r) => [r.id, r]));
      for (const s of d.series) {
        const r = byRun.get(s.run);
        const ki = keys.indexOf(s.key);
        if (!r || ki < 0 || !s.x.length) continue;
        const label = keys.length > 1 ? `${r.label} · ${s.key}` : r.label;
        const y = this.smooth(s.x, s.y);
        series.push({ label, stroke: r.color, width: 1.5, dash: DASH[ki % DASH.length], points: { show: s.x.length < 40 } });
        col += 1;
        tables.push([s.x, fix(y)] as unknown as uPlot.AlignedData);
        this.drawn.set(label, { x: s.x, y });
      }
    }
    return { tables, series, bands };
  }

  /** Draw (again) from the data held, at the panel's current size. */
  redraw(): void {
    if (!this.data || !this.el.isConnected) return;
    if (!this.onScreen) {
      this.stale = true;
      return;
    }
    this.stale = false;
    const t0 = performance.now();
    const { tables, series, bands } = this.build();
    const data = tables.length === 1 ? tables[0] : tables.length ? uPlot.join(tables) : ([[]] as unknown as uPlot.AlignedData);
    this.u?.destroy();
    this.u = null;
    const fg = cssVar("--fg") || "#222";
    const grid = cssVar("--grid") || "#ddd";
    const axis = { stroke: fg, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid, width: 1 } };
    const { y_min, y_max } = this.spec;
    const fixed = (y_min ?? null) !== null || (y_max ?? null) !== null;
    const width = this.plot.clientWidth || 400;
    const height = Math.max(80, (this.spec.h ?? 240) - 44);
    const x = this.spec.x ?? "step";
    this.note.textContent = tables.length ? "" : " no data";
    this.u = new uPlot(
      {
        width,
        height,
        legend: { show: false },
        series: series.map((s, i) => (i === 0 ? {} : { ...s, spanGaps: true })),
        bands,
        scales: {
          x: { time: x === "time" },
          y: {
            distr: this.spec.log_y ? 3 : 1,
            ...(fixed ? { range: (_u: uPlot, mn: number, mx: number): uPlot.Range.MinMax => [y_min ?? mn, y_max ?? mx] } : {}),
          },
        },
        axes: [{ ...axis, size: 32 }, { ...axis, size: 52, values: (_u, vals) => vals.map((v) => fmtNum(v)) }],
        cursor: { sync: { key: "wisp-ws" }, points: { show: false } },
        hooks: {
          draw: [
            (u) => {
              this.el.dataset.scaleYmin = String(u.scales.y.min);
              this.el.dataset.scaleYmax = String(u.scales.y.max);
            },
          ],
        },
      },
      data,
      this.plot,
    );
    this.drawMs = performance.now() - t0;
    const d = this.el.dataset;
    d.lines = String(this.drawn.size);
    d.drawn = String(Number(d.drawn ?? 0) + 1);
  }

  destroy(): void {
    this.u?.destroy();
    this.u = null;
    panels.delete(this.spec.id);
  }
}

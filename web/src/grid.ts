// A grid of metric charts with key search, grouped by key prefix ("train/loss" -> "train").
// Charts are created when they scroll into view, and all visible charts of a page are
// fetched in one batched request.  Media keys (images, histograms, tables) get their media
// view instead of a chart.  A chart's own x axis and added metrics (its ⚙) are kept in the
// URL parameter `cv` ({key: {x, keys}} as JSON).
import { MetricChart, type ChartRun, type Custom, type ViewOpts } from "./chart";
import { mediaCell } from "./media_cell";
import { current, patchParams } from "./router";
import { sections as keySections } from "./keys";
import { h } from "./util";

export interface GridOpts {
  syncZoom?: boolean;
  emptyText?: string;
  stepMetric?: (key: string) => string | null;
  /** Media keys and their type: drawn as media views. */
  mediaKeys?: Record<string, string>;
  /** The x axes a chart's settings offer ([value, label]). */
  xChoices?: [string, string][];
}

function readCustom(): Record<string, Custom> {
  try {
    const v = JSON.parse(current().params.get("cv") ?? "{}") as unknown;
    return v && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, Custom>) : {};
  } catch {
    return {};
  }
}

export class ChartGrid {
  readonly el: HTMLElement;
  private charts = new Map<string, MetricChart>();
  private media = new Set<string>();
  private custom: Record<string, Custom> = readCustom();
  private cells = new Map<string, HTMLElement>();
  private io: IntersectionObserver;
  private keys: string[] = [];
  private query = "";
  private zoom: [number, number] | null = null;
  private destroyed = false;

  constructor(
    private runs: ChartRun[],
    private view: ViewOpts,
    private opts: GridOpts = {},
  ) {
    this.el = h("div", { class: "grid-wrap" });
    this.io = new IntersectionObserver(
      (entries) => {
        // charts on screen first (one batch); those just outside it once these have landed,
        // so they never compete with what the user is looking at
        const now: string[] = [];
        const soon: string[] = [];
        for (const e of entries) {
          if (!e.isIntersecting) continue;
          const key = (e.target as HTMLElement).dataset.cell!;
          this.io.unobserve(e.target);
          const r = e.boundingClientRect;
          (r.top < innerHeight && r.bottom > 0 ? now : soon).push(key);
        }
        const loads = now.map((k) => this.materialise(k));
        if (soon.length) void Promise.allSettled(loads).then(() => soon.forEach((k) => this.materialise(k)));
      },
      { rootMargin: "300px" },
    );
  }

  /**
   * Start the charts on screen now, without waiting a frame for the IntersectionObserver
   * (call once the grid is in the document); the observer still handles the rest.
   */
  start(): void {
    if (!this.el.isConnected) return;
    for (const [key, cell] of this.cells) {
      if (!cell.isConnected || this.charts.has(key) || this.media.has(key)) continue;
      const r = cell.getBoundingClientRect();
      if (r.top < innerHeight && r.bottom > 0 && r.width > 0) {
        this.io.unobserve(cell);
        void this.materialise(key);
      }
    }
  }

  /** A key with a define_metric step metric is plotted against it when x is "step". */
  private viewFor(key: string): ViewOpts {
    const own = this.custom[key]?.x;
    if (own) return { ...this.view, x: own };
    const sm = this.view.x === "step" ? this.opts.stepMetric?.(key) : null;
    return sm ? { ...this.view, x: sm } : this.view;
  }

  setZoom(range: [number, number] | null): void {
    this.zoom = range;
  }

  private materialise(key: string): Promise<void> {
    if (this.charts.has(key) || this.media.has(key) || this.destroyed) return Promise.resolve();
    const cell = this.cells.get(key);
    if (!cell) return Promise.resolve();
    const mtype = this.opts.mediaKeys?.[key];
    if (mtype) {
      const m = mediaCell(key, mtype, this.runs);
      this.media.add(key);
      cell.replaceChildren(m.el);
      return m.load();
    }
    const chart = new MetricChart(key, this.runs, this.viewFor(key), (range) => this.onZoom(chart, range), {
      xChoices: this.opts.xChoices,
      allKeys: () => this.keys.filter((k) => !this.opts.mediaKeys?.[k]),
      custom: this.custom[key],
      onCustom: (c) => this.setCustom(key, c),
    });
    this.charts.set(key, chart);
    cell.replaceChildren(chart.el);
    return this.zoom && this.opts.syncZoom ? chart.setZoom(this.zoom, false) : chart.load();
  }

  /** A chart's own x axis and metrics changed: keep them in the URL and redraw that chart. */
  private setCustom(key: string, c: Custom | null): void {
    if (c) this.custom[key] = c;
    else delete this.custom[key];
    patchParams({ cv: Object.keys(this.custom).length ? JSON.stringify(this.custom) : null });
    this.charts.get(key)?.destroy();
    this.charts.delete(key);
    void this.materialise(key);
  }

  /** New colours or labels for the runs. */
  setRuns(runs: ChartRun[]): void {
    this.runs = runs;
    for (const c of this.charts.values()) c.setRuns(runs);
  }

  private onZoom(src: MetricChart, range: [number, number] | null): void {
    this.zoom = range;
    patchParams({ xmin: range ? String(range[0]) : null, xmax: range ? String(range[1]) : null });
    if (!this.opts.syncZoom) return;
    for (const c of this.charts.values()) if (c !== src) c.setZoom(range, false);
  }

  setKeys(keys: string[]): void {
    const fresh = keys.filter((k) => !this.cells.has(k));
    this.keys = keys;
    if (fresh.length || this.el.childElementCount === 0) this.layout();
  }

  filter(query: string): void {
    this.query = query;
    this.layout();
  }

  private matches(key: string): boolean {
    const q = this.query.trim().toLowerCase();
    if (!q) return true;
    try {
      return new RegExp(q, "i").test(key);
    } catch {
      return key.toLowerCase().includes(q);
    }
  }

  private layout(): void {
    const media = this.opts.mediaKeys ?? {};
    const sections: HTMLElement[] = [];
    for (const [section, keys] of keySections(this.keys.filter((k) => this.matches(k)), media)) {
      const g = section || "charts";
      const cells = keys.map((k) => {
        let cell = this.cells.get(k);
        if (!cell) {
          const mtype = media[k];
          cell = h("div", { class: mtype ? `cell media-wrap kind-${mtype}` : "cell", "data-cell": k }, h("div", { class: "placeholder" }, k));
          this.cells.set(k, cell);
          this.io.observe(cell);
        }
        return cell;
      });
      const details = h(
        "details",
        { class: "section", open: true, "data-section": g },
        h("summary", {}, `${g} `, h("span", { class: "muted" }, `(${cells.length})`)),
        h("div", { class: "grid" }, ...cells),
      );
      sections.push(details);
    }
    if (!sections.length) sections.push(h("p", { class: "muted" }, this.opts.emptyText ?? "No metrics match."));
    this.el.replaceChildren(...sections);
  }

  setView(view: ViewOpts): void {
    const reload = view.x !== this.view.x;
    if (reload) this.zoom = null;
    const before = new Map([...this.charts.keys()].map((k) => [k, this.viewFor(k).x]));
    this.view = view;
    for (const [k, c] of this.charts) {
      const v = this.viewFor(k);
      c.setView(v, v.x !== before.get(k));
    }
  }

  /** Live update: fetch new points for every materialised chart. */
  async poll(): Promise<number> {
    const added = await Promise.all([...this.charts.values()].map((c) => c.poll().catch(() => 0)));
    return added.reduce((a, b) => a + b, 0);
  }

  destroy(): void {
    this.destroyed = true;
    this.io.disconnect();
    for (const c of this.charts.values()) c.destroy();
    this.charts.clear();
  }
}

/** Toolbar for x axis, smoothing and log y, bound to URL parameters. */
/** The x axes of a page: step, wall time, relative time and the runs' step metrics. */
export function xChoices(stepMetrics: string[]): [string, string][] {
  return [["step", "step"], ["time", "wall time"], ["relative", "relative time"], ...stepMetrics.map((m): [string, string] => [m, m])];
}

export function viewToolbar(
  params: URLSearchParams,
  stepMetrics: string[],
  onChange: (v: ViewOpts) => void,
): { el: HTMLElement; view: ViewOpts } {
  const choices = xChoices(stepMetrics);
  const asked = params.get("x") || "step";
  const known = choices.some(([v]) => v === asked);
  // an unknown x= (a typo, a metric these runs do not log) would blank every chart: say so
  const xError = h("span", { class: "error small", id: "x-error", role: "alert" }, known ? "" : `x=${asked} is not an x axis of these runs (${choices.map((c) => c[0]).join(", ")}); showing step.`);
  if (!known) patchParams({ x: null });
  const view: ViewOpts = {
    x: known ? asked : "step",
    smooth: Math.min(0.99, Math.max(0, Number(params.get("smooth") || 0))),
    smoothMode: params.get("smode") === "time" ? "time" : "ema",
    logY: params.get("log") === "1",
  };
  const xSel = h("select", { "aria-label": "x axis", id: "x-axis" });
  for (const [v, label] of choices) {
    // with define_metric(step_metric=...) "step" means each metric's own step metric
    const text = v === "step" && stepMetrics.length ? "step (or the metric's step metric)" : label;
    xSel.append(h("option", { value: v, selected: v === view.x }, text));
  }
  const smooth = h("input", {
    type: "range",
    min: 0,
    max: 0.99,
    step: 0.01,
    value: view.smooth,
    "aria-label": "smoothing",
    id: "smoothing",
  });
  const smoothVal = h("span", { class: "muted small" }, view.smooth.toFixed(2));
  const mode = h("select", { "aria-label": "smoothing kind", id: "smoothing-kind" });
  mode.append(
    h("option", { value: "ema", selected: view.smoothMode === "ema" }, "EMA"),
    h("option", { value: "time", selected: view.smoothMode === "time" }, "time-weighted"),
  );
  const log = h("input", { type: "checkbox", checked: view.logY, id: "log-y" });
  const emit = () => {
    xError.textContent = "";
    view.x = xSel.value;
    view.smooth = Number(smooth.value);
    view.smoothMode = mode.value === "time" ? "time" : "ema";
    view.logY = log.checked;
    smoothVal.textContent = view.smooth.toFixed(2);
    patchParams({
      x: view.x === "step" ? null : view.x,
      smooth: view.smooth ? String(view.smooth) : null,
      smode: view.smoothMode === "time" ? "time" : null,
      log: view.logY ? "1" : null,
    });
    onChange({ ...view });
  };
  xSel.addEventListener("change", emit);
  smooth.addEventListener("input", emit);
  mode.addEventListener("change", emit);
  log.addEventListener("change", emit);
  const el = h(
    "div",
    { class: "toolbar" },
    h("label", {}, "x ", xSel),
    xError,
    h("label", {}, "smoothing ", smooth, smoothVal, " ", mode),
    h("label", {}, log, " log y"),
  );
  return { el, view };
}

/** Match a key against define_metric specs (globs with "*"); returns the step metric. */
export function stepMetricLookup(specs: { name: string; step_metric?: string | null }[]): (key: string) => string | null {
  const rules = specs
    .filter((s) => s.step_metric)
    .map((s) => ({ re: new RegExp(`^${s.name.replace(/[.+?^${}()|[\]\\]/g, "\\$&").replace(/\*/g, ".*")}$`), sm: s.step_metric! }));
  return (key) => {
    for (const r of rules) if (r.re.test(key) && key !== r.sm) return r.sm;
    return null;
  };
}

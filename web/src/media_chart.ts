// wisp.plot charts: a wisp.table file drawn by its chart spec (docs/run-file.md, `chart`).
// Lines, scatter, bars, histograms and curves use uPlot (drag to zoom, double-click to reset,
// hover legend); a confusion matrix is a heat grid whose cells carry their counts.
import uPlot from "uplot";
import type { MediaItem } from "./api";
import { fetchTable, mediaSrc } from "./media";
import { stepped, whenVisible } from "./media_common";
import { cssVar, fmtNum, h } from "./util";

const COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"];
type Row = unknown[];
interface Spec {
  chart: string;
  fields: Record<string, string | null>;
  strings: Record<string, string>;
}

/** The title logged with a chart; wandb's confusion matrix default "... Matrix Curve" reads "... Matrix". */
function chartTitle(spec: Spec): string {
  const t = spec.strings.title ?? "";
  return spec.chart === "confusion" ? t.replace(/\s+Curve$/, "") : t;
}

export function chartView(list: MediaItem[]): HTMLElement {
  return stepped(list, "chart", (it) => {
    const spec: Spec = { chart: String(it.chart), fields: (it.fields ?? {}) as Spec["fields"], strings: (it.strings ?? {}) as Spec["strings"] };
    const box = h("div", { class: "custom-chart", "data-chart": spec.chart }, h("p", { class: "muted small" }, "Loading chart…"));
    const fig = h("figure", { "data-step": it.step }, spec.strings.title ? h("div", { class: "chart-title" }, chartTitle(spec)) : "", box);
    whenVisible(fig, () => {
      const url = mediaSrc(it);
      if (!url) return;
      void fetchTable(url)
        .then((t) => draw(box, spec, t.columns, (t.data ?? []) as Row[]))
        .catch((e: Error) => box.replaceChildren(h("p", { class: "error" }, `chart: ${e.message}`)));
    });
    return fig;
  });
}

function col(columns: string[], name: string | null | undefined): number {
  return name ? columns.indexOf(name) : -1;
}

function num(v: unknown): number | null {
  const n = typeof v === "number" ? v : typeof v === "string" ? Number(v) : NaN;
  return Number.isFinite(n) ? n : null;
}

function draw(box: HTMLElement, spec: Spec, columns: string[], rows: Row[]): void {
  const f = spec.fields;
  if (spec.chart === "confusion") {
    box.replaceChildren(confusion(columns, rows, f));
    return;
  }
  let groups: Map<string, [number, number][]>;
  let xLabel = "x";
  let yLabel = "y";
  let kind: "line" | "points" | "bars" = "line";
  let labels: string[] | null = null;
  const groupBy = (xi: number, yi: number, gi: number) => {
    const g = new Map<string, [number, number][]>();
    for (const r of rows) {
      const x = num(r[xi]);
      const y = num(r[yi]);
      if (x === null || y === null) continue;
      const k = gi >= 0 ? String(r[gi]) : yLabel;
      const l = g.get(k);
      if (l) l.push([x, y]);
      else g.set(k, [[x, y]]);
    }
    return g;
  };
  if (spec.chart === "line" || spec.chart === "scatter" || spec.chart === "curve") {
    xLabel = spec.strings["x-axis-title"] ?? f.x ?? "x";
    yLabel = spec.strings["y-axis-title"] ?? f.y ?? "y";
    groups = groupBy(col(columns, f.x), col(columns, f.y), col(columns, spec.chart === "curve" ? f.class : f.stroke));
    if (spec.chart === "scatter") kind = "points";
    if (spec.chart === "line") for (const l of groups.values()) l.sort((a, b) => a[0] - b[0]);
  } else if (spec.chart === "line_series") {
    xLabel = spec.strings.xname ?? "x";
    yLabel = "value";
    groups = groupBy(col(columns, f.step), col(columns, f.lineVal), col(columns, f.lineKey));
    for (const l of groups.values()) l.sort((a, b) => a[0] - b[0]);
  } else if (spec.chart === "bar") {
    const li = col(columns, f.label);
    const vi = col(columns, f.value);
    labels = rows.map((r) => String(r[li]));
    groups = new Map([[f.value ?? "value", rows.map((r, i) => [i, num(r[vi]) ?? 0] as [number, number])]]);
    xLabel = f.label ?? "";
    yLabel = f.value ?? "";
    kind = "bars";
  } else if (spec.chart === "histogram") {
    const vi = col(columns, f.value);
    const vals = rows.map((r) => num(r[vi])).filter((v): v is number => v !== null);
    const lo = Math.min(...vals);
    const hi = Math.max(...vals);
    const bins = Math.max(1, Math.min(40, Math.ceil(Math.sqrt(vals.length))));
    const width = (hi - lo) / bins || 1;
    const counts = new Array<number>(bins).fill(0);
    for (const v of vals) counts[Math.min(bins - 1, Math.floor((v - lo) / width))]++;
    groups = new Map([["count", counts.map((c, i) => [lo + (i + 0.5) * width, c] as [number, number])]]);
    xLabel = f.value ?? "value";
    yLabel = "count";
    kind = "bars";
  } else {
    box.replaceChildren(h("p", { class: "muted" }, `unknown chart ${spec.chart}`));
    return;
  }
  // one shared x array (stable-sorted, duplicates kept): each series has values only at its own
  // points, so curves with vertical steps and scatter points at equal x are all drawn
  const all: { x: number; y: number; s: number }[] = [];
  const names = [...groups.keys()];
  names.forEach((name, s) => groups.get(name)!.forEach(([x, y]) => all.push({ x, y, s })));
  all.sort((a, b) => a.x - b.x);
  const xs = all.map((p) => p.x);
  const ys = names.map((_, s) => all.map((p) => (p.s === s ? p.y : null)));
  const fg = cssVar("--fg") || "#222";
  const grid = cssVar("--grid") || "#ddd";
  const axis = { stroke: fg, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid, width: 1 } };
  const bars = uPlot.paths.bars!({ size: [0.8, 64] });
  const series: uPlot.Series[] = [
    { label: xLabel, value: (_u, v) => (v === null || v === undefined ? "" : labels ? (labels[v] ?? "") : fmtNum(v)) },
    ...names.map((name, i) => ({
      label: name,
      stroke: COLORS[i % COLORS.length],
      fill: kind === "bars" ? `${COLORS[i % COLORS.length]}99` : undefined,
      width: kind === "points" ? 0 : 1.5,
      spanGaps: true,
      paths: kind === "bars" ? bars : kind === "points" ? () => null : undefined,
      points: kind === "points" ? { show: true, size: 5, fill: COLORS[i % COLORS.length] } : { show: false },
      value: (_u: uPlot, v: number | null) => fmtNum(v),
    })),
  ];
  const plot = h("div", { class: "chart-plot" });
  box.replaceChildren(plot);
  const width = Math.min(720, box.clientWidth || 560);
  const opts: uPlot.Options = {
    width,
    height: 260,
    series,
    legend: { show: true, live: true },
    scales: { x: { time: false, ...(kind === "bars" ? { range: (_u, a, b) => [a - 0.5 * ((b - a) / Math.max(1, xs.length - 1) || 1), b + 0.5 * ((b - a) / Math.max(1, xs.length - 1) || 1)] as uPlot.Range.MinMax } : {}) } },
    axes: [
      { ...axis, label: xLabel, size: 40, ...(labels ? { values: (_u: uPlot, vals: number[]) => vals.map((v) => (Number.isInteger(v) ? (labels![v] ?? "") : "")) } : {}) },
      { ...axis, label: yLabel, size: 56, values: (_u: uPlot, vals: number[]) => vals.map((v) => fmtNum(v)) },
    ],
    cursor: { drag: { x: true, y: true, uni: 20 } },
    hooks: {
      // the legend names the classes; values (and the x row) only while the cursor is on a point
      setLegend: [(u) => box.classList.toggle("hovering", u.legend.idx !== null && u.legend.idx !== undefined)],
      // the visible x range, for tests and screen readers
      setScale: [
        (u, key) => {
          if (key !== "x") return;
          box.dataset.xmin = String(u.scales.x.min);
          box.dataset.xmax = String(u.scales.x.max);
        },
      ],
    },
  };
  new uPlot(opts, [xs, ...ys] as unknown as uPlot.AlignedData, plot); // double-click resets zoom
  box.dataset.series = String(names.length);
  box.dataset.points = String(xs.length);
  box.dataset.drawn = "1";
}

function confusion(columns: string[], rows: Row[], f: Spec["fields"]): HTMLElement {
  const ai = col(columns, f.Actual ?? "Actual");
  const pi = col(columns, f.Predicted ?? "Predicted");
  const ni = col(columns, f.nPredictions ?? "nPredictions");
  const actual: string[] = [];
  const predicted: string[] = [];
  const counts = new Map<string, number>();
  let max = 0;
  for (const r of rows) {
    const a = String(r[ai]);
    const p = String(r[pi]);
    const n = num(r[ni]) ?? 0;
    if (!actual.includes(a)) actual.push(a);
    if (!predicted.includes(p)) predicted.push(p);
    counts.set(`${a}\u0000${p}`, (counts.get(`${a}\u0000${p}`) ?? 0) + n);
    max = Math.max(max, n);
  }
  const accent = cssVar("--accent") || "#1f77b4";
  const hex = parseInt(accent.slice(1), 16);
  const [r, g, b] = [(hex >> 16) & 255, (hex >> 8) & 255, hex & 255];
  const readout = h("div", { class: "small heatmap-readout", "aria-live": "polite" });
  const table = h(
    "table",
    { class: "confusion" },
    h("thead", {}, h("tr", {}, h("th", { class: "corner small muted" }, "actual \\ predicted"), ...predicted.map((p) => h("th", { scope: "col" }, p)))),
    h(
      "tbody",
      {},
      ...actual.map((a) =>
        h(
          "tr",
          {},
          h("th", { scope: "row" }, a),
          ...predicted.map((p) => {
            const n = counts.get(`${a}\u0000${p}`) ?? 0;
            const t = max ? n / max : 0;
            const cell = h("td", { class: "cm-cell", "data-actual": a, "data-predicted": p, "data-count": n, style: `background: rgba(${r},${g},${b},${(0.05 + 0.9 * t).toFixed(3)}); color: ${t > 0.55 ? "#fff" : "inherit"}`, title: `actual ${a}, predicted ${p}: ${n}` }, fmtNum(n));
            cell.addEventListener("mouseenter", () => (readout.textContent = `actual ${a} · predicted ${p} · ${fmtNum(n)}`));
            return cell;
          }),
        ),
      ),
    ),
  );
  return h("div", { class: "confusion-wrap", "data-drawn": "1" }, table, readout);
}

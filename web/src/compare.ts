// The compare page's run analysis: the config keys that differ between the runs, parallel
// coordinates over those keys and a summary metric, and a scatter of any two config or summary
// values with a least-squares trend line (plain SVG; a handful of runs, not a data set).
import type { RunDetail } from "./api";
import type { ChartRun } from "./chart";
import { flatten, fmtNum, h } from "./util";

const SVG = "http://www.w3.org/2000/svg";

function s<K extends keyof SVGElementTagNameMap>(tag: K, attrs: Record<string, string | number> = {}, ...kids: (Node | string)[]): SVGElementTagNameMap[K] {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  for (const c of kids) el.append(c);
  return el;
}

type Row = { run: ChartRun; values: Record<string, unknown> };

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/** Config keys whose values are not the same in every run (a key some runs lack counts). */
export function differingKeys(configs: Record<string, unknown>[]): string[] {
  const keys = new Set(configs.flatMap((c) => Object.keys(c)));
  return [...keys].filter((k) => configs.some((c) => !same(c[k], configs[0][k]))).sort();
}

/** "Nice" tick values covering [lo, hi]. */
function ticks(lo: number, hi: number, n = 5): number[] {
  if (!(hi > lo)) return [lo];
  const raw = (hi - lo) / n;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * mag).find((st) => st >= raw) ?? raw;
  const out: number[] = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(Number(v.toPrecision(12)));
  return out;
}

/** Ticks for a log10 axis (lo, hi are exponents): 1, 2 and 5 times powers of ten. */
function logTicks(lo: number, hi: number): number[] {
  const out: number[] = [];
  for (let e = Math.floor(lo); e <= Math.ceil(hi); e++)
    for (const m of [1, 2, 5]) {
      const t = e + Math.log10(m);
      if (t >= lo && t <= hi) out.push(t);
    }
  return out.length >= 2 ? out : [lo, hi];
}

/** Least-squares line y = a + b x, and r². */
export function fit(xs: number[], ys: number[]): { a: number; b: number; r2: number } | null {
  const n = xs.length;
  if (n < 2) return null;
  const mx = xs.reduce((p, v) => p + v, 0) / n;
  const my = ys.reduce((p, v) => p + v, 0) / n;
  let sxx = 0;
  let sxy = 0;
  let syy = 0;
  for (let i = 0; i < n; i++) {
    sxx += (xs[i] - mx) ** 2;
    sxy += (xs[i] - mx) * (ys[i] - my);
    syy += (ys[i] - my) ** 2;
  }
  if (!sxx) return null;
  const b = sxy / sxx;
  return { a: my - b * mx, b, r2: syy ? (sxy * sxy) / (sxx * syy) : 1 };
}

const num = (v: unknown): number | null => (typeof v === "number" && Number.isFinite(v) ? v : typeof v === "boolean" ? Number(v) : null);

function configDiff(rows: Row[], diff: string[], total: number): HTMLElement {
  if (!diff.length) return h("p", { class: "muted", id: "config-diff", "data-keys": "" }, `All ${rows.length} runs have the same config (${total} keys).`);
  return h(
    "div",
    { class: "diff-scroll" },
    h(
      "table",
      { class: "data kv", id: "config-diff", "data-keys": diff.join(",") },
      h("thead", {}, h("tr", {}, h("th", {}, `${diff.length} of ${total} keys differ`), ...rows.map((r) => h("th", { "data-run": r.run.id }, h("span", { class: "swatch", style: `background:${r.run.color}` }), r.run.label)))),
      h(
        "tbody",
        {},
        ...diff.map((k) =>
          h("tr", { "data-key": k }, h("th", {}, k.replace(/^config\./, "")), ...rows.map((r) => h("td", { class: r.values[k] === undefined ? "muted" : "" }, r.values[k] === undefined ? "—" : fmtNum(r.values[k])))),
        ),
      ),
    ),
  );
}

/** An axis's scale: numbers linearly (min..max), anything else as ordered categories. */
function axisScale(vals: unknown[]): { pos: (v: unknown) => number | null; labels: [number, string][] } {
  const nums = vals.map(num);
  if (vals.every((v, i) => v === undefined || nums[i] !== null)) {
    const f = nums.filter((v): v is number => v !== null);
    const lo = Math.min(...f);
    const hi = Math.max(...f);
    const span = hi - lo || 1;
    return { pos: (v) => (num(v) === null ? null : (num(v)! - lo) / span), labels: [[0, fmtNum(lo)], [1, fmtNum(hi)]] };
  }
  const cats = [...new Set(vals.filter((v) => v !== undefined).map((v) => fmtNum(v)))].sort();
  const at = (c: string) => (cats.length === 1 ? 0.5 : cats.indexOf(c) / (cats.length - 1));
  return { pos: (v) => (v === undefined ? null : at(fmtNum(v))), labels: cats.map((c) => [at(c), c]) };
}

function parallel(rows: Row[], axes: string[]): SVGSVGElement {
  const W = 520;
  const H = 250;
  const top = 34;
  const bot = 24;
  const svg = s("svg", { id: "parcoords", viewBox: `0 0 ${W} ${H}`, width: "100%", role: "img", "aria-label": `parallel coordinates over ${axes.join(", ")}`, "data-axes": axes.join(",") });
  if (axes.length < 2) {
    svg.append(s("text", { x: 10, y: 30, class: "muted-text" }, "Needs two or more differing values."));
    return svg;
  }
  const gap = (W - 80) / (axes.length - 1);
  const scales = axes.map((k) => axisScale(rows.map((r) => r.values[k])));
  const y = (p: number) => top + (1 - p) * (H - top - bot);
  axes.forEach((k, i) => {
    const x = 40 + i * gap;
    const g = s("g", { class: "pc-axis", "data-axis": k });
    g.append(s("line", { x1: x, x2: x, y1: top, y2: H - bot, class: "axis-line" }));
    g.append(s("text", { x, y: 12, "text-anchor": i === 0 ? "start" : i === axes.length - 1 ? "end" : "middle", class: "axis-title" }, k.replace(/^(config|summary)\./, "")));
    // the last axis labels its ticks on its left: on the right they would run out of the box
    const last = i === axes.length - 1;
    for (const [p, lab] of scales[i].labels) g.append(s("text", { x: last ? x - 4 : x + 4, y: y(p) + 4, "text-anchor": last ? "end" : "start", class: "tick-label" }, lab));
    svg.append(g);
  });
  for (const r of rows) {
    let seg: string[] = [];
    const segs: string[][] = [];
    axes.forEach((k, i) => {
      const p = scales[i].pos(r.values[k]);
      if (p === null) {
        if (seg.length) segs.push(seg);
        seg = [];
      } else seg.push(`${40 + i * gap},${y(p)}`);
    });
    if (seg.length) segs.push(seg);
    const g = s("g", { class: "pc-line", "data-run": r.run.id }, s("title", {}, r.run.label));
    for (const sg of segs) g.append(sg.length > 1 ? s("polyline", { points: sg.join(" "), stroke: r.run.color, fill: "none", "stroke-width": 2 }) : s("circle", { cx: sg[0].split(",")[0], cy: sg[0].split(",")[1], r: 3, fill: r.run.color }));
    svg.append(g);
  }
  return svg;
}

function scatter(rows: Row[], kx: string, ky: string, logX: boolean): SVGSVGElement {
  const W = 520;
  const H = 250;
  const L = 56;
  const B = 36;
  const svg = s("svg", { id: "scatter", viewBox: `0 0 ${W} ${H}`, width: "100%", role: "img", "aria-label": `scatter of ${ky} against ${kx}` });
  const tx = (v: number) => (logX ? Math.log10(v) : v);
  const pts = rows
    .map((r) => ({ r, x: num(r.values[kx]), y: num(r.values[ky]) }))
    .filter((p): p is { r: Row; x: number; y: number } => p.x !== null && p.y !== null && (!logX || p.x > 0));
  svg.dataset.points = String(pts.length);
  if (!pts.length) {
    svg.append(s("text", { x: L, y: 30 }, "No run has both values."));
    return svg;
  }
  const xs = pts.map((p) => tx(p.x));
  const ys = pts.map((p) => p.y);
  const pad = (lo: number, hi: number) => (hi > lo ? [lo - (hi - lo) * 0.05, hi + (hi - lo) * 0.05] : [lo - 1, hi + 1]);
  const [x0, x1] = pad(Math.min(...xs), Math.max(...xs));
  const [y0, y1] = pad(Math.min(...ys), Math.max(...ys));
  const px = (v: number) => L + ((v - x0) / (x1 - x0)) * (W - L - 10);
  const py = (v: number) => 10 + (1 - (v - y0) / (y1 - y0)) * (H - B - 10);
  svg.append(s("line", { x1: L, x2: W - 10, y1: H - B, y2: H - B, class: "axis-line" }), s("line", { x1: L, x2: L, y1: 10, y2: H - B, class: "axis-line" }));
  for (const t of logX ? logTicks(x0, x1) : ticks(x0, x1)) svg.append(s("text", { x: px(t), y: H - B + 14, "text-anchor": "middle", class: "tick-label" }, logX ? fmtNum(Number((10 ** t).toPrecision(6))) : fmtNum(t)));
  for (const t of ticks(y0, y1)) svg.append(s("text", { x: L - 4, y: py(t) + 4, "text-anchor": "end", class: "tick-label" }, fmtNum(t)));
  svg.append(s("text", { x: (L + W) / 2, y: H - 4, "text-anchor": "middle", class: "axis-title" }, kx + (logX ? " (log)" : "")));
  svg.append(s("text", { x: 12, y: (H - B) / 2, "text-anchor": "middle", transform: `rotate(-90 12 ${(H - B) / 2})`, class: "axis-title" }, ky));
  const f = fit(xs, ys);
  if (f) {
    svg.append(
      s("line", { id: "scatter-fit", x1: px(x0), x2: px(x1), y1: py(f.a + f.b * x0), y2: py(f.a + f.b * x1), class: "fit-line", "data-slope": f.b, "data-intercept": f.a, "data-r2": f.r2 }, s("title", {}, `y = ${fmtNum(f.a)} + ${fmtNum(f.b)}·${logX ? "log10 x" : "x"}, r² = ${f.r2.toFixed(3)}`)),
    );
  }
  for (const p of pts) svg.append(s("circle", { cx: px(tx(p.x)), cy: py(p.y), r: 5, fill: p.r.run.color, "data-run": p.r.run.id }, s("title", {}, `${p.r.run.label}: ${fmtNum(p.x)}, ${fmtNum(p.y)}`)));
  return svg;
}

/** The three panels for the compared runs (colours and labels as the charts use them). */
export function compareAnalysis(runs: RunDetail[], chartRuns: ChartRun[]): { el: HTMLElement; setRuns: (r: ChartRun[]) => void } {
  const el = h("div", { class: "compare-panels", id: "compare-analysis" });
  let rows: Row[] = [];
  const configs = runs.map((r) => flatten((r.config ?? {}) as Record<string, unknown>));
  const summaries = runs.map((r) => flatten((r.summary ?? {}) as Record<string, unknown>));
  const diff = differingKeys(configs);
  const values = runs.map((_run, i) => ({
    ...Object.fromEntries(Object.entries(configs[i]).map(([k, v]) => [`config.${k}`, v])),
    ...Object.fromEntries(Object.entries(summaries[i]).map(([k, v]) => [`summary.${k}`, v])),
  }));
  // keys with a number in at least two runs can go on the scatter
  const numeric = [...new Set(values.flatMap((v) => Object.keys(v)))].filter((k) => values.filter((v) => num(v[k]) !== null).length >= 2 && !/^summary\.(_|system\/)/.test(k)).sort();
  const metrics = numeric.filter((k) => k.startsWith("summary."));
  const diffNum = diff.map((k) => `config.${k}`).filter((k) => numeric.includes(k));
  const sel = (id: string, opts: string[], v: string) => {
    const e = h("select", { id, "aria-label": id.replace("-", " ") });
    for (const o of opts) e.append(h("option", { value: o, selected: o === v }, o));
    return e;
  };
  const pcMetric = sel("pc-metric", metrics, metrics.find((k) => /loss/.test(k)) ?? metrics[0] ?? "");
  const sx = sel("scatter-x", numeric, diffNum[0] ?? numeric[0] ?? "");
  const sy = sel("scatter-y", numeric, pcMetric.value || numeric[1] || numeric[0] || "");
  const logX = h("input", { type: "checkbox", id: "scatter-logx" });
  const pcBox = h("div");
  const scBox = h("div");
  const draw = () => {
    const axes = [...diff.slice(0, 8).map((k) => `config.${k}`), ...(pcMetric.value ? [pcMetric.value] : [])];
    pcBox.replaceChildren(parallel(rows, axes));
    scBox.replaceChildren(scatter(rows, sx.value, sy.value, logX.checked));
  };
  [pcMetric, sx, sy].forEach((e) => e.addEventListener("change", draw));
  logX.addEventListener("change", draw);
  const setRuns = (cr: ChartRun[]) => {
    const by = new Map(cr.map((c) => [c.id, c]));
    rows = runs.map((r, i) => ({ run: by.get(r.id) ?? chartRuns[i], values: values[i] }));
    el.replaceChildren(
      h("section", { class: "panel-box" }, h("h2", {}, "Config differences"), configDiff(rows, diff.map((k) => `config.${k}`), Object.keys(Object.assign({}, ...configs)).length)),
      h("section", { class: "panel-box" }, h("h2", {}, "Parallel coordinates ", pcMetric), pcBox),
      h("section", { class: "panel-box" }, h("h2", {}, "Scatter "), h("div", { class: "toolbar small" }, h("label", {}, "x ", sx), h("label", {}, "y ", sy), h("label", {}, logX, " log x")), scBox),
    );
    draw();
  };
  setRuns(chartRuns);
  return { el, setRuns };
}

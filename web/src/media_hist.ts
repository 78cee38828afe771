// A histogram logged over steps as a heat-map: steps along x, values along y, the count of a
// cell as its colour (viridis, readable with colour blindness), with both axes, their titles
// and a colour scale of counts.  The readout under it names the cell under the pointer.
import type { MediaItem } from "./api";
import { cssVar, fmtNum, h } from "./util";

// viridis at 0, 0.125, ... 1
const VIRIDIS = [
  [68, 1, 84], [71, 44, 122], [59, 81, 139], [44, 113, 142], [33, 144, 141],
  [39, 173, 129], [92, 200, 99], [170, 220, 50], [253, 231, 37],
];

export function viridis(t: number): string {
  const x = Math.min(1, Math.max(0, t)) * (VIRIDIS.length - 1);
  const i = Math.min(VIRIDIS.length - 2, Math.floor(x));
  const f = x - i;
  const c = VIRIDIS[i].map((v, k) => Math.round(v + (VIRIDIS[i + 1][k] - v) * f));
  return `rgb(${c[0]},${c[1]},${c[2]})`;
}

function histData(it: MediaItem): { edges: number[]; counts: number[] } | null {
  const counts = (it.counts ?? it.values ?? it.hist) as number[] | undefined;
  let edges = (it.bins ?? it.edges ?? it.bin_edges) as number[] | undefined;
  if (!Array.isArray(counts) || !counts.length) return null;
  if (!Array.isArray(edges) || edges.length !== counts.length + 1) {
    const lo = Number(it.min ?? 0);
    const hi = Number(it.max ?? counts.length);
    edges = counts.map((_, i) => lo + ((hi - lo) * i) / counts.length).concat([hi]);
  }
  return { edges, counts };
}

function niceTicks(lo: number, hi: number, n: number): number[] {
  if (!(hi > lo)) return [lo];
  const raw = (hi - lo) / n;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= raw) ?? raw;
  const out: number[] = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(Number(v.toPrecision(12)));
  return out;
}

export function histogramView(list: MediaItem[]): HTMLElement {
  const data = list.map((it) => ({ step: it.step, d: histData(it) })).filter((x) => x.d) as { step: number; d: { edges: number[]; counts: number[] } }[];
  if (!data.length) return h("p", { class: "muted" }, "No histogram data.");
  const canvas = h("canvas", { class: "heatmap", width: 640, height: 260, role: "img", "aria-label": "histogram heat-map: step (x), value (y), count (colour)" });
  const info = h("div", { class: "small muted" });
  const readout = h("div", { class: "small heatmap-readout", "aria-live": "polite" });
  let lo = Infinity;
  let hi = -Infinity;
  for (const { d } of data) {
    lo = Math.min(lo, d.edges[0]);
    hi = Math.max(hi, d.edges[d.edges.length - 1]);
  }
  const ctx = canvas.getContext("2d")!;
  const W = canvas.width;
  const H = canvas.height;
  // plot area; the rest holds the axes, their titles and the colour scale
  const P = { l: 58, r: 78, t: 8, b: 40 };
  const pw = W - P.l - P.r;
  const ph = H - P.t - P.b;
  const colW = pw / data.length;
  const ypos = (v: number) => P.t + ph - ((v - lo) / (hi - lo || 1)) * ph;
  // the colour of a bin is its count per unit of value (bins may differ in width), scaled
  // to the densest bin of all steps; the scale shows counts of a bin of the median width
  const widths = data.flatMap(({ d }) => d.counts.map((_, i) => d.edges[i + 1] - d.edges[i])).sort((a, b) => a - b);
  const unit = widths[widths.length >> 1] || 1;
  const dens = (d: { edges: number[]; counts: number[] }, i: number) => (d.counts[i] * unit) / (d.edges[i + 1] - d.edges[i] || unit);
  let cmax = 1;
  for (const { d } of data) for (let i = 0; i < d.counts.length; i++) cmax = Math.max(cmax, dens(d, i));
  const fg = cssVar("--fg") || "#222";
  const muted = cssVar("--muted") || "#666";
  ctx.fillStyle = cssVar("--bg2") || "#f5f6f8";
  ctx.fillRect(P.l, P.t, pw, ph);
  data.forEach(({ d }, ci) => {
    for (let i = 0; i < d.counts.length; i++) {
      if (!d.counts[i]) continue;
      const y0 = ypos(d.edges[i + 1]);
      ctx.fillStyle = viridis(dens(d, i) / cmax);
      ctx.fillRect(P.l + ci * colW, y0, Math.ceil(colW), Math.max(1, ypos(d.edges[i]) - y0));
    }
  });
  ctx.font = "11px system-ui, sans-serif";
  ctx.strokeStyle = muted;
  ctx.fillStyle = fg;
  ctx.strokeRect(P.l, P.t, pw, ph);
  // x: steps (every column is one logged step)
  const xt: string[] = [];
  ctx.textAlign = "center";
  const every = Math.max(1, Math.ceil(data.length / 8));
  for (let ci = 0; ci < data.length; ci += every) {
    const x = P.l + (ci + 0.5) * colW;
    ctx.fillRect(x, P.t + ph, 1, 4);
    ctx.fillText(String(data[ci].step), x, P.t + ph + 15);
    xt.push(String(data[ci].step));
  }
  ctx.fillText("step", P.l + pw / 2, H - 6);
  // y: values
  const yt: string[] = [];
  ctx.textAlign = "right";
  for (const v of niceTicks(lo, hi, 5)) {
    const y = ypos(v);
    ctx.fillRect(P.l - 4, y, 4, 1);
    ctx.fillText(fmtNum(v), P.l - 6, y + 4);
    yt.push(fmtNum(v));
  }
  ctx.save();
  ctx.translate(12, P.t + ph / 2);
  ctx.rotate(-Math.PI / 2);
  ctx.textAlign = "center";
  ctx.fillText("value", 0, 0);
  ctx.restore();
  // colour scale: 0 .. the largest cell count
  const sx = W - P.r + 16;
  for (let i = 0; i < ph; i++) {
    ctx.fillStyle = viridis(1 - i / ph);
    ctx.fillRect(sx, P.t + i, 12, 1);
  }
  ctx.strokeRect(sx, P.t, 12, ph);
  ctx.fillStyle = fg;
  ctx.textAlign = "left";
  const ct = niceTicks(0, cmax, 4);
  for (const v of ct) {
    const y = P.t + ph - (v / cmax) * ph;
    ctx.fillRect(sx + 12, y, 3, 1);
    ctx.fillText(fmtNum(v), sx + 17, y + 4);
  }
  ctx.fillText("count", sx - 6, H - 6);
  info.textContent = `steps ${data[0].step}–${data[data.length - 1].step} · values ${fmtNum(lo)} … ${fmtNum(hi)} · colour: count per bin (max ${fmtNum(cmax)})`;
  const ds = canvas.dataset;
  ds.columns = String(data.length);
  ds.xTicks = xt.join(",");
  ds.yTicks = yt.join(",");
  ds.scaleTicks = ct.map(fmtNum).join(",");
  ds.axes = "step,value,count";
  ds.plot = [P.l, P.t, pw, ph].join(",");
  ds.drawn = "1";
  // hover readout: the step, value range and count under the pointer
  canvas.addEventListener("mousemove", (ev) => {
    const box = canvas.getBoundingClientRect();
    const fx = ((ev.clientX - box.left) / box.width) * W;
    const fy = ((ev.clientY - box.top) / box.height) * H;
    if (fx < P.l || fx > P.l + pw || fy < P.t || fy > P.t + ph) {
      readout.textContent = "";
      return;
    }
    const ci = Math.min(data.length - 1, Math.floor((fx - P.l) / colW));
    const v = lo + (1 - (fy - P.t) / ph) * (hi - lo);
    const { edges, counts } = data[ci].d;
    const i = edges.findIndex((e, k) => k < counts.length && v >= e && v <= edges[k + 1]);
    readout.textContent =
      i < 0
        ? `step ${data[ci].step} · value ${fmtNum(v)} · count 0`
        : `step ${data[ci].step} · values ${fmtNum(edges[i])} … ${fmtNum(edges[i + 1])} · count ${counts[i]}`;
  });
  canvas.addEventListener("mouseleave", () => (readout.textContent = ""));
  return h("div", {}, canvas, readout, info);
}

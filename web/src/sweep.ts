// Sweep pages: #/sweeps (every sweep) and #/sweeps/<project>/<id> (a sweep id is unique in
// its project; an old #/sweeps/<id> link opens the one readable sweep with that id): best run, the metric over trials,
// parallel coordinates of parameters against the metric, parameter importance (Optuna, from
// the server) and the runs table. Live: refetched every few seconds while the sweep runs.
import uPlot from "uplot";
import { getJSON, projectApi, qs, type Ok, type SweepSummary, type TrialRow } from "./api";
import type { Dispose } from "./pages";
import { href } from "./router";
import { cssVar, flatten, fmtNum, fmtTime, h } from "./util";
import { emptyState, errorState, loading } from "./ui";

// The generated shapes (api.gen.ts), with the members this page reads narrowed: a sweep's
// config is its sweep file (checked by the server), a trial's intermediate values are numbers.
type SweepConfig = { method?: string; metric?: { name?: string; goal?: string } };
type Sweep = Omit<SweepSummary, "config" | "trial_count"> & { config: SweepConfig; trial_count?: number };
type Trial = Omit<TrialRow, "intermediate"> & { intermediate: Record<string, number> };
type Importance = Ok<"sweep_importance">;

const LIVE_MS = 3000;
const enc = encodeURIComponent;
const at = (project: string, id: string) => `${projectApi(project)}/sweeps/${enc(id)}`;
const sweepApi = {
  list: (id?: string) => getJSON<{ sweeps: Sweep[] }>(`/api/v1/sweeps${qs({ id })}`),
  one: (p: string, id: string) => getJSON<Sweep>(at(p, id)),
  trials: (p: string, id: string) => getJSON<{ trials: Trial[] }>(`${at(p, id)}/trials`),
  runs: (p: string, id: string) => getJSON<Ok<"sweep_runs">>(`${at(p, id)}/runs`),
  importance: (p: string, id: string) => getJSON<Importance>(`${at(p, id)}/importance`),
};

export function sweepsPage(app: HTMLElement): Dispose {
  app.replaceChildren(loading("sweeps"));
  sweepApi
    .list()
    .then(({ sweeps }) => {
      if (!sweeps.length) {
        app.replaceChildren(emptyState("No sweeps yet", ["Create one with ", h("code", {}, "wisp sweep sweep.yaml"), "."], "sweeps-empty"));
        return;
      }
      const head = ["sweep", "name", "project", "method", "state", "trials", "created"];
      app.replaceChildren(
        h("h1", {}, "Sweeps"),
        h(
          "table",
          { class: "data listing", id: "sweeps" },
          h("thead", {}, h("tr", {}, ...head.map((c) => h("th", {}, c)))),
          h(
            "tbody",
            {},
            ...sweeps.map((s) =>
              h(
                "tr",
                {},
                h("td", {}, h("a", { href: href(["sweeps", s.project, s.id]) }, s.id)),
                h("td", {}, s.name ?? ""),
                h("td", {}, s.project ?? ""),
                h("td", {}, s.config.method ?? ""),
                h("td", {}, h("span", { class: "state" }, s.state)),
                h("td", { class: "num" }, String(s.trial_count ?? 0)),
                h("td", {}, fmtTime(s.created_at)),
              ),
            ),
          ),
        ),
      );
    })
    .catch((e) => app.replaceChildren(errorState(e)));
  return () => {};
}

/** Flat parameter values of a trial (nested groups as dotted keys). */
function flatParams(t: Trial): Record<string, unknown> {
  return flatten(t.params ?? {});
}

function better(goal: string): (a: number, b: number) => boolean {
  return goal === "maximize" ? (a, b) => a > b : (a, b) => a < b;
}

function bestTrial(trials: Trial[], goal: string): Trial | null {
  const b = better(goal);
  let best: Trial | null = null;
  for (const t of trials) if (t.value !== null && (best === null || b(t.value, best.value!))) best = t;
  return best;
}

/** ``onServer``: the sweep project's run ids on the server -> their keys (what URLs name). */
function runLink(sweep: Sweep, runId: string, onServer: Map<string, string>): Node {
  const project = sweep.project;
  const key = onServer.get(runId);
  if (project && key) return h("a", { href: href(["p", project, "r", key]) }, runId);
  return h("span", { title: "not uploaded (yet)" }, runId);
}

function metricChart(trials: Trial[], goal: string, metric: string): HTMLElement {
  const el = h("div", { class: "sweep-chart", id: "sweep-metric" });
  const done = trials.filter((t) => t.value !== null);
  el.dataset.points = String(done.length);
  if (!done.length) {
    el.append(h("p", { class: "muted" }, "No trial has reported the metric yet."));
    return el;
  }
  const b = better(goal);
  const xs: number[] = [];
  const ys: (number | null)[] = [];
  const bests: (number | null)[] = [];
  let cur: number | null = null;
  for (const t of [...trials].sort((p, q) => p.number - q.number)) {
    xs.push(t.number);
    ys.push(t.value);
    if (t.value !== null && (cur === null || b(t.value, cur))) cur = t.value;
    bests.push(cur);
  }
  el.dataset.best = String(cur);
  const accent = cssVar("--accent") || "#2563eb";
  const opts: uPlot.Options = {
    width: Math.min(720, Math.max(320, (document.getElementById("app")?.clientWidth ?? 760) - 40)),
    height: 240,
    scales: { x: { time: false } },
    axes: [{ label: "trial", stroke: cssVar("--muted"), incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000], values: (_u: uPlot, splits: number[]) => {
      el.dataset.xticks = splits.join(","); // trials are whole numbers: so are the ticks
      return splits.map((v) => fmtNum(v));
    } }, { label: metric, stroke: cssVar("--muted") }],
    series: [
      { label: "trial" },
      { label: metric, stroke: accent, width: 0, paths: () => null, points: { show: true, size: 7, fill: accent } },
      { label: "best so far", stroke: "#16a34a", width: 2 },
    ],
  };
  requestAnimationFrame(() => new uPlot(opts, [xs, ys, bests] as uPlot.AlignedData, el));
  return el;
}

function parallel(trials: Trial[], goal: string, metric: string): HTMLElement {
  const done = trials.filter((t) => t.value !== null);
  const wrap = h("div", { class: "sweep-parallel", id: "sweep-parallel" });
  if (done.length < 2) {
    wrap.append(h("p", { class: "muted" }, "Parallel coordinates appear once two trials have reported the metric."));
    return wrap;
  }
  const flats = done.map(flatParams);
  const keys = [...new Set(flats.flatMap((f) => Object.keys(f)))].filter((k) => new Set(flats.map((f) => JSON.stringify(f[k]))).size > 1);
  const axes = [...keys, metric];
  const W = Math.max(360, axes.length * 130);
  const H = 260;
  const top = 24;
  const bottom = H - 24;
  const NS = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(NS, "svg");
  svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
  svg.setAttribute("width", String(W));
  svg.setAttribute("height", String(H));
  const xOf = (i: number) => 40 + (i * (W - 110)) / Math.max(1, axes.length - 1);
  // one scale per axis: numbers linearly, anything else by its rank among the values seen
  const scales = axes.map((k, i) => {
    const vals = done.map((t, j) => (i === axes.length - 1 ? t.value : flats[j][k]));
    if (vals.every((v) => typeof v === "number")) {
      const nums = vals as number[];
      const lo = Math.min(...nums);
      const hi = Math.max(...nums);
      return { f: (v: unknown) => bottom - ((Number(v) - lo) / (hi - lo || 1)) * (bottom - top), lo: fmtNum(lo), hi: fmtNum(hi) };
    }
    const cats = [...new Set(vals.map((v) => JSON.stringify(v)))].sort();
    return {
      f: (v: unknown) => bottom - (cats.indexOf(JSON.stringify(v)) / Math.max(1, cats.length - 1)) * (bottom - top),
      lo: cats[0],
      hi: cats[cats.length - 1],
    };
  });
  const values = done.map((t) => t.value!);
  const lo = Math.min(...values);
  const hi = Math.max(...values);
  done.forEach((t, j) => {
    const goodness = (t.value! - lo) / (hi - lo || 1);
    const g = goal === "maximize" ? goodness : 1 - goodness;
    const path = document.createElementNS(NS, "polyline");
    const pts = axes.map((k, i) => `${xOf(i)},${scales[i].f(i === axes.length - 1 ? t.value : flats[j][k])}`);
    path.setAttribute("points", pts.join(" "));
    path.setAttribute("fill", "none");
    path.setAttribute("stroke", `hsl(${Math.round(g * 120)}, 70%, 45%)`);
    path.setAttribute("stroke-opacity", "0.8");
    path.setAttribute("data-trial", String(t.number));
    svg.append(path);
  });
  axes.forEach((k, i) => {
    const line = document.createElementNS(NS, "line");
    for (const [a, v] of [["x1", xOf(i)], ["x2", xOf(i)], ["y1", top], ["y2", bottom]] as const) line.setAttribute(a, String(v));
    line.setAttribute("stroke", "currentColor");
    svg.append(line);
    const labels: [number, number, string, string, string][] = [
      [xOf(i), 12, "middle", k, "axis"],
      [xOf(i) + 4, top + 10, "start", scales[i].hi, "hi"],
      [xOf(i) + 4, bottom, "start", scales[i].lo, "lo"],
    ];
    for (const [x, y, anchor, s, cls] of labels) {
      const txt = document.createElementNS(NS, "text");
      txt.setAttribute("x", String(x));
      txt.setAttribute("y", String(y));
      txt.setAttribute("text-anchor", anchor);
      txt.setAttribute("font-size", "11");
      txt.setAttribute("fill", "currentColor");
      txt.setAttribute("class", cls);
      txt.textContent = s;
      svg.append(txt);
    }
  });
  wrap.dataset.axes = axes.join(",");
  wrap.dataset.lines = String(done.length);
  wrap.append(svg);
  return wrap;
}

function importancePanel(imp: Importance | null): HTMLElement {
  const el = h("div", { id: "sweep-importance" });
  if (imp === null) {
    // computed by Optuna on the server (its first answer imports it: seconds); the page
    // does not wait for it
    el.dataset.pending = "true";
    el.append(h("p", { class: "muted" }, "computing parameter importance…"));
    return el;
  }
  if (!imp.importance) {
    el.append(h("p", { class: "muted" }, imp.reason ?? "not available"));
    return el;
  }
  const rows = Object.entries(imp.importance).sort((a, b) => b[1] - a[1]);
  el.append(
    h(
      "table",
      { class: "data" },
      h(
        "tbody",
        {},
        ...rows.map(([k, v]) =>
          h(
            "tr",
            { "data-param": k },
            h("th", {}, k),
            h("td", {}, h("div", { style: `background: var(--accent); height: 10px; width: ${Math.round(v * 240)}px` })),
            h("td", { class: "num" }, v.toFixed(3)),
          ),
        ),
      ),
    ),
  );
  return el;
}

function runsTable(sweep: Sweep, trials: Trial[], onServer: Map<string, string>): HTMLElement {
  const flats = trials.map(flatParams);
  const keys = [...new Set(flats.flatMap((f) => Object.keys(f)))];
  const head = ["#", "run", "state", sweep.config.metric?.name ?? "value", ...keys];
  return h(
    "table",
    { class: "data", id: "sweep-runs" },
    h("thead", {}, h("tr", {}, ...head.map((c) => h("th", {}, c)))),
    h(
      "tbody",
      {},
      ...trials.map((t, j) =>
        h(
          "tr",
          { "data-trial": String(t.number) },
          h("td", { class: "num" }, String(t.number)),
          h("td", {}, runLink(sweep, t.run_id, onServer)),
          h("td", {}, h("span", { class: "state" }, t.state)),
          h("td", { class: "num" }, fmtNum(t.value)),
          ...keys.map((k) => h("td", { class: "num" }, fmtNum(flats[j][k]))),
        ),
      ),
    ),
  );
}

/** An old `#/sweeps/<id>` link: the page of the one readable sweep with that id. */
export function sweepByIdPage(app: HTMLElement, sweepId: string): Dispose {
  app.replaceChildren(loading("sweep"));
  sweepApi
    .list(sweepId)
    .then(({ sweeps }) => {
      if (sweeps.length === 1) location.replace(href(["sweeps", sweeps[0].project, sweepId]));
      else if (!sweeps.length) app.replaceChildren(emptyState(`No sweep ${sweepId}`, ["No sweep you may read has this id."], "sweep-missing"));
      else app.replaceChildren(errorState(new Error(`sweep id ${sweepId} is in ${sweeps.length} projects: open it from the sweeps list`)));
    })
    .catch((e) => app.replaceChildren(errorState(e)));
  return () => {};
}

export function sweepPage(app: HTMLElement, project: string, sweepId: string): Dispose {
  let disposed = false;
  let timer: number | undefined;
  let lastKey = "";
  let imp: Importance | null = null;
  app.replaceChildren(loading("sweep"));
  // parameter importance arrives on its own: the page never waits for it (the server's first
  // answer imports Optuna and scikit-learn, seconds on a busy machine)
  const fetchImportance = (key: string) => {
    lastKey = key;
    void sweepApi
      .importance(project, sweepId)
      .catch((e) => ({ importance: null, reason: String((e as Error).message) }))
      .then((got) => {
        if (disposed || key !== lastKey) return;
        imp = got;
        document.getElementById("sweep-importance")?.replaceWith(importancePanel(imp));
      });
  };
  const load = async () => {
    const [sweep, { trials }, { runs }] = await Promise.all([sweepApi.one(project, sweepId), sweepApi.trials(project, sweepId), sweepApi.runs(project, sweepId)]);
    if (disposed) return;
    const finished = trials.filter((t) => t.state === "finished").length;
    if (`${finished}` !== lastKey) fetchImportance(`${finished}`);
    const metric = sweep.config.metric?.name ?? "value";
    const goal = sweep.config.metric?.goal ?? "minimize";
    const onServer = new Map(runs.filter((r) => r.project === sweep.project).map((r) => [r.id, r.key]));
    const best = bestTrial(trials, goal);
    const facts = `${sweep.config.method ?? ""} · ${metric} (${goal}) · ${sweep.state} · ${trials.length} trials`;
    app.replaceChildren(
      h("h1", {}, `Sweep ${sweep.name ?? sweep.id}`),
      h("p", { class: "muted", id: "sweep-facts" }, facts),
      h(
        "div",
        { id: "sweep-best" },
        h("h2", {}, "Best run"),
        best
          ? h("p", {}, runLink(sweep, best.run_id, onServer), ` — ${metric} ${fmtNum(best.value)} (trial ${best.number}) `, h("code", {}, JSON.stringify(best.params)))
          : h("p", { class: "muted" }, "No trial has reported the metric yet."),
      ),
      h("h2", {}, `${metric} over trials`),
      metricChart(trials, goal, metric),
      h("h2", {}, "Parameters against the metric"),
      parallel(trials, goal, metric),
      h("h2", {}, "Parameter importance"),
      importancePanel(imp),
      h("h2", {}, "Runs"),
      runsTable(sweep, trials, onServer),
    );
    const live = sweep.state === "running" || sweep.state === "paused" || trials.some((t) => t.state === "running");
    const liveEl = document.getElementById("live");
    if (liveEl) liveEl.textContent = live ? "● live" : "";
    if (live) timer = window.setTimeout(() => void load().catch(fail), LIVE_MS);
  };
  const fail = (e: unknown) => {
    if (!disposed) app.replaceChildren(errorState(e));
  };
  void load().catch(fail);
  return () => {
    disposed = true;
    if (timer !== undefined) clearTimeout(timer);
  };
}

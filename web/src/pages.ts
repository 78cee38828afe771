// Projects list, run page and compare view.
import { api, type RunDetail } from "./api";
import type { ChartRun, ViewOpts } from "./chart";
import { pickColor, runColors, runLabels } from "./colors";
import { compareAnalysis } from "./compare";
import { ChartGrid, stepMetricLookup, viewToolbar, xChoices } from "./grid";
import { consolePanel, mediaPanel } from "./media";
import { href, patchParams, type Route } from "./router";
import { forkOf } from "./runFamily";
import { fmtDuration, fmtNum, fmtTime, flatten, h } from "./util";
import { emptyState, errorState, loading } from "./ui";

export type Dispose = () => void;

const LIVE_MS = 2000;

function setLive(on: boolean): void {
  const el = document.getElementById("live");
  if (el) el.textContent = on ? "● live" : "";
}

/** `wisp ui` only: the folders whose runs it imports (the server says; absent on `wisp server`). */
function followedFolders(folders: string[] | undefined): HTMLElement[] {
  if (!folders?.length) return [];
  const items = folders.flatMap((f, i) => [...(i ? [" and "] : []), h("code", {}, f)]);
  return [h("p", { class: "muted", id: "ui-folders", "data-folders": folders.join("\n") }, "wisp ui follows the runs under ", ...items, ".")];
}

export function projectsPage(app: HTMLElement): Dispose {
  app.replaceChildren(loading("projects"));
  api
    .projects()
    .then(({ projects, folders }) => {
      if (!projects.length) {
        app.replaceChildren(emptyState("No projects yet", ["Log a run with ", h("code", {}, "wisp.init(project=...)"), " (or try ", h("code", {}, "make demo"), ") and it shows here."], "projects-empty"), ...followedFolders(folders));
        return;
      }
      app.replaceChildren(
        h("h1", {}, "Projects"),
        ...followedFolders(folders),
        h(
          "table",
          { class: "data listing projects", id: "projects" },
          h("thead", {}, h("tr", {}, h("th", {}, "project"), h("th", {}, "runs"), h("th", {}, "last activity"))),
          h(
            "tbody",
            {},
            ...projects.map((p) =>
              h("tr", {}, h("td", {}, h("a", { href: href(["p", p.name]) }, p.name)), h("td", { class: "num" }, String(p.run_count)), h("td", {}, fmtTime(p.last_activity))),
            ),
          ),
        ),
      );
    })
    .catch((e) => app.replaceChildren(errorState(e)));
  return () => {};
}

/** Key/value rows: the config in the order it was logged, the summary sorted. */
function kvTable(obj: Record<string, unknown>, id: string, sorted = true): HTMLElement {
  const flat = flatten(obj);
  const keys = sorted ? Object.keys(flat).sort() : Object.keys(flat);
  if (!keys.length) return h("p", { class: "muted" }, "—");
  return h("table", { class: "data kv", id }, h("tbody", {}, ...keys.map((k) => h("tr", {}, h("th", {}, k), h("td", {}, fmtNum(flat[k]))))));
}

function overview(run: RunDetail): HTMLElement {
  const m = run.metadata ?? {};
  const git = (m.git ?? null) as { commit?: string; branch?: string } | null;
  const facts: [string, string][] = [
    ["id", run.id],
    ["state", run.state],
    ["created", fmtTime(run.created_at)],
    ["duration", fmtDuration(run.duration)],
    ["group", run.group ?? ""],
    ["job type", run.job_type ?? ""],
    ["tags", (run.tags ?? []).join(", ")],
    ["host", String(m.host ?? "")],
    ["python", String(m.python ?? "")],
    ["platform", String(m.platform ?? "")],
    ["git", git ? `${git.branch ?? ""} ${git.commit ?? ""}`.trim() : ""],
    ["command", Array.isArray(m.argv) ? (m.argv as string[]).join(" ") : ""],
    ["notes", run.notes ?? ""],
    ["rejected records", run.rejected ? `${run.rejected} refused by the server, set aside in rejected.jsonl (wisp sync --retry-rejected)` : ""],
  ];
  return h(
    "div",
    { class: "overview", id: "overview" },
    h("div", {}, h("h2", {}, "Run"), h("table", { class: "data kv" }, h("tbody", {}, ...facts.filter((f) => f[1]).map(([k, v]) => h("tr", {}, h("th", {}, k), h("td", {}, v)))))),
    h("div", {}, h("h2", {}, "Config"), kvTable(run.config ?? {}, "config", false)),
    h("div", {}, h("h2", {}, "Summary"), kvTable(run.summary ?? {}, "summary")),
  );
}

/** System samples have no training step: they are plotted against time since the start. */
function sysView(v: ViewOpts): ViewOpts {
  return v.x === "time" || v.x === "relative" ? v : { ...v, x: "relative" };
}

const TABS = ["charts", "overview", "system", "media", "console"] as const;

export function runPage(app: HTMLElement, route: Route, runId: string): Dispose {
  let disposed = false;
  let timer: number | undefined;
  const cleanups: (() => void)[] = [];
  app.replaceChildren(loading("run"));
  void api
    .run(runId)
    .then((run) => {
      if (disposed) return;
      let color = runColors([run.key]).get(run.key)!;
      let chartRuns: ChartRun[] = [{ id: run.key, label: run.name || run.id, color }];
      const stepMetrics = [...new Set(run.metrics.map((m) => m.step_metric).filter((x): x is string => !!x))];
      let tab = (TABS as readonly string[]).includes(route.params.get("tab") ?? "") ? route.params.get("tab")! : "charts";
      const { el: tools, view } = viewToolbar(route.params, stepMetrics, (v) => {
        grid.setView(v);
        sys.setView(sysView(v));
      });
      const isSys = (k: string) => k.startsWith("system/");
      const hidden = new Set(run.metrics.filter((m) => m.hidden).map((m) => m.name));
      const keysOf = (r: RunDetail) => r.metric_keys.filter((k) => !hidden.has(k) && !k.startsWith("_"));
      const stepMetric = stepMetricLookup(run.metrics);
      const mediaKeys = run.media_keys ?? {};
      const grid = new ChartGrid(chartRuns, view, { emptyText: "No metrics logged (yet).", stepMetric, mediaKeys, xChoices: xChoices(stepMetrics) });
      const sys = new ChartGrid(chartRuns, sysView(view), { emptyText: "No system metrics.", xChoices: xChoices([]) });
      grid.setKeys(keysOf(run).filter((k) => !isSys(k)));
      sys.setKeys(keysOf(run).filter(isSys));
      cleanups.push(() => grid.destroy(), () => sys.destroy());
      const search = h("input", { type: "search", id: "key-search", placeholder: "search metrics (regex)", value: route.params.get("q") ?? "", "aria-label": "search metrics" });
      grid.filter(search.value);
      search.addEventListener("input", () => {
        grid.filter(search.value);
        sys.filter(search.value);
        patchParams({ q: search.value || null });
      });
      const media = mediaPanel(run.key);
      const cons = consolePanel(run.key);
      const panels: Record<string, HTMLElement> = {
        charts: h("div", {}, grid.el),
        overview: overview(run),
        system: h("div", {}, sys.el),
        media: media.el,
        console: cons.el,
      };
      const stateEl = h("span", { class: `state state-${run.state}`, id: "run-state" }, run.state);
      const durEl = h("span", { class: "muted" }, fmtDuration(run.duration));
      const tabBar = h("div", { class: "tabs", role: "tablist" });
      const panelWrap = h("div", { class: "panel" });
      // the chart toolbar (key search, x axis, smoothing) only applies to chart tabs
      const toolbar = h("div", { class: "toolbar" }, search, tools);
      const showTab = (t: string) => {
        tab = t;
        patchParams({ tab: t === "charts" ? null : t });
        tabBar.replaceChildren(
          ...TABS.map((name) =>
            h("button", { role: "tab", "aria-selected": name === t ? "true" : "false", "data-tab": name, onclick: () => showTab(name) }, name),
          ),
        );
        panelWrap.replaceChildren(panels[t]);
        toolbar.hidden = t !== "charts" && t !== "system";
        if (t === "charts") grid.start();
        if (t === "system") sys.start();
        if (t === "media") void media.refresh();
        if (t === "console") void cons.refresh();
      };
      app.replaceChildren(
        h(
          "section",
          { class: "run-page", "data-run": run.key },
          h("div", { class: "title" }, colorInput(run.key, color, (c) => {
            color = c;
            chartRuns = [{ ...chartRuns[0], color }];
            grid.setRuns(chartRuns);
            sys.setRuns(chartRuns);
          }), h("h1", {}, run.name ?? run.id), stateEl, durEl),
          tabBar,
          toolbar,
          panelWrap,
        ),
      );
      showTab(tab);
      let state = run.state;
      const tick = async () => {
        if (disposed) return;
        try {
          const fresh = await api.run(runId);
          if (disposed) return;
          state = fresh.state;
          stateEl.textContent = fresh.state;
          stateEl.className = `state state-${fresh.state}`;
          durEl.textContent = fmtDuration(fresh.duration);
          grid.setKeys(keysOf(fresh).filter((k) => !isSys(k)));
          sys.setKeys(keysOf(fresh).filter(isSys));
          await Promise.all([grid.poll(), sys.poll()]);
          if (tab === "media") await media.refresh();
          if (tab === "console") await cons.refresh();
        } catch {
          /* transient; try again next tick */
        }
        setLive(state === "running");
        if (state === "running" && !disposed) timer = window.setTimeout(tick, LIVE_MS);
      };
      setLive(state === "running");
      if (state === "running") timer = window.setTimeout(tick, LIVE_MS);
      // a fork: its charts mark the part that is its parent's
      void forkOf([run.key]).then((forks) => {
        const fork = forks.get(run.key);
        if (disposed || !fork) return;
        chartRuns = [{ ...chartRuns[0], fork }];
        grid.setRuns(chartRuns);
      });
    })
    .catch((e) => app.replaceChildren(errorState(e, `run ${runId}`)));
  return () => {
    disposed = true;
    clearTimeout(timer);
    setLive(false);
    cleanups.forEach((c) => c());
  };
}

/** A run's colour swatch that opens a colour picker; the choice is kept for the run (colors.ts). */
function colorInput(id: string, color: string, onPick: (c: string) => void): HTMLInputElement {
  const inp = h("input", { type: "color", class: "swatch run-color", value: color, style: `background:${color}`, "data-run": id, title: "run colour (pick to change)", "aria-label": "run colour" });
  inp.addEventListener("input", () => {
    inp.style.background = inp.value;
    pickColor(id, inp.value);
    onPick(inp.value);
  });
  return inp;
}

export function comparePage(app: HTMLElement, route: Route, project: string): Dispose {
  const ids = (route.params.get("runs") ?? "").split(",").filter(Boolean);
  let disposed = false;
  let timer: number | undefined;
  let grid: ChartGrid | null = null;
  if (!ids.length) {
    app.replaceChildren(emptyState("No runs selected", [h("a", { href: href(["p", project]) }, "Pick runs in the table"), " and press Compare."]));
    return () => {};
  }
  app.replaceChildren(loading("runs"));
  void Promise.all(ids.map((id) => api.run(id)))
    .then((runs) => {
      if (disposed) return;
      let colors = runColors(ids);
      const labels = runLabels(runs);
      let forks = new Map<string, { step: number; parent: string }>();
      const mkRuns = () => runs.map((r) => ({ id: r.key, label: labels.get(r.key)!, color: colors.get(r.key)!, fork: forks.get(r.key) }));
      const chartRuns = mkRuns();
      const mediaKeys: Record<string, string> = Object.assign({}, ...runs.map((r) => r.media_keys ?? {}));
      const stepMetrics = [...new Set(runs.flatMap((r) => r.metrics.map((m) => m.step_metric)).filter((x): x is string => !!x))];
      const { el: tools, view } = viewToolbar(route.params, stepMetrics, (v) => grid!.setView(v));
      grid = new ChartGrid(chartRuns, view, { syncZoom: true, stepMetric: stepMetricLookup(runs.flatMap((r) => r.metrics)), mediaKeys, xChoices: xChoices(stepMetrics) });
      const xmin = route.params.get("xmin");
      const xmax = route.params.get("xmax");
      if (xmin && xmax) grid.setZoom([Number(xmin), Number(xmax)]);
      const keysOf = (rs: RunDetail[]) => [...new Set(rs.flatMap((r) => r.metric_keys))].filter((k) => !k.startsWith("_")).sort((a, b) => Number(a.startsWith("system/")) - Number(b.startsWith("system/")) || a.localeCompare(b));
      grid.setKeys(keysOf(runs));
      const search = h("input", { type: "search", id: "key-search", placeholder: "search metrics (regex)", value: route.params.get("q") ?? "", "aria-label": "search metrics" });
      grid.filter(search.value);
      search.addEventListener("input", () => {
        grid!.filter(search.value);
        patchParams({ q: search.value || null });
      });
      const analysis = compareAnalysis(runs, chartRuns);
      const recolor = () => {
        colors = runColors(ids);
        const cr = mkRuns();
        grid!.setRuns(cr);
        analysis.setRuns(cr);
        legend.querySelectorAll<HTMLInputElement>("input.run-color").forEach((inp) => {
          inp.value = colors.get(inp.dataset.run!)!;
          inp.style.background = inp.value;
        });
      };
      void forkOf(runs.map((r) => r.key)).then((got) => {
        if (disposed || !got.size) return;
        forks = got;
        grid!.setRuns(mkRuns());
      });
      const legend = h(
        "ul",
        { class: "legend", id: "legend" },
        ...runs.map((r) =>
          h(
            "li",
            { "data-run": r.key },
            colorInput(r.key, colors.get(r.key)!, recolor),
            h("a", { href: href(["p", project, "r", r.key]) }, labels.get(r.key)!),
            " ",
            h("span", { class: `state state-${r.state}` }, r.state),
          ),
        ),
      );
      app.replaceChildren(h("section", { class: "compare-page" }, h("h1", {}, `Compare ${runs.length} runs`), legend, analysis.el, h("div", { class: "toolbar" }, search, tools), grid.el));
      grid.start();
      const tick = async () => {
        if (disposed || !grid) return;
        let live = false;
        try {
          const fresh = await Promise.all(ids.map((id) => api.run(id)));
          live = fresh.some((r) => r.state === "running");
          grid.setKeys(keysOf(fresh));
          await grid.poll();
        } catch {
          live = true;
        }
        setLive(live);
        if (live && !disposed) timer = window.setTimeout(tick, LIVE_MS);
      };
      const live = runs.some((r) => r.state === "running");
      setLive(live);
      if (live) timer = window.setTimeout(tick, LIVE_MS);
    })
    .catch((e) => app.replaceChildren(errorState(e)));
  return () => {
    disposed = true;
    clearTimeout(timer);
    setLive(false);
    grid?.destroy();
  };
}

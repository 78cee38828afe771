// The workspace page: panels of charts over a project's runs, grouped by any config or run
// field into mean/median lines with a min–max or ±std band (computed by the server,
// POST /projects/{p}/series/grouped), saved on the server and restored by URL.
//   #/p/<project>/w?filter=&group=config.lr      a new workspace (from the runs table)
//   #/p/<project>/w/<id>                         a saved one (shared, or the user's own)
// Only the panels in or near the viewport are fetched and drawn (an IntersectionObserver):
// those that come into view together are fetched in one batch (one grouped request per 20
// keys); a panel scrolled to later is fetched then.  A change of filter, grouping or band
// starts a new generation of data: the panels in view are fetched again, the others when
// they are next in view.
import { api, ApiError } from "../api";
import { href } from "../router";
import type { Route } from "../router";
import { fetchSeries } from "../series";
import { orderKeys, scalarKeys, sectionOf, sharedScalarKeys } from "../keys";
import { emptyState } from "../ui";
import { debounce, fmtLabel, h, plural, runColors } from "../util";
import { wsApi, type GroupedBody, type GroupedSeries, type WorkspaceSpec } from "./api";
import { Panel, type PanelData, type PanelHost, type RunLine } from "./panel";

const MAX_RUN_LINES = 30; // an ungrouped workspace draws the newest runs of the selection
const BUCKETS = 400; // about a panel's width in pixels
const DISCOVER_RUNS = 20; // the newest runs whose keys make the default panels and pickers
const MAX_DEFAULT_PANELS = 24;

let seq = 0;
function newId(): string {
  seq++;
  return `p${Date.now().toString(36)}${seq}`;
}

function defaultSpec(params: URLSearchParams): WorkspaceSpec {
  const band = params.get("band");
  return {
    panels: [],
    filter: params.get("filter") ?? "",
    group_by: (params.get("group") ?? "").split(",").map((g) => g.trim()).filter(Boolean),
    agg: params.get("agg") === "median" ? "median" : "mean",
    band: band === "std" || band === "none" ? band : "minmax",
  };
}

export function workspacePage(app: HTMLElement, route: Route, project: string, id?: string): () => void {
  let disposed = false;
  let spec: WorkspaceSpec = defaultSpec(route.params);
  let wsId = id ?? null;
  let canEdit = true;
  let metricKeys: string[] = [];
  let sharedKeys: string[] = []; // the scalar keys most of the runs log: the default panels
  let grouped: GroupedSeries | null = null;
  let runLines: RunLine[] = [];
  let loadSeq = 0; // the data's generation: a full reload starts a new one
  const list: Panel[] = [];
  const asked = new Map<Panel, number>(); // the generation each panel's data was asked in
  const near = new Set<Panel>(); // in or near the viewport
  let pending = new Set<Panel>();
  const fetched = new Set<string>(); // grouped keys fetched in this generation
  let flushing: Promise<void> | null = null;

  const status = h("span", { class: "muted", id: "ws-status", role: "status" });
  const err = h("div", { class: "error", id: "ws-error", role: "alert" });
  const name = h("input", { id: "ws-name", value: "workspace", "aria-label": "workspace name" });
  const filter = h("input", { type: "search", id: "ws-filter", placeholder: "filter runs, e.g. config.lr < 0.01", "aria-label": "filter runs", spellcheck: "false" });
  const group = h("input", { id: "ws-group", list: "ws-fields", placeholder: "group by, e.g. config.lr", "aria-label": "group by (comma-separated fields)" });
  const agg = h("select", { id: "ws-agg", "aria-label": "line" }, h("option", { value: "mean" }, "mean"), h("option", { value: "median" }, "median"));
  const band = h("select", { id: "ws-band", "aria-label": "band" }, h("option", { value: "minmax" }, "min–max"), h("option", { value: "std" }, "± std"), h("option", { value: "none" }, "no band"));
  const shared = h("input", { type: "checkbox", id: "ws-shared", checked: true });
  const save = h("button", { id: "ws-save" }, "Save");
  const saveNew = h("button", { id: "ws-save-new" }, "Save as new");
  const add = h("button", { id: "ws-add" }, "+ panel");
  const open = h("select", { id: "ws-open", "aria-label": "open a saved workspace" });
  const link = h("a", { id: "ws-link", hidden: true }, "link");
  const legend = h("ul", { class: "legend", id: "ws-legend" });
  const keysList = h("datalist", { id: "ws-keys" });
  const fieldsList = h("datalist", { id: "ws-fields" });
  const grid = h("div", { class: "ws-grid", id: "ws-grid" });

  const columns = () => Math.max(1, Math.min(4, Math.floor((grid.clientWidth || 1200) / 380)));
  const host: PanelHost = {
    changed: (p, refetch) => {
      const i = list.indexOf(p);
      if (i >= 0) spec.panels![i] = p.spec;
      dirty();
      if (refetch) {
        asked.set(p, loadSeq);
        void loadData([p]);
      }
    },
    remove: (p) => {
      const i = list.indexOf(p);
      if (i < 0) return;
      list.splice(i, 1);
      spec.panels!.splice(i, 1);
      unwatch(p);
      p.destroy();
      arrange();
      dirty();
    },
    move: (p, to) => {
      const i = list.indexOf(p);
      const j = typeof to === "number" ? i + to : list.findIndex((q) => q.spec.id === to);
      if (i < 0 || j < 0 || j >= list.length || i === j) return;
      list.splice(i, 1);
      list.splice(j, 0, p);
      spec.panels = list.map((q) => q.spec);
      arrange();
      dirty();
    },
    keys: () => metricKeys,
    xAxes: () => ["step", "time", "relative", ...metricKeys.filter((k) => /epoch|step/i.test(k))],
    columns,
  };

  function dirty(): void {
    status.textContent = canEdit || !wsId ? "unsaved changes" : "changed (read-only: save as new)";
    status.dataset.dirty = "1";
  }

  function fillControls(): void {
    filter.value = spec.filter ?? "";
    group.value = (spec.group_by ?? []).join(", ");
    agg.value = spec.agg ?? "mean";
    band.value = spec.band ?? "minmax";
  }

  // -- panels in view ------------------------------------------------------------------------
  const margin = () => Math.round(window.innerHeight / 2);
  const observer = new IntersectionObserver(
    (entries) => {
      for (const e of entries) {
        const p = list.find((q) => q.el === e.target);
        if (!p) continue;
        if (e.isIntersecting) near.add(p);
        else near.delete(p);
        p.show(e.isIntersecting);
        if (e.isIntersecting && asked.get(p) !== loadSeq) pending.add(p);
      }
      if (pending.size) void flush();
    },
    { rootMargin: `${margin()}px 0px` },
  );
  function watch(p: Panel): void {
    observer.observe(p.el);
  }
  function unwatch(p: Panel): void {
    observer.unobserve(p.el);
    near.delete(p);
    pending.delete(p);
    asked.delete(p);
  }
  /** The panels in or near the viewport now (layout read once; the observer follows). */
  function inView(): Panel[] {
    const top = -margin();
    const bottom = window.innerHeight + margin();
    return list.filter((p) => {
      const r = p.el.getBoundingClientRect();
      return r.bottom >= top && r.top <= bottom;
    });
  }
  /** Fetch the pending panels' data in one batch (after the current task: panels coming
   * into view together are one batch). */
  function flush(): Promise<void> {
    flushing ??= new Promise<void>((resolve) => setTimeout(resolve, 0)).then(async () => {
      flushing = null;
      const batch = [...pending].filter((p) => list.includes(p) && asked.get(p) !== loadSeq);
      pending = new Set();
      if (!batch.length) return;
      for (const p of batch) asked.set(p, loadSeq);
      await loadData(batch);
    });
    return flushing;
  }
  /** A new generation of data: the panels in view are fetched now, the others when seen. */
  function reload(): Promise<void> {
    loadSeq++;
    grouped = null;
    fetched.clear();
    runLines = [];
    const shown = inView();
    for (const p of list) {
      p.show(shown.includes(p));
      if (shown.includes(p)) near.add(p);
      else near.delete(p);
    }
    for (const p of shown) pending.add(p);
    return flush();
  }

  function mountPanels(): void {
    for (const p of list) {
      unwatch(p);
      p.destroy();
    }
    list.length = 0;
    for (const ps of spec.panels ?? []) list.push(new Panel(ps, host));
    grid.style.gridTemplateColumns = `repeat(${columns()}, minmax(0, 1fr))`;
    arrange();
    for (const p of list) watch(p);
  }

  /** The panels in their order, a heading before each run of panels of one key prefix
   * ("train", "val"; none when all panels share one). */
  function arrange(): void {
    const secs = list.map((p) => sectionOf(p.spec.keys[0] ?? ""));
    const many = new Set(secs).size > 1;
    const out: HTMLElement[] = [];
    if (!list.length)
      out.push(h("div", { class: "ws-empty" }, emptyState("No panels", ["These runs have no scalar metrics yet, or every panel was removed: ", "press ", h("b", {}, "+ panel"), " to add one."], "ws-empty")));
    list.forEach((p, i) => {
      if (many && (i === 0 || secs[i] !== secs[i - 1])) out.push(h("h2", { class: "ws-section", "data-section": secs[i] }, secs[i] || "charts"));
      out.push(p.el);
    });
    grid.replaceChildren(...out);
  }

  function showLegend(): void {
    if (grouped) {
      const colors = runColors(grouped.groups.map((g) => g.label));
      legend.replaceChildren(
        ...grouped.groups.map((g) =>
          h("li", { "data-group": g.label, title: g.names.map((n, i) => n ?? g.runs[i]).join(", ") }, h("span", { class: "swatch", style: `background:${colors.get(g.label)}` }), `${(spec.group_by ?? []).join(", ")} = ${fmtLabel(g.label)} `, h("span", { class: "muted", "data-count": g.runs.length }, `(${plural(g.runs.length, "run")})`)),
        ),
      );
    } else {
      const more = runLines.length >= MAX_RUN_LINES ? ` (newest ${MAX_RUN_LINES})` : "";
      legend.replaceChildren(...runLines.map((r) => h("li", { "data-run": r.id }, h("span", { class: "swatch", style: `background:${r.color}` }), r.label)), more);
    }
  }

  /** Fetch these panels' data: one grouped request per 20 keys, or the runs' series. */
  async function loadData(targets: Panel[]): Promise<void> {
    const my = loadSeq; // a reload (a new generation) supersedes it
    const t0 = performance.now();
    err.textContent = "";
    const groupBy = spec.group_by ?? [];
    try {
      const base = {
        agg: spec.agg ?? "mean",
        band: spec.band ?? "minmax",
      } as const;
      if (groupBy.length) {
        // the keys of this generation not fetched yet (a panel of fetched keys draws at once)
        const keys = [...new Set(targets.filter((p) => (p.spec.x ?? "step") === "step").flatMap((p) => p.spec.keys))].filter((k) => !fetched.has(k) || !grouped);
        const parts: string[][] = [];
        for (let i = 0; i < keys.length; i += 20) parts.push(keys.slice(i, i + 20));
        // only the arrays the line and band need
        const line = spec.agg === "median" ? "median" : "mean";
        const stats = spec.band === "std" ? ["mean", "std", line] : spec.band === "none" ? [line] : [line, "min", "max"];
        const body = (ks: string[]) => ({ keys: ks, group_by: groupBy, filter: spec.filter ?? "", buckets: BUCKETS, stats: [...new Set(stats)] as GroupedBody["stats"] });
        const got = await Promise.all(parts.map((ks) => wsApi.grouped(project, body(ks))));
        if (disposed || my !== loadSeq) return;
        for (const k of keys) fetched.add(k);
        const merged: GroupedSeries = !got.length && grouped ? grouped : got.length ? { ...got[0], groups: got[0].groups.map((g) => ({ ...g, series: [...g.series] })) } : { group_by: groupBy, runs: 0, grids: [], groups: [] };
        for (const more of got.slice(1))
          more.groups.forEach((g, i) => {
            merged.groups[i]?.series.push(...g.series);
          });
        if (grouped && merged !== grouped) {
          // keep the other panels' series
          merged.groups.forEach((g, i) => {
            const old = grouped!.groups[i];
            if (old && old.label === g.label) g.series = [...old.series.filter((s) => !keys.includes(s.key)), ...g.series];
          });
        }
        grouped = merged;
        runLines = [];
      } else grouped = null;
      const colors = grouped ? runColors(grouped.groups.map((g) => g.label)) : new Map<string, string>();
      const needRuns = !grouped || targets.some((p) => (p.spec.x ?? "step") !== "step");
      if (needRuns && !runLines.length) {
        const page = await api.runs(project, { filter: spec.filter || undefined, sort: "created_at", order: "desc", limit: MAX_RUN_LINES });
        const rc = runColors(page.runs.map((r) => r.id));
        runLines = page.runs.map((r) => ({ id: r.id, label: r.name ?? r.id, color: rc.get(r.id)! }));
      }
      await Promise.all(
        targets.map(async (p) => {
          const x = p.spec.x ?? "step";
          const perRun = !grouped || x !== "step";
          const series = perRun && runLines.length ? await fetchSeries({ runs: runLines.map((r) => r.id), keys: p.spec.keys, x, buckets: BUCKETS }) : [];
          if (disposed || my !== loadSeq) return;
          const d: PanelData = { grouped: perRun ? null : grouped, groupColors: colors, runs: runLines, series, ...base };
          p.setData(d);
        }),
      );
      if (disposed || my !== loadSeq) return;
      showLegend();
      grid.dataset.loadMs = (performance.now() - t0).toFixed(1);
      grid.dataset.loaded = String(Number(grid.dataset.loaded ?? 0) + 1);
    } catch (e) {
      if (disposed) return;
      for (const p of targets) if (asked.get(p) === my) asked.delete(p); // asked again when seen
      err.textContent = e instanceof ApiError ? `${e.message}${e.field ? ` (${e.field})` : ""}` : String(e);
    }
  }

  /** Metric keys and config fields of (a few of) the selected runs, for pickers and defaults. */
  async function discover(): Promise<void> {
    const page = await api.runs(project, { filter: spec.filter || undefined, limit: DISCOVER_RUNS });
    const details = await Promise.all(page.runs.map((r) => api.run(r.id)));
    sharedKeys = sharedScalarKeys(details);
    // the panel pickers offer every scalar key of these runs (media keys have no line to draw)
    metricKeys = orderKeys([...new Set(details.flatMap((d) => scalarKeys(d)))]);
    keysList.replaceChildren(...metricKeys.map((k) => h("option", { value: k })));
    const fields = new Set(["group", "job_type", "state", "tags"]);
    const walk = (o: Record<string, unknown>, pre: string) => {
      for (const [k, v] of Object.entries(o ?? {})) {
        if (v && typeof v === "object" && !Array.isArray(v)) walk(v as Record<string, unknown>, `${pre}${k}.`);
        else fields.add(`${pre}${k}`);
      }
    };
    for (const d of details) {
      walk(d.config ?? {}, "config.");
      walk(d.metadata ?? {}, "metadata.");
    }
    fieldsList.replaceChildren(...[...fields].map((f) => h("option", { value: f })));
  }

  async function listSaved(): Promise<void> {
    try {
      const { workspaces } = await wsApi.list(project);
      open.replaceChildren(
        h("option", { value: "" }, `open… (${workspaces.length} saved)`),
        ...workspaces.map((w) => h("option", { value: w.id, selected: w.id === wsId }, `${w.name}${w.shared ? "" : " (private)"}${w.owner ? ` · ${w.owner}` : ""}`)),
      );
    } catch {
      open.replaceChildren(h("option", { value: "" }, "open…"));
    }
  }

  async function store(asNew: boolean): Promise<void> {
    err.textContent = "";
    const body = { name: name.value.trim() || "workspace", shared: shared.checked, spec: { ...spec, panels: list.map((p) => p.spec) } };
    try {
      const w = !asNew && wsId && canEdit ? await wsApi.save(project, wsId, body) : await wsApi.create(project, body);
      if (disposed) return;
      wsId = w.id;
      canEdit = w.can_edit;
      const url = href(["p", project, "w", w.id]);
      history.replaceState(null, "", url);
      link.href = url;
      link.textContent = location.href;
      link.hidden = false;
      status.textContent = `saved ${new Date().toLocaleTimeString()}`;
      delete status.dataset.dirty;
      status.dataset.saved = w.id;
      void listSaved();
    } catch (e) {
      err.textContent = e instanceof ApiError ? `could not save: ${e.message}${e.field ? ` (${e.field})` : ""}` : String(e);
    }
  }

  const controlsChanged = () => {
    const gb = group.value.split(",").map((g) => g.trim()).filter(Boolean);
    const refetch =
      filter.value !== (spec.filter ?? "") || gb.join(",") !== (spec.group_by ?? []).join(",") || agg.value !== (spec.agg ?? "mean") || band.value !== (spec.band ?? "minmax");
    spec = { ...spec, filter: filter.value, group_by: gb, agg: agg.value === "median" ? "median" : "mean", band: band.value as WorkspaceSpec["band"] };
    dirty();
    if (refetch) void reload(); // the server sends only the statistics drawn
  };
  for (const el of [agg, band]) el.addEventListener("change", controlsChanged);
  for (const el of [filter, group])
    el.addEventListener("keydown", (e) => {
      if (e.key === "Enter") controlsChanged();
    });
  group.addEventListener("change", controlsChanged);
  add.addEventListener("click", () => {
    const used = new Set(list.flatMap((p) => p.spec.keys));
    const key = metricKeys.find((k) => !used.has(k)) ?? metricKeys[0] ?? "loss";
    const p = new Panel({ id: newId(), keys: [key] }, host);
    list.push(p);
    spec.panels = list.map((q) => q.spec);
    arrange();
    watch(p);
    dirty();
  });
  save.addEventListener("click", () => void store(false));
  saveNew.addEventListener("click", () => void store(true));
  open.addEventListener("change", () => {
    if (open.value) location.hash = href(["p", project, "w", open.value]);
  });
  const onResize = debounce(() => {
    grid.style.gridTemplateColumns = `repeat(${columns()}, minmax(0, 1fr))`;
    for (const p of list) {
      p.layout();
      p.redraw();
    }
  }, 150);
  window.addEventListener("resize", onResize);

  app.replaceChildren(
    h(
      "section",
      { class: "workspace-page" },
      h("div", { class: "toolbar" }, name, h("label", {}, shared, " shared with the project"), save, saveNew, open, status, link),
      h("div", { class: "toolbar" }, filter, h("label", {}, "group by ", group), h("label", {}, "line ", agg), h("label", {}, "band ", band), add, h("a", { href: href(["p", project], { filter: spec.filter || null, group: (spec.group_by ?? [])[0] ?? null }) }, "runs table")),
      err,
      legend,
      grid,
      keysList,
      fieldsList,
    ),
  );
  fillControls();
  const t0 = performance.now();
  const start = async () => {
    if (wsId) {
      const w = await wsApi.get(project, wsId);
      if (disposed) return;
      spec = w.spec;
      canEdit = w.can_edit;
      name.value = w.name;
      shared.checked = w.shared;
      status.textContent = `${w.owner ? `by ${w.owner} · ` : ""}${w.can_edit ? "" : "read-only · "}saved ${new Date(w.updated_at * 1000).toLocaleString()}`;
      fillControls();
      mountPanels();
      await reload();
      grid.dataset.restoreMs = (performance.now() - t0).toFixed(1);
      void discover();
    } else {
      await discover();
      if (disposed) return;
      spec.panels = sharedKeys.slice(0, MAX_DEFAULT_PANELS).map((k) => ({ id: newId(), keys: [k] }));
      mountPanels();
      await reload();
    }
    void listSaved();
  };
  start().catch((e) => {
    if (!disposed) err.textContent = e instanceof ApiError && e.status === 404 ? `no workspace ${wsId} in ${project} (or it is private)` : String((e as Error).message ?? e);
  });
  return () => {
    disposed = true;
    window.removeEventListener("resize", onResize);
    observer.disconnect();
    for (const p of list) p.destroy();
  };
}

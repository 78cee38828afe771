// Runs table of one project: column picker, sort, filter expressions, grouping, selection for
// comparison; rows are virtualised so 10,000 runs stay fast.  Filters are evaluated by the server,
// or in the page (filter.ts) when every run of the project is loaded and none is running; the
// server then confirms the count in the background and its answer wins if they ever differ.
import { api, ApiError, type RunRow } from "./api";
import { filterRuns } from "./filter";
import { href, patchParams, type Route } from "./router";
import { fmtDuration, fmtNum, fmtTime, flatten, h, runColor } from "./util";

const ROW_H = 30;
const PAGE = 1000; // the server's maximum page size

interface Row {
  run: RunRow;
  flat: Record<string, unknown>;
}
type Item = { kind: "group"; name: string; count: number } | { kind: "run"; row: Row };

const BASE_COLS = ["state", "name", "tags", "created_at", "duration"];
const LABELS: Record<string, string> = { created_at: "created", state: "state", name: "name", tags: "tags", duration: "duration", group: "group" };

function value(row: Row, field: string): unknown {
  const r = row.run;
  switch (field) {
    case "state":
      return r.state;
    case "name":
      return r.name ?? r.id;
    case "tags":
      return (r.tags ?? []).join(", ");
    case "created_at":
      return r.created_at;
    case "duration":
      return r.duration;
    case "group":
      return r.group;
    default:
      return row.flat[field];
  }
}

function compare(a: unknown, b: unknown): number {
  const an = a === null || a === undefined || a === "";
  const bn = b === null || b === undefined || b === "";
  if (an || bn) return an === bn ? 0 : an ? 1 : -1; // missing values last
  if (typeof a === "number" && typeof b === "number") return a - b;
  return String(a).localeCompare(String(b), undefined, { numeric: true });
}

export function runsPage(app: HTMLElement, route: Route, project: string): () => void {
  const p = route.params;
  let filter = p.get("filter") ?? "";
  let sort = p.get("sort") ?? "created_at";
  let order: "asc" | "desc" = p.get("order") === "asc" ? "asc" : "desc";
  let grouped = p.get("group") === "group";
  const selected = new Set((p.get("sel") ?? "").split(",").filter(Boolean));
  let cols: string[] | null = p.get("cols") ? p.get("cols")!.split(",").filter(Boolean) : null;
  const collapsed = new Set<string>();

  let rows: Row[] = [];
  // every run of the project (loaded without a filter), and the sort it arrived in
  let base: Row[] | null = null;
  let baseOrder = "";
  let items: Item[] = [];
  let total = 0;
  let allKeys: string[] = [];
  let disposed = false;
  let ctrl: AbortController | null = null;
  let liveTimer: number | undefined;
  let focusIdx = 0;

  const filterInput = h("input", {
    type: "search",
    id: "filter",
    placeholder: 'filter, e.g. config.lr < 0.01 and state = finished and tags contains "baseline"',
    value: filter,
    "aria-label": "filter expression",
    spellcheck: "false",
  });
  const filterErr = h("div", { class: "error", role: "alert", id: "filter-error" });
  const count = h("span", { class: "muted", id: "run-count" });
  const groupBox = h("input", { type: "checkbox", id: "group-toggle", checked: grouped });
  const compareBtn = h("a", { class: "button", id: "compare" }, "Compare");
  const picker = h("details", { class: "picker" }, h("summary", {}, "Columns"));
  const head = h("div", { class: "thead", role: "row" });
  const spacer = h("div", { class: "spacer" });
  const body = h("div", { class: "tbody", role: "rowgroup" });
  const scroller = h("div", { class: "scroller", id: "runs-scroller", role: "grid", "aria-label": "runs" }, head, h("div", { class: "vbody" }, spacer, body));

  app.replaceChildren(
    h(
      "section",
      { class: "runs-page" },
      h(
        "div",
        { class: "toolbar" },
        filterInput,
        h("label", {}, groupBox, " group by group"),
        picker,
        count,
        compareBtn,
      ),
      filterErr,
      scroller,
    ),
  );

  function columns(): string[] {
    return [...BASE_COLS, ...(cols ?? defaultCols())];
  }
  function defaultCols(): string[] {
    const c = allKeys.filter((k) => k.startsWith("config.")).slice(0, 4);
    const s = allKeys.filter((k) => k.startsWith("summary.") && !k.includes("._") && !k.startsWith("summary.system/")).slice(0, 4);
    return [...c, ...s];
  }

  function width(c: string): number {
    return c === "name" ? 240 : c === "tags" ? 150 : c === "state" ? 90 : c === "created_at" ? 140 : c === "duration" ? 90 : 130;
  }
  function template(): string {
    return `32px ${columns()
      .map((c) => `${width(c)}px`)
      .join(" ")}`;
  }

  function renderHead(): void {
    const cells: HTMLElement[] = [
      h("span", { role: "columnheader" }, h("input", { type: "checkbox", "aria-label": "select all", id: "select-all", onchange: (e: Event) => selectAll((e.target as HTMLInputElement).checked) })),
    ];
    for (const c of columns()) {
      const label = LABELS[c] ?? c;
      const arrow = c === sort ? (order === "asc" ? " ▲" : " ▼") : "";
      cells.push(
        h(
          "button",
          { class: "th", role: "columnheader", "data-col": c, title: `sort by ${c}`, "aria-sort": c === sort ? (order === "asc" ? "ascending" : "descending") : "none", onclick: () => setSort(c) },
          label + arrow,
        ),
      );
    }
    head.replaceChildren(...cells);
    head.style.gridTemplateColumns = template();
  }

  function renderPicker(): void {
    const current = new Set(columns());
    const search = h("input", { type: "search", placeholder: "search keys", "aria-label": "search columns" });
    const list = h("div", { class: "picker-list" });
    const fill = () => {
      const q = search.value.toLowerCase();
      list.replaceChildren(
        ...allKeys
          .filter((k) => k.toLowerCase().includes(q))
          .slice(0, 300)
          .map((k) =>
            h(
              "label",
              {},
              h("input", {
                type: "checkbox",
                checked: current.has(k),
                "data-colkey": k,
                onchange: (e: Event) => {
                  const on = (e.target as HTMLInputElement).checked;
                  const now = cols ?? defaultCols();
                  cols = on ? [...now, k] : now.filter((x) => x !== k);
                  patchParams({ cols: cols.join(",") });
                  renderHead();
                  renderBody(true);
                },
              }),
              " ",
              k,
            ),
          ),
      );
    };
    search.addEventListener("input", fill);
    fill();
    picker.replaceChildren(h("summary", {}, "Columns"), h("div", { class: "picker-pop" }, search, list));
  }

  function setSort(c: string): void {
    if (sort === c) order = order === "asc" ? "desc" : "asc";
    else {
      sort = c;
      order = c === "name" || c === "state" ? "asc" : "desc";
    }
    patchParams({ sort, order });
    renderHead();
    if (rows.length >= total) {
      applySort();
      renderBody(true);
    } else void load();
  }

  function applySort(): void {
    const t0 = performance.now();
    const dir = order === "asc" ? 1 : -1;
    const keyed = rows.map((r) => [value(r, sort), r] as const);
    keyed.sort((a, b) => {
      const an = a[0] === null || a[0] === undefined || a[0] === "";
      const bn = b[0] === null || b[0] === undefined || b[0] === "";
      if (an || bn) return an === bn ? 0 : an ? 1 : -1;
      return dir * compare(a[0], b[0]);
    });
    rows = keyed.map((k) => k[1]);
    buildItems();
    scroller.dataset.sortMs = (performance.now() - t0).toFixed(1);
  }

  function buildItems(): void {
    if (!grouped) {
      items = rows.map((row) => ({ kind: "run", row }));
      return;
    }
    const groups = new Map<string, Row[]>();
    for (const r of rows) {
      const g = r.run.group ?? "(no group)";
      const l = groups.get(g);
      if (l) l.push(r);
      else groups.set(g, [r]);
    }
    items = [];
    for (const [name, list] of [...groups.entries()].sort((a, b) => a[0].localeCompare(b[0]))) {
      items.push({ kind: "group", name, count: list.length });
      if (!collapsed.has(name)) for (const row of list) items.push({ kind: "run", row });
    }
  }

  function cell(row: Row, c: string): HTMLElement {
    const r = row.run;
    if (c === "state") return h("span", { class: `state state-${r.state}` }, r.state);
    if (c === "name")
      return h(
        "a",
        { href: href(["p", project, "r", r.id]), class: "run-name", tabindex: -1 },
        h("span", { class: "swatch", style: `background:${runColor(r.id)}` }),
        r.name ?? r.id,
      );
    if (c === "tags") return h("span", { class: "tags" }, ...(r.tags ?? []).map((t) => h("span", { class: "tag" }, t)));
    if (c === "created_at") return h("span", {}, fmtTime(r.created_at));
    if (c === "duration") return h("span", { class: "num" }, fmtDuration(r.duration));
    const v = value(row, c);
    return h("span", { class: typeof v === "number" ? "num" : "", title: fmtNum(v) }, fmtNum(v));
  }

  let lastRange = "";
  function renderBody(force = false): void {
    const t0 = performance.now();
    spacer.style.height = `${items.length * ROW_H}px`;
    const top = Math.max(0, scroller.scrollTop - head.offsetHeight);
    const first = Math.max(0, Math.floor(top / ROW_H) - 10);
    const last = Math.min(items.length, first + Math.ceil(scroller.clientHeight / ROW_H) + 20);
    const key = `${first}:${last}`;
    if (!force && key === lastRange) return;
    lastRange = key;
    const tpl = template();
    const out: HTMLElement[] = [];
    const cs = columns();
    for (let i = first; i < last; i++) {
      const it = items[i];
      let el: HTMLElement;
      if (it.kind === "group") {
        el = h(
          "div",
          { class: "tr group-row", role: "row", tabindex: 0, "data-idx": i, "data-group": it.name, "aria-expanded": !collapsed.has(it.name) ? "true" : "false" },
          h("span", {}, collapsed.has(it.name) ? "▸" : "▾"),
          h("b", {}, it.name),
          h("span", { class: "muted" }, ` ${it.count} runs`),
        );
        el.addEventListener("click", () => toggleGroup(it.name));
      } else {
        const r = it.row.run;
        const box = h("input", { type: "checkbox", checked: selected.has(r.id), "aria-label": `select ${r.name ?? r.id}`, tabindex: -1 });
        box.addEventListener("change", () => toggle(r.id, box.checked));
        el = h("div", { class: "tr", role: "row", tabindex: 0, "data-idx": i, "data-run": r.id }, h("span", {}, box), ...cs.map((c) => cell(it.row, c)));
        el.style.gridTemplateColumns = tpl;
      }
      el.style.top = `${i * ROW_H}px`;
      if (i === focusIdx) el.classList.add("focus");
      out.push(el);
    }
    body.replaceChildren(...out);
    scroller.dataset.renderMs = (performance.now() - t0).toFixed(1);
  }

  function toggleGroup(name: string): void {
    if (collapsed.has(name)) collapsed.delete(name);
    else collapsed.add(name);
    buildItems();
    renderBody(true);
  }

  function updateCompare(): void {
    compareBtn.textContent = `Compare (${selected.size})`;
    const ids = [...selected];
    compareBtn.setAttribute("href", href(["p", project, "compare"], { runs: ids.join(",") }));
    compareBtn.classList.toggle("disabled", ids.length === 0);
    patchParams({ sel: ids.length ? ids.join(",") : null });
  }

  function toggle(id: string, on: boolean): void {
    if (on) selected.add(id);
    else selected.delete(id);
    updateCompare();
  }

  function selectAll(on: boolean): void {
    for (const r of rows) on ? selected.add(r.run.id) : selected.delete(r.run.id);
    updateCompare();
    renderBody(true);
  }

  function discoverKeys(): void {
    const keys = new Set<string>();
    const step = Math.max(1, Math.floor(rows.length / 500));
    for (let i = 0; i < rows.length; i += step) for (const k of Object.keys(rows[i].flat)) keys.add(k);
    allKeys = [...keys].sort((a, b) => (a.startsWith("config.") === b.startsWith("config.") ? a.localeCompare(b) : a.startsWith("config.") ? -1 : 1));
  }

  async function load(): Promise<void> {
    ctrl?.abort();
    const c = new AbortController();
    ctrl = c;
    const t0 = performance.now();
    filterErr.textContent = "";
    const out: Row[] = [];
    try {
      const toRows = (runs: RunRow[]) => {
        for (const r of runs) {
          const flat: Record<string, unknown> = {};
          for (const [k, v] of Object.entries(flatten(r.config ?? {}))) flat[`config.${k}`] = v;
          for (const [k, v] of Object.entries(r.summary ?? {})) flat[`summary.${k}`] = v;
          out.push({ run: r, flat });
        }
      };
      const q = { filter: filter || undefined, sort, order, limit: PAGE };
      const first = await api.runs(project, { ...q, offset: 0 }, c.signal);
      total = first.total;
      toRows(first.runs);
      // the remaining pages in parallel, a few at a time
      const offsets: number[] = [];
      for (let o = first.runs.length; first.runs.length && o < total; o += PAGE) offsets.push(o);
      for (let i = 0; i < offsets.length; i += 4) {
        const pages = await Promise.all(offsets.slice(i, i + 4).map((o) => api.runs(project, { ...q, offset: o }, c.signal)));
        for (const pg of pages) toRows(pg.runs);
        if (disposed || c.signal.aborted) return;
      }
    } catch (e) {
      if ((e as Error).name === "AbortError") return;
      filterErr.textContent = e instanceof ApiError ? `${e.message}${e.field ? ` (${e.field})` : ""}` : String(e);
      return;
    }
    if (disposed || ctrl !== c) return;
    rows = out;
    if (!filter && out.length === total) {
      base = out;
      baseOrder = `${sort}|${order}`;
    }
    scroller.dataset.filterMode = "server";
    scroller.dataset.filter = filter;
    const firstLoad = allKeys.length === 0;
    discoverKeys();
    if (firstLoad) renderPicker();
    renderHead();
    buildItems();
    renderBody(true);
    count.textContent = `${total} run${total === 1 ? "" : "s"}`;
    scroller.dataset.loadMs = (performance.now() - t0).toFixed(1);
    scroller.dataset.loaded = String(Date.now());
    updateCompare();
    clearTimeout(liveTimer);
    if (rows.some((r) => r.run.state === "running") && total <= 2000) liveTimer = window.setTimeout(() => void load(), 5000);
  }

  let filterTimer: number | undefined;
  filterInput.addEventListener("input", () => {
    clearTimeout(filterTimer);
    filterTimer = window.setTimeout(applyFilter, 400);
  });
  filterInput.addEventListener("keydown", (e) => {
    if (e.key === "Enter") {
      clearTimeout(filterTimer);
      applyFilter();
    }
  });
  function applyFilter(): void {
    if (filterInput.value === filter) return;
    filter = filterInput.value;
    patchParams({ filter: filter || null });
    if (!filterLocally()) void load();
  }

  /** Filter the loaded project in the page; false when the server has to do it. */
  function filterLocally(): boolean {
    if (!base || base.some((r) => r.run.state === "running")) return false;
    const t0 = performance.now();
    const out = filterRuns(filter, base, (r) => r.run);
    if (out === null) return false;
    ctrl?.abort();
    const c = new AbortController();
    ctrl = c;
    filterErr.textContent = "";
    rows = out;
    total = out.length;
    if (baseOrder === `${sort}|${order}`) buildItems();
    else applySort();
    renderBody(true);
    count.textContent = `${total} run${total === 1 ? "" : "s"}`;
    scroller.dataset.filterMode = "client";
    scroller.dataset.filter = filter;
    scroller.dataset.filterMs = (performance.now() - t0).toFixed(1);
    updateCompare();
    // the server has the last word: a different count (new runs since, or an expression
    // read differently) reloads the table from the server
    api.runs(project, { filter: filter || undefined, limit: 1 }, c.signal).then(
      (res) => {
        if (!disposed && ctrl === c && res.total !== total) void load();
      },
      (e) => {
        if (!disposed && ctrl === c && (e as Error).name !== "AbortError") void load();
      },
    );
    return true;
  }
  groupBox.addEventListener("change", () => {
    grouped = groupBox.checked;
    patchParams({ group: grouped ? "group" : null });
    buildItems();
    renderBody(true);
  });

  let raf = 0;
  scroller.addEventListener("scroll", () => {
    if (!raf)
      raf = requestAnimationFrame(() => {
        raf = 0;
        renderBody();
      });
  });
  scroller.addEventListener("keydown", (e) => {
    const t = e.target as HTMLElement;
    if (!t.classList.contains("tr")) return;
    const idx = Number(t.dataset.idx);
    let next = idx;
    if (e.key === "ArrowDown") next = Math.min(items.length - 1, idx + 1);
    else if (e.key === "ArrowUp") next = Math.max(0, idx - 1);
    else if (e.key === "Enter") {
      const it = items[idx];
      if (it.kind === "run") location.hash = href(["p", project, "r", it.row.run.id]);
      else toggleGroup(it.name);
      return;
    } else if (e.key === " ") {
      e.preventDefault();
      const it = items[idx];
      if (it.kind === "run") {
        toggle(it.row.run.id, !selected.has(it.row.run.id));
        renderBody(true);
        (body.querySelector(`[data-idx="${idx}"]`) as HTMLElement | null)?.focus();
      }
      return;
    } else return;
    e.preventDefault();
    focusIdx = next;
    const y = next * ROW_H;
    const viewTop = scroller.scrollTop;
    const viewH = scroller.clientHeight - head.offsetHeight;
    if (y < viewTop) scroller.scrollTop = y;
    else if (y + ROW_H > viewTop + viewH) scroller.scrollTop = y + ROW_H - viewH;
    renderBody(true);
    (body.querySelector(`[data-idx="${next}"]`) as HTMLElement | null)?.focus();
  });

  updateCompare();
  void load();
  return () => {
    disposed = true;
    ctrl?.abort();
    clearTimeout(liveTimer);
  };
}

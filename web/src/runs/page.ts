// Runs table of one project: column picker, sort, filter expressions, grouping, selection for
// comparison.  This module wires the parts together: the state (state.ts), its URL (url.ts),
// the DOM (render.ts) and the column picker (picker.ts), and loads runs from the server.
// Filters are evaluated by the server, or in the page (filter.ts, over the tree the server
// parsed) when every run of the project is loaded and none is running; the server's count
// for the same filter comes with the tree, and its answer wins if they ever differ.
import { api, getJSON, type Ok, type RunRow } from "../api";
import { applyTree, parseFilter } from "../filter";
import { href, type Route } from "../router";
import { renderPicker } from "./picker";
import { ROW_H, mountView, renderBody, renderCompare, renderCount, renderGroupChoices, renderHead, showError, type Actions } from "./render";
import { nextGen, sortRows, warmSortKeys } from "./sort";
import { buildItems, columns, discoverKeys, newState, setSort, toRow, toggleGroup, type Row } from "./state";
import { fromRoute, urlSync } from "./url";

const PAGE = 1000; // the server's maximum page size

const WIDTHS = "wisp.colWidths.";

function loadWidths(project: string): Record<string, number> {
  try {
    return JSON.parse(localStorage.getItem(WIDTHS + project) ?? "{}") as Record<string, number>;
  } catch {
    return {};
  }
}

export function runsPage(app: HTMLElement, route: Route, project: string): () => void {
  const s = newState(project, fromRoute(route));
  s.widths = loadWidths(project);
  const v = mountView(app, s);
  let resizeRaf = 0;
  let disposed = false;
  let ctrl: AbortController | null = null;
  let liveTimer: number | undefined;

  const act: Actions = {
    sort: (col) => {
      setSort(s, col);
      urlSync.sort(s);
      renderHead(v, s, act);
      if (s.rows.length >= s.total) {
        applySort();
        renderBody(v, s, act, true);
      } else void load();
    },
    selectAll: (on) => {
      for (const r of s.rows) on ? s.selected.add(r.run.key) : s.selected.delete(r.run.key);
      updateCompare();
      renderBody(v, s, act, true);
    },
    select: (id, on) => {
      if (on) s.selected.add(id);
      else s.selected.delete(id);
      updateCompare();
    },
    toggleGroup: (name) => {
      toggleGroup(s, name);
      renderBody(v, s, act, true);
    },
    resize: (col, px) => {
      s.widths[col] = Math.round(px);
      if (resizeRaf) return;
      resizeRaf = requestAnimationFrame(() => {
        resizeRaf = 0;
        v.head.style.gridTemplateColumns = "";
        renderHead(v, s, act);
        renderBody(v, s, act, true);
        try {
          localStorage.setItem(WIDTHS + project, JSON.stringify(s.widths));
        } catch {
          /* private mode: widths last for this page only */
        }
      });
    },
  };

  function applySort(): void {
    const t0 = performance.now();
    sortRows(s);
    buildItems(s);
    v.scroller.dataset.sortMs = (performance.now() - t0).toFixed(1);
  }

  function updateCompare(): void {
    renderCompare(v, s);
    urlSync.selected(s);
  }

  function columnsChanged(): void {
    urlSync.cols(s);
    renderHead(v, s, act);
    renderBody(v, s, act, true);
  }

  /** Show rows just filtered (`mode` says where) and the count. */
  function showRows(mode: "server" | "client", loading = false): void {
    v.scroller.dataset.filterMode = mode;
    v.scroller.dataset.filter = s.filter;
    renderCount(v, s, loading);
    updateCompare();
  }

  /** Show the rows held (after the first page, and again when every page is in). */
  function present(loading: boolean): void {
    const firstLoad = s.allKeys.length === 0;
    discoverKeys(s);
    if (firstLoad && s.allKeys.length) {
      renderPicker(v.picker, s, columnsChanged);
      renderGroupChoices(v, s);
    }
    renderHead(v, s, act);
    buildItems(s);
    renderBody(v, s, act, true);
    showRows("server", loading);
  }

  async function load(): Promise<void> {
    ctrl?.abort();
    const c = new AbortController();
    ctrl = c;
    const t0 = performance.now();
    v.filterErr.textContent = "";
    const out: Row[] = [];
    const live = () => !disposed && ctrl === c && !c.signal.aborted;
    try {
      const gen = nextGen();
      const toRows = (runs: RunRow[]) => {
        for (const r of runs) out.push(toRow(r, out.length, gen));
      };
      const q = { filter: s.filter || undefined, sort: s.sort, order: s.order, limit: PAGE };
      const first = await api.runs(project, { ...q, offset: 0 }, c.signal);
      if (!live()) return;
      s.total = first.total;
      toRows(first.runs);
      // the first page on screen at once; the rest in parallel, a few pages at a time
      const more = first.runs.length > 0 && out.length < s.total;
      s.rows = out.slice();
      present(more);
      v.scroller.dataset.firstMs = (performance.now() - t0).toFixed(1);
      const offsets: number[] = [];
      for (let o = first.runs.length; more && o < s.total; o += PAGE) offsets.push(o);
      for (let i = 0; i < offsets.length; i += 4) {
        const pages = await Promise.all(offsets.slice(i, i + 4).map((o) => api.runs(project, { ...q, offset: o }, c.signal)));
        for (const pg of pages) toRows(pg.runs);
        if (!live()) return;
        renderCount(v, { ...s, rows: out }, true);
      }
    } catch (e) {
      if ((e as Error).name === "AbortError") return;
      showError(v, e);
      return;
    }
    if (!live()) return;
    s.rows = out;
    if (!s.filter && out.length === s.total) {
      s.base = out;
      s.baseOrder = `${s.sort}|${s.order}`;
    }
    present(false);
    v.scroller.dataset.loadMs = (performance.now() - t0).toFixed(1);
    // the numeric columns' sort keys, read while idle (strings rank on their first sort)
    if (out.length === s.total) warmSortKeys(out, columns(s).filter((c) => c === "created_at" || c === "duration" || s.numericKeys.has(c)));
    v.scroller.dataset.loaded = String(Date.now());
    void loadForks();
    clearTimeout(liveTimer);
    if (s.rows.some((r) => r.run.state === "running") && s.total <= 2000) liveTimer = window.setTimeout(() => void load(), 5000);
  }

  function applyFilter(): void {
    if (v.filterInput.value === s.filter) return;
    s.filter = v.filterInput.value;
    urlSync.filter(s);
    const base = s.base;
    if (base && !base.some((r) => r.run.state === "running")) void filterInPage(base);
    else void load();
  }

  /** Filter the loaded project in the page over the server's parse of the filter, as soon as
   * the tree arrives.  The server's count for the same filter is asked for alongside and
   * has the last word: a different one (new runs since, or an expression read
   * differently) reloads the table from the server, as does anything the page cannot
   * decide. */
  async function filterInPage(base: Row[]): Promise<void> {
    ctrl?.abort();
    const c = new AbortController();
    ctrl = c;
    const t0 = performance.now();
    const filter = s.filter;
    const current = () => !disposed && ctrl === c;
    const counted = api.runs(project, { filter: filter || undefined, limit: 1 }, c.signal);
    // the count may come before or after the rows are shown: compare once both are known
    let count: number | "failed" | null = null;
    let shown: number | null = null;
    const confirm = () => {
      if (current() && count !== null && shown !== null && count !== shown) void load();
    };
    counted.then(
      (res) => {
        count = res.total;
        confirm();
      },
      (e) => {
        if ((e as Error).name === "AbortError") return;
        count = "failed";
        confirm();
      },
    );
    let tree: Awaited<ReturnType<typeof parseFilter>>;
    try {
      tree = await parseFilter(filter, c.signal);
    } catch (e) {
      if (current() && (e as Error).name !== "AbortError") void load();
      return;
    }
    if (!current()) return;
    const out = tree === undefined ? null : applyTree(tree, base, (r) => r.run);
    if (out === null) {
      void load(); // the server decides (and names what is wrong with an invalid filter)
      return;
    }
    v.filterErr.textContent = "";
    s.rows = out;
    s.total = out.length;
    if (s.baseOrder === `${s.sort}|${s.order}`) buildItems(s);
    else applySort();
    renderBody(v, s, act, true);
    showRows("client");
    v.scroller.dataset.filterMs = (performance.now() - t0).toFixed(1);
    shown = out.length;
    confirm();
  }

  let filterTimer: number | undefined;
  v.filterInput.addEventListener("input", () => {
    clearTimeout(filterTimer);
    filterTimer = window.setTimeout(applyFilter, 400);
  });
  v.filterInput.addEventListener("keydown", (e) => {
    if (e.key === "Enter") {
      clearTimeout(filterTimer);
      applyFilter();
    } else if (e.key === "ArrowDown" && s.items.length) {
      // from the filter into the table: the arrows go on from the first row
      e.preventDefault();
      s.focusIdx = 0;
      v.scroller.scrollTop = 0;
      renderBody(v, s, act, true);
      focusRow(0);
    }
  });
  v.groupSel.addEventListener("change", () => {
    s.groupBy = v.groupSel.value;
    s.collapsed.clear();
    urlSync.groupBy(s);
    buildItems(s);
    renderBody(v, s, act, true);
    renderCompare(v, s);
  });
  renderGroupChoices(v, s);
  let forksFor = "";
  /** The project's forks (fork -> parent), once per load of the table while the box is on. */
  async function loadForks(): Promise<void> {
    if (!s.forkTree || forksFor === v.scroller.dataset.loaded) return;
    forksFor = v.scroller.dataset.loaded ?? "";
    try {
      const got = await getJSON<Ok<"project_forks">>(`/api/v1/projects/${encodeURIComponent(project)}/forks`);
      s.forks = new Map(got.forks.map((f) => [f.key, f.parent_key]));
    } catch {
      s.forks = new Map(); // an older server: no fork list, a flat table
    }
    if (disposed) return;
    buildItems(s);
    renderBody(v, s, act, true);
    v.scroller.dataset.forks = String(s.forks.size);
  }
  v.forkBox.addEventListener("change", () => {
    s.forkTree = v.forkBox.checked;
    urlSync.forkTree(s);
    buildItems(s);
    renderBody(v, s, act, true);
    void loadForks();
  });
  // the column picker opens inside the window, however close to its edge the button is
  v.picker.addEventListener("toggle", () => {
    const pop = v.picker.querySelector<HTMLElement>(".picker-pop");
    if (!pop || !v.picker.open) return;
    pop.style.left = "0px";
    const r = pop.getBoundingClientRect();
    const over = r.right - (document.documentElement.clientWidth - 8);
    if (over > 0) pop.style.left = `${-Math.min(over, r.left - 8)}px`;
  });

  let raf = 0;
  v.scroller.addEventListener("scroll", () => {
    if (!raf)
      raf = requestAnimationFrame(() => {
        raf = 0;
        renderBody(v, s, act);
      });
  });
  v.scroller.addEventListener("keydown", (e) => onKey(e));

  function focusRow(idx: number): void {
    (v.body.querySelector(`[data-idx="${idx}"]`) as HTMLElement | null)?.focus();
  }

  /** Arrow keys move through rows, Enter opens a run (or folds a group), Space selects. */
  function onKey(e: KeyboardEvent): void {
    const t = e.target as HTMLElement;
    if (!t.classList.contains("tr")) return;
    const idx = Number(t.dataset.idx);
    let next = idx;
    if (e.key === "ArrowDown") next = Math.min(s.items.length - 1, idx + 1);
    else if (e.key === "ArrowUp") next = Math.max(0, idx - 1);
    else if (e.key === "Enter") {
      const it = s.items[idx];
      if (it.kind === "run") location.hash = href(["p", project, "r", it.row.run.key]);
      else act.toggleGroup(it.name);
      return;
    } else if (e.key === " ") {
      e.preventDefault();
      const it = s.items[idx];
      if (it.kind === "run") {
        act.select(it.row.run.key, !s.selected.has(it.row.run.key));
        renderBody(v, s, act, true);
        focusRow(idx);
      }
      return;
    } else return;
    e.preventDefault();
    s.focusIdx = next;
    const y = next * ROW_H;
    const viewTop = v.scroller.scrollTop;
    const viewH = v.scroller.clientHeight - v.head.offsetHeight;
    if (y < viewTop) v.scroller.scrollTop = y;
    else if (y + ROW_H > viewTop + viewH) v.scroller.scrollTop = y + ROW_H - viewH;
    renderBody(v, s, act, true);
    focusRow(next);
  }

  updateCompare();
  void load();
  return () => {
    disposed = true;
    ctrl?.abort();
    clearTimeout(liveTimer);
  };
}

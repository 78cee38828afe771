// The runs table's DOM: the toolbar and the virtualised grid (only the rows in view, plus a
// margin, are in the document, so 10,000 runs stay fast).  It reads the state and reports
// the user's clicks through `Actions`; it changes no state itself.
import { ApiError } from "../api";
import { href } from "../router";
import { fmtDuration, fmtNum, fmtTime, h, runColor } from "../util";
import { columns, groupAgg, value, type Row, type RunsState } from "./state";

export const ROW_H = 30;

const LABELS: Record<string, string> = { created_at: "created", state: "state", name: "name", tags: "tags", duration: "duration", group: "group" };

export interface Actions {
  sort(col: string): void;
  selectAll(on: boolean): void;
  select(id: string, on: boolean): void;
  toggleGroup(name: string): void;
  resize(col: string, px: number): void;
}

export interface RunsView {
  filterInput: HTMLInputElement;
  filterErr: HTMLElement;
  count: HTMLElement;
  groupSel: HTMLSelectElement;
  forkBox: HTMLInputElement;
  compareBtn: HTMLAnchorElement;
  chartsBtn: HTMLAnchorElement;
  empty: HTMLElement;
  picker: HTMLDetailsElement;
  head: HTMLElement;
  spacer: HTMLElement;
  body: HTMLElement;
  scroller: HTMLElement;
  /** the `first:last` item range last drawn */
  lastRange: string;
}

export function mountView(app: HTMLElement, s: RunsState): RunsView {
  const v: RunsView = {
    filterInput: h("input", {
      type: "search",
      id: "filter",
      placeholder: 'filter, e.g. config.lr < 0.01 and state = finished and tags contains "baseline"',
      value: s.filter,
      "aria-label": "filter expression",
      spellcheck: "false",
    }),
    filterErr: h("div", { class: "error", role: "alert", id: "filter-error" }),
    count: h("span", { class: "muted", id: "run-count" }),
    groupSel: h("select", { id: "group-by", "aria-label": "group runs by" }),
    forkBox: h("input", { type: "checkbox", id: "fork-tree", checked: s.forkTree, "aria-label": "show forks under their parent" }),
    compareBtn: h("a", { class: "button", id: "compare" }, "Compare"),
    chartsBtn: h("a", { class: "button", id: "open-workspace", title: "charts of these runs, grouped as the table is" }, "Charts"),
    empty: h("div", { class: "empty-state", id: "runs-empty", hidden: true }),
    picker: h("details", { class: "picker" }, h("summary", {}, "Columns")),
    head: h("div", { class: "thead", role: "row" }),
    spacer: h("div", { class: "spacer" }),
    body: h("div", { class: "tbody", role: "rowgroup" }),
    scroller: h("div", { class: "scroller", id: "runs-scroller", role: "grid", "aria-label": "runs" }),
    lastRange: "",
  };
  v.scroller.append(v.head, h("div", { class: "vbody" }, v.spacer, v.body));
  // columns beyond the right edge: a shaded edge says the table scrolls sideways
  const wrap = h("div", { class: "scroll-wrap", id: "runs-wrap" }, v.scroller, h("div", { class: "more-right", "aria-hidden": "true", title: "more columns: scroll right" }));
  const edge = () => wrap.classList.toggle("clipped", v.scroller.scrollLeft + v.scroller.clientWidth < v.scroller.scrollWidth - 1);
  v.scroller.addEventListener("scroll", edge, { passive: true });
  new ResizeObserver(edge).observe(v.head);
  new ResizeObserver(edge).observe(v.scroller);
  app.replaceChildren(
    h(
      "section",
      { class: "runs-page" },
      h("div", { class: "toolbar" }, v.filterInput, h("label", {}, "group by ", v.groupSel), h("label", { title: "forks (fork_from) indented under the run they were forked from" }, v.forkBox, " forks under parent"), v.picker, v.count, v.chartsBtn, v.compareBtn),
      v.filterErr,
      v.empty,
      wrap,
    ),
  );
  return v;
}

/** A column's header: the key without its `config.`/`summary.` prefix (shown small). */
function splitLabel(c: string): [string, string] {
  const m = /^(config|summary)\.(.*)$/.exec(c);
  return m ? [m[1] === "config" ? "c." : "s.", m[2]] : ["", LABELS[c] ?? c];
}

function width(s: RunsState, c: string): number {
  const w = s.widths[c];
  if (w) return w;
  if (c in LABELS) return c === "name" ? 240 : c === "tags" ? 150 : c === "state" ? 90 : c === "created_at" ? 140 : 90;
  const [pre, label] = splitLabel(c);
  return Math.min(260, Math.max(90, Math.round((pre.length + label.length) * 7.5 + 30)));
}

function template(s: RunsState): string {
  return `32px ${columns(s)
    .map((c) => `${width(s, c)}px`)
    .join(" ")}`;
}

/** Drag the right edge of a header to resize its column. */
function resizer(s: RunsState, c: string, act: Actions): HTMLElement {
  const grip = h("span", { class: "col-resize", "data-resize": c, title: "drag to resize", "aria-hidden": "true" });
  grip.addEventListener("click", (e) => e.stopPropagation());
  grip.addEventListener("pointerdown", (e) => {
    e.preventDefault();
    e.stopPropagation();
    const x0 = e.clientX;
    const w0 = width(s, c);
    // on the window: the header (and this grip) is redrawn while dragging
    const move = (ev: PointerEvent) => act.resize(c, Math.max(50, Math.min(800, w0 + ev.clientX - x0)));
    const up = () => {
      window.removeEventListener("pointermove", move);
      window.removeEventListener("pointerup", up);
    };
    window.addEventListener("pointermove", move);
    window.addEventListener("pointerup", up);
  });
  return grip;
}

export function renderHead(v: RunsView, s: RunsState, act: Actions): void {
  const cells: HTMLElement[] = [
    h("span", { role: "columnheader" }, h("input", { type: "checkbox", "aria-label": "select all", id: "select-all", onchange: (e: Event) => act.selectAll((e.target as HTMLInputElement).checked) })),
  ];
  for (const c of columns(s)) {
    const [pre, label] = splitLabel(c);
    const arrow = c === s.sort ? (s.order === "asc" ? " ▲" : " ▼") : "";
    cells.push(
      h(
        "div",
        { class: "th-wrap" },
        h(
          "button",
          { class: "th", role: "columnheader", "data-col": c, title: `${c} (click to sort)`, "aria-sort": c === s.sort ? (s.order === "asc" ? "ascending" : "descending") : "none", onclick: () => act.sort(c) },
          pre ? h("span", { class: "th-pre" }, pre) : "",
          label + arrow,
        ),
        resizer(s, c, act),
      ),
    );
  }
  v.head.replaceChildren(...cells);
  v.head.style.gridTemplateColumns = template(s);
}

function cell(s: RunsState, row: Row, c: string, depth = 0): HTMLElement {
  const r = row.run;
  if (c === "state") return h("span", { class: `state state-${r.state}` }, r.state);
  if (c === "name") {
    const a = h(
      "a",
      { href: href(["p", s.project, "r", r.key]), class: "run-name", tabindex: -1 },
      depth ? h("span", { class: "fork-mark muted", title: "forked from the run above" }, "↳ ") : "",
      h("span", { class: "swatch", style: `background:${runColor(r.key)}` }),
      r.name ?? r.id,
    );
    if (depth) a.style.paddingLeft = `${Math.min(depth, 8) * 16}px`;
    return a;
  }
  if (c === "tags") return h("span", { class: "tags" }, ...(r.tags ?? []).map((t) => h("span", { class: "tag" }, t)));
  if (c === "created_at") return h("span", {}, fmtTime(r.created_at));
  if (c === "duration") return h("span", { class: "num" }, fmtDuration(r.duration));
  const x = value(row, c);
  return h("span", { class: typeof x === "number" ? "num" : "", title: fmtNum(x) }, fmtNum(x));
}

/** Draw the items in view; unless `force`, nothing happens when the range is unchanged. */
export function renderBody(v: RunsView, s: RunsState, act: Actions, force = false): void {
  const t0 = performance.now();
  const { items, collapsed } = s;
  v.spacer.style.height = `${items.length * ROW_H}px`;
  const top = Math.max(0, v.scroller.scrollTop - v.head.offsetHeight);
  const first = Math.max(0, Math.floor(top / ROW_H) - 10);
  const last = Math.min(items.length, first + Math.ceil(v.scroller.clientHeight / ROW_H) + 20);
  const key = `${first}:${last}`;
  if (!force && key === v.lastRange) return;
  v.lastRange = key;
  const tpl = template(s);
  const out: HTMLElement[] = [];
  const cs = columns(s);
  for (let i = first; i < last; i++) {
    const it = items[i];
    let el: HTMLElement;
    if (it.kind === "group") {
      // the group's value and size under "name", each numeric column's mean (hover: the rest)
      const aggCells = cs.map((c) => {
        if (c === "name")
          return h("span", { class: "group-name" }, h("b", {}, `${s.groupBy} = ${it.name}`), h("span", { class: "muted" }, ` ${it.count} run${it.count === 1 ? "" : "s"}`));
        if (c === "state" || c === "tags" || c === "created_at") return h("span", {});
        const a = groupAgg(it, c);
        if (!a) return h("span", {});
        const tip = `${c} over ${a.n} runs: mean ${fmtNum(a.mean)} · median ${fmtNum(a.median)} · min ${fmtNum(a.min)} · max ${fmtNum(a.max)} · std ${fmtNum(a.std)}`;
        const txt = c === "duration" ? fmtDuration(a.mean) : fmtNum(a.mean);
        return h("span", { class: "num agg", title: tip, "data-agg": c, "data-mean": String(a.mean), "data-min": String(a.min), "data-max": String(a.max), "data-n": String(a.n) }, txt);
      });
      el = h(
        "div",
        { class: "tr group-row", role: "row", tabindex: 0, "data-idx": i, "data-group": it.name, "aria-expanded": !collapsed.has(it.name) ? "true" : "false" },
        h("span", {}, collapsed.has(it.name) ? "▸" : "▾"),
        ...aggCells,
      );
      el.style.gridTemplateColumns = tpl;
      el.addEventListener("click", () => act.toggleGroup(it.name));
    } else {
      const r = it.row.run;
      const box = h("input", { type: "checkbox", checked: s.selected.has(r.key), "aria-label": `select ${r.name ?? r.id}`, tabindex: -1 });
      box.addEventListener("change", () => act.select(r.key, box.checked));
      const depth = it.depth ?? 0;
      el = h("div", { class: depth ? "tr fork-child" : "tr", role: "row", tabindex: 0, "data-idx": i, "data-run": r.key, "data-depth": depth }, h("span", {}, box), ...cs.map((c) => cell(s, it.row, c, depth)));
      el.style.gridTemplateColumns = tpl;
    }
    el.style.top = `${i * ROW_H}px`;
    if (i === s.focusIdx) el.classList.add("focus");
    out.push(el);
  }
  v.body.replaceChildren(...out);
  v.scroller.dataset.renderMs = (performance.now() - t0).toFixed(1);
}

/** The Compare button: the selected runs' count and link. */
export function renderCompare(v: RunsView, s: RunsState): void {
  v.chartsBtn.setAttribute("href", href(["p", s.project, "w"], { filter: s.filter || null, group: s.groupBy || null }));
  v.compareBtn.textContent = `Compare (${s.selected.size})`;
  const ids = [...s.selected];
  v.compareBtn.setAttribute("href", href(["p", s.project, "compare"], { runs: ids.join(",") }));
  v.compareBtn.classList.toggle("disabled", ids.length === 0);
}

export function renderCount(v: RunsView, s: RunsState, loading = false): void {
  const all = `${s.total} run${s.total === 1 ? "" : "s"}`;
  v.count.textContent = loading ? `${s.rows.length} of ${all} (loading)` : all;
  v.count.dataset.loading = loading ? "1" : "0";
  const none = !loading && s.total === 0;
  v.empty.hidden = !none;
  v.scroller.hidden = none;
  if (none)
    v.empty.replaceChildren(
      ...(s.filter
        ? ["No runs match this filter."]
        : [`Project "${s.project}" has no runs you can see: it does not exist (yet), or it is not shared with you. `, h("a", { href: href([]) }, "All projects"), " · log a run with wisp.init(project=...)."]),
    );
}

/** The group-by choices: run fields and the config keys; the current choice kept. */
export function renderGroupChoices(v: RunsView, s: RunsState): void {
  const opts = ["", "group", "job_type", "state", "tags", ...s.allKeys.filter((k) => k.startsWith("config.") && !s.objectKeys.has(k))];
  if (s.groupBy && !opts.includes(s.groupBy)) opts.push(s.groupBy);
  v.groupSel.replaceChildren(...opts.map((o) => h("option", { value: o, selected: o === s.groupBy }, o || "(none)")));
}

/** The message of a failed query, with the field the server names. */
export function showError(v: RunsView, e: unknown): void {
  v.filterErr.textContent = e instanceof ApiError ? `${e.message}${e.field ? ` (${e.field})` : ""}` : String(e);
}

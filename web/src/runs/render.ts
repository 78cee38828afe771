// The runs table's DOM: the toolbar and the virtualised grid (only the rows in view, plus a
// margin, are in the document, so 10,000 runs stay fast).  It reads the state and reports
// the user's clicks through `Actions`; it changes no state itself.
import { ApiError } from "../api";
import { href } from "../router";
import { fmtDuration, fmtNum, fmtTime, h, runColor } from "../util";
import { columns, value, type Row, type RunsState } from "./state";

export const ROW_H = 30;

const LABELS: Record<string, string> = { created_at: "created", state: "state", name: "name", tags: "tags", duration: "duration", group: "group" };

export interface Actions {
  sort(col: string): void;
  selectAll(on: boolean): void;
  select(id: string, on: boolean): void;
  toggleGroup(name: string): void;
}

export interface RunsView {
  filterInput: HTMLInputElement;
  filterErr: HTMLElement;
  count: HTMLElement;
  groupBox: HTMLInputElement;
  compareBtn: HTMLAnchorElement;
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
    groupBox: h("input", { type: "checkbox", id: "group-toggle", checked: s.grouped }),
    compareBtn: h("a", { class: "button", id: "compare" }, "Compare"),
    picker: h("details", { class: "picker" }, h("summary", {}, "Columns")),
    head: h("div", { class: "thead", role: "row" }),
    spacer: h("div", { class: "spacer" }),
    body: h("div", { class: "tbody", role: "rowgroup" }),
    scroller: h("div", { class: "scroller", id: "runs-scroller", role: "grid", "aria-label": "runs" }),
    lastRange: "",
  };
  v.scroller.append(v.head, h("div", { class: "vbody" }, v.spacer, v.body));
  app.replaceChildren(
    h(
      "section",
      { class: "runs-page" },
      h("div", { class: "toolbar" }, v.filterInput, h("label", {}, v.groupBox, " group by group"), v.picker, v.count, v.compareBtn),
      v.filterErr,
      v.scroller,
    ),
  );
  return v;
}

function width(c: string): number {
  return c === "name" ? 240 : c === "tags" ? 150 : c === "state" ? 90 : c === "created_at" ? 140 : c === "duration" ? 90 : 130;
}

function template(s: RunsState): string {
  return `32px ${columns(s)
    .map((c) => `${width(c)}px`)
    .join(" ")}`;
}

export function renderHead(v: RunsView, s: RunsState, act: Actions): void {
  const cells: HTMLElement[] = [
    h("span", { role: "columnheader" }, h("input", { type: "checkbox", "aria-label": "select all", id: "select-all", onchange: (e: Event) => act.selectAll((e.target as HTMLInputElement).checked) })),
  ];
  for (const c of columns(s)) {
    const label = LABELS[c] ?? c;
    const arrow = c === s.sort ? (s.order === "asc" ? " ▲" : " ▼") : "";
    cells.push(
      h(
        "button",
        { class: "th", role: "columnheader", "data-col": c, title: `sort by ${c}`, "aria-sort": c === s.sort ? (s.order === "asc" ? "ascending" : "descending") : "none", onclick: () => act.sort(c) },
        label + arrow,
      ),
    );
  }
  v.head.replaceChildren(...cells);
  v.head.style.gridTemplateColumns = template(s);
}

function cell(s: RunsState, row: Row, c: string): HTMLElement {
  const r = row.run;
  if (c === "state") return h("span", { class: `state state-${r.state}` }, r.state);
  if (c === "name")
    return h(
      "a",
      { href: href(["p", s.project, "r", r.key]), class: "run-name", tabindex: -1 },
      h("span", { class: "swatch", style: `background:${runColor(r.key)}` }),
      r.name ?? r.id,
    );
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
      el = h(
        "div",
        { class: "tr group-row", role: "row", tabindex: 0, "data-idx": i, "data-group": it.name, "aria-expanded": !collapsed.has(it.name) ? "true" : "false" },
        h("span", {}, collapsed.has(it.name) ? "▸" : "▾"),
        h("b", {}, it.name),
        h("span", { class: "muted" }, ` ${it.count} runs`),
      );
      el.addEventListener("click", () => act.toggleGroup(it.name));
    } else {
      const r = it.row.run;
      const box = h("input", { type: "checkbox", checked: s.selected.has(r.key), "aria-label": `select ${r.name ?? r.id}`, tabindex: -1 });
      box.addEventListener("change", () => act.select(r.key, box.checked));
      el = h("div", { class: "tr", role: "row", tabindex: 0, "data-idx": i, "data-run": r.key }, h("span", {}, box), ...cs.map((c) => cell(s, it.row, c)));
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
  v.compareBtn.textContent = `Compare (${s.selected.size})`;
  const ids = [...s.selected];
  v.compareBtn.setAttribute("href", href(["p", s.project, "compare"], { runs: ids.join(",") }));
  v.compareBtn.classList.toggle("disabled", ids.length === 0);
}

export function renderCount(v: RunsView, s: RunsState): void {
  v.count.textContent = `${s.total} run${s.total === 1 ? "" : "s"}`;
}

/** The message of a failed query, with the field the server names. */
export function showError(v: RunsView, e: unknown): void {
  v.filterErr.textContent = e instanceof ApiError ? `${e.message}${e.field ? ` (${e.field})` : ""}` : String(e);
}

// The runs table's state and the pure operations on it: rows, their sort, grouping into
// items, the shown columns.  No DOM and no network here.
import type { RunRow } from "../api";
import { flatten } from "../util";

export interface Row {
  run: RunRow;
  flat: Record<string, unknown>;
}
export type Item = { kind: "group"; name: string; count: number } | { kind: "run"; row: Row };
export type Order = "asc" | "desc";

export const BASE_COLS = ["state", "name", "tags", "created_at", "duration"];

export interface RunsState {
  project: string;
  filter: string;
  sort: string;
  order: Order;
  grouped: boolean;
  selected: Set<string>;
  /** the columns picked after the base ones; `null`: the default choice */
  cols: string[] | null;
  collapsed: Set<string>;
  /** the rows shown (filtered and sorted) */
  rows: Row[];
  /** every run of the project (loaded without a filter), and the sort it arrived in */
  base: Row[] | null;
  baseOrder: string;
  items: Item[];
  total: number;
  allKeys: string[];
  focusIdx: number;
}

export function newState(project: string, init: Pick<RunsState, "filter" | "sort" | "order" | "grouped" | "selected" | "cols">): RunsState {
  return { project, ...init, collapsed: new Set(), rows: [], base: null, baseOrder: "", items: [], total: 0, allKeys: [], focusIdx: 0 };
}

export function toRow(run: RunRow): Row {
  const flat: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(flatten(run.config ?? {}))) flat[`config.${k}`] = v;
  for (const [k, v] of Object.entries(run.summary ?? {})) flat[`summary.${k}`] = v;
  return { run, flat };
}

export function value(row: Row, field: string): unknown {
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

function isMissing(v: unknown): boolean {
  return v === null || v === undefined || v === "";
}

function compare(a: unknown, b: unknown): number {
  const an = isMissing(a);
  const bn = isMissing(b);
  if (an || bn) return an === bn ? 0 : an ? 1 : -1; // missing values last
  if (typeof a === "number" && typeof b === "number") return a - b;
  return String(a).localeCompare(String(b), undefined, { numeric: true });
}

/** Sort the rows in the page by the state's column and order (missing values last). */
export function sortRows(s: RunsState): void {
  const dir = s.order === "asc" ? 1 : -1;
  const keyed = s.rows.map((r) => [value(r, s.sort), r] as const);
  keyed.sort((a, b) => {
    const an = isMissing(a[0]);
    const bn = isMissing(b[0]);
    if (an || bn) return an === bn ? 0 : an ? 1 : -1;
    return dir * compare(a[0], b[0]);
  });
  s.rows = keyed.map((k) => k[1]);
}

/** A new sort: the same column flips the order, a new one starts in its natural order. */
export function setSort(s: RunsState, col: string): void {
  if (s.sort === col) s.order = s.order === "asc" ? "desc" : "asc";
  else {
    s.sort = col;
    s.order = col === "name" || col === "state" ? "asc" : "desc";
  }
}

/** The rows as table items: runs, or group headers each followed by its (expanded) runs. */
export function buildItems(s: RunsState): void {
  if (!s.grouped) {
    s.items = s.rows.map((row) => ({ kind: "run", row }));
    return;
  }
  const groups = new Map<string, Row[]>();
  for (const r of s.rows) {
    const g = r.run.group ?? "(no group)";
    const l = groups.get(g);
    if (l) l.push(r);
    else groups.set(g, [r]);
  }
  s.items = [];
  for (const [name, list] of [...groups.entries()].sort((a, b) => a[0].localeCompare(b[0]))) {
    s.items.push({ kind: "group", name, count: list.length });
    if (!s.collapsed.has(name)) for (const row of list) s.items.push({ kind: "run", row });
  }
}

export function toggleGroup(s: RunsState, name: string): void {
  if (s.collapsed.has(name)) s.collapsed.delete(name);
  else s.collapsed.add(name);
  buildItems(s);
}

export function defaultCols(s: RunsState): string[] {
  const c = s.allKeys.filter((k) => k.startsWith("config.")).slice(0, 4);
  const m = s.allKeys.filter((k) => k.startsWith("summary.") && !k.includes("._") && !k.startsWith("summary.system/")).slice(0, 4);
  return [...c, ...m];
}

export function columns(s: RunsState): string[] {
  return [...BASE_COLS, ...(s.cols ?? defaultCols(s))];
}

/** The config/summary keys of (a sample of) the rows: config first, then sorted. */
export function discoverKeys(s: RunsState): void {
  const keys = new Set<string>();
  const step = Math.max(1, Math.floor(s.rows.length / 500));
  for (let i = 0; i < s.rows.length; i += step) for (const k of Object.keys(s.rows[i].flat)) keys.add(k);
  s.allKeys = [...keys].sort((a, b) => (a.startsWith("config.") === b.startsWith("config.") ? a.localeCompare(b) : a.startsWith("config.") ? -1 : 1));
}

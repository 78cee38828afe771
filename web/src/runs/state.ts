// The runs table's state and the pure operations on it: rows, their sort, grouping into
// items, the shown columns.  No DOM and no network here.
import type { RunRow } from "../api";
import { flatten } from "../util";

export interface Row {
  run: RunRow;
  flat: Record<string, unknown>;
  /** the row's place in its load (`gen`): where sort.ts caches its sort keys */
  i: number;
  gen: number;
}
/** Per-column aggregates of a group's numeric values. */
export interface Agg {
  n: number;
  mean: number;
  median: number;
  min: number;
  max: number;
  std: number;
}
/** A run's item; `depth` > 0: a fork shown under its parent (`forkTree`), that deep. */
export type Item = { kind: "group"; name: string; count: number; rows: Row[]; agg?: Map<string, Agg | null> } | { kind: "run"; row: Row; depth?: number };
export type Order = "asc" | "desc";

export const BASE_COLS = ["state", "name", "tags", "created_at", "duration"];

export interface RunsState {
  project: string;
  filter: string;
  sort: string;
  order: Order;
  /** the field the rows are grouped by ("" = not grouped): group, state, config.x, ... */
  groupBy: string;
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
  /** keys whose (sampled) values are media or other objects: never default columns */
  objectKeys: Set<string>;
  /** keys whose (sampled) values are numbers */
  numericKeys: Set<string>;
  /** column widths the user dragged, in px */
  widths: Record<string, number>;
  focusIdx: number;
  /** show forks under their parent (indented), in the parent's group */
  forkTree: boolean;
  /** fork key -> parent key (GET /projects/{project}/forks), loaded when `forkTree` is on */
  forks: Map<string, string>;
}

export function newState(project: string, init: Pick<RunsState, "filter" | "sort" | "order" | "groupBy" | "selected" | "cols" | "forkTree">): RunsState {
  return {
    project,
    ...init,
    collapsed: new Set(),
    rows: [],
    base: null,
    baseOrder: "",
    items: [],
    total: 0,
    allKeys: [],
    objectKeys: new Set(),
    numericKeys: new Set(),
    widths: {},
    focusIdx: 0,
    forks: new Map(),
  };
}

export function toRow(run: RunRow, i = 0, gen = 0): Row {
  const flat: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(flatten(run.config ?? {}))) flat[`config.${k}`] = v;
  for (const [k, v] of Object.entries(run.summary ?? {})) flat[`summary.${k}`] = v;
  return { run, flat, i, gen };
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

const collator = new Intl.Collator(undefined, { numeric: true }); // made once: not per call

export function isMissing(v: unknown): boolean {
  return v === null || v === undefined || v === "";
}

export function compare(a: unknown, b: unknown): number {
  const an = isMissing(a);
  const bn = isMissing(b);
  if (an || bn) return an === bn ? 0 : an ? 1 : -1; // missing values last
  if (typeof a === "number" && typeof b === "number") return a - b;
  return collator.compare(String(a), String(b)); // localeCompare(b, undefined, { numeric: true })
}

/** A new sort: the same column flips the order, a new one starts in its natural order. */
export function setSort(s: RunsState, col: string): void {
  if (s.sort === col) s.order = s.order === "asc" ? "desc" : "asc";
  else {
    s.sort = col;
    s.order = col === "name" || col === "state" ? "asc" : "desc";
  }
}

/** The label of a row's group: its value of the grouping field ("(none)" when missing). */
export function groupName(row: Row, field: string): string {
  const v = value(row, field);
  if (isMissing(v)) return "(none)";
  return typeof v === "object" ? JSON.stringify(v) : String(v);
}

/** The rows as table items: runs, or group headers each followed by its (expanded) runs.
 * Groups are ordered by their value (numbers numerically, missing last). */
/** `rows` with each fork right under its parent (after its earlier forks), `depth` levels
 * in; a fork whose parent is not among `rows` stays where it is, at depth 0. */
export function forkOrder(rows: Row[], forks: Map<string, string>): Item[] {
  const shown = new Set(rows.map((r) => r.run.key));
  const kids = new Map<string, Row[]>();
  const roots: Row[] = [];
  for (const r of rows) {
    const p = forks.get(r.run.key);
    if (p !== undefined && p !== r.run.key && shown.has(p)) {
      const l = kids.get(p);
      if (l) l.push(r);
      else kids.set(p, [r]);
    } else roots.push(r);
  }
  const out: Item[] = [];
  const seen = new Set<string>();
  const walk = (r: Row, depth: number) => {
    if (seen.has(r.run.key)) return;
    seen.add(r.run.key);
    out.push({ kind: "run", row: r, depth });
    for (const k of kids.get(r.run.key) ?? []) walk(k, depth + 1);
  };
  for (const r of roots) walk(r, 0);
  for (const r of rows) walk(r, 0); // a loop of forks (hand-made): its runs at the top level
  return out;
}

export function buildItems(s: RunsState): void {
  const runItems = (rows: Row[]): Item[] => (s.forkTree ? forkOrder(rows, s.forks) : rows.map((row) => ({ kind: "run", row })));
  if (!s.groupBy) {
    s.items = runItems(s.rows);
    return;
  }
  const groups = new Map<string, { v: unknown; rows: Row[] }>();
  for (const r of s.rows) {
    const g = groupName(r, s.groupBy);
    const l = groups.get(g);
    if (l) l.rows.push(r);
    else groups.set(g, { v: value(r, s.groupBy), rows: [r] });
  }
  s.items = [];
  for (const [name, g] of [...groups.entries()].sort((a, b) => compare(a[1].v, b[1].v))) {
    s.items.push({ kind: "group", name, count: g.rows.length, rows: g.rows });
    if (!s.collapsed.has(name)) s.items.push(...runItems(g.rows));
  }
}

/** mean, median, min, max, std (population) of the numeric values of `col` in `rows`. */
export function aggregate(rows: Row[], col: string): Agg | null {
  const xs: number[] = [];
  for (const r of rows) {
    const v = value(r, col);
    if (typeof v === "number" && Number.isFinite(v)) xs.push(v);
  }
  if (!xs.length) return null;
  xs.sort((a, b) => a - b);
  const n = xs.length;
  let sum = 0;
  for (const x of xs) sum += x;
  const mean = sum / n;
  let ss = 0;
  for (const x of xs) ss += (x - mean) * (x - mean);
  const median = n % 2 ? xs[(n - 1) / 2] : (xs[n / 2 - 1] + xs[n / 2]) / 2;
  return { n, mean, median, min: xs[0], max: xs[n - 1], std: Math.sqrt(ss / n) };
}

/** A group item's aggregate for a column, computed once. */
export function groupAgg(it: Extract<Item, { kind: "group" }>, col: string): Agg | null {
  it.agg ??= new Map();
  if (!it.agg.has(col)) it.agg.set(col, aggregate(it.rows, col));
  return it.agg.get(col) ?? null;
}

export function toggleGroup(s: RunsState, name: string): void {
  if (s.collapsed.has(name)) s.collapsed.delete(name);
  else s.collapsed.add(name);
  buildItems(s);
}

/** Default columns: scalar config values, then the numeric summary metrics (never media
 * placeholders, internal `_` keys or system metrics). */
export function defaultCols(s: RunsState): string[] {
  const scalar = (k: string) => !s.objectKeys.has(k);
  const c = s.allKeys.filter((k) => k.startsWith("config.") && scalar(k) && !k.includes("._")).slice(0, 4);
  const m = s.allKeys
    .filter((k) => k.startsWith("summary.") && s.numericKeys.has(k) && !k.startsWith("summary._") && !k.includes("._") && !k.startsWith("summary.system/"))
    .slice(0, 6);
  return [...c, ...m];
}

export function columns(s: RunsState): string[] {
  return [...BASE_COLS, ...(s.cols ?? defaultCols(s))];
}

/** The config/summary keys of (a sample of) the rows: config first, in the order it was logged
 * (the first sampled run's, then keys only later runs have), then the summary sorted. */
export function discoverKeys(s: RunsState): void {
  const keys = new Set<string>();
  const step = Math.max(1, Math.floor(s.rows.length / 500));
  for (let i = 0; i < s.rows.length; i += step)
    for (const [k, v] of Object.entries(s.rows[i].flat)) {
      keys.add(k);
      if (v !== null && typeof v === "object") s.objectKeys.add(k);
      else if (typeof v === "number") s.numericKeys.add(k);
    }
  const config = [...keys].filter((k) => k.startsWith("config."));
  const rest = [...keys].filter((k) => !k.startsWith("config.")).sort((a, b) => a.localeCompare(b));
  s.allKeys = [...config, ...rest];
}

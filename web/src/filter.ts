// Client-side evaluation of the runs filter language, for when every run of a project is
// already loaded.  The language is defined once, in src/wisp/server/query/filter.py: the server
// parses an expression (GET /api/v1/filter/parse) and this module only evaluates the tree it
// returns, with the two-valued logic of the server's SQL (src/wisp/server/query/runs.py).  It
// decides only what it can decide exactly as that SQL does on SQLite and PostgreSQL alike;
// anything else throws `Unsupported` (while compiling the tree, or for one row while
// evaluating) and the caller asks the server instead.  An invalid expression never gets here:
// the server refuses it with the message the page shows.
import { api, ApiError, type RunRow } from "./api";

export class Unsupported extends Error {}

export type Predicate = (run: RunRow) => boolean;

/** The expression tree, format version 1 (documented in src/wisp/server/query/filter.py). */
export interface Field {
  name: string;
  path: string[];
}
export type Value = null | boolean | string | { num: string };
export type Tree =
  | { or: Tree[] }
  | { and: Tree[] }
  | { not: Tree }
  | { exists: Field }
  | { contains: Field; value: Value }
  | { cmp: "=" | "!=" | "<" | "<=" | ">" | ">="; field: Field; value: Value };

export const TREE_VERSION = 1;

const NUMERIC = new Set(["created_at", "finished_at", "duration"]);

/** Text outside printable ASCII (plus tab/newline) is left to the server's collation. */
function ascii(s: string): string {
  if (/[^\x20-\x7e\t\n\r]/.test(s)) throw new Unsupported("non-ASCII text");
  return s;
}

/** A field's value in one run: `undefined` = missing (SQL NULL / absent JSON path). */
type Getter = (run: RunRow) => unknown;

function fieldGetter(f: Field): { get: Getter; json: boolean; column: string } {
  const [head, ...path] = f.path.map(ascii);
  if (path.length) {
    // how a backslash in a key reaches each database's JSON path is not worth guessing
    if (path.some((p) => p.includes("\\"))) throw new Unsupported("backslash in a key");
    return {
      json: true,
      column: "",
      get: (run) => {
        let cur: unknown = head === "config" ? run.config : run.summary;
        for (const p of path) {
          if (cur === null || typeof cur !== "object") return undefined;
          // SQLite paths never index arrays, PostgreSQL's do: leave that to the server
          if (Array.isArray(cur)) throw new Unsupported("path into an array");
          if (!Object.prototype.hasOwnProperty.call(cur, p)) return undefined;
          cur = (cur as Record<string, unknown>)[p];
        }
        return cur;
      },
    };
  }
  // seconds since the last step by the server's clock: only the server answers it
  if (head === "stalled") throw new Unsupported("stalled is computed by the server");
  const get: Getter = (run) => {
    const v = (run as unknown as Record<string, unknown>)[head];
    if (head === "duration" && v === 0) throw new Unsupported("duration clamped at 0");
    return v === null ? undefined : v;
  };
  return { json: false, column: head, get };
}

/** SQL LIKE '%needle%': ASCII case-insensitive on SQLite, case-sensitive on PostgreSQL. */
function like(hay: string, needle: string): boolean {
  const exact = hay.includes(needle);
  const folded = hay.replace(/[A-Z]/g, (c) => c.toLowerCase()).includes(needle.replace(/[A-Z]/g, (c) => c.toLowerCase()));
  if (exact !== folded) throw new Unsupported("case-sensitivity differs between databases");
  return exact;
}

function cmp(op: string, a: number | string, b: number | string): boolean {
  switch (op) {
    case "=":
      return a === b;
    case "!=":
      return a !== b;
    case "<":
      return a < b;
    case "<=":
      return a <= b;
    case ">":
      return a > b;
    default:
      return a >= b;
  }
}

/** A number as the server compares it: Python's str() of it, read back as the same double. */
function num(text: string): number {
  return text === "inf" ? Infinity : text === "-inf" ? -Infinity : Number(text);
}

function contains(f: Field, value: Value): Predicate {
  const { get, json, column } = fieldGetter(f);
  if (column === "tags") {
    if (typeof value !== "string") throw new Unsupported("tags contains expects a string");
    const tag = ascii(value);
    return (r) => {
      if (!Array.isArray(r.tags)) return false;
      if (r.tags.some((t) => typeof t !== "string")) throw new Unsupported("a tag that is not a string");
      return r.tags.includes(tag);
    };
  }
  if (value === null || typeof value === "boolean") throw new Unsupported("contains expects a string or number");
  if (NUMERIC.has(column)) throw new Unsupported("text search on a number column");
  // the server searches for the text of the value: a number's text is Python's, as sent
  const needle = ascii(typeof value === "string" ? value : value.num);
  return (r) => {
    const x = get(r);
    if (x === undefined || (json && x === null)) return false;
    if (typeof x !== "string") throw new Unsupported("text of a non-string JSON value");
    return like(x, needle);
  };
}

function compare(f: Field, op: string, value: Value): Predicate {
  const { get, json, column } = fieldGetter(f);
  const eq = op === "=";
  if (value === null) {
    if (!eq && op !== "!=") throw new Unsupported("null with an ordering");
    if (!json) {
      if (column === "tags") return () => !eq;
      return (r) => (get(r) === undefined) === eq;
    }
    return (r) => {
      const x = get(r);
      return x !== undefined && (x === null) === eq;
    };
  }
  if (typeof value === "boolean") {
    if (!json || !(eq || op === "!=")) throw new Unsupported("boolean comparison");
    return (r) => {
      const x = get(r);
      return x !== undefined && (x === value) === eq;
    };
  }
  if (typeof value === "object") {
    if (!json && !NUMERIC.has(column)) throw new Unsupported("not numeric");
    const v = num(value.num);
    return (r) => {
      const x = get(r);
      return typeof x === "number" && cmp(op, x, v);
    };
  }
  if (column === "tags" || NUMERIC.has(column)) throw new Unsupported("text comparison on tags or a number");
  // text ordering follows the database's collation: only equality is decided here
  if (!(eq || op === "!=")) throw new Unsupported("text ordering");
  const text = ascii(value);
  return (r) => {
    const x = get(r);
    if (x === undefined || (json && x === null)) return false;
    if (typeof x !== "string") throw new Unsupported("text of a non-string JSON value");
    return cmp(op, x, text);
  };
}

/** The predicate of an expression tree (`null`: no filter), or throw `Unsupported`. */
export function compileTree(tree: Tree | null): Predicate {
  if (tree === null) return () => true;
  if ("or" in tree) {
    const parts = tree.or.map(compileTree);
    return (r) => parts.some((p) => p(r));
  }
  if ("and" in tree) {
    const parts = tree.and.map(compileTree);
    return (r) => parts.every((p) => p(r));
  }
  if ("not" in tree) {
    const f = compileTree(tree.not);
    return (r) => !f(r);
  }
  if ("exists" in tree) {
    const { get, column } = fieldGetter(tree.exists);
    return column === "tags" ? () => true : (r) => get(r) !== undefined;
  }
  if ("contains" in tree) return contains(tree.contains, tree.value);
  return compare(tree.field, tree.cmp, tree.value);
}

/** The rows matching an expression tree, in their order, or `null` when the server must decide. */
export function applyTree<T>(tree: Tree | null, rows: T[], run: (row: T) => RunRow): T[] | null {
  try {
    const p = compileTree(tree);
    return rows.filter((r) => p(run(r)));
  } catch (e) {
    if (e instanceof Unsupported) return null;
    throw e;
  }
}

/** The server's tree of `src` (it parses and validates), or `null` when it refuses it. */
export async function parseFilter(src: string, signal?: AbortSignal): Promise<Tree | null | undefined> {
  try {
    const res = await api.filterParse(src, signal);
    return res.version === TREE_VERSION ? res.tree : undefined;
  } catch (e) {
    if (e instanceof ApiError && e.status === 422) return undefined;
    throw e;
  }
}

/** The runs matching `src`, in their order, or `null` when the server must decide. */
export async function filterRuns<T>(src: string, rows: T[], run: (row: T) => RunRow): Promise<T[] | null> {
  const tree = await parseFilter(src);
  return tree === undefined ? null : applyTree(tree, rows, run);
}

// for the browser tests: they check this evaluator against the server's answers
const w = window as unknown as { __wisp?: Record<string, unknown> };
w.__wisp = { ...w.__wisp, filterRuns };

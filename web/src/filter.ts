// Client-side evaluation of the runs filter language, for when every run of a project is
// already loaded.  It mirrors src/wisp/server/_query.py (the same tokens, grammar and
// two-valued logic) but only decides what it can decide exactly as the server's SQL would on
// SQLite and PostgreSQL alike.  Anything else throws `Unsupported` (while compiling, or for
// one row while evaluating) and the caller asks the server instead, which also produces the
// error message for an invalid expression.
import type { RunRow } from "./api";

export class Unsupported extends Error {}

export type Predicate = (run: RunRow) => boolean;

type Tok = [kind: "num" | "str" | "op" | "word", text: string];

// The server's token pattern (Python `re`), made sticky.  Python's \w, \d and \s are Unicode
// aware, so any input outside printable ASCII (plus tab/newline) is left to the server.
const TOKEN = new RegExp(
  String.raw`\s*(?:(?<num>-?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?(?![\w.]))` +
    String.raw`|(?<str>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')` +
    String.raw`|(?<op><=|>=|==|!=|<|>|=|\(|\))` +
    String.raw`|(?<word>(?:[A-Za-z_][\w/\-]*|"(?:[^"\\]|\\.)*")(?:\.(?:[\w/\-]+|"(?:[^"\\]|\\.)*"))*))`,
  "y",
);
const KEYWORDS = new Set(["and", "or", "not", "contains", "exists"]);
const COLUMNS = new Set(["state", "name", "id", "notes", "group", "job_type", "tags", "created_at", "finished_at", "duration"]);
const NUMERIC = new Set(["created_at", "finished_at", "duration"]);

function unquote(s: string): string {
  return s.slice(1, -1).replace(/\\(.)/g, "$1");
}

function tokens(src: string): Tok[] {
  if (/[^\x20-\x7e\t\n\r]/.test(src)) throw new Unsupported("non-ASCII text");
  src = src.trimEnd();
  const out: Tok[] = [];
  let pos = 0;
  while (pos < src.length) {
    TOKEN.lastIndex = pos;
    const m = TOKEN.exec(src);
    if (!m || TOKEN.lastIndex === pos) throw new Unsupported("syntax");
    const g = m.groups!;
    const kind = (["num", "str", "op", "word"] as const).find((k) => g[k] !== undefined)!;
    out.push([kind, g[kind]]);
    pos = TOKEN.lastIndex;
  }
  return out;
}

function splitPath(word: string): string[] {
  return (word.match(/"(?:[^"\\]|\\.)*"|[^.]+/g) ?? []).map((p) => (p.startsWith('"') ? unquote(p) : p));
}

type Value = number | string | boolean | null;
interface Val {
  v: Value;
  intText?: string; // the literal of an integer, for `contains`
}

/** A field's value in one run: `undefined` = missing (SQL NULL / absent JSON path). */
type Getter = (run: RunRow) => unknown;

function fieldGetter(name: string): { get: Getter; json: boolean } {
  const dot = name.indexOf(".");
  const head = dot < 0 ? name : name.slice(0, dot);
  const rest = dot < 0 ? "" : name.slice(dot + 1);
  if ((head === "config" || head === "summary") && rest) {
    const path = splitPath(rest);
    if (path.some((p) => !p || p.includes('"')) || path.length > 16) throw new Unsupported("bad path");
    // how a backslash in a key reaches each database's JSON path is not worth guessing
    if (path.some((p) => p.includes("\\"))) throw new Unsupported("backslash in a key");
    return {
      json: true,
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
  if (!COLUMNS.has(name)) throw new Unsupported("unknown field");
  const get: Getter = (run) => {
    const r = run as unknown as Record<string, unknown>;
    const v = name === "group" ? run.group : r[name];
    if (name === "duration" && v === 0) throw new Unsupported("duration clamped at 0");
    return v === null ? undefined : v;
  };
  return { json: false, get };
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
    case "==":
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

class Compiler {
  i = 0;
  constructor(private toks: Tok[]) {}

  peek(): Tok | undefined {
    return this.toks[this.i];
  }
  take(): Tok {
    const t = this.peek();
    if (!t) throw new Unsupported("unexpected end");
    this.i++;
    return t;
  }
  kw(word: string): boolean {
    const t = this.peek();
    if (t && t[0] === "word" && t[1].toLowerCase() === word) {
      this.i++;
      return true;
    }
    return false;
  }

  expr(): Predicate {
    const parts = [this.term()];
    while (this.kw("or")) parts.push(this.term());
    return parts.length === 1 ? parts[0] : (r) => parts.some((p) => p(r));
  }
  term(): Predicate {
    const parts = [this.fact()];
    while (this.kw("and")) parts.push(this.fact());
    return parts.length === 1 ? parts[0] : (r) => parts.every((p) => p(r));
  }
  fact(): Predicate {
    if (this.kw("not")) {
      const f = this.fact();
      return (r) => !f(r);
    }
    const t = this.take();
    if (t[0] === "op" && t[1] === "(") {
      const e = this.expr();
      const c = this.take();
      if (c[0] !== "op" || c[1] !== ")") throw new Unsupported("expected )");
      return e;
    }
    if (t[0] !== "word" || KEYWORDS.has(t[1].toLowerCase())) throw new Unsupported("expected a field");
    const name = t[1];
    const { get, json } = fieldGetter(name);
    if (this.kw("exists")) return name === "tags" ? () => true : (r) => get(r) !== undefined;
    if (this.kw("contains")) return this.contains(name, get, json, this.value());
    const op = this.take();
    if (op[0] !== "op" || op[1] === "(" || op[1] === ")") throw new Unsupported("expected an operator");
    return this.compare(name, get, json, op[1], this.value());
  }

  value(): Val {
    const [kind, v] = this.take();
    if (kind === "num") {
      const isInt = !/[.eE]/.test(v);
      return { v: Number(v), intText: isInt ? String(BigInt(v)) : undefined };
    }
    if (kind === "str") return { v: unquote(v) };
    if (kind === "word") {
      const low = v.toLowerCase();
      if (low === "true" || low === "false") return { v: low === "true" };
      if (low === "null") return { v: null };
      return { v };
    }
    throw new Unsupported("expected a value");
  }

  contains(name: string, get: Getter, json: boolean, val: Val): Predicate {
    const { v } = val;
    if (name === "tags") {
      if (typeof v !== "string") throw new Unsupported("tags contains expects a string");
      return (r) => {
        if (!Array.isArray(r.tags)) return false;
        if (r.tags.some((t) => typeof t !== "string")) throw new Unsupported("a tag that is not a string");
        return r.tags.includes(v);
      };
    }
    if (v === null || typeof v === "boolean") throw new Unsupported("contains expects a string or number");
    if (NUMERIC.has(name)) throw new Unsupported("text search on a number column");
    // Python's str() of a float is not JS's String(): only integers are searched here
    const needle = typeof v === "string" ? v : val.intText;
    if (needle === undefined) throw new Unsupported("contains with a float");
    return (r) => {
      const x = get(r);
      if (x === undefined || (json && x === null)) return false;
      if (typeof x !== "string") throw new Unsupported("text of a non-string JSON value");
      return like(x, needle);
    };
  }

  compare(name: string, get: Getter, json: boolean, op: string, val: Val): Predicate {
    const { v } = val;
    const eq = op === "=" || op === "==";
    if (v === null) {
      if (!eq && op !== "!=") throw new Unsupported("null with an ordering");
      if (!json) {
        if (name === "tags") return () => !eq;
        return (r) => (get(r) === undefined) === eq;
      }
      return (r) => {
        const x = get(r);
        return x !== undefined && (x === null) === eq;
      };
    }
    if (typeof v === "boolean") {
      if (!json || !(eq || op === "!=")) throw new Unsupported("boolean comparison");
      return (r) => {
        const x = get(r);
        return x !== undefined && (x === v) === eq;
      };
    }
    if (typeof v === "number") {
      if (!json && !NUMERIC.has(name)) throw new Unsupported("not numeric");
      return (r) => {
        const x = get(r);
        return typeof x === "number" && cmp(op, x, v);
      };
    }
    if (name === "tags" || NUMERIC.has(name)) throw new Unsupported("text comparison on tags or a number");
    // text ordering follows the database's collation: only equality is decided here
    if (!(eq || op === "!=")) throw new Unsupported("text ordering");
    return (r) => {
      const x = get(r);
      if (x === undefined || (json && x === null)) return false;
      if (typeof x !== "string") throw new Unsupported("text of a non-string JSON value");
      return cmp(op, x, v);
    };
  }
}

/** Compile a filter expression, or throw `Unsupported` (then ask the server). */
export function compileFilter(src: string): Predicate {
  if (src.length > 4000) throw new Unsupported("too long");
  const toks = tokens(src);
  if (!toks.length) return () => true;
  const c = new Compiler(toks);
  const e = c.expr();
  if (c.peek()) throw new Unsupported("trailing tokens");
  return e;
}

/** The runs matching `src`, in their order, or `null` when the server must decide. */
export function filterRuns<T>(src: string, rows: T[], run: (row: T) => RunRow): T[] | null {
  try {
    const p = compileFilter(src);
    return rows.filter((r) => p(run(r)));
  } catch (e) {
    if (e instanceof Unsupported) return null;
    throw e;
  }
}

// for the browser tests: they check this evaluator against the server's answers
const w = window as unknown as { __wisp?: Record<string, unknown> };
w.__wisp = { ...w.__wisp, filterRuns };

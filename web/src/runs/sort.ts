// Sorting the runs table in the page (100,000 rows within a frame or two).  A column's sort
// keys are read from the rows once and kept (per load of the rows, by the rows' places in it),
// so flipping the order or sorting a filtered subset reads no row again.  Numbers, and
// strings through their collation ranks (computed once per column), sort as float64 keys with
// a stable LSD radix sort: no comparator call per comparison.  A column that mixes numbers
// and other values keeps the comparator of state.ts (`compare`).
import { compare, isMissing, value, type Row, type RunsState } from "./state";

const collator = new Intl.Collator(undefined, { numeric: true });

const MISSING = 0;
const NUMBER = 1;
const STRING = 2;
const OTHER = 3;

interface Keys {
  gen: number;
  /** per row place: MISSING / NUMBER / STRING / OTHER */
  kind: Uint8Array;
  /** per row place: the number, or the string's collation rank */
  key: Float64Array;
  /** per row place: the value (the mixed-column comparator reads it) */
  vals: unknown[];
  have: Uint8Array;
}

const cache = new Map<string, Keys>(); // field -> keys of the latest load (gen)
let lastGen = 0;

/** A number for a new load of rows (their `gen`). */
export function nextGen(): number {
  return ++lastGen;
}

/** The sort keys of `field` for `rows`, from the cache when it holds every one of them. */
function keysOf(rows: Row[], field: string): Keys {
  const gen = rows.length ? rows[0].gen : 0;
  const old = cache.get(field);
  if (old && old.gen === gen && rows.every((r) => r.gen === gen && r.i < old.have.length && old.have[r.i])) return old;
  let cap = 0;
  for (const r of rows) cap = Math.max(cap, r.i + 1);
  const k: Keys = { gen, kind: new Uint8Array(cap), key: new Float64Array(cap), vals: new Array(cap), have: new Uint8Array(cap) };
  const strs: number[] = [];
  for (const r of rows) {
    const v = value(r, field);
    const i = r.i;
    k.vals[i] = v;
    k.have[i] = 1;
    if (isMissing(v)) k.kind[i] = MISSING;
    else if (typeof v === "number") {
      k.kind[i] = NUMBER;
      k.key[i] = v;
    } else if (typeof v === "string") {
      k.kind[i] = STRING;
      strs.push(i);
    } else k.kind[i] = OTHER;
  }
  if (strs.length) {
    // collation ranks: equal strings (to the collator) share one
    strs.sort((a, b) => collator.compare(k.vals[a] as string, k.vals[b] as string));
    let rank = 0;
    for (let j = 0; j < strs.length; j++) {
      if (j && collator.compare(k.vals[strs[j - 1]] as string, k.vals[strs[j]] as string) !== 0) rank++;
      k.key[strs[j]] = rank;
    }
  }
  for (const [f, c] of cache) if (c.gen !== gen) cache.delete(f);
  cache.set(field, k);
  return k;
}

/** Read the sort keys of `fields` for `rows` while the page is idle, one field per idle
 * period, so a first click on one of those columns sorts from the cache. */
export function warmSortKeys(rows: Row[], fields: string[]): void {
  const todo = fields.slice();
  const next = () => {
    const f = todo.shift();
    if (f === undefined) return;
    keysOf(rows, f);
    requestIdleCallback(next);
  };
  requestIdleCallback(next);
}

/** Positions 0..n-1 ordered by `keys` (stable: equal keys keep their order).  An LSD radix
 * sort over the keys' IEEE bits made order-preserving, 16 bits a pass. */
export function argsort(keys: Float64Array): Uint32Array {
  const n = keys.length;
  const bits = new Uint32Array(keys.buffer, keys.byteOffset, n * 2);
  const lo = new Uint32Array(n);
  const hi = new Uint32Array(n);
  for (let i = 0; i < n; i++) {
    let l = bits[2 * i];
    let h = bits[2 * i + 1];
    if (h & 0x80000000) {
      h = ~h >>> 0;
      l = ~l >>> 0;
    } else h = (h | 0x80000000) >>> 0;
    lo[i] = l;
    hi[i] = h;
  }
  let idx = new Uint32Array(n);
  for (let i = 0; i < n; i++) idx[i] = i;
  let tmp = new Uint32Array(n);
  const count = new Uint32Array(65536);
  for (let pass = 0; pass < 4; pass++) {
    const word = pass < 2 ? lo : hi;
    const shift = pass % 2 ? 16 : 0;
    count.fill(0);
    for (let i = 0; i < n; i++) count[(word[i] >>> shift) & 0xffff]++;
    if (count[(word[0] >>> shift) & 0xffff] === n) continue; // one digit everywhere
    let sum = 0;
    for (let d = 0; d < 65536; d++) {
      const c = count[d];
      count[d] = sum;
      sum += c;
    }
    for (let j = 0; j < n; j++) {
      const i = idx[j];
      tmp[count[(word[i] >>> shift) & 0xffff]++] = i;
    }
    [idx, tmp] = [tmp, idx];
  }
  return idx;
}

/** Sort the rows in the page by the state's column and order (missing values last; equal
 * values keep their order). */
export function sortRows(s: RunsState): void {
  const rows = s.rows;
  const k = keysOf(rows, s.sort);
  const dir = s.order === "asc" ? 1 : -1;
  const have: Row[] = [];
  const missing: Row[] = [];
  let other = 0;
  for (const r of rows) {
    const kind = k.kind[r.i];
    if (kind === MISSING) missing.push(r);
    else {
      have.push(r);
      if (kind === OTHER) other++;
    }
  }
  let kinds = 0;
  for (const r of have) kinds |= 1 << k.kind[r.i];
  let sorted: Row[];
  if (!other && kinds !== ((1 << NUMBER) | (1 << STRING))) {
    const keys = new Float64Array(have.length);
    for (let j = 0; j < have.length; j++) keys[j] = dir * k.key[have[j].i];
    const order = argsort(keys);
    sorted = new Array(have.length);
    for (let j = 0; j < order.length; j++) sorted[j] = have[order[j]];
  } else sorted = have.map((r, j) => [r, j] as const).sort((a, b) => dir * compare(k.vals[a[0].i], k.vals[b[0].i]) || a[1] - b[1]).map((x) => x[0]);
  s.rows = sorted.concat(missing);
}

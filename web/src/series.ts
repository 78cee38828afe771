// Fetching series: requests issued in the same tick are merged into one /api/v1/series call,
// and per-run buffers hold min/max-preserving buckets that live updates append to.
import { api, type Series } from "./api";

export interface Req {
  runs: string[];
  keys: string[];
  x: string;
  min?: number;
  max?: number;
  buckets: number;
  after?: number;
}

type Pending = { req: Req; resolve: (s: Series[]) => void; reject: (e: unknown) => void };

let queue: Pending[] = [];
let scheduled = false;
export const stats = { requests: 0, lastMs: 0 };

function groupKey(r: Req): string {
  return [r.runs.join(","), r.x, r.min ?? "", r.max ?? "", r.buckets, r.after ?? ""].join("|");
}

/**
 * Requests a batch is split into, at most: the server answers each in its own thread, so a
 * few medium requests come back sooner than one big one (and stay under the browser's six
 * connections per host, leaving room for the page's other requests).
 */
const PARALLEL = 3;
const MAX_KEYS = 40; // keeps URLs reasonable
const MAX_RUNS = 200; // the server's limits per request
const MAX_SERIES = 2000;

/** Split runs x keys into at most `parallel` requests of similar size (keys first). */
export function splitBatch(runs: string[], keys: string[], parallel = PARALLEL): [string[], string[]][] {
  const out: [string[], string[]][] = [];
  const keyParts = Math.min(keys.length, Math.max(parallel, Math.ceil(keys.length / MAX_KEYS)));
  const runParts = Math.max(Math.ceil(runs.length / MAX_RUNS), Math.min(runs.length, Math.floor(parallel / keyParts)), 1);
  const rStep = Math.ceil(runs.length / runParts);
  const kStep = Math.min(Math.ceil(keys.length / keyParts), Math.max(1, Math.floor(MAX_SERIES / rStep)));
  for (let i = 0; i < keys.length; i += kStep)
    for (let j = 0; j < runs.length; j += rStep) out.push([runs.slice(j, j + rStep), keys.slice(i, i + kStep)]);
  return out;
}

function flush(): void {
  scheduled = false;
  const batch = queue;
  queue = [];
  const groups = new Map<string, Pending[]>();
  for (const p of batch) {
    const k = groupKey(p.req);
    const g = groups.get(k);
    if (g) g.push(p);
    else groups.set(k, [p]);
  }
  for (const g of groups.values()) {
    const keys = [...new Set(g.flatMap((p) => p.req.keys))];
    const t0 = performance.now();
    const parts = splitBatch(g[0].req.runs, keys);
    // every member waits for all parts that hold one of its keys, then gets its series
    const results = parts.map(([runs, chunk]) => {
      stats.requests++;
      return api.series({ ...g[0].req, runs, keys: chunk }).then((res) => res.series);
    });
    for (const p of g) {
      const mine = results.filter((_, i) => p.req.keys.some((k) => parts[i][1].includes(k)));
      Promise.all(mine).then(
        (lists) => {
          stats.lastMs = performance.now() - t0;
          p.resolve(lists.flat().filter((s) => p.req.keys.includes(s.key)));
        },
        (e) => p.reject(e),
      );
    }
  }
}

/** Fetch series; calls made in the same task are batched per (runs, x, range, after). */
export function fetchSeries(req: Req): Promise<Series[]> {
  return new Promise((resolve, reject) => {
    queue.push({ req, resolve, reject });
    if (!scheduled) {
      scheduled = true;
      setTimeout(flush, 0);
    }
  });
}

/** One run's points for one key: bucket x, last y, and the bucket's min and max. */
export class Buffer {
  x: number[] = [];
  y: (number | null)[] = [];
  min: (number | null)[] = [];
  max: (number | null)[] = [];
  /** Per x: values of the bucket that were no finite number (NaN, inf, None, text). */
  gaps: number[] = [];
  raw = true;
  count = 0;
  /** Non-finite and non-numeric values in all buckets. */
  bad = 0;
  /** A fork's series: the x of its view's last point at each fork step (server's fork_x). */
  forkX: number[] = [];

  static from(s: Series): Buffer {
    const b = new Buffer();
    b.x = s.x.slice();
    b.y = s.y.slice();
    b.min = (s.min ?? s.y).slice();
    b.max = (s.max ?? s.y).slice();
    b.gaps = s.gaps ? s.gaps.slice() : new Array<number>(s.x.length).fill(0);
    b.raw = s.raw;
    b.count = s.count;
    b.bad = s.nonfinite + (s.nonnumeric ?? 0);
    b.forkX = s.fork_x ?? [];
    return b;
  }

  get lastX(): number | undefined {
    return this.x.length ? this.x[this.x.length - 1] : undefined;
  }

  /** Append points newer than what we hold (from an `after=` query). */
  append(s: Series, maxBuckets: number): number {
    const last = this.lastX;
    let added = 0;
    const mn = s.min ?? s.y;
    const mx = s.max ?? s.y;
    for (let i = 0; i < s.x.length; i++) {
      if (last !== undefined && s.x[i] <= last) continue;
      this.x.push(s.x[i]);
      this.y.push(s.y[i]);
      this.min.push(mn[i]);
      this.max.push(mx[i]);
      this.gaps.push(s.gaps?.[i] ?? 0);
      added++;
    }
    this.count += s.count;
    this.bad += s.nonfinite + (s.nonnumeric ?? 0);
    if (!s.raw) this.raw = false;
    if (this.x.length > 2 * maxBuckets) this.compact();
    return added;
  }

  /** Halve the number of buckets, merging neighbours (min of mins, max of maxes, last y). */
  compact(): void {
    const n = this.x.length;
    const x: number[] = [];
    const y: (number | null)[] = [];
    const mn: (number | null)[] = [];
    const mx: (number | null)[] = [];
    const gaps: number[] = [];
    for (let i = 0; i < n; i += 2) {
      const j = Math.min(i + 1, n - 1);
      x.push(this.x[i]);
      gaps.push(this.gaps[i] + (j !== i ? this.gaps[j] : 0));
      y.push(this.y[j] ?? this.y[i]);
      mn.push(minN(this.min[i], this.min[j]));
      mx.push(maxN(this.max[i], this.max[j]));
    }
    this.x = x;
    this.y = y;
    this.min = mn;
    this.max = mx;
    this.gaps = gaps;
    this.raw = false;
  }
}

function minN(a: number | null, b: number | null): number | null {
  if (a === null) return b;
  if (b === null) return a;
  return a < b ? a : b;
}
function maxN(a: number | null, b: number | null): number | null {
  if (a === null) return b;
  if (b === null) return a;
  return a > b ? a : b;
}

/** Debiased exponential moving average (weight 0..<1), nulls pass through. */
export function ema(y: (number | null)[], weight: number): (number | null)[] {
  const out: (number | null)[] = new Array(y.length);
  let acc = 0;
  let n = 0;
  for (let i = 0; i < y.length; i++) {
    const v = y[i];
    if (v === null || !Number.isFinite(v)) {
      out[i] = null;
      continue;
    }
    acc = acc * weight + (1 - weight) * v;
    n++;
    out[i] = acc / (1 - Math.pow(weight, n));
  }
  return out;
}

/**
 * Time-weighted EMA: the decay between two points depends on their x distance, so the
 * smoothing looks the same however densely a range is sampled.  `weight` means the same as
 * for `ema` at 1,000 evenly spaced points over the x range.
 */
export function twema(x: number[], y: (number | null)[], weight: number): (number | null)[] {
  const out: (number | null)[] = new Array(y.length);
  if (!x.length) return out;
  const range = x[x.length - 1] - x[0] || 1;
  const tau = -(range / 1000) / Math.log(Math.max(1e-6, Math.min(weight, 0.999999)));
  let acc = 0;
  let wsum = 0;
  let prev = x[0];
  for (let i = 0; i < y.length; i++) {
    const v = y[i];
    if (v === null || !Number.isFinite(v)) {
      out[i] = null;
      continue;
    }
    const a = Math.exp(-(x[i] - prev) / tau);
    prev = x[i];
    acc = acc * a + (1 - a) * v;
    wsum = wsum * a + (1 - a);
    out[i] = wsum > 0 ? acc / wsum : v;
  }
  return out;
}

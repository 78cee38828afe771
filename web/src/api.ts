// Typed client for the wisp HTTP API v1 (see docs/http-api.md).
import type { Tree } from "./filter";
export interface Project {
  name: string;
  run_count: number;
  last_activity: number | null;
}

export interface RunRow {
  id: string;
  project: string;
  name: string | null;
  state: string;
  tags: string[];
  group: string | null;
  job_type: string | null;
  notes: string | null;
  created_at: number | null;
  finished_at: number | null;
  duration: number | null;
  config: Record<string, unknown>;
  summary: Record<string, unknown>;
}

export interface MetricSpec {
  name: string;
  step_metric: string | null;
  summary?: string;
  hidden?: boolean;
}

export interface RunDetail extends RunRow {
  metadata: Record<string, unknown>;
  metric_keys: string[];
  metrics: MetricSpec[];
}

export interface Series {
  run: string;
  key: string;
  x: number[];
  y: (number | null)[];
  min: (number | null)[];
  max: (number | null)[];
  first?: (number | null)[];
  last?: (number | null)[];
  raw: boolean;
  count: number;
  nonfinite?: number;
}

export interface MediaItem {
  key: string;
  step: number;
  type: string;
  sha256?: string;
  path?: string;
  [field: string]: unknown;
}

export interface ConsoleLine {
  id: number;
  ts: number;
  stream: string;
  text: string;
}

export class ApiError extends Error {
  constructor(
    public status: number,
    message: string,
    public field?: string,
  ) {
    super(message);
  }
}

const KEY_STORE = "wisp.apiKey";

export function apiKey(): string | null {
  try {
    return localStorage.getItem(KEY_STORE);
  } catch {
    return null;
  }
}

export function setApiKey(key: string | null): void {
  if (key) localStorage.setItem(KEY_STORE, key);
  else localStorage.removeItem(KEY_STORE);
}

/** Number of requests in flight; tests and the live indicator read it. */
export let inFlight = 0;

/** GET JSON; a 5xx answer is retried twice (a dashboard should ride out transient errors). */
export async function getJSON<T>(path: string, signal?: AbortSignal): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await getOnce<T>(path, signal);
    } catch (e) {
      if (!(e instanceof ApiError) || e.status < 500 || attempt >= 2 || signal?.aborted) throw e;
      await new Promise((r) => setTimeout(r, 150 * (attempt + 1)));
    }
  }
}

async function getOnce<T>(path: string, signal?: AbortSignal): Promise<T> {
  const headers: Record<string, string> = { Accept: "application/json" };
  const key = apiKey();
  if (key) headers.Authorization = `Bearer ${key}`;
  inFlight++;
  try {
    const res = await fetch(path, { headers, signal });
    if (!res.ok) {
      let message = `${res.status} ${res.statusText}`;
      let field: string | undefined;
      try {
        const body = (await res.json()) as { error?: { message?: string; field?: string } };
        if (body.error?.message) message = body.error.message;
        field = body.error?.field;
      } catch {
        /* not JSON */
      }
      // main.ts answers with the sign-in page, a task after this page has shown the error
      if (res.status === 401) window.dispatchEvent(new Event("wisp-auth"));
      throw new ApiError(res.status, message, field);
    }
    return (await res.json()) as T;
  } finally {
    inFlight--;
  }
}

export function qs(params: Record<string, string | number | undefined | null>): string {
  const parts: string[] = [];
  for (const [k, v] of Object.entries(params)) {
    if (v === undefined || v === null || v === "") continue;
    parts.push(`${encodeURIComponent(k)}=${encodeURIComponent(String(v))}`);
  }
  return parts.length ? `?${parts.join("&")}` : "";
}

const enc = encodeURIComponent;

export const api = {
  projects: () => getJSON<{ projects: Project[] }>("/api/v1/projects"),
  runs: (
    project: string,
    p: { filter?: string; sort?: string; order?: string; limit?: number; offset?: number },
    signal?: AbortSignal,
  ) =>
    getJSON<{ runs: RunRow[]; total: number }>(`/api/v1/projects/${enc(project)}/runs${qs(p)}`, signal),
  filterParse: (filter: string, signal?: AbortSignal) =>
    getJSON<{ filter: string; version: number; tree: Tree | null }>(`/api/v1/filter/parse${qs({ filter })}`, signal),
  run: (id: string) => getJSON<RunDetail>(`/api/v1/runs/${enc(id)}`),
  series: (
    p: { runs: string[]; keys: string[]; x: string; min?: number; max?: number; buckets: number; after?: number },
    signal?: AbortSignal,
  ) =>
    getJSON<{ series: Series[] }>(
      `/api/v1/series${qs({
        runs: p.runs.join(","),
        keys: p.keys.join(","),
        x: p.x,
        min: p.min,
        max: p.max,
        buckets: p.buckets,
        after: p.after,
      })}`,
      signal,
    ),
  media: (id: string, key?: string) =>
    getJSON<{ media: MediaItem[] }>(`/api/v1/runs/${enc(id)}/media${qs({ key })}`),
  console: (id: string, after?: number) =>
    getJSON<{ lines: ConsoleLine[] }>(`/api/v1/runs/${enc(id)}/console${qs({ after })}`),
  mediaUrl: (sha: string) => `/api/v1/media/${enc(sha)}`,
};

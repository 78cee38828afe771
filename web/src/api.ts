// Typed client for the wisp HTTP API v1 (see docs/http-api.md).
import type { Tree } from "./filter";
import type { components, operations } from "./api.gen";
// Shapes are generated from the server's OpenAPI document (web/openapi.json, made by
// `python -m wisp.server.http.openapi`) into api.gen.ts by `npm run gen:api` (run before every build).
type Schemas = components["schemas"];
export type Project = Schemas["Project"];
export type RunRow = Schemas["RunRow"];
export type MetricSpec = Schemas["MetricSpec"];
export type RunDetail = Schemas["RunDetail"];
export type Series = Schemas["Series"];
export type MediaItem = Schemas["MediaItem"];
export type ConsoleLine = Schemas["ConsoleLine"];
export type SweepSummary = Schemas["SweepSummary"];
export type TrialRow = Schemas["TrialRow"];
export type SweepRun = Schemas["SweepRun"];
type Query<Op extends keyof operations> = NonNullable<operations[Op]["parameters"]["query"]>;
/** The JSON body of an operation's 200 answer. */
export type Ok<Op extends keyof operations> = operations[Op]["responses"] extends {
  200: { content: { "application/json": infer B } };
}
  ? B
  : never;

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

/** A project's API base: `entity/name` projects (owned by a user or team) are addressed as
 *  `/entities/{entity}/projects/{name}` (docs/http-api.md, "Projects"; the Python client's
 *  `wisp._protocol.project_path`), since one path segment cannot hold the `/`. */
export function projectApi(project: string): string {
  const i = project.indexOf("/");
  if (i < 0) return `/api/v1/projects/${enc(project)}`;
  return `/api/v1/entities/${enc(project.slice(0, i))}/projects/${enc(project.slice(i + 1))}`;
}

export const api = {
  projects: () => getJSON<Ok<"projects">>("/api/v1/projects"),
  runs: (project: string, p: Query<"project_runs">, signal?: AbortSignal) =>
    getJSON<Ok<"project_runs">>(`${projectApi(project)}/runs${qs(p)}`, signal),
  filterParse: (filter: string, signal?: AbortSignal) =>
    getJSON<Omit<Ok<"filter_parse">, "tree"> & { tree: Tree | null }>(
      `/api/v1/filter/parse${qs({ filter })}`,
      signal,
    ),
  run: (id: string) => getJSON<Ok<"get_run">>(`/api/v1/runs/${enc(id)}`),
  series: (
    p: { runs: string[]; keys: string[] } & Omit<Query<"series">, "runs" | "keys">,
    signal?: AbortSignal,
  ) =>
    getJSON<Ok<"series">>(
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
  media: (id: string, key?: string) => getJSON<Ok<"media_list">>(`/api/v1/runs/${enc(id)}/media${qs({ key })}`),
  console: (id: string, after?: number) =>
    getJSON<Ok<"console">>(`/api/v1/runs/${enc(id)}/console${qs({ after })}`),
  mediaUrl: (sha: string) => `/api/v1/media/${enc(sha)}`,
};

// Client of the reports endpoints (docs/http-api.md, "Reports"; docs/reports.md).
// Writes carry the API key when the page has one and the session's CSRF token.
import { ApiError, apiKey, projectApi } from "../api";
import { csrfToken } from "../auth";

export interface ReportRow {
  id: string;
  project: string;
  title: string;
  version: number;
  created_at: number;
  updated_at: number;
}

export interface ReportDoc extends ReportRow {
  latest: number;
  markdown: string;
  author: string | null;
  created: boolean;
}

export interface ReportVersion {
  version: number;
  title: string;
  author: string | null;
  created_at: number;
  chars: number;
}

const enc = encodeURIComponent;

/** One request; JSON (or, with `text`, the body as text) back, ApiError on failure. */
async function call<T>(method: string, path: string, body?: unknown, text = false): Promise<T> {
  const headers: Record<string, string> = { Accept: text ? "text/html" : "application/json" };
  if (method !== "GET") headers["X-CSRF-Token"] = csrfToken() || "sso";
  const key = apiKey();
  if (key) headers.Authorization = `Bearer ${key}`;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), credentials: "same-origin" });
  if (!res.ok) {
    let msg = `${res.status} ${res.statusText}`;
    let field: string | undefined;
    try {
      const doc = (await res.json()) as { error?: { message?: string; field?: string } };
      msg = doc.error?.message ?? msg;
      field = doc.error?.field;
    } catch {
      /* not JSON */
    }
    if (res.status === 401) window.dispatchEvent(new Event("wisp-auth"));
    throw new ApiError(res.status, msg, field);
  }
  return (text ? await res.text() : await res.json()) as T;
}

const base = (project: string, id: string) => `${projectApi(project)}/reports/${enc(id)}`;
const ver = (v?: number | null) => (v ? `?version=${v}` : "");

export const reportApi = {
  list: (project: string) => call<{ reports: ReportRow[] }>("GET", `${projectApi(project)}/reports`),
  get: (project: string, id: string, version?: number | null) => call<ReportDoc>("GET", base(project, id) + ver(version)),
  versions: (project: string, id: string) => call<{ versions: ReportVersion[] }>("GET", `${base(project, id)}/versions`),
  diff: (project: string, id: string, a: number, b: number) => call<{ diff: string }>("GET", `${base(project, id)}/diff?a=${a}&b=${b}`),
  html: (project: string, id: string, version?: number | null, panels?: number) =>
    call<string>("GET", `${base(project, id)}/html${ver(version)}${panels ? `${version ? "&" : "?"}panels=${panels}` : ""}`, undefined, true),
  htmlUrl: (project: string, id: string, version?: number | null) => `${base(project, id)}/html${ver(version)}`,
  preview: (project: string, markdown: string) => call<string>("POST", `${projectApi(project)}/report-preview`, { markdown }, true),
  save: (project: string, id: string, markdown: string, baseVersion?: number) =>
    call<ReportDoc>("PUT", base(project, id), baseVersion ? { markdown, base: baseVersion } : { markdown }),
  revert: (project: string, id: string, version: number) => call<ReportDoc>("POST", `${base(project, id)}/revert`, { version }),
  freeze: (project: string, id: string) => call<ReportDoc>("POST", `${base(project, id)}/freeze`, {}),
};

/** A fresh report id (the client picks it: saving is an idempotent PUT). */
export function newReportId(): string {
  const abc = "abcdefghijklmnopqrstuvwxyz0123456789";
  const bytes = crypto.getRandomValues(new Uint8Array(10));
  return Array.from(bytes, (b) => abc[b % abc.length]).join("");
}

// Client of the grouped-series and workspace endpoints (docs/http-api.md, "Workspaces").
// Writes carry the API key when the page has one and the session's CSRF token.
import { ApiError, apiKey, getJSON, projectApi } from "../api";
import type { components } from "../api.gen";
import { csrfToken } from "../auth";

type Schemas = components["schemas"];
export type GroupedSeries = Schemas["GroupedSeries"];
export type Group = Schemas["Group"];
export type GroupSeries = Schemas["GroupSeries"];
export type GroupedBody = Schemas["GroupedBody"];
export type Workspace = Schemas["Workspace"];
export type WorkspaceRow = Schemas["WorkspaceRow"];
export type WorkspaceSpec = Schemas["WorkspaceSpec"];
export type PanelSpec = Schemas["PanelSpec"];

const enc = encodeURIComponent;

async function send<T>(method: string, path: string, body?: unknown, signal?: AbortSignal): Promise<T> {
  const headers: Record<string, string> = { Accept: "application/json", "X-CSRF-Token": csrfToken() || "sso" };
  const key = apiKey();
  if (key) headers.Authorization = `Bearer ${key}`;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), credentials: "same-origin", signal });
  let doc: { error?: { message?: string; field?: string } } & Record<string, unknown> = {};
  try {
    doc = await res.json();
  } catch {
    /* not JSON */
  }
  if (!res.ok) {
    if (res.status === 401) window.dispatchEvent(new Event("wisp-auth"));
    throw new ApiError(res.status, doc.error?.message ?? `${res.status} ${res.statusText}`, doc.error?.field);
  }
  return doc as T;
}

export const wsApi = {
  grouped: (project: string, body: GroupedBody, signal?: AbortSignal) =>
    send<GroupedSeries>("POST", `${projectApi(project)}/series/grouped`, body, signal),
  list: (project: string) => getJSON<{ workspaces: WorkspaceRow[] }>(`${projectApi(project)}/workspaces`),
  get: (project: string, id: string) => getJSON<Workspace>(`${projectApi(project)}/workspaces/${enc(id)}`),
  create: (project: string, body: { name: string; shared: boolean; spec: WorkspaceSpec }) =>
    send<Workspace>("POST", `${projectApi(project)}/workspaces`, body),
  save: (project: string, id: string, body: { name: string; shared: boolean; spec: WorkspaceSpec }) =>
    send<Workspace>("PUT", `${projectApi(project)}/workspaces/${enc(id)}`, body),
  remove: (project: string, id: string) => send<WorkspaceRow>("DELETE", `${projectApi(project)}/workspaces/${enc(id)}`),
};

// Artifacts of a project: names, versions, aliases, metadata, a file browser with downloads,
// and the lineage of a version (runs that produced it -> version -> runs that consumed it).
//   #/p/<project>/artifacts                     the list
//   #/p/<project>/artifacts/<name>?v=<vN|alias> one artifact, one version selected
import { apiKey, getJSON, projectApi, type Ok } from "./api";
import { lineageGraph } from "./artifactsLineage";
import type { Dispose } from "./pages";
import { href, type Route } from "./router";
import { fmtTime, h } from "./util";
import { errorState, loading } from "./ui";

export type ArtifactRow = Ok<"project_artifacts">["artifacts"][number];
export type Version = Ok<"artifact_version">;

/** One manifest entry (docs/artifacts.md; the server keeps the manifest as an open object). */
export interface Entry {
  digest: string;
  size?: number | null;
  ref?: string;
}

function manifestEntries(v: Version): [string, Entry][] {
  const entries = (v.manifest as { entries?: Record<string, Entry> } | undefined)?.entries;
  return Object.entries(entries ?? {});
}

const enc = encodeURIComponent;

export function fmtBytes(n: number | null | undefined): string {
  if (n === null || n === undefined) return "";
  const units = ["B", "KB", "MB", "GB", "TB"];
  let v = n;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return i === 0 ? `${v} B` : `${v.toFixed(1)} ${units[i]}`;
}

/** Download one stored file (with the API key, when the server needs one). */
async function download(sha: string, path: string): Promise<void> {
  const headers: Record<string, string> = {};
  const key = apiKey();
  if (key) headers.Authorization = `Bearer ${key}`;
  const res = await fetch(`/api/v1/artifact-files/${sha}`, { headers });
  if (!res.ok) throw new Error(`${res.status} ${res.statusText}`);
  const url = URL.createObjectURL(await res.blob());
  const a = h("a", { href: url, download: path.split("/").pop() ?? sha });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

export function artifactsPage(app: HTMLElement, route: Route, project: string, name?: string): Dispose {
  const ctl = new AbortController();
  app.replaceChildren(loading("artifacts"));
  const fail = (e: unknown) => {
    if (!ctl.signal.aborted) app.replaceChildren(errorState(e, "Could not load artifacts"));
  };
  if (!name) {
    getJSON<Ok<"project_artifacts">>(`${projectApi(project)}/artifacts`, ctl.signal)
      .then(({ artifacts }) => {
        const rows = artifacts.map((a) =>
          h(
            "tr",
            { class: "artifact-row" },
            h("td", {}, h("a", { href: href(["p", project, "artifacts", a.name]) }, a.name)),
            h("td", {}, a.type),
            h("td", {}, String(a.versions)),
            h("td", {}, a.latest ?? ""),
            h("td", {}, fmtBytes(a.size)),
            h("td", {}, fmtTime(a.updated_at)),
          ),
        );
        app.replaceChildren(
          h("h1", {}, `Artifacts of ${project}`),
          rows.length
            ? h("table", { class: "data listing", id: "artifacts" }, h("tr", {}, ...["name", "type", "versions", "latest", "size", "updated"].map((c) => h("th", {}, c))), ...rows)
            : h("p", { class: "muted" }, "No artifacts logged in this project (yet)."),
        );
      })
      .catch(fail);
    return () => ctl.abort();
  }
  const base = `${projectApi(project)}/artifacts/${enc(name)}`;
  getJSON<Ok<"artifact_versions">>(`${base}/versions`, ctl.signal)
    .then(async ({ type, versions }) => {
      const want = route.params.get("v") ?? "latest";
      const v = await getJSON<Version>(`${base}/versions/${enc(want)}`, ctl.signal);
      const list = h(
        "table",
        { class: "data", id: "versions" },
        h("tr", {}, ...["version", "aliases", "files", "size", "created", "produced by"].map((c) => h("th", {}, c))),
        ...versions.map((x) =>
          h(
            "tr",
            { class: x.version === v.version ? "selected" : "" },
            h("td", {}, h("a", { href: href(["p", project, "artifacts", name], { v: x.version }) }, x.version)),
            h("td", {}, x.aliases.join(", ")),
            h("td", {}, String(x.file_count)),
            h("td", {}, fmtBytes(x.size)),
            h("td", {}, fmtTime(x.created_at)),
            h("td", {}, x.run_id ? h("a", { href: href(["p", project, "r", x.run_id]) }, x.run_id) : ""),
          ),
        ),
      );
      const meta = h(
        "table",
        { class: "kv", id: "version-meta" },
        ...[
          ["digest", v.digest],
          ["aliases", v.aliases.join(", ")],
          ["description", v.description],
          ...Object.entries(v.metadata).map(([k, x]) => [`metadata.${k}`, JSON.stringify(x)]),
        ].map(([k, x]) => h("tr", {}, h("th", {}, k), h("td", {}, x))),
      );
      const entries = manifestEntries(v);
      const files = h(
        "table",
        { class: "data", id: "files" },
        h("tr", {}, h("th", {}, "path"), h("th", {}, "size"), h("th", {}, "")),
        ...entries.map(([path, e]) => {
          const act = e.ref
            ? h("span", { class: "muted" }, e.ref)
            : h("button", { type: "button", class: "download", onclick: () => void download(e.digest, path).catch(fail) }, "download");
          return h("tr", {}, h("td", {}, path), h("td", {}, fmtBytes(e.size)), h("td", {}, act));
        }),
      );
      const runs = v.lineage;
      const graph = lineageGraph(
        runs.produced_by.map((id) => ({ label: id, href: href(["p", project, "r", id]) })),
        { label: `${name}:${v.version}`, href: href(["p", project, "artifacts", name], { v: v.version }) },
        runs.consumed_by.map((id) => ({ label: id, href: href(["p", project, "r", id]) })),
      );
      app.replaceChildren(
        h("h1", {}, `${name} `, h("span", { class: "muted" }, `${type} · ${v.version}`)),
        h("h2", {}, "Versions"),
        list,
        h("h2", {}, `Version ${v.version}`),
        meta,
        h("h2", {}, "Lineage"),
        graph,
        h("h2", {}, `Files (${entries.length})`),
        files,
      );
    })
    .catch(fail);
  return () => ctl.abort();
}

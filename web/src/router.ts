// Hash routes: every view's state lives in the URL, so any view is a shareable link.
//   #/                               projects
//   #/p/<project>?filter=&sort=&order=&cols=&group=&sel=
//   #/p/<project>/r/<run>?q=&x=&smooth=&log=&tab=
//   #/p/<project>/compare?runs=a,b&q=&x=&smooth=&log=&xmin=&xmax=
//   #/p/<project>/w?filter=&group=   a new workspace;  #/p/<project>/w/<id>  a saved one
//   #/p/<project>/reports             reports;  #/p/<project>/reports/<id>?version=&edit=1  one report
//   #/sweeps                         sweeps;  #/sweeps/<project>/<sweep>  one sweep (sweep.ts)
export interface Route {
  path: string[];
  params: URLSearchParams;
}

export function current(): Route {
  const h = location.hash.replace(/^#/, "") || "/";
  const [p, q = ""] = h.split("?", 2);
  const path = p.split("/").filter(Boolean).map(decodeURIComponent);
  return { path, params: new URLSearchParams(q) };
}

export function href(path: string[], params?: Record<string, string | undefined | null>): string {
  const p = "#/" + path.map(encodeURIComponent).join("/");
  const sp = new URLSearchParams();
  if (params) for (const [k, v] of Object.entries(params)) if (v) sp.set(k, v);
  const q = sp.toString();
  return q ? `${p}?${q}` : p;
}

/** Update query parameters of the current view without re-rendering it. */
export function patchParams(patch: Record<string, string | null | undefined>): void {
  const r = current();
  for (const [k, v] of Object.entries(patch)) {
    if (v === null || v === undefined || v === "") r.params.delete(k);
    else r.params.set(k, v);
  }
  const p = "#/" + r.path.map(encodeURIComponent).join("/");
  const q = r.params.toString();
  history.replaceState(null, "", q ? `${p}?${q}` : p);
}

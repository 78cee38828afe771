// The runs table's state in the URL (#/p/<project>?filter=&sort=&order=&cols=&group=<field>&forks=tree&sel=),
// so any view of it is a shareable link: read once when the page opens, written on change.
import { patchParams, type Route } from "../router";
import type { RunsState } from "./state";

export function fromRoute(route: Route): Pick<RunsState, "filter" | "sort" | "order" | "groupBy" | "selected" | "cols" | "forkTree"> {
  const p = route.params;
  const cols = p.get("cols");
  return {
    filter: p.get("filter") ?? "",
    sort: p.get("sort") ?? "created_at",
    order: p.get("order") === "asc" ? "asc" : "desc",
    groupBy: p.get("group") ?? "",
    selected: new Set((p.get("sel") ?? "").split(",").filter(Boolean)),
    cols: cols ? cols.split(",").filter(Boolean) : null,
    forkTree: p.get("forks") === "tree",
  };
}

export const urlSync = {
  filter: (s: RunsState) => patchParams({ filter: s.filter || null }),
  sort: (s: RunsState) => patchParams({ sort: s.sort, order: s.order }),
  groupBy: (s: RunsState) => patchParams({ group: s.groupBy || null }),
  forkTree: (s: RunsState) => patchParams({ forks: s.forkTree ? "tree" : null }),
  cols: (s: RunsState) => patchParams({ cols: (s.cols ?? []).join(",") }),
  selected: (s: RunsState) => patchParams({ sel: s.selected.size ? [...s.selected].join(",") : null }),
};

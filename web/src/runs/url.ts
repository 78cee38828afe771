// The runs table's state in the URL (#/p/<project>?filter=&sort=&order=&cols=&group=&sel=),
// so any view of it is a shareable link: read once when the page opens, written on change.
import { patchParams, type Route } from "../router";
import type { RunsState } from "./state";

export function fromRoute(route: Route): Pick<RunsState, "filter" | "sort" | "order" | "grouped" | "selected" | "cols"> {
  const p = route.params;
  const cols = p.get("cols");
  return {
    filter: p.get("filter") ?? "",
    sort: p.get("sort") ?? "created_at",
    order: p.get("order") === "asc" ? "asc" : "desc",
    grouped: p.get("group") === "group",
    selected: new Set((p.get("sel") ?? "").split(",").filter(Boolean)),
    cols: cols ? cols.split(",").filter(Boolean) : null,
  };
}

export const urlSync = {
  filter: (s: RunsState) => patchParams({ filter: s.filter || null }),
  sort: (s: RunsState) => patchParams({ sort: s.sort, order: s.order }),
  grouped: (s: RunsState) => patchParams({ group: s.grouped ? "group" : null }),
  cols: (s: RunsState) => patchParams({ cols: (s.cols ?? []).join(",") }),
  selected: (s: RunsState) => patchParams({ sel: s.selected.size ? [...s.selected].join(",") : null }),
};

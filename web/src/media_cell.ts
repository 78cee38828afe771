// A media key in a chart grid: the key's media view (image strip with a step slider, histogram
// heat-map, table, ...) instead of an empty chart frame; one column per run on the compare page.
import { api, type MediaItem } from "./api";
import type { ChartRun } from "./chart";
import { mediaView } from "./media";
import { h } from "./util";

export function mediaCell(key: string, type: string, runs: ChartRun[]): { el: HTMLElement; load: () => Promise<void> } {
  const body = h("div", { class: runs.length > 1 ? "media-compare" : "media-body" }, h("p", { class: "muted small" }, "Loading media…"));
  const el = h(
    "figure",
    { class: "chart media-cell", "data-key": key, "data-media-type": type, tabindex: 0, "aria-label": `media ${key}` },
    h("figcaption", {}, h("span", { class: "key" }, key), h("span", { class: "muted small" }, type)),
    body,
  );
  const load = async () => {
    const lists = await Promise.all(runs.map((r) => api.media(r.id, key).then((m) => m.media, () => [] as MediaItem[])));
    body.replaceChildren(
      ...runs.map((r, i) => {
        const list = lists[i].sort((a, b) => a.step - b.step);
        const view = list.length ? mediaView(list[0].type, list) : h("p", { class: "muted small" }, "not logged");
        if (runs.length === 1) return view;
        return h("div", { class: "media-compare-col", "data-run": r.id }, h("h3", {}, h("span", { class: "swatch", style: `background:${r.color}` }), r.label), view);
      }),
    );
    el.dataset.drawn = "1";
  };
  return { el, load };
}

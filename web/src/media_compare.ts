// The compare view's media section: one media key, side by side across the compared runs.
import { api, type MediaItem } from "./api";
import { mediaView } from "./media";
import { whenVisible } from "./media_common";
import { h } from "./util";

export function mediaCompare(runs: { id: string; label: string; color: string }[]): HTMLElement {
  const select = h("select", { "aria-label": "media key", id: "media-key" });
  const cols = h("div", { class: "media-compare" });
  const el = h("section", { class: "media-compare-section", id: "media-compare" }, h("h2", {}, "Media ", select), cols, h("p", { class: "muted small" }, "Loading media…"));
  whenVisible(el, () => {
    void Promise.all(runs.map((r) => api.media(r.id).then((m) => m.media, () => [] as MediaItem[]))).then((lists) => {
      el.lastElementChild?.remove();
      const keys = [...new Set(lists.flat().map((m) => m.key))].sort();
      if (!keys.length) {
        el.replaceChildren(h("p", { class: "muted" }, "No media logged in these runs."));
        return;
      }
      select.replaceChildren(...keys.map((k) => h("option", { value: k }, k)));
      const show = () => {
        const key = select.value;
        cols.replaceChildren(
          ...runs.map((r, i) => {
            const list = lists[i].filter((m) => m.key === key).sort((a, b) => a.step - b.step);
            return h(
              "div",
              { class: "media-compare-col", "data-run": r.id },
              h("h3", {}, h("span", { class: "swatch", style: `background:${r.color}` }), r.label),
              list.length ? mediaView(list[0].type, list) : h("p", { class: "muted small" }, "not logged"),
            );
          }),
        );
      };
      select.addEventListener("change", show);
      show();
    });
  });
  return el;
}

// Point clouds and 3-D files: the three.js chunk (media_three.ts) is imported only when a 3-D
// view first comes on screen, so the main bundle does not grow.
import { apiKey, type MediaItem } from "./api";
import { mediaSrc } from "./media";
import { caption, stepped, whenVisible } from "./media_common";
import { fmtNum, h } from "./util";

export function object3dView(list: MediaItem[]): HTMLElement {
  return stepped(list, "object3d", (it) => {
    const box = h("div", { class: "scene3d", "data-format": String(it.format ?? "") });
    const status = h("div", { class: "small muted" }, `${String(it.format ?? "")}${it.points ? ` · ${fmtNum(it.points)} points` : ""} · drag to rotate, wheel to zoom`);
    const fig = h("figure", { "data-step": it.step }, box, caption(it), status);
    whenVisible(fig, () => {
      const src = mediaSrc(it);
      if (!src) return;
      void (async () => {
        try {
          const [three, res] = await Promise.all([import("./media_three"), fetch(src, { headers: apiKey() ? { Authorization: `Bearer ${apiKey()}` } : {} })]);
          if (!res.ok) throw new Error(`${res.status} ${res.statusText}`);
          three.render(box, String(it.format ?? "points"), await res.arrayBuffer());
        } catch (e) {
          box.dataset.error = (e as Error).message;
          status.textContent = `3-D view: ${(e as Error).message}`;
        }
      })();
    });
    return fig;
  });
}

// Logged HTML: always in a sandboxed iframe (scripts may run, but never with the dashboard's
// origin: no allow-same-origin here, and the server adds a CSP `sandbox` of its own).
import type { MediaItem } from "./api";
import { mediaSrc } from "./media";
import { caption, stepped, whenVisible } from "./media_common";
import { h } from "./util";

export function htmlView(list: MediaItem[]): HTMLElement {
  return stepped(list, "html", (it) => {
    const frame = h("iframe", { class: "media-html", sandbox: "allow-scripts", referrerpolicy: "no-referrer", loading: "lazy", title: String(it.caption ?? it.key) });
    const fig = h("figure", { "data-step": it.step }, frame, caption(it));
    whenVisible(fig, () => {
      const src = mediaSrc(it);
      if (src) frame.src = src;
    });
    return fig;
  });
}

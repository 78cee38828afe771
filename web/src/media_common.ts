// Shared pieces of the media views: lazy loading (IntersectionObserver) and a step slider.
import type { MediaItem } from "./api";
import { h } from "./util";

const pending = new WeakMap<Element, () => void>();
let observer: IntersectionObserver | null = null;

/** Run `load` once, when `el` first comes near the viewport (so a page with 1,000 videos only
 * downloads those on screen). */
export function whenVisible(el: Element, load: () => void): void {
  if (typeof IntersectionObserver === "undefined") {
    load();
    return;
  }
  observer ??= new IntersectionObserver(
    (entries) => {
      for (const e of entries) {
        if (!e.isIntersecting) continue;
        const fn = pending.get(e.target);
        pending.delete(e.target);
        observer!.unobserve(e.target);
        fn?.();
      }
    },
    { rootMargin: "200px" },
  );
  pending.set(el, load);
  observer.observe(el);
}

/** A step slider over `list` (sorted by step) and the view of the chosen item. */
export function stepped(list: MediaItem[], kind: string, render: (it: MediaItem) => HTMLElement): HTMLElement {
  const body = h("div", { class: "media-body" });
  const label = h("span", { class: "muted step-label" });
  const slider = h("input", { type: "range", min: 0, max: list.length - 1, value: list.length - 1, "aria-label": `${kind} step`, class: "step-slider" });
  const show = () => {
    const i = Number(slider.value);
    label.textContent = `step ${list[i].step} (${i + 1}/${list.length})`;
    body.replaceChildren(render(list[i]));
  };
  slider.addEventListener("input", show);
  show();
  return h("div", {}, list.length > 1 ? h("div", { class: "toolbar" }, slider, label) : "", body);
}

export function caption(it: MediaItem): HTMLElement {
  return h("figcaption", { class: "small muted" }, `${it.caption ? `${String(it.caption)} · ` : ""}step ${it.step}`);
}

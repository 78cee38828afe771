// Zoom on an image: a click opens it full-window; + / - / the wheel zoom (pixels stay sharp),
// dragging pans, 0 fits it, Escape or a click outside closes.
import { h } from "./util";

export function zoomImage(src: string, alt: string): HTMLElement {
  document.getElementById("lightbox")?.remove();
  const img = h("img", { src, alt, class: "zoom-img", draggable: "false" });
  const label = h("span", { class: "zoom-label" });
  const stage = h("div", { class: "zoom-stage" }, img);
  let scale = 1;
  let dx = 0;
  let dy = 0;
  const apply = () => {
    img.style.transform = `translate(${dx}px, ${dy}px) scale(${scale})`;
    label.textContent = `${Math.round(scale * 100)}%`;
    box.dataset.scale = String(scale);
  };
  const fitScale = () => {
    const w = img.naturalWidth || 1;
    const hh = img.naturalHeight || 1;
    scale = Math.max(0.05, Math.min(256, (stage.clientWidth - 20) / w, (stage.clientHeight - 20) / hh));
    dx = dy = 0;
    apply();
  };
  const zoom = (f: number) => {
    scale = Math.min(256, Math.max(0.05, scale * f));
    apply();
  };
  const close = () => {
    box.remove();
    document.removeEventListener("keydown", onKey, true);
  };
  const onKey = (e: KeyboardEvent) => {
    if (e.key === "Escape") close();
    else if (e.key === "+" || e.key === "=") zoom(1.5);
    else if (e.key === "-") zoom(1 / 1.5);
    else if (e.key === "0") fitScale();
    else return;
    e.preventDefault();
    e.stopPropagation();
  };
  const box = h(
    "div",
    { id: "lightbox", role: "dialog", "aria-label": `zoom ${alt}`, tabindex: -1 },
    h(
      "div",
      { class: "zoom-bar" },
      h("button", { id: "zoom-in", onclick: () => zoom(1.5), "aria-label": "zoom in" }, "+"),
      h("button", { id: "zoom-out", onclick: () => zoom(1 / 1.5), "aria-label": "zoom out" }, "−"),
      h("button", { id: "zoom-fit", onclick: fitScale }, "fit"),
      label,
      h("span", { class: "muted small" }, alt),
      h("button", { id: "zoom-close", onclick: close, "aria-label": "close" }, "✕"),
    ),
    stage,
  );
  stage.addEventListener("wheel", (e) => {
    e.preventDefault();
    zoom(e.deltaY < 0 ? 1.25 : 1 / 1.25);
  });
  let drag: [number, number] | null = null;
  stage.addEventListener("pointerdown", (e) => {
    if (e.target !== img) return close();
    drag = [e.clientX - dx, e.clientY - dy];
  });
  stage.addEventListener("pointermove", (e) => {
    if (!drag) return;
    dx = e.clientX - drag[0];
    dy = e.clientY - drag[1];
    apply();
  });
  stage.addEventListener("pointerup", () => (drag = null));
  document.addEventListener("keydown", onKey, true);
  document.body.append(box);
  box.focus();
  if (img.complete && img.naturalWidth) fitScale();
  else img.addEventListener("load", fitScale, { once: true });
  apply();
  return box;
}

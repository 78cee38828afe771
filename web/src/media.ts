// Media views: images with a step slider and gallery, histograms over steps as a heat-map,
// tables with paging, sort and inline images.
import { api, apiKey, type MediaItem } from "./api";
import { histogramView } from "./media_hist";
import { zoomImage } from "./media_zoom";
import { fmtNum, h } from "./util";
import { emptyState } from "./ui";

/** The server URL of a media file: by its sha256 (added on upload), else by the sha256 that
 * names the file in the run directory (`media/<sha256>.png`, as table cells refer to images). */
export function mediaSrc(item: { [field: string]: unknown }): string | null {
  // the file's last suffix goes on the URL: the server answers with its content type
  const ext = typeof item.path === "string" ? (/(\.[A-Za-z0-9]{1,10})$/.exec(item.path)?.[1] ?? "") : "";
  if (typeof item.sha256 === "string") return api.mediaUrl(item.sha256 + ext);
  if (typeof item.path === "string") {
    const m = /([0-9a-f]{64})(\.[A-Za-z0-9.]+)?$/.exec(item.path);
    if (m) return api.mediaUrl(m[1] + ext);
  }
  return null;
}

/** The view of one media key's items (sorted by step), or null for types shown elsewhere. */
export function mediaView(type: string, list: MediaItem[]): HTMLElement {
  if (type === "image" || type === "images") return imageView(list);
  if (type === "histogram") return histogramView(list);
  if (type === "table") return tableView(list);
  const extra = extraViews[type];
  if (extra) return extra(list);
  return h("pre", { class: "small" }, JSON.stringify(list.slice(-3), null, 1));
}

/** Views of the other media kinds (audio, video, html, object3d, chart): see main.ts. */
export const extraViews: Record<string, (list: MediaItem[]) => HTMLElement> = {};

/** One `image` per entry: an `images` value (a list of images) is spread into its items. */
function flattenImages(list: MediaItem[]): MediaItem[] {
  const out: MediaItem[] = [];
  for (const it of list) {
    if (it.type === "images" && Array.isArray(it.items)) {
      (it.items as Record<string, unknown>[]).forEach((sub, i) => out.push({ ...sub, key: it.key, step: it.step, type: "image", index: i } as MediaItem));
    } else out.push(it);
  }
  return out;
}

export function mediaPanel(runId: string): { el: HTMLElement; refresh: () => Promise<void> } {
  const el = h("div", { class: "media", id: "media" }, h("p", { class: "muted" }, "Loading media…"));
  let sig = "";
  const refresh = async () => {
    let items: MediaItem[];
    try {
      items = (await api.media(runId)).media;
    } catch (e) {
      el.replaceChildren(h("p", { class: "error" }, `media: ${(e as Error).message}`));
      return;
    }
    const s = `${items.length}:${items.at(-1)?.step ?? ""}`;
    if (s === sig) return;
    sig = s;
    const byKey = new Map<string, MediaItem[]>();
    for (const it of items) {
      const l = byKey.get(it.key);
      if (l) l.push(it);
      else byKey.set(it.key, [it]);
    }
    if (!byKey.size) {
      el.replaceChildren(emptyState("No media logged", ["Log images, audio, video, tables or plots with ", h("code", {}, "wisp.log({\"key\": wisp.Image(...)})"), "."]));
      return;
    }
    const parts: HTMLElement[] = [];
    for (const [key, list] of [...byKey.entries()].sort((a, b) => a[0].localeCompare(b[0]))) {
      list.sort((a, b) => a.step - b.step);
      const type = list[0].type;
      const view = mediaView(type, list);
      parts.push(h("section", { class: "media-item", "data-media-key": key, "data-media-type": type }, h("h3", {}, key, h("span", { class: "muted small" }, ` ${type} · ${list.length} step${list.length === 1 ? "" : "s"}`)), view));
    }
    el.replaceChildren(...parts);
  };
  return { el, refresh };
}

function imageView(all: MediaItem[]): HTMLElement {
  const list = flattenImages(all);
  const steps = [...new Set(list.map((i) => i.step))];
  const img = h("div", { class: "images" });
  const label = h("span", { class: "muted step-label" });
  const slider = h("input", { type: "range", min: 0, max: steps.length - 1, value: steps.length - 1, "aria-label": "image step", class: "step-slider" });
  const gallery = h("input", { type: "checkbox", "aria-label": "gallery" });
  const figure = (it: MediaItem) => {
    const w = Number(it.width) || 0;
    const hh = Number(it.height) || 0;
    // small images (e.g. 8x8 predictions) are scaled up, pixelated, to at least 96 px
    const scale = w && hh ? Math.max(1, Math.min(16, Math.floor(96 / Math.max(w, hh)))) : 1;
    const src = mediaSrc(it) ?? "";
    const alt = String(it.caption ?? `${it.key} step ${it.step}`);
    return h(
      "figure",
      { "data-step": it.step },
      h("img", { loading: "lazy", src, alt, width: w * scale || null, height: hh * scale || null, class: "media-img", title: "click to zoom", onclick: () => zoomImage(src, alt) }),
      h("figcaption", { class: "small muted" }, `${it.caption ? `${String(it.caption)} · ` : ""}step ${it.step}`),
    );
  };
  const show = () => {
    const step = steps[Number(slider.value)];
    const items = gallery.checked ? list : list.filter((i) => i.step === step);
    slider.disabled = gallery.checked;
    label.textContent = gallery.checked ? `all ${list.length} images` : `step ${step} (${Number(slider.value) + 1}/${steps.length})`;
    img.className = gallery.checked ? "images gallery" : "images";
    img.replaceChildren(...items.map(figure));
  };
  slider.addEventListener("input", show);
  gallery.addEventListener("change", show);
  show();
  return h("div", {}, h("div", { class: "toolbar" }, slider, label, h("label", {}, gallery, " gallery")), img);
}

type Cell = unknown;

function tableView(list: MediaItem[]): HTMLElement {
  const wrap = h("div", { class: "table-view" });
  const steps = list.map((i) => i.step);
  const slider = h("input", { type: "range", min: 0, max: list.length - 1, value: list.length - 1, "aria-label": "table step", class: "step-slider" });
  const stepLabel = h("span", { class: "muted" });
  const show = async () => {
    const it = list[Number(slider.value)];
    stepLabel.textContent = `step ${steps[Number(slider.value)]}`;
    let columns = it.columns as string[] | undefined;
    let data = Array.isArray(it.data) ? (it.data as Cell[][]) : undefined; // `rows` is a count
    const url = mediaSrc(it);
    if (!data && url) {
      try {
        const t = await fetchTable(url);
        columns = t.columns;
        data = t.data;
      } catch (e) {
        wrap.replaceChildren(h("p", { class: "error" }, `table: ${(e as Error).message}`));
        return;
      }
    }
    wrap.replaceChildren(pagedTable(columns ?? [], data ?? []));
  };
  slider.addEventListener("input", () => void show());
  void show();
  return h("div", {}, list.length > 1 ? h("div", { class: "toolbar" }, slider, stepLabel) : "", wrap);
}

/** A `wisp.table` file; its numbers may be the NaN / Infinity tokens Python's json writes. */
export async function fetchTable(url: string): Promise<{ columns: string[]; data?: Cell[][] }> {
  const res = await fetch(url, { headers: apiKey() ? { Authorization: `Bearer ${apiKey()}` } : {} });
  if (!res.ok) throw new Error(`${res.status} ${res.statusText}`);
  const text = await res.text();
  try {
    return JSON.parse(text) as { columns: string[]; data?: Cell[][] };
  } catch {
    // replace the tokens outside strings: split on string literals, patch the rest
    const fixed = text.replace(/("(?:[^"\\]|\\.)*")|-?Infinity|NaN/g, (m, str: string | undefined) => (str ? str : m === "NaN" ? '"NaN"' : `"${m}"`));
    return JSON.parse(fixed) as { columns: string[]; data?: Cell[][] };
  }
}

function pagedTable(columns: string[], data: Cell[][]): HTMLElement {
  const PAGE = 20;
  let page = 0;
  let sortCol = -1;
  let asc = true;
  const table = h("table", { class: "data" });
  const pager = h("div", { class: "toolbar small" });
  const renderCell = (v: Cell): Node => {
    if (v && typeof v === "object" && "_type" in (v as object)) {
      const o = v as MediaItem;
      const url = o._type === "image" ? mediaSrc(o) : null;
      if (url) return h("img", { loading: "lazy", src: url, class: "thumb", alt: String(o.caption ?? "image"), title: "click to zoom", onclick: () => zoomImage(url, String(o.caption ?? "image")) });
    }
    return document.createTextNode(fmtNum(v));
  };
  const render = () => {
    let rows = data;
    if (sortCol >= 0) {
      rows = [...data].sort((a, b) => {
        const x = a[sortCol];
        const y = b[sortCol];
        const c = typeof x === "number" && typeof y === "number" ? x - y : String(x).localeCompare(String(y), undefined, { numeric: true });
        return asc ? c : -c;
      });
    }
    const pages = Math.max(1, Math.ceil(rows.length / PAGE));
    page = Math.min(page, pages - 1);
    table.replaceChildren(
      h(
        "thead",
        {},
        h(
          "tr",
          {},
          ...columns.map((c, i) =>
            h("th", {}, h("button", { class: "th", onclick: () => { asc = sortCol === i ? !asc : true; sortCol = i; render(); } }, c + (sortCol === i ? (asc ? " ▲" : " ▼") : ""))),
          ),
        ),
      ),
      h("tbody", {}, ...rows.slice(page * PAGE, page * PAGE + PAGE).map((r) => h("tr", {}, ...r.map((v) => h("td", {}, renderCell(v)))))),
    );
    pager.replaceChildren(
      h("button", { disabled: page === 0, onclick: () => { page--; render(); } }, "‹ prev"),
      h("span", { class: "page-label" }, `page ${page + 1} / ${pages} · ${rows.length} rows`),
      h("button", { disabled: page >= pages - 1, onclick: () => { page++; render(); } }, "next ›"),
    );
  };
  render();
  return h("div", { class: "paged", "data-total": data.length }, table, pager);
}

export function consolePanel(runId: string): { el: HTMLElement; refresh: () => Promise<void> } {
  const pre = h("pre", { class: "console", id: "console", tabindex: 0 });
  const el = h("div", {}, pre);
  let after: number | undefined;
  let any = false;
  const refresh = async () => {
    try {
      const res = await api.console(runId, after);
      if (res.lines.length) {
        any = true;
        after = res.lines[res.lines.length - 1].id;
        const stick = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
        for (const l of res.lines) pre.append(h("span", { class: l.stream === "stderr" ? "err" : "" }, l.text.endsWith("\n") ? l.text : `${l.text}\n`));
        if (stick) pre.scrollTop = pre.scrollHeight;
      } else if (!any) pre.textContent = "No console output captured.";
    } catch (e) {
      pre.textContent = `console: ${(e as Error).message}`;
    }
  };
  return { el, refresh };
}

// The column picker: a searchable list of the project's config/summary keys; ticking one
// adds it to the state's columns, and `changed` redraws the table and the URL.
import { h } from "../util";
import { columns, defaultCols, type RunsState } from "./state";

export function renderPicker(picker: HTMLDetailsElement, s: RunsState, changed: () => void): void {
  const current = new Set(columns(s));
  const search = h("input", { type: "search", placeholder: "search keys", "aria-label": "search columns" });
  const list = h("div", { class: "picker-list" });
  const fill = () => {
    const q = search.value.toLowerCase();
    list.replaceChildren(
      ...s.allKeys
        .filter((k) => k.toLowerCase().includes(q))
        .slice(0, 300)
        .map((k) =>
          h(
            "label",
            {},
            h("input", {
              type: "checkbox",
              checked: current.has(k),
              "data-colkey": k,
              onchange: (e: Event) => {
                const on = (e.target as HTMLInputElement).checked;
                const now = s.cols ?? defaultCols(s);
                s.cols = on ? [...now, k] : now.filter((x) => x !== k);
                changed();
              },
            }),
            " ",
            k,
          ),
        ),
    );
  };
  search.addEventListener("input", fill);
  fill();
  picker.replaceChildren(h("summary", {}, "Columns"), h("div", { class: "picker-pop" }, search, list));
}

// Lineage graphs: runs -> version -> runs (artifact page), versions -> run -> versions (run page).
import { getJSON, type Ok } from "./api";
import { href } from "./router";
import { h } from "./util";

export interface Node {
  label: string;
  href: string;
}

type RunLineage = Ok<"run_artifacts">;

const SVG = "http://www.w3.org/2000/svg";

function svg(tag: string, attrs: Record<string, string | number>): SVGElement {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  return el;
}

/** Three columns (inputs, the centre, outputs) of linked boxes joined by arrows. */
export function lineageGraph(inputs: Node[], centre: Node, outputs: Node[]): Element {
  const W = 220;
  const H = 26;
  const GAP = 10;
  const COL = 300;
  const rows = Math.max(inputs.length, outputs.length, 1);
  const height = rows * (H + GAP) + GAP;
  const root = svg("svg", { class: "lineage", width: COL * 2 + W + 20, height, role: "img" });
  const y = (i: number, n: number) => (height - n * (H + GAP) + GAP) / 2 + i * (H + GAP);
  const box = (n: Node, x: number, top: number, cls: string) => {
    const a = svg("a", { href: n.href, class: `lineage-node ${cls}` });
    a.append(svg("rect", { x, y: top, width: W, height: H, rx: 4 }));
    const t = svg("text", { x: x + 8, y: top + H / 2 + 4 });
    t.textContent = n.label.length > 30 ? `${n.label.slice(0, 29)}…` : n.label;
    a.append(t);
    root.append(a);
  };
  const cy = y(0, 1);
  inputs.forEach((n, i) => {
    const top = y(i, inputs.length);
    root.append(svg("path", { d: `M${10 + W},${top + H / 2} L${COL + 10},${cy + H / 2}`, class: "lineage-edge" }));
    box(n, 10, top, "input");
  });
  outputs.forEach((n, i) => {
    const top = y(i, outputs.length);
    root.append(svg("path", { d: `M${COL + 10 + W},${cy + H / 2} L${2 * COL + 10},${top + H / 2}`, class: "lineage-edge" }));
    box(n, 2 * COL + 10, top, "output");
  });
  box(centre, COL + 10, cy, "centre");
  return h("div", { class: "lineage-wrap" }, root);
}

/** The run page's lineage section: the versions it consumed -> the run -> those it produced. */
export function runLineage(el: HTMLElement, project: string, runId: string): () => void {
  const ctl = new AbortController();
  getJSON<RunLineage>(`/api/v1/runs/${encodeURIComponent(runId)}/artifacts`, ctl.signal)
    .then((l) => {
      if (!l.produced.length && !l.consumed.length) {
        el.replaceChildren();
        return;
      }
      const node = (v: RunLineage["produced"][number]) => ({
        label: `${v.name}:${v.version}`,
        href: href(["p", v.project, "artifacts", v.name], { v: v.version }),
      });
      el.replaceChildren(
        h("h2", {}, "Artifacts"),
        lineageGraph(l.consumed.map(node), { label: runId, href: href(["p", project, "r", runId]) }, l.produced.map(node)),
      );
    })
    .catch(() => el.replaceChildren());
  return () => ctl.abort();
}

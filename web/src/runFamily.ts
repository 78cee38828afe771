// A run's family on its page: the run it was forked from -> the run -> its forks, and what
// rewinds set aside (GET /api/v1/runs/{key}/lineage; docs/fork.md).
import { getJSON, type Ok } from "./api";
import { lineageGraph } from "./artifactsLineage";
import { href } from "./router";
import { h } from "./util";

type Family = Ok<"run_lineage">;

/** Fill ``el`` with the run's family (nothing for a run never forked nor rewound). */
export function runFamily(el: HTMLElement, project: string, runKey: string): () => void {
  const ctl = new AbortController();
  getJSON<Family>(`/api/v1/runs/${encodeURIComponent(runKey)}/lineage`, ctl.signal)
    .then((f) => {
      if (!f.parent && !f.forks.length && !f.set_aside.length) {
        el.replaceChildren();
        return;
      }
      const parent = f.parent;
      const inputs = parent
        ? [{ label: `${parent.id} (to step ${parent.step})`, href: parent.key ? href(["p", parent.project, "r", parent.key]) : "#" }]
        : [];
      const forks = f.forks.map((k) => ({ label: `${k.name || k.id} (from step ${k.step + 1})`, href: href(["p", k.project, "r", k.key]) }));
      const notes: HTMLElement[] = [];
      if (parent) {
        const what = parent.key ? `run ${parent.id}` : `run ${parent.id} (not on this server yet)`;
        notes.push(h("p", { id: "fork-note" }, `Forked from ${what} of ${parent.project} at step ${parent.step}: its history is the parent's steps 0 to ${parent.step}, then this run's own.`));
      }
      for (const a of f.set_aside) {
        const span = a.min_step === null ? "" : ` (steps ${a.min_step} to ${a.max_step})`;
        notes.push(h("p", { class: "muted set-aside" }, `Rewind ${a.rewind} to step ${a.step} set aside ${a.points} point(s)${span}; they are kept, out of the charts and exports.`));
      }
      el.replaceChildren(
        h("h2", {}, "Family"),
        ...notes,
        ...(parent || forks.length ? [lineageGraph(inputs, { label: runKey, href: href(["p", project, "r", runKey]) }, forks)] : []),
      );
    })
    .catch(() => el.replaceChildren());
  return () => ctl.abort();
}

/** The fork step and parent of each of `keys` that is a fork (for its charts: chart.ts). */
export async function forkOf(keys: string[], signal?: AbortSignal): Promise<Map<string, { step: number; parent: string }>> {
  const out = new Map<string, { step: number; parent: string }>();
  const got = await Promise.all(
    keys.map((k) => getJSON<Family>(`/api/v1/runs/${encodeURIComponent(k)}/lineage`, signal).catch(() => null)),
  );
  got.forEach((f, i) => {
    if (f?.parent) out.set(keys[i], { step: f.parent.step, parent: f.parent.id });
  });
  return out;
}

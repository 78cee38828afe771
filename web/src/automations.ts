// Automations of a project (docs/automations.md): each trigger, its webhook, and its latest
// deliveries (status, attempts, response code, last error). Read-only: add, pause and remove
// them with `wisp automation` or wisp.Api().automations (project admins).
//   #/p/<project>/automations
import { getJSON, projectApi, type Ok } from "./api";
import type { Dispose } from "./pages";
import { fmtTime, h } from "./util";
import { emptyState, errorState, loading } from "./ui";

type Automation = Ok<"list_automations">["automations"][number];
type Delivery = Ok<"list_deliveries">["deliveries"][number];

function table(id: string, cols: string[], rows: HTMLElement[]): HTMLElement {
  return h("table", { class: "data listing", id }, h("tr", {}, ...cols.map((c) => h("th", {}, c))), ...rows);
}

function deliveryRows(ds: Delivery[]): HTMLElement[] {
  return ds.map((d) =>
    h(
      "tr",
      { class: `delivery-row ${d.status}` },
      h("td", {}, fmtTime(d.created_at)),
      h("td", {}, d.event),
      h("td", {}, d.run_id ?? ""),
      h("td", {}, d.status),
      h("td", {}, String(d.attempts)),
      h("td", {}, d.response_code === null ? "" : String(d.response_code)),
      h("td", { class: "muted" }, d.last_error ?? ""),
    ),
  );
}

function section(project: string, a: Automation, signal: AbortSignal): HTMLElement {
  const log = h("div", {}, loading("deliveries"));
  const url = `${projectApi(project)}/automations/${encodeURIComponent(a.id)}/deliveries?limit=20`;
  getJSON<Ok<"list_deliveries">>(url, signal)
    .then(({ deliveries }) =>
      log.replaceChildren(
        deliveries.length
          ? table(`deliveries-${a.id}`, ["queued", "event", "run", "status", "attempts", "code", "last error"], deliveryRows(deliveries))
          : emptyState("No deliveries yet"),
      ),
    )
    .catch((e: unknown) => {
      if (!signal.aborted) log.replaceChildren(errorState(e, "Could not load deliveries"));
    });
  const state = a.paused ? "paused" : "active";
  return h(
    "section",
    { class: "automation", id: `automation-${a.id}` },
    h("h2", {}, a.name, " ", h("span", { class: "muted" }, `(${state}${a.signed ? ", signed" : ""})`)),
    h("p", {}, h("code", {}, a.when), " → ", h("span", { class: "muted" }, a.webhook ?? `e-mail ${a.email ?? ""}`)),
    log,
  );
}

export function automationsPage(app: HTMLElement, project: string): Dispose {
  const ctl = new AbortController();
  app.replaceChildren(loading("automations"));
  getJSON<Ok<"list_automations">>(`${projectApi(project)}/automations`, ctl.signal)
    .then(({ automations }) => {
      app.replaceChildren(
        h("h1", {}, `Automations of ${project}`),
        ...(automations.length
          ? automations.map((a) => section(project, a, ctl.signal))
          : [emptyState("No automations", ["Add one with ", h("code", {}, `wisp automation add --project ${project} --when EXPR --webhook URL`)], "automations-empty")]),
      );
    })
    .catch((e: unknown) => {
      if (!ctl.signal.aborted) app.replaceChildren(errorState(e, "Could not load automations"));
    });
  return () => ctl.abort();
}

// Automations of a project (docs/automations.md): each trigger, its action, and its latest
// deliveries (status, attempts, response code, last error); project admins add automations
// (a trigger and a webhook or e-mail) and pause or resume them here, as with `wisp automation`
// or wisp.Api().automations (the server refuses others with 403, shown beside the form).
//   #/p/<project>/automations
import { getJSON, projectApi, type Ok } from "./api";
import { send } from "./auth";
import type { Dispose } from "./pages";
import { fmtTime, h } from "./util";
import { emptyState, errorState, errorText, loading } from "./ui";

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

/** Pause or resume: PATCH the automation, then draw the page again. */
function pauseButton(project: string, a: Automation, reload: () => void, err: HTMLElement): HTMLElement {
  const btn = h("button", { type: "button", class: "automation-pause" }, a.paused ? "Resume" : "Pause");
  btn.addEventListener("click", () => {
    btn.disabled = true;
    send("PATCH", `${projectApi(project)}/automations/${encodeURIComponent(a.id)}`, { paused: !a.paused })
      .then(reload)
      .catch((e: unknown) => {
        btn.disabled = false;
        err.textContent = errorText(e);
      });
  });
  return btn;
}

/** The form that adds an automation: name, trigger, webhook or e-mail, secret. */
function addForm(project: string, reload: () => void): HTMLElement {
  const field = (id: string, label: string, attrs: Record<string, string> = {}) =>
    h("input", { id, name: id, placeholder: label, "aria-label": label, autocomplete: "off", ...attrs });
  const name = field("automation-name", "name (optional)");
  const when = field("automation-when", "when: summary.loss > 10, state = crashed, artifact.alias = production", { size: "48" });
  const webhook = field("automation-webhook", "webhook URL (https://…)", { size: "32" });
  const email = field("automation-email", "or e-mail addresses");
  const secret = field("automation-secret", "secret (signs the webhook)", { type: "password" });
  const err = h("p", { class: "error", id: "automation-error", role: "alert" });
  const button = h("button", { type: "submit", id: "automation-add" }, "Add automation");
  const form = h("form", { class: "row automation-form", id: "automation-form" }, name, when, webhook, email, secret, button);
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    err.textContent = "";
    button.disabled = true;
    const body = { name: name.value, when: when.value, webhook: webhook.value, email: email.value, secret: secret.value };
    send("POST", `${projectApi(project)}/automations`, body)
      .then(reload)
      .catch((e: unknown) => {
        button.disabled = false;
        err.textContent = errorText(e);
      });
  });
  return h("div", { class: "automation-add" }, h("h2", {}, "Add an automation"), form, err);
}

function section(project: string, a: Automation, signal: AbortSignal, reload: () => void): HTMLElement {
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
  const err = h("span", { class: "error", role: "alert" });
  return h(
    "section",
    { class: "automation", id: `automation-${a.id}` },
    h("h2", {}, a.name, " ", h("span", { class: "muted automation-state" }, `(${state}${a.signed ? ", signed" : ""})`), " ", pauseButton(project, a, reload, err), err),
    h("p", {}, h("code", {}, a.when), " → ", h("span", { class: "muted" }, a.webhook ?? `e-mail ${a.email ?? ""}`)),
    log,
  );
}

export function automationsPage(app: HTMLElement, project: string): Dispose {
  const ctl = new AbortController();
  app.replaceChildren(loading("automations"));
  const load = (): void => {
    getJSON<Ok<"list_automations">>(`${projectApi(project)}/automations`, ctl.signal)
      .then(({ automations }) => {
        app.replaceChildren(
          h("h1", {}, `Automations of ${project}`),
          ...(automations.length
            ? automations.map((a) => section(project, a, ctl.signal, load))
            : [emptyState("No automations", ["Add one below, or with ", h("code", {}, `wisp automation add --project ${project} --when EXPR --webhook URL`)], "automations-empty")]),
          addForm(project, load),
        );
      })
      .catch((e: unknown) => {
        if (!ctl.signal.aborted) app.replaceChildren(errorState(e, "Could not load automations"));
      });
  };
  load();
  return () => ctl.abort();
}

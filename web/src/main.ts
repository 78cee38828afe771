// Entry: routes hash URLs to pages; asks for an API key when the server wants one.
import "uplot/dist/uPlot.min.css";
import "./design.css";
import "./style.css";
import "./media_kinds";
import { accountPage } from "./account";
import { loginPage, logout, whoami } from "./auth";
import { comparePage, projectsPage, runPage, type Dispose } from "./pages";
import { artifactsPage } from "./artifacts";
import { automationsPage } from "./automations";
import { runLineage } from "./artifactsLineage";
import { runFamily } from "./runFamily";
import { current, href } from "./router";
import { runsPage } from "./runs/page";
import { sweepByIdPage, sweepPage, sweepsPage } from "./sweep";
import { workspacePage } from "./workspace/page";
import { reportPage, reportsPage } from "./report/page";
import { h } from "./util";

const app = document.getElementById("app")!;
const crumbs = document.getElementById("crumbs")!;
let dispose: Dispose = () => {};
const lineage = document.createElement("section"); // the run page's artifact lineage, below it
lineage.id = "run-lineage";
app.after(lineage);
const family = document.createElement("section"); // the run page's forks and rewinds
family.id = "run-family";
app.after(family);

function login(): void {
  loginPage(app, () => {
    void showUser();
    render();
void showUser();
  });
}

/** The header's "user · Account · Sign out" (nothing for a local server without sign-in). */
async function showUser(): Promise<void> {
  const me = await whoami();
  const box = document.getElementById("user") ?? h("span", { id: "user" });
  document.getElementById("top")!.append(box);
  if (!me || !me.auth_required || !me.user) {
    box.replaceChildren();
    return;
  }
  const out = h("a", { href: "#/", id: "sign-out" }, "Sign out");
  out.addEventListener("click", (e) => {
    e.preventDefault();
    void logout().then(() => {
      box.replaceChildren();
      dispose();
      dispose = () => {};
      login();
    });
  });
  box.replaceChildren(h("span", { class: "muted" }, me.user), " · ", h("a", { href: href(["account"]), id: "account-link" }, "Account"), " · ", out);
}

function render(): void {
  dispose();
  dispose = () => {};
  const r = current();
  const [a, project, b, id] = r.path;
  const parts: (Node | string)[] = [];
  if (a === "p" && project) {
    parts.push(" / ", h("a", { href: href(["p", project]) }, project));
    if (b === "r" && id) parts.push(" / ", h("span", {}, id));
    if (b === "artifacts") parts.push(" / ", h("a", { href: href(["p", project, "artifacts"]) }, "artifacts"));
    if (b !== "artifacts") parts.push(" · ", h("a", { href: href(["p", project, "artifacts"]), id: "artifacts-link" }, "artifacts"));
    if (b === "automations") parts.push(" / automations");
    else parts.push(" · ", h("a", { href: href(["p", project, "automations"]), id: "automations-link" }, "automations"));
    if (b === "compare") parts.push(" / compare");
    if (b === "w") parts.push(" / workspace");
    if (b === "reports") parts.push(" / ", h("a", { href: href(["p", project, "reports"]) }, "reports"));
    else parts.push(" · ", h("a", { href: href(["p", project, "reports"]), id: "reports-link" }, "reports"));
  }
  if (a === "sweeps") {
    // the header's own "Sweeps" link is on the right; the trail names the sweep
    parts.push(" / ", h("a", { href: href(["sweeps"]) }, "sweeps"));
    if (project) parts.push(" / ", h("span", {}, b ? `${project}/${b}` : project));
  }
  document.getElementById("nav-sweeps")?.toggleAttribute("aria-current", a === "sweeps");
  crumbs.replaceChildren(...parts);
  lineage.replaceChildren();
  family.replaceChildren();
  if (a === "account") {
    void whoami().then((me) => {
      if (me?.user) dispose = accountPage(app, me);
      else login();
    });
    return;
  }
  if (a === "sweeps" && project && b) dispose = sweepPage(app, project, b);
  else if (a === "sweeps" && project) dispose = sweepByIdPage(app, project);
  else if (a === "sweeps") dispose = sweepsPage(app);
  else if (a === "p" && project && b === "r" && id) {
    const stop = [runPage(app, r, id), runLineage(lineage, project, id), runFamily(family, project, id)];
    dispose = () => stop.forEach((f) => f());
  } else if (a === "p" && project && b === "artifacts") dispose = artifactsPage(app, r, project, id);
  else if (a === "p" && project && b === "automations") dispose = automationsPage(app, project);
  else if (a === "p" && project && b === "compare") dispose = comparePage(app, r, project);
  else if (a === "p" && project && b === "w") dispose = workspacePage(app, r, project, id);
  else if (a === "p" && project && b === "reports" && id) dispose = reportPage(app, r, project, id);
  else if (a === "p" && project && b === "reports") dispose = reportsPage(app, project);
  else if (a === "p" && project) dispose = runsPage(app, r, project);
  else dispose = projectsPage(app);
}

window.addEventListener("hashchange", render);
window.addEventListener("wisp-auth", () => {
  // after the page that got the 401 has shown its error (a task later): the form replaces it
  setTimeout(() => {
    if (!document.getElementById("login-form")) {
      dispose();
      dispose = () => {};
      login();
    }
  }, 0);
});
document.addEventListener("keydown", (e) => {
  const typing = e.target instanceof HTMLInputElement || e.target instanceof HTMLTextAreaElement || e.target instanceof HTMLSelectElement;
  if (e.key === "/" && !typing && !e.ctrlKey && !e.metaKey && !e.altKey) {
    // the page's filter: runs table, workspace, metric search (run page, compare)
    const s = document.querySelector<HTMLInputElement>("#filter, #ws-filter, #key-search");
    if (s) {
      e.preventDefault();
      s.focus();
    }
  }
});
render();
void showUser();

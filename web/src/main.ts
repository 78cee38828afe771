// Entry: routes hash URLs to pages; asks for an API key when the server wants one.
import "uplot/dist/uPlot.min.css";
import "./style.css";
import "./media_kinds";
import { setApiKey } from "./api";
import { comparePage, projectsPage, runPage, type Dispose } from "./pages";
import { artifactsPage } from "./artifacts";
import { runLineage } from "./artifactsLineage";
import { current, href } from "./router";
import { runsPage } from "./runs/page";
import { sweepPage, sweepsPage } from "./sweep";
import { h } from "./util";

const app = document.getElementById("app")!;
const crumbs = document.getElementById("crumbs")!;
let dispose: Dispose = () => {};
const lineage = document.createElement("section"); // the run page's artifact lineage, below it
lineage.id = "run-lineage";
app.after(lineage);

function login(): void {
  const input = h("input", { type: "password", id: "api-key", placeholder: "API key", "aria-label": "API key", autocomplete: "off" });
  const form = h("form", { class: "login" }, h("h1", {}, "Sign in"), h("p", {}, "This server needs an API key (create one with ", h("code", {}, "wisp server keys create"), ")."), input, h("button", { type: "submit" }, "Sign in"));
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    setApiKey(input.value.trim());
    render();
  });
  app.replaceChildren(form);
  input.focus();
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
    if (b === "compare") parts.push(" / compare");
  }
  if (a === "sweeps") {
    parts.push(" / ", h("a", { href: href(["sweeps"]) }, "sweeps"));
    if (project) parts.push(" / ", h("span", {}, project));
  }
  crumbs.replaceChildren(...parts);
  lineage.replaceChildren();
  if (a === "sweeps" && project) dispose = sweepPage(app, project);
  else if (a === "sweeps") dispose = sweepsPage(app);
  else if (a === "p" && project && b === "r" && id) {
    const stop = [runPage(app, r, id), runLineage(lineage, project, id)];
    dispose = () => stop.forEach((f) => f());
  } else if (a === "p" && project && b === "artifacts") dispose = artifactsPage(app, r, project, id);
  else if (a === "p" && project && b === "compare") dispose = comparePage(app, r, project);
  else if (a === "p" && project) dispose = runsPage(app, r, project);
  else dispose = projectsPage(app);
}

window.addEventListener("hashchange", render);
window.addEventListener("wisp-auth", () => {
  if (!document.getElementById("api-key")) {
    dispose();
    dispose = () => {};
    login();
  }
});
document.addEventListener("keydown", (e) => {
  if (e.key === "/" && !(e.target instanceof HTMLInputElement)) {
    const s = document.querySelector<HTMLInputElement>("#key-search, #filter");
    if (s) {
      e.preventDefault();
      s.focus();
    }
  }
});
render();

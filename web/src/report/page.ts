// The reports of a project (#/p/<project>/reports) and one report (#/p/<project>/reports/<id>):
// the report drawn from the project's runs by the server (the same page `wisp report export`
// writes: SVG charts, data inlined, no script, shown in a sandboxed frame), its versions with
// diffs and revert, freeze, export, and an editor (?edit=1): Markdown beside a live preview,
// saved as a new version.
import "./report.css";
import { href, type Route } from "../router";
import { debounce, fmtTime, h } from "../util";
import { newReportId, reportApi, type ReportDoc } from "./api";

type Dispose = () => void;
const FIRST = 2; // panels drawn before the rest of a report (about a screen)

function template(project: string): string {
  return [
    "---",
    "title: New report",
    `project: ${JSON.stringify(project)}`,
    "runsets:",
    "  all: {}",
    "---",
    "What this report shows.",
    "",
    "```wisp-panel",
    "type: runs",
    "runset: all",
    "```",
    "",
  ].join("\n");
}

function frame(id: string, html: string): HTMLIFrameElement {
  // no allow-scripts, no allow-same-origin: the page is inert, as the exported file is
  const f = h("iframe", { id, class: "report-frame", sandbox: "", title: "report" });
  f.srcdoc = html;
  return f;
}

function fail(box: HTMLElement, e: unknown): void {
  box.replaceChildren(h("p", { class: "error" }, String((e as Error).message)));
}

export function reportsPage(app: HTMLElement, project: string): Dispose {
  app.replaceChildren(h("p", { class: "muted" }, "Loading reports…"));
  reportApi
    .list(project)
    .then(({ reports }) => {
      const add = h("a", { href: href(["p", project, "reports", newReportId()], { edit: "1" }), id: "new-report", class: "button" }, "New report");
      const rows = reports.map((r) =>
        h(
          "tr",
          {},
          h("td", {}, h("a", { href: href(["p", project, "reports", r.id]) }, r.title || r.id)),
          h("td", {}, r.id),
          h("td", { class: "num" }, `v${r.version}`),
          h("td", {}, fmtTime(r.updated_at)),
        ),
      );
      const table = h(
        "table",
        { class: "data", id: "reports" },
        h("thead", {}, h("tr", {}, h("th", {}, "report"), h("th", {}, "id"), h("th", {}, "version"), h("th", {}, "updated"))),
        h("tbody", {}, ...rows),
      );
      app.replaceChildren(h("h1", {}, "Reports"), add, reports.length ? table : h("p", { class: "muted" }, "No reports yet."));
    })
    .catch((e) => fail(app, e));
  return () => {};
}

function download(name: string, html: string): void {
  const url = URL.createObjectURL(new Blob([html], { type: "text/html" }));
  const a = h("a", { href: url, download: name });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

function editor(app: HTMLElement, project: string, id: string, doc: ReportDoc | null): Dispose {
  const text = h("textarea", { id: "report-editor", spellcheck: "false" });
  text.value = doc ? doc.markdown : template(project);
  const preview = h("div", { class: "report-preview" });
  const status = h("span", { class: "muted", id: "report-status" });
  let alive = true;
  let seq = 0;
  const refresh = debounce(() => {
    const mine = ++seq;
    status.textContent = "drawing…";
    reportApi
      .preview(project, text.value)
      .then((html) => {
        if (!alive || mine !== seq) return;
        preview.replaceChildren(frame("report-preview", html));
        status.textContent = "";
      })
      .catch((e) => {
        if (alive && mine === seq) status.textContent = String((e as Error).message);
      });
  }, 500);
  text.addEventListener("input", refresh);
  const save = h("button", { id: "report-save" }, "Save version");
  save.addEventListener("click", () => {
    save.disabled = true;
    reportApi
      .save(project, id, text.value, doc?.latest)
      .then(() => {
        location.hash = href(["p", project, "reports", id]);
      })
      .catch((e) => {
        status.textContent = String((e as Error).message);
        save.disabled = false;
      });
  });
  const cancel = h("a", { href: doc ? href(["p", project, "reports", id]) : href(["p", project, "reports"]) }, "Cancel");
  app.replaceChildren(
    h("h1", {}, doc ? `Edit: ${doc.title || id}` : "New report"),
    h("div", { class: "report-toolbar" }, save, " ", cancel, " ", status),
    h("div", { class: "report-edit" }, text, preview),
  );
  refresh();
  return () => {
    alive = false;
  };
}

function versions(box: HTMLElement, project: string, id: string, doc: ReportDoc): void {
  reportApi
    .versions(project, id)
    .then(({ versions: all }) => {
      const diff = h("pre", { id: "report-diff", class: "report-diff" });
      const rows = [...all].reverse().map((v) => {
        const show = h("a", { href: href(["p", project, "reports", id], { version: String(v.version) }) }, `v${v.version}`);
        const cmp = h("button", { class: "link", "data-version": v.version }, "diff");
        cmp.addEventListener("click", () => {
          const other = v.version > 1 ? v.version - 1 : v.version;
          reportApi.diff(project, id, other, v.version).then((d) => (diff.textContent = d.diff || "(no change)"), (e) => fail(box, e));
        });
        const back = h("button", { class: "link revert", "data-version": v.version }, "revert to this");
        back.addEventListener("click", () => {
          reportApi.revert(project, id, v.version).then(() => window.dispatchEvent(new HashChangeEvent("hashchange")), (e) => fail(box, e));
        });
        const current = v.version === doc.version ? h("strong", {}, " (shown)") : "";
        return h("tr", {}, h("td", {}, show, current), h("td", {}, v.author ?? "—"), h("td", {}, fmtTime(v.created_at)), h("td", {}, cmp, " ", v.version === doc.latest ? "" : back));
      });
      box.replaceChildren(
        h("h2", {}, "Versions"),
        h("table", { class: "data", id: "report-versions" }, h("thead", {}, h("tr", {}, h("th", {}, "version"), h("th", {}, "by"), h("th", {}, "when"), h("th", {}))), h("tbody", {}, ...rows)),
        diff,
      );
    })
    .catch((e) => fail(box, e));
}

export function reportPage(app: HTMLElement, r: Route, project: string, id: string): Dispose {
  const version = Number(r.params.get("version")) || null;
  let stop: Dispose = () => {};
  app.replaceChildren(h("p", { class: "muted" }, "Loading report…"));
  // the first screen (FIRST panels) is asked for with the document, not after it
  const firstScreen = r.params.get("edit") ? null : reportApi.html(project, id, version, FIRST);
  firstScreen?.catch(() => {}); // its failure is the document's, reported once below
  reportApi
    .get(project, id, version)
    .then(async (doc) => {
      if (r.params.get("edit")) {
        stop = editor(app, project, id, doc);
        return;
      }
      // the first screen first, then the whole report in its place
      const html = await (firstScreen ?? reportApi.html(project, id, version, FIRST));
      const edit = h("button", { id: "report-edit" }, "Edit");
      edit.addEventListener("click", () => (location.hash = href(["p", project, "reports", id], { edit: "1" })));
      const freeze = h("button", { id: "report-freeze", title: "pin each run set to its runs and last step, as a new version" }, "Freeze");
      freeze.addEventListener("click", () => {
        reportApi.freeze(project, id).then(() => window.dispatchEvent(new HashChangeEvent("hashchange")), (e) => fail(app, e));
      });
      const exp = h("button", { id: "report-export" }, "Export HTML");
      // the first screen carries no data: the export is always the whole page
      let whole: Promise<string> | null = null;
      const wholePage = () => (whole ??= reportApi.html(project, id, version));
      exp.addEventListener("click", () => {
        wholePage().then((page) => download(`${id}-v${doc.version}.html`, page), (e) => fail(app, e));
      });
      const view = frame("report-view", html);
      const meta = `version ${doc.version} of ${doc.latest} · ${doc.author ?? "—"} · ${fmtTime(doc.created_at)}`;
      const hist = h("section", { id: "report-history" });
      app.replaceChildren(
        h("div", { class: "report-toolbar" }, h("span", { class: "muted", id: "report-meta" }, meta), " ", edit, " ", freeze, " ", exp),
        view,
        hist,
      );
      versions(hist, project, id, doc);
      if (html.includes('class="muted more"')) view.srcdoc = await wholePage();
      else whole = Promise.resolve(html);
    })
    .catch((e) => {
      if ((e as { status?: number }).status === 404 && r.params.get("edit")) stop = editor(app, project, id, null);
      else fail(app, e);
    });
  return () => stop();
}

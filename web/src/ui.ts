// The design system's states (design.css, docs/design.md): loading, empty and error, so that
// every page says the same thing the same way.  A page replaces its content with one of these.
import { ApiError } from "./api";
import { h } from "./util";

/** "Loading runs…" while a page fetches. */
export function loading(what: string): HTMLElement {
  return h("p", { class: "loading", role: "status" }, `Loading ${what}…`);
}

/** Nothing to show yet: a title, a sentence on how to get something, optional links. */
export function emptyState(title: string, hint: (Node | string)[] = [], id?: string): HTMLElement {
  return h("div", { class: "empty-state", id }, h("h2", {}, title), ...(hint.length ? [h("p", {}, ...hint)] : []));
}

/** The message of a failure (the server's, with the field it names), as a page's content. */
export function errorState(e: unknown, context = ""): HTMLElement {
  return h("div", { class: "error-state error", role: "alert" }, `${context ? `${context}: ` : ""}${errorText(e)}`);
}

export function errorText(e: unknown): string {
  if (e instanceof ApiError) return `${e.message}${e.field ? ` (${e.field})` : ""}`;
  return e instanceof Error ? e.message : String(e);
}

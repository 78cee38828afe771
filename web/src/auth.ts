// Signing in: a user name and password start a session (an HttpOnly cookie the server sets,
// so images and media load with it); state-changing requests carry the session's CSRF token
// (from the readable wisp_csrf cookie) in X-CSRF-Token.  An API key still works as before.
import { ApiError, apiKey, setApiKey } from "./api";
import { h } from "./util";

export interface Me {
  user: string | null;
  is_admin: boolean;
  teams: { team: string; role: string }[];
  csrf: string | null;
  via: string;
  auth_required: boolean;
}

export function csrfToken(): string {
  const m = document.cookie.match(/(?:^|;\s*)wisp_csrf=([^;]+)/);
  return m ? decodeURIComponent(m[1]) : "";
}

/** A JSON request that changes something: sends the CSRF token; throws ApiError. */
export async function send<T>(method: string, path: string, body?: unknown): Promise<T> {
  // behind a single-sign-on proxy there is no session token: any value proves same-origin
  const headers: Record<string, string> = { Accept: "application/json", "X-CSRF-Token": csrfToken() || "sso" };
  const key = apiKey(); // signed in with an API key instead of a session
  if (key) headers.Authorization = `Bearer ${key}`;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), credentials: "same-origin" });
  let doc: { error?: { message?: string; field?: string } } & Record<string, unknown> = {};
  try {
    doc = await res.json();
  } catch {
    /* not JSON */
  }
  if (!res.ok) throw new ApiError(res.status, doc.error?.message ?? `${res.status} ${res.statusText}`, doc.error?.field);
  return doc as T;
}

export async function whoami(): Promise<Me | null> {
  try {
    const res = await fetch("/api/v1/auth/me", { credentials: "same-origin" });
    return res.ok ? ((await res.json()) as Me) : null;
  } catch {
    return null;
  }
}

export async function logout(): Promise<void> {
  setApiKey(null);
  try {
    await send("POST", "/api/v1/auth/logout");
  } catch {
    /* signed out anyway */
  }
}

/** The sign-in page: user and password (a session), or an API key. */
export function loginPage(app: HTMLElement, done: () => void): void {
  const user = h("input", { id: "login-user", placeholder: "user", "aria-label": "user", autocomplete: "username" });
  const pass = h("input", { id: "login-password", type: "password", placeholder: "password", "aria-label": "password", autocomplete: "current-password" });
  const err = h("p", { class: "error", id: "login-error", role: "alert" });
  const key = h("input", { type: "password", id: "api-key", placeholder: "API key", "aria-label": "API key", autocomplete: "off" });
  const form = h(
    "form",
    { class: "login", id: "login-form" },
    h("h1", {}, "Sign in"),
    user,
    pass,
    h("button", { type: "submit", id: "login-submit", class: "primary" }, "Sign in"),
    err,
  );
  const keyForm = h(
    "form",
    { class: "login", id: "key-form" },
    h("p", { class: "muted" }, "Or use an API key (", h("code", {}, "wisp server keys create"), "):"),
    key,
    h("button", { type: "submit" }, "Use key"),
  );
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    err.textContent = "";
    try {
      await send("POST", "/api/v1/auth/login", { name: user.value.trim(), password: pass.value });
      setApiKey(null);
      done();
    } catch (x) {
      err.textContent = x instanceof Error ? x.message : String(x);
    }
  });
  keyForm.addEventListener("submit", (e) => {
    e.preventDefault();
    setApiKey(key.value.trim());
    done();
  });
  app.replaceChildren(h("div", { class: "card login-card" }, form, keyForm));
  user.focus();
}

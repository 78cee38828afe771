// #/account: who I am, my API keys (create, revoke), teams, and for site admins the users
// and the audit log.  Every change goes through send() with the CSRF token.
import { getJSON } from "./api";
import { send, type Me } from "./auth";
import type { Dispose } from "./pages";
import { fmtTime, h } from "./util";

interface Key {
  id: string;
  scope: string;
  name: string;
  user: string;
  created_at: number;
  expires_at: number | null;
  last_used_at: number | null;
  revoked_at: number | null;
}

/** A date as the other pages write it (local time), never broken over two lines. */
const when = (t: number | null) => h("time", { class: "nowrap", datetime: t ? new Date(t * 1000).toISOString() : null }, t ? fmtTime(t) : "-");

function table(heads: string[], rows: (Node | string)[][], id: string): HTMLElement {
  return h(
    "table",
    { class: "data", id },
    h("thead", {}, h("tr", {}, ...heads.map((x) => h("th", {}, x)))),
    h("tbody", {}, ...rows.map((r) => h("tr", {}, ...r.map((c) => h("td", {}, c))))),
  );
}

export function accountPage(app: HTMLElement, me: Me): Dispose {
  let live = true;
  const msg = h("p", { id: "account-msg", role: "status" });
  const keysBox = h("div");
  const teamsBox = h("div");
  const adminBox = h("div");
  const fail = (e: unknown) => (msg.textContent = e instanceof Error ? e.message : String(e));

  async function loadKeys(): Promise<void> {
    const { keys } = await getJSON<{ keys: Key[] }>("/api/v1/keys");
    if (!live) return;
    const rows = keys.map((k) => {
      const revoke = h("button", { type: "button", disabled: k.revoked_at ? "" : undefined }, "Revoke");
      revoke.addEventListener("click", () => send("DELETE", `/api/v1/keys/${encodeURIComponent(k.id)}`).then(loadKeys, fail));
      return [k.id, k.name, k.scope, when(k.created_at), when(k.expires_at), when(k.last_used_at), k.revoked_at ? "revoked" : revoke];
    });
    keysBox.replaceChildren(table(["id", "name", "scope", "created", "expires", "last used", ""], rows, "keys"));
  }

  const keyName = h("input", { id: "new-key-name", placeholder: "key name", "aria-label": "key name" });
  const keyScope = h("select", { id: "new-key-scope", "aria-label": "scope" }, ...["read", "write", ...(me.is_admin ? ["admin"] : [])].map((s) => h("option", { value: s }, s)));
  const newKey = h("form", { class: "row", id: "new-key" }, keyName, keyScope, h("button", { type: "submit" }, "Create key"));
  const secret = h("p", { id: "new-key-secret" });
  newKey.addEventListener("submit", (e) => {
    e.preventDefault();
    send<{ key: string }>("POST", "/api/v1/keys", { name: keyName.value, scope: keyScope.value }).then((r) => {
      secret.replaceChildren("New key (shown once): ", h("code", {}, r.key));
      return loadKeys();
    }, fail);
  });

  async function loadTeams(): Promise<void> {
    const { teams } = await getJSON<{ teams: { name: string; members: { user: string; role: string }[] }[] }>("/api/v1/teams");
    if (!live) return;
    teamsBox.replaceChildren(table(["team", "members"], teams.map((t) => [t.name, t.members.map((m) => `${m.user} (${m.role})`).join(", ")]), "teams"));
  }

  // team admins set roles: team, user, role (or "remove")
  const mTeam = h("input", { id: "member-team", placeholder: "team", "aria-label": "team" });
  const mUser = h("input", { id: "member-user", placeholder: "user", "aria-label": "user" });
  const mRole = h("select", { id: "member-role", "aria-label": "role" }, ...["viewer", "member", "admin", "remove"].map((r) => h("option", { value: r }, r)));
  const member = h("form", { class: "row", id: "set-member" }, mTeam, mUser, mRole, h("button", { type: "submit" }, "Set role"));
  member.addEventListener("submit", (e) => {
    e.preventDefault();
    const path = `/api/v1/teams/${encodeURIComponent(mTeam.value.trim())}/members/${encodeURIComponent(mUser.value.trim())}`;
    const done = mRole.value === "remove" ? send("DELETE", path) : send("PUT", path, { role: mRole.value });
    done.then(loadTeams, fail);
  });

  async function loadAdmin(): Promise<void> {
    const [{ users }, { audit }] = await Promise.all([
      getJSON<{ users: { name: string; is_admin: boolean; disabled_at: number | null }[] }>("/api/v1/users"),
      getJSON<{ audit: { ts: number; actor: string; action: string; target: string; status: number }[] }>("/api/v1/audit?limit=50"),
    ]);
    if (!live) return;
    const name = h("input", { id: "new-user-name", placeholder: "user name", "aria-label": "user name" });
    const pw = h("input", { id: "new-user-password", type: "password", placeholder: "password", "aria-label": "password" });
    const add = h("form", { class: "row", id: "new-user" }, name, pw, h("button", { type: "submit" }, "Add user"));
    add.addEventListener("submit", (e) => {
      e.preventDefault();
      send("POST", "/api/v1/users", { name: name.value.trim(), password: pw.value || null }).then(loadAdmin, fail);
    });
    adminBox.replaceChildren(
      h("h2", {}, "Users"),
      table(["user", "admin", "disabled"], users.map((u) => [u.name, u.is_admin ? "yes" : "", when(u.disabled_at)]), "users"),
      add,
      h("h2", {}, "Audit log"),
      table(["when", "who", "action", "target", "status"], audit.map((a) => [when(a.ts), a.actor, a.action, a.target, String(a.status)]), "audit"),
    );
  }

  app.replaceChildren(
    h("h1", {}, `Account: ${me.user ?? "anonymous"}`),
    msg,
    h("h2", {}, "API keys"),
    keysBox,
    newKey,
    secret,
    h("h2", {}, "Teams"),
    teamsBox,
    member,
    adminBox,
  );
  loadKeys().catch(fail);
  loadTeams().catch(fail);
  if (me.is_admin) loadAdmin().catch(fail);
  return () => {
    live = false;
  };
}

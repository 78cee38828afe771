"""Automations: a project's triggers (a runs filter) and the webhook delivery queue.

Tables (``store.schema``, Alembic ``0010_automations``): ``automations``, ``automation_fired``
(edge state: the runs an automation fired for while its expression still holds) and
``deliveries`` (queue and log).  Everything the worker (``server.automations.worker``)
decides is in the database, so a restart loses nothing and several processes share it:

- *detect*: for the runs changed since the last pass, the automation's filter is compiled to
  SQL; a matching run without a ``automation_fired`` row gets one and a ``pending`` delivery
  in the same transaction (the row's primary key makes two processes fire once); a changed
  run that no longer matches loses its row, so the next match fires again (edge, not level).
- *deliver*: a due delivery is claimed with a conditional UPDATE that sets a lease
  (``lease_until``); only the process whose UPDATE changed the row sends it.  A failed send
  is retried at ``next_at`` with exponential back-off, then marked ``failed``.

The delivery body is payload version 1 (``PAYLOAD_VERSION``, docs/automations.md), built once
at detection and stored, so every retry sends the very bytes that were signed.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass
from typing import Any

from sqlalchemy import and_, case, delete, func, select, update
from sqlalchemy.engine import Connection

from wisp._protocol import RecordType
from wisp.server.http.problem import Problem
from wisp.server.query.events import alert_matches, artifact_condition, trigger_kind
from wisp.server.query.filter import parse
from wisp.server.query.measures import Measures, no_measures
from wisp.server.query.runs import parse_filter
from wisp.server.store import schema as S

__all__ = ["MAX_ATTEMPTS", "PAYLOAD_VERSION", "AutomationStore", "Claimed", "backoff"]

PAYLOAD_VERSION = 1
MAX_ATTEMPTS = 8  # then the delivery is ``failed``
RATE_PER_MINUTE = 30  # run events an automation sends a minute; more are logged ``limited``
LEASE_S = 60.0  # a claimed delivery is another process's again after this (> the HTTP timeout)
_CHUNK = 500  # run ids per IN (...) list
_ALERT = int(RecordType.ALERT)  # events.type of the alerts runs send (wisp.alert())
_CLOCK_SKEW = 60.0  # an alert's (client) time may be this much behind the server's
_A = S.automations.c
_D = S.deliveries.c
_F = S.automation_fired.c
_R = S.runs.c


def backoff(attempts: int, base: float = 1.0) -> float:
    """Seconds before retry number ``attempts`` (1, 2, 4, ... capped at an hour)."""
    return min(base * 2.0 ** max(attempts - 1, 0), 3600.0)


def _active(conn: Connection, projects: set[str], kind: str) -> list[tuple[Any, Any]]:
    """The active automations of ``projects`` whose trigger is of ``kind`` (``artifact``,
    ``alert``), with their parsed trees; an expression that no longer parses is skipped."""
    q = select(S.automations).where(_A.paused == 0, _A.project.in_(sorted(projects)))
    found = []
    for auto in conn.execute(q):
        try:
            tree = parse(auto._mapping["when_expr"], triggers=True)
            if trigger_kind(tree) == kind:
                found.append((auto, tree))
        except Problem:
            continue
    return found


def _public(row: Any) -> dict[str, Any]:
    m = row._mapping
    return {
        "id": m["id"],
        "project": m["project"],
        "name": m["name"],
        "when": m["when_expr"],
        "webhook": m["url"] or None,
        "email": m["email"],
        "signed": bool(m["secret"] or m["secret_enc"]),
        "paused": bool(m["paused"]),
        "created_at": m["created_at"],
    }


def _delivery(row: Any) -> dict[str, Any]:
    m = row._mapping
    return {
        k: m[k]
        for k in (
            "id",
            "automation_id",
            "run_id",
            "event",
            "status",
            "attempts",
            "response_code",
            "last_error",
            "created_at",
            "sent_at",
            "next_at",
        )
    }


@dataclass
class Claimed:
    """A delivery leased to this process: what to send and where."""

    url: str  # the webhook ("" for an e-mail action)
    email: str | None  # comma-separated recipients of an e-mail action
    secret: str | None  # plain or encrypted (``sealed``)
    sealed: bool
    body: bytes
    attempt: int
    event: str


class AutomationStore:
    """Automations and deliveries of one server database (``store``: the Store facade;
    ``sealer``: encrypts secrets, ``server.automations.secrets``)."""

    def __init__(self, store: Any, sealer: Any = None) -> None:
        self.store = store
        self.sealer = sealer
        self.db = store.db
        # RETURNING says whether this insert made the row (rowcount is -1 here on psycopg)
        self._fire = (
            self.db.dialect.insert(S.automation_fired).on_conflict_do_nothing().returning(_F.run_id)
        )

    # -- the automations ----------------------------------------------------------------------

    def create(
        self,
        project: str,
        name: str,
        when: str,
        url: str,
        secret: str | None,
        owner: int | None,
        email: str | None = None,
    ) -> dict[str, Any]:
        """Add an automation: a webhook ``url`` (may be "" when ``email`` names recipients)."""
        try:  # a bad one is a 422 naming ``when``
            tree = parse(when, triggers=True)
            kind = trigger_kind(tree)
            if kind == "artifact":
                artifact_condition(tree)
            elif kind == "alert":
                alert_matches(tree, {"title": "", "text": "", "level": ""})  # value types
            else:
                parse_filter(self.store, when, no_measures)
        except Problem as p:
            raise Problem(422, "invalid", p.message.replace("filter:", "when:"), "when") from None
        row = {
            "id": secrets.token_hex(8),
            "project": project,
            "name": name or when,
            "when_expr": when,
            "url": url,
            "email": email or None,
            "secret": None,
            "secret_enc": self.sealer.seal(secret) if secret else None,
            "paused": 0,
            "owner_id": owner,
            "created_at": self.db.clock(),
        }
        with self.db.tx() as conn:
            conn.execute(S.automations.insert(), row)
            return _public(conn.execute(select(S.automations).where(_A.id == row["id"])).one())

    def of_project(self, project: str) -> list[dict[str, Any]]:
        q = select(S.automations).where(_A.project == project).order_by(_A.created_at, _A.id)
        with self.db.read() as conn:
            return [_public(r) for r in conn.execute(q)]

    def get(self, project: str, automation_id: str) -> dict[str, Any]:
        with self.db.read() as conn:
            row = self._row(conn, project, automation_id)
        return _public(row)

    def _row(self, conn: Connection, project: str, automation_id: str) -> Any:
        q = select(S.automations).where(_A.id == automation_id, _A.project == project)
        row = conn.execute(q).first()
        if row is None:
            raise Problem(404, "not_found", f"no automation {automation_id!r} in {project!r}")
        return row

    def set_paused(self, project: str, automation_id: str, paused: bool) -> dict[str, Any]:
        with self.db.tx() as conn:
            self._row(conn, project, automation_id)
            conn.execute(
                update(S.automations).where(_A.id == automation_id).values(paused=int(paused))
            )
            return _public(self._row(conn, project, automation_id))

    def remove(self, project: str, automation_id: str) -> None:
        """Delete the automation and its edge state; its pending deliveries are cancelled (the
        log of what was sent stays)."""
        with self.db.tx() as conn:
            self._row(conn, project, automation_id)
            conn.execute(delete(S.automations).where(_A.id == automation_id))
            conn.execute(delete(S.automation_fired).where(_F.automation_id == automation_id))
            conn.execute(
                update(S.deliveries)
                .where(_D.automation_id == automation_id, _D.status == "pending")
                .values(status="cancelled")
            )

    def deliveries(self, project: str, automation_id: str, limit: int) -> list[dict[str, Any]]:
        q = (
            select(S.deliveries)
            .where(_D.automation_id == automation_id)
            .order_by(_D.id.desc())
            .limit(limit)
        )
        with self.db.read() as conn:
            self._row(conn, project, automation_id)
            return [_delivery(r) for r in conn.execute(q)]

    def test(self, project: str, automation_id: str) -> dict[str, Any]:
        """Queue a sample payload (event ``test``, no run) to the automation's webhook."""
        with self.db.tx() as conn:
            auto = self._row(conn, project, automation_id)
            did = self._enqueue(conn, auto, "test")
            return _delivery(conn.execute(select(S.deliveries).where(_D.id == did)).one())

    # -- detection ----------------------------------------------------------------------------

    def any_active(self) -> bool:
        q = select(func.count()).select_from(S.automations).where(_A.paused == 0)
        with self.db.read() as conn:
            return bool(conn.execute(q).scalar_one())

    def changed_since(self, since: float) -> list[tuple[str, str]]:
        """``(run key, project)`` of the runs written to or heard from after ``since``."""
        with self.db.read() as conn:
            q = select(_R.id, _R.project).where(_R.last_seen > since)
            return [(k, p) for k, p in conn.execute(q)]

    def mark_crashed(self) -> list[tuple[str, str]]:
        """Store ``crashed`` on the running runs not heard from for the heartbeat timeout;
        returns them (their state changed: automations look at them)."""
        cutoff = self.db.clock() - self.store.heartbeat_timeout
        stale = and_(_R.state == "running", _R.last_seen < cutoff)
        with self.db.read() as conn:  # the write lock only when there is something to mark
            found = [(k, p) for k, p in conn.execute(select(_R.id, _R.project).where(stale))]
        if not found:
            return found
        with self.db.tx() as conn:
            for i in range(0, len(found), _CHUNK):
                ids = [k for k, _ in found[i : i + _CHUNK]]
                conn.execute(update(S.runs).where(_R.id.in_(ids), stale).values(state="crashed"))
        return found

    def evaluate(self, runs: list[tuple[str, str]]) -> int:
        """Evaluate the active automations of these runs' projects over them; returns how
        many deliveries were queued (each run fires an automation once per edge)."""
        by_project: dict[str, list[str]] = {}
        for key, project in runs:
            by_project.setdefault(project, []).append(key)
        if not by_project:
            return 0
        q = select(S.automations).where(_A.paused == 0, _A.project.in_(sorted(by_project)))
        with self.db.read() as conn:
            autos = list(conn.execute(q))
        queued = 0
        for project, keys in by_project.items():
            mine = [a for a in autos if a._mapping["project"] == project]
            for i in range(0, len(keys), _CHUNK):
                if mine:
                    queued += self._evaluate_chunk(mine, project, keys[i : i + _CHUNK])
        return queued

    def _evaluate_chunk(self, autos: list[Any], project: str, keys: list[str]) -> int:
        """Read which runs match each automation (no write when nothing changed), then
        record the edges: fire the new matches, re-arm the runs that stopped matching."""
        rises: list[tuple[Any, set[str]]] = []
        falls: list[tuple[str, list[str]]] = []
        conds, valid = [], []
        measures = Measures(self.store, project, keys)  # change() and zscore(), computed once
        for auto in autos:
            try:
                conds.append(parse_filter(self.store, auto._mapping["when_expr"], measures))
                valid.append(auto)
            except Problem:
                continue  # valid when stored; a grammar change must not stop the others
        if not valid:
            return 0
        # one query for all of them: a column per automation says whether the run matches
        cols = [case((c, 1), else_=0).label(f"a{i}") for i, c in enumerate(conds)]
        with self.db.read() as conn:
            q = select(_F.automation_id, _F.run_id).where(_F.run_id.in_(keys))
            fired = {(a, r) for a, r in conn.execute(q)}
            matches = list(conn.execute(select(_R.id, *cols).where(_R.id.in_(keys))))
        for i, auto in enumerate(valid):
            aid = auto._mapping["id"]
            hit = {row[0] for row in matches if row[i + 1]}
            new = {k for k in hit if (aid, k) not in fired}
            gone = [k for k in keys if (aid, k) in fired and k not in hit]
            if new:
                rises.append((auto, new))
            if gone:
                falls.append((aid, gone))
        if not rises and not falls:
            return 0
        queued = 0
        with self.db.tx() as conn:
            for aid, gone in falls:
                conn.execute(
                    delete(S.automation_fired).where(_F.automation_id == aid, _F.run_id.in_(gone))
                )
            now = self.db.clock()
            for auto, new in rises:
                budget = RATE_PER_MINUTE - self._recent(conn, auto._mapping["id"], now)
                for row in conn.execute(select(S.runs).where(_R.id.in_(sorted(new)))):
                    run = row._mapping["id"]
                    edge = {"automation_id": auto._mapping["id"], "run_id": run, "fired_at": now}
                    if conn.execute(self._fire, edge).first() is not None:  # not another's
                        self._enqueue(conn, auto, "run", run=row, limited=budget <= 0)
                        budget -= 1
                        queued += 1
        return queued

    def _recent(self, conn: Connection, automation_id: str, now: float) -> int:
        """Run events the automation queued in the last minute (its rate limit)."""
        q = select(func.count()).where(
            _D.automation_id == automation_id, _D.event != "test", _D.created_at > now - 60.0
        )
        return int(conn.execute(q).scalar_one())

    def evaluate_artifacts(self, since: float) -> int:
        """Fire the active artifact automations for the artifact events written after
        ``since``: once per event and automation (``automation_fired`` holds
        ``artifact:<event id>``, so a re-read or another process does not fire it again)."""
        e = S.artifact_events.c
        with self.db.read() as conn:
            events = list(conn.execute(select(e.id, e.project).where(e.created_at > since)))
            if not events:
                return 0
            autos = [
                (auto, artifact_condition(tree))
                for auto, tree in _active(conn, {p for _, p in events}, "artifact")
            ]
            hits = []
            for auto, cond in autos:
                mine = [i for i, p in events if p == auto._mapping["project"]]
                for k in range(0, len(mine), _CHUNK):
                    sel = select(S.artifact_events).where(e.id.in_(mine[k : k + _CHUNK]), cond)
                    hits += [(auto, ev) for ev in conn.execute(sel.order_by(e.id))]
        queued = 0
        if hits:
            with self.db.tx() as conn:
                now = self.db.clock()
                for auto, ev in hits:
                    aid = auto._mapping["id"]
                    edge = {"automation_id": aid, "run_id": f"artifact:{ev.id}", "fired_at": now}
                    if conn.execute(self._fire, edge).first() is not None:
                        limited = self._recent(conn, aid, now) >= RATE_PER_MINUTE
                        self._enqueue(conn, auto, "artifact", artifact=ev, limited=limited)
                        queued += 1
        return queued

    def evaluate_alerts(self, runs: list[tuple[str, str]], after: int) -> int:
        """Fire the active alert automations for the alerts (``wisp.alert()``, ALERT records
        in ``events``, id above ``after``) of these changed ``(run key, project)``: once per
        alert and automation (``automation_fired`` holds ``alert:<event id>``), and not for an
        alert sent before the automation existed.  Returns the highest event id read."""
        ev = S.events.c
        project_of = dict(runs)
        with self.db.read() as conn:
            autos = _active(conn, set(project_of.values()), "alert")
            rows: list[Any] = []
            keys = sorted(project_of) if autos else []  # none: no read (old alerts stay unfired)
            for i in range(0, len(keys), _CHUNK):
                rows += conn.execute(
                    select(ev.id, ev.run_id, ev.data).where(
                        ev.type == _ALERT, ev.run_id.in_(keys[i : i + _CHUNK]), ev.id > after
                    )
                ).all()
        top = max([after, *(int(r[0]) for r in rows)])
        hits = []
        for eid, run, data in rows:
            try:
                alert = json.loads(data)
            except ValueError:
                continue
            if not isinstance(alert, dict) or alert.get("sent") is False:
                continue
            ts = alert.get("ts") if isinstance(alert.get("ts"), (int, float)) else 0.0
            for auto, tree in autos:
                m = auto._mapping
                fresh = ts >= m["created_at"] - _CLOCK_SKEW
                if m["project"] == project_of[run] and fresh and alert_matches(tree, alert):
                    hits.append((auto, run, eid, alert))
        if hits:
            with self.db.tx() as conn:
                now = self.db.clock()
                found = conn.execute(select(S.runs).where(_R.id.in_({h[1] for h in hits})))
                rrows = {r._mapping["id"]: r for r in found}
                for auto, run, eid, alert in hits:
                    aid = auto._mapping["id"]
                    edge = {"automation_id": aid, "run_id": f"alert:{eid}", "fired_at": now}
                    if run in rrows and conn.execute(self._fire, edge).first() is not None:
                        limited = self._recent(conn, aid, now) >= RATE_PER_MINUTE
                        row = rrows[run]
                        self._enqueue(conn, auto, "alert", run=row, alert=alert, limited=limited)
        return top

    def _enqueue(
        self,
        conn: Connection,
        auto: Any,
        event: str,
        *,
        run: Any = None,
        artifact: Any = None,
        alert: dict[str, Any] | None = None,
        limited: bool = False,
    ) -> int:
        a = auto._mapping
        now = self.db.clock()
        payload: dict[str, Any] = {
            "version": PAYLOAD_VERSION,
            "event": event,
            "automation": {
                "id": a["id"],
                "name": a["name"],
                "project": a["project"],
                "when": a["when_expr"],
            },
            "fired_at": now,
            "run": None,
        }
        if artifact is not None:
            ev = dict(artifact._mapping)
            ev["event"] = ev.pop("kind")
            ev.pop("id")
            payload["artifact"] = ev
            what = (
                f"new version {ev['version']}"
                if ev["event"] == "version"
                else f"alias {ev['alias']!r} now names {ev['version']}"
            )
            payload["text"] = (
                f"wisp: artifact {ev['name']!r} ({ev['type']}) of project {ev['project']}: "
                f"{what}: {a['name']} [{a['when_expr']}]"
            )
        elif run is None:
            payload["text"] = f"wisp: test of automation {a['name']!r} (project {a['project']})"
        else:
            info = self.store.run_dict(run)
            payload["run"] = {
                k: info[k]
                for k in ("id", "key", "project", "name", "state", "summary", "heartbeat_at")
            }
            about = f"{a['name']} [{a['when_expr']}] (state {info['state']})"
            if alert is not None:
                payload["alert"] = {
                    k: alert.get(k) for k in ("title", "text", "level", "ts", "step")
                }
                about = f"[{alert.get('level')}] {alert.get('title')}: {alert.get('text')}"
            payload["text"] = (
                f"wisp: run {info['name']!r} ({info['id']}) of project {a['project']}: {about}"
            )
        row = {
            "automation_id": a["id"],
            "run_id": None if run is None else run._mapping["id"],
            "event": event,
            "body": json.dumps(payload, separators=(",", ":"), sort_keys=True),
            "status": "limited" if limited else "pending",
            "attempts": 0,
            "next_at": now,
            "lease_until": 0.0,
            "created_at": now,
        }
        return int(conn.execute(S.deliveries.insert().returning(_D.id), row).scalar_one())

    # -- delivery -----------------------------------------------------------------------------

    def due(self, limit: int) -> list[int]:
        now = self.db.clock()
        q = (
            select(_D.id)
            .where(_D.status == "pending", _D.next_at <= now, _D.lease_until <= now)
            .order_by(_D.next_at, _D.id)
            .limit(limit)
        )
        with self.db.read() as conn:
            return [int(i) for i in conn.execute(q).scalars()]

    def claim(self, delivery_id: int) -> Claimed | None:
        """Lease the delivery for this process, or None when another process claimed it
        first (or it is no longer due)."""
        now = self.db.clock()
        with self.db.tx() as conn:
            res = conn.execute(
                update(S.deliveries)
                .where(
                    _D.id == delivery_id,
                    _D.status == "pending",
                    _D.next_at <= now,
                    _D.lease_until <= now,
                )
                .values(lease_until=now + LEASE_S, attempts=_D.attempts + 1)
            )
            if res.rowcount != 1:
                return None
            q = (
                select(_A.url, _A.email, _A.secret, _A.secret_enc, _D.body, _D.attempts, _D.event)
                .select_from(S.deliveries.join(S.automations, _A.id == _D.automation_id))
                .where(_D.id == delivery_id)
            )
            got = conn.execute(q).first()
            if got is None:  # its automation was removed meanwhile
                conn.execute(
                    update(S.deliveries).where(_D.id == delivery_id).values(status="cancelled")
                )
                return None
            m = got._mapping
            return Claimed(
                url=str(m["url"]),
                email=m["email"],
                secret=m["secret_enc"] or m["secret"],
                sealed=m["secret_enc"] is not None,
                body=str(m["body"]).encode(),
                attempt=int(m["attempts"]),
                event=str(m["event"]),
            )

    def finish(self, delivery_id: int, attempt: int, code: int | None, error: str | None) -> None:
        """Record a send: ``sent`` on a 2xx, else retried after :func:`backoff` (``failed``
        after ``MAX_ATTEMPTS``)."""
        now = self.db.clock()
        vals: dict[str, Any] = {"response_code": code, "last_error": error, "lease_until": 0.0}
        if error is None:
            vals.update(status="sent", sent_at=now)
        elif attempt >= MAX_ATTEMPTS:
            vals.update(status="failed")
        else:
            vals.update(next_at=now + backoff(attempt))
        with self.db.tx() as conn:
            conn.execute(update(S.deliveries).where(_D.id == delivery_id).values(**vals))

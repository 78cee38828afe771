"""Sweeps on the server: ``/api/v1/sweeps`` (the list) and
``/api/v1/projects/{project}/sweeps/{id}/...`` (docs/http-api.md).

A sweep is named by its project and id: ids are unique per project, so no one can take an id
another user's project will use.  Who may do what is the project's rights (``http.auth``).
Their two tables (``sweeps``, ``sweep_trials``) are :mod:`wisp.server.store.sweeps`.

The server only keeps the state; agents sample (``wisp.sweeps._controller``).  The trial
number is the primary key, so a second agent claiming the same number gets 409 and samples
again.  Sweep files are checked by ``wisp.sweeps._config`` (the SDK's rules, one definition).
A sweep's runs are the runs whose metadata carries its ``sweep_id``, uploaded or synced.
"""

from __future__ import annotations

import math
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.responses import Response

from wisp._protocol import project_problem
from wisp.server.blobs.base import BlobStore
from wisp.server.http.auth import readable_projects
from wisp.server.http.body import json_response
from wisp.server.http.problem import Problem, check_id, clean_json, clean_str, invalid
from wisp.server.http.routes import In, endpoint
from wisp.server.schemas import sweeps as T
from wisp.server.settings import ServerSettings
from wisp.server.store.facade import Store
from wisp.server.store.sweeps import JSON_COLS, SweepTables
from wisp.sweeps._controller import SWEEP_STATES, TRIAL_STATES

__all__ = ["SweepApi"]


# -- validation -------------------------------------------------------------------------------


_INT_MAX = {"number": 2**31 - 1, "agent_pid": 2**62, "seed": 2**62}


def _num(body: dict[str, Any], key: str, *, integer: bool = False) -> Any:
    v = body.get(key)
    if v is None:
        return None
    if integer:
        if type(v) is not int or not 0 <= v <= _INT_MAX[key]:
            raise invalid(key, f"expected an integer from 0 to {_INT_MAX[key]}")
        return v
    if type(v) not in (int, float) or not math.isfinite(v) or abs(v) > 1e300:
        raise invalid(key, "expected a finite number")
    return float(v)


def _check_trial(body: dict[str, Any], *, partial: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in body.items():
        if k in JSON_COLS:
            if not isinstance(v, dict):
                raise invalid(k, "expected an object")
            out[k] = clean_json(v, k)
        elif k == "state":
            if v not in TRIAL_STATES:
                raise invalid(k, f"expected one of {', '.join(TRIAL_STATES)}")
            out[k] = v
        elif k == "run_id":
            out[k] = check_id(v, k)
        elif k in ("agent_id", "host"):
            out[k] = None if v is None else clean_str(v, k, 256)
        elif k in ("number", "agent_pid"):
            out[k] = _num(body, k, integer=True)
        else:
            out[k] = _num(body, k)
    if not partial:
        for need in ("number", "run_id", "internal", "params", "state", "created_at"):
            if out.get(need) is None:
                raise invalid(need, "required")
        out.setdefault("system_attrs", {})
        out.setdefault("intermediate", {})
        for k in ("value", "agent_id", "agent_pid", "host", "heartbeat_at", "finished_at"):
            out.setdefault(k, None)
    return out


def _check_sweep(body: dict[str, Any], project: str) -> dict[str, Any]:
    from wisp.errors import UsageError
    from wisp.sweeps._config import parse_config

    try:
        parse_config(body.get("config"))
    except UsageError as exc:
        raise invalid("config", str(exc)) from None
    if project_problem(project) is not None:
        raise invalid("project", str(project_problem(project)))
    if body.get("project") not in (None, project):
        raise invalid("project", f"the sweep's project is the path's, {project!r}")
    out = {
        "id": check_id(body.get("id"), "id"),
        "project": project,
        "name": None if body.get("name") is None else clean_str(body["name"], "name", 1024),
        "config": clean_json(body["config"], "config"),
        "state": body.get("state", "running"),
        "seed": _num(body, "seed", integer=True) or 0,
        "created_at": _num(body, "created_at"),
    }
    if out["state"] not in SWEEP_STATES:
        raise invalid("state", f"expected one of {', '.join(SWEEP_STATES)}")
    if out["created_at"] is None:
        raise invalid("created_at", "required")
    return out


class _Snapshot:
    """A read-only sweep store over rows already read (for the controller's study)."""

    def __init__(self, sweep: dict[str, Any], trials: list[dict[str, Any]]) -> None:
        self.sweep = sweep
        self.trials = trials

    def get_sweep(self, sweep_id: str) -> dict[str, Any]:
        return self.sweep

    def list_trials(self, sweep_id: str) -> list[dict[str, Any]]:
        return self.trials


def importance(sweep: dict[str, Any], trials: list[dict[str, Any]]) -> dict[str, Any]:
    """Parameter importance by Optuna (its default evaluator, fANOVA) over finished trials."""
    from wisp.errors import UsageError
    from wisp.sweeps._controller import Controller

    done = [t for t in trials if t["state"] == "finished" and t["value"] is not None]
    if len(done) < 2:
        return {"importance": None, "reason": "needs at least 2 finished trials with a value"}
    try:
        ctl = Controller(_Snapshot(sweep, trials), sweep["id"])  # type: ignore[arg-type]
    except UsageError as exc:
        return {"importance": None, "reason": f"{exc} (on the server)"}
    import optuna  # importable: Controller() checked it (a UsageError above otherwise)

    try:  # trials a client wrote out of the sweep's space are refused by optuna: a reason
        scores = optuna.importance.get_param_importances(ctl.study(done))
    except (ValueError, RuntimeError) as exc:
        return {"importance": None, "reason": str(exc)}
    return {
        "importance": {k.replace("\x1f", "."): float(v) for k, v in scores.items()},
        "reason": None,
        "trials": len(done),
    }


# -- endpoints --------------------------------------------------------------------------------


class SweepApi:
    """The sweep handlers (types: ``schemas.sweeps``; prose: docs/http-api.md)."""

    def __init__(self, store: Store, settings: ServerSettings, blobs: BlobStore) -> None:
        self.tables = SweepTables(store)
        self.settings = settings
        self._importance: dict[tuple[str, str, int], dict[str, Any]] = {}

    async def _need(self, path: Any) -> dict[str, Any]:
        sweep = await run_in_threadpool(self.tables.get, path.project, path.sweep_id)
        if sweep is None:
            raise Problem(
                404,
                "sweep_not_found",
                f"no sweep {path.sweep_id!r} in project {path.project!r}",
                "sweep_id",
            )
        return sweep

    @endpoint(
        "POST",
        "/projects/{project}/sweeps",
        scope="write",
        summary="Create a sweep in a project (409 when the project has a sweep with its id)",
        path_params=T.SweepsPath,
        body=T.SweepBody,
        responses={201: T.SweepCreated},
    )
    async def create_sweep(self, r: In) -> Response:
        project = r.path.project
        row = _check_sweep(r.raw, project)
        if not await run_in_threadpool(self.tables.create, row):
            raise Problem(
                409, "sweep_exists", f"project {project!r} has a sweep {row['id']!r}", "id"
            )
        return json_response({"sweep": row}, 201)

    @endpoint(
        "GET",
        "/sweeps",
        scope="read",
        summary="Sweeps of the projects the caller may read, newest first, with trial counts",
        query=T.SweepListQuery,
        responses={200: T.SweepList},
    )
    async def list_sweeps(self, r: In) -> Response:
        project, sweep_id = r.query.project, r.query.id
        if project is not None:
            project = clean_str(project, "project", 128)
        if sweep_id is not None:
            sweep_id = clean_str(sweep_id, "id", 64)
        readable = readable_projects(r.request)  # None: all (the auth middleware)
        rows = await run_in_threadpool(self.tables.list_sweeps, project, sweep_id, readable)
        return json_response({"sweeps": rows})

    @endpoint(
        "GET",
        "/projects/{project}/sweeps/{sweep_id}",
        scope="read",
        summary="One sweep",
        path_params=T.SweepPath,
        responses={200: T.SweepRow},
    )
    async def get_sweep(self, r: In) -> Response:
        return json_response(await self._need(r.path))

    @endpoint(
        "PATCH",
        "/projects/{project}/sweeps/{sweep_id}",
        scope="write",
        summary="Set a sweep's state (pause, resume, stop)",
        path_params=T.SweepPath,
        body=T.SweepStateBody,
        responses={200: T.SweepRow},
    )
    async def patch_sweep(self, r: In) -> Response:
        p = r.path
        if not await run_in_threadpool(self.tables.set_state, p.project, p.sweep_id, r.body.state):
            await self._need(p)  # the 404
        return json_response(await self._need(p))

    @endpoint(
        "GET",
        "/projects/{project}/sweeps/{sweep_id}/trials",
        scope="read",
        summary="A sweep's trials by number",
        path_params=T.SweepPath,
        responses={200: T.TrialList},
    )
    async def list_trials(self, r: In) -> Response:
        p = r.path
        await self._need(p)
        trials = await run_in_threadpool(self.tables.trials, p.project, p.sweep_id)
        return json_response({"trials": trials})

    @endpoint(
        "POST",
        "/projects/{project}/sweeps/{sweep_id}/trials",
        scope="write",
        summary="Claim a trial number (409 when another agent has it: sample again)",
        path_params=T.SweepPath,
        body=T.TrialBody,
        responses={201: T.TrialCreated},
    )
    async def add_trial(self, r: In) -> Response:
        p = r.path
        trial = _check_trial(r.raw, partial=False)
        await self._need(p)
        if not await run_in_threadpool(self.tables.add_trial, p.project, p.sweep_id, trial):
            raise Problem(
                409,
                "trial_exists",
                f"trial {trial['number']} of sweep {p.sweep_id} exists",
                "number",
            )
        return json_response({"trial": trial}, 201)

    @endpoint(
        "PATCH",
        "/projects/{project}/sweeps/{sweep_id}/trials/{number}",
        scope="write",
        summary="Update a trial's members (optionally only while it runs)",
        path_params=T.TrialPath,
        query=T.TrialUpdateQuery,
        body=T.TrialFields,
        responses={200: T.TrialUpdated},
    )
    async def update_trial(self, r: In) -> Response:
        p = r.path
        fields = _check_trial(r.raw, partial=True)
        await self._need(p)
        updated = False
        if fields:
            updated = await run_in_threadpool(
                self.tables.update_trial,
                p.project,
                p.sweep_id,
                int(p.number),
                fields,
                r.query.only_running,
            )
        return json_response({"updated": updated})

    @endpoint(
        "GET",
        "/projects/{project}/sweeps/{sweep_id}/importance",
        scope="read",
        summary="Parameter importance over finished trials (needs optuna on the server)",
        path_params=T.SweepPath,
        responses={200: T.SweepImportance},
    )
    async def sweep_importance(self, r: In) -> Response:
        p = r.path
        sweep = await self._need(p)
        trials = await run_in_threadpool(self.tables.trials, p.project, p.sweep_id)
        key = (p.project, p.sweep_id, sum(t["state"] == "finished" for t in trials))
        out = self._importance.get(key)
        if out is None:
            out = await run_in_threadpool(importance, sweep, trials)
            if len(self._importance) > 256:
                self._importance.clear()
            self._importance[key] = out
        return json_response(out)

    @endpoint(
        "GET",
        "/projects/{project}/sweeps/{sweep_id}/runs",
        scope="read",
        summary="The runs of the sweep's project whose metadata names this sweep, with their trial",
        path_params=T.SweepPath,
        responses={200: T.SweepRunList},
    )
    async def sweep_runs(self, r: In) -> Response:
        p = r.path
        runs = await run_in_threadpool(self.tables.runs, p.project, p.sweep_id)
        return json_response({"runs": runs})

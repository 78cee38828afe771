"""``wisp.init()``: settings, the run directory, process hooks, then a Run."""

from __future__ import annotations

import os
import time
from collections.abc import Mapping

from wisp import _run, _rundir
from wisp._protocol import (
    MAX_NAME_LENGTH,
    MAX_NOTES_LENGTH,
    MAX_PROJECT_LENGTH,
    MAX_TAG_LENGTH,
    MAX_TAGS,
    entity_problem,
    is_valid_id,
    name_problem,
    project_entity,
    project_problem,
)
from wisp._run import Run
from wisp._settings import Settings, read_environ
from wisp.errors import UsageError

TYPE_CHECKING = False  # typing costs ~15 ms to import; only type checkers need it
if TYPE_CHECKING:
    from typing import Any

__all__ = ["WANDB_ONLY_ARGS", "start_run", "wandb_only_args"]

#: ``wandb.init()`` arguments wisp accepts and ignores (one warning lists them), so
#: ``import wisp as wandb`` keeps working.  ``config_exclude_keys``,
#: ``config_include_keys``, ``entity``, ``reinit`` and ``save_code`` are honoured rather than
#: ignored.
WANDB_ONLY_ARGS = frozenset(
    {
        "entity",
        "reinit",
        "anonymous",
        "save_code",
        "magic",
        "sync_tensorboard",
        "tensorboard",
        "monitor_gym",
        "allow_val_change",
        "config_exclude_keys",
        "config_include_keys",
        "force",
        "fork_from",
        "resume_from",
    }
)
_HONOURED = (
    "config_exclude_keys",
    "config_include_keys",
    "entity",
    "reinit",
    "save_code",
    "fork_from",  # wisp._lineage
    "resume_from",
)

_ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz"
_ADJECTIVES = [
    "amber",
    "autumn",
    "bold",
    "brisk",
    "calm",
    "crisp",
    "dapper",
    "eager",
    "fancy",
    "gentle",
    "glad",
    "hardy",
    "icy",
    "jolly",
    "keen",
    "lively",
    "lucid",
    "mellow",
    "misty",
    "noble",
    "olive",
    "proud",
    "quiet",
    "rapid",
    "rosy",
    "silent",
    "snowy",
    "sunny",
    "swift",
    "tidy",
    "vivid",
    "warm",
    "witty",
]
_NOUNS = [
    "badger",
    "breeze",
    "brook",
    "canyon",
    "cedar",
    "comet",
    "dawn",
    "delta",
    "ember",
    "falcon",
    "fern",
    "forest",
    "galaxy",
    "grove",
    "harbor",
    "heron",
    "island",
    "lagoon",
    "maple",
    "meadow",
    "nebula",
    "oasis",
    "orbit",
    "otter",
    "pine",
    "prairie",
    "quartz",
    "river",
    "sparrow",
    "summit",
    "tundra",
    "willow",
]


def new_run_id() -> str:
    return "".join(_ALPHABET[b % 36] for b in os.urandom(8))


def _default_name(run_id: str, *, shared: bool = False) -> str:
    if shared:  # ranks sharing a run agree on its name without talking
        import hashlib

        raw = hashlib.sha256(run_id.encode()).digest()
    else:
        raw = os.urandom(2)
    return f"{_ADJECTIVES[raw[0] % len(_ADJECTIVES)]}-{_NOUNS[raw[1] % len(_NOUNS)]}-{run_id[:4]}"


def _check_str(what: str, value: Any, max_len: int = MAX_NAME_LENGTH) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise UsageError(f"init() {what} must be a string, got {type(value).__name__} {value!r}")
    problem = name_problem(value, max_len)  # the server refuses these run fields (protocol)
    if problem is not None:
        raise UsageError(f"init() {what} {problem}")
    return value


def wandb_only_args(kwargs: Mapping[str, Any], config: Any, own: tuple[str, ...] = ()) -> Any:
    """Check ``init(**kwargs)``: refuse unknown names, warn once about ignored wandb ones.

    ``own`` is init()'s own parameter names (suggested for a typo first).  Returns
    ``config`` filtered by ``config_exclude_keys`` / ``config_include_keys``.
    """
    unknown = sorted(k for k in kwargs if k not in WANDB_ONLY_ARGS)
    if unknown:
        from wisp._settings import _did_you_mean

        takes = (*own, *_HONOURED)
        ignored = sorted(set(WANDB_ONLY_ARGS) - set(_HONOURED))

        def which(k: str) -> str:  # a typo of init()'s own names first, then wandb's
            return f"{k!r}{_did_you_mean(k, takes) or _did_you_mean(k, ignored)}"

        raise UsageError(
            f"init() got unexpected argument(s) {'; '.join(map(which, unknown))}. "
            f"init() takes {', '.join(takes)}, and accepts (and ignores) these wandb-only "
            f"ones: {', '.join(ignored)}"
        )
    ignored = sorted(k for k in kwargs if k not in _HONOURED)
    if ignored:
        import warnings

        from wisp.errors import WispWarning

        warnings.warn(
            f"wisp: init() ignores wandb-only argument(s) {', '.join(ignored)}",
            WispWarning,
            stacklevel=3,
        )
    exclude, include = kwargs.get("config_exclude_keys"), kwargs.get("config_include_keys")
    if (exclude or include) and config is not None:
        if exclude and include:
            raise UsageError("init() takes config_exclude_keys or config_include_keys, not both")
        if not isinstance(config, Mapping) and hasattr(config, "__dict__"):
            config = vars(config)
        if isinstance(config, Mapping):
            keys = set(exclude or include or ())
            config = {k: v for k, v in config.items() if (k in keys) == bool(include)}
    return config


def _full_project(project: str, entity: Any) -> str:
    """``entity/project`` when an entity is given (``project`` may name it already)."""
    if entity is None or entity == "":
        return project
    if not isinstance(entity, str):
        raise UsageError(f"init() entity must be a string, got {entity!r}")
    if entity_problem(entity) is not None:
        raise UsageError(f"init() entity {entity_problem(entity)}")
    owner, name = project_entity(project)
    if owner and owner != entity:
        raise UsageError(
            f"init() project {project!r} names the entity {owner!r} but entity is {entity!r}"
        )
    return f"{entity}/{name}"


def start_run(
    *,
    project: str | None,
    name: str | None,
    config: Any,
    tags: Any,
    notes: str | None,
    group: str | None,
    job_type: str | None,
    dir: str | None,  # noqa: A002
    mode: str | None,
    id: str | None,  # noqa: A002
    resume: str | bool | None,
    settings: Settings | Mapping[str, Any] | None,
    ranks: str | None,
    finish_previous: bool = True,
    entity: str | None = None,
    fork_from: str | None = None,
    resume_from: str | None = None,
) -> Run:
    """A new run.  ``finish_previous`` (reinit): finish this process's live runs first.

    ``entity``: the user or team owning the project (else ``WISP_ENTITY``/``WANDB_ENTITY``);
    the run's project is then ``entity/project`` on the server."""
    from wisp._wandb_env import init_from_env

    env = init_from_env(read_environ())  # WISP_*, else WANDB_*, under explicit arguments
    if env:
        name, notes, group, job_type = (
            name or env.get("name"),
            notes or env.get("notes"),
            group or env.get("group"),
            job_type or env.get("job_type"),
        )
        tags = tags if tags is not None else env.get("tags")
        id = id or env.get("id")  # noqa: A001
        resume = resume if resume is not None else env.get("resume")
    overrides: dict[str, Any] = {}
    if mode is not None:
        overrides["mode"] = mode
    if dir is not None:
        overrides["dir"] = os.fspath(dir)
    if ranks is not None:
        overrides["ranks"] = ranks
    s = Settings.resolve(settings)
    if overrides:
        s = s._replaced("init() arguments", overrides)
    if s.mode is None:
        s = s.replace(mode="online" if s.server_url else "offline")
    if s.mode == "online":
        from wisp._upload._live import check_settings

        check_settings(s)

    if os.environ.get("WISP_SWEEP_ID"):  # a sweep trial: the agent's parameters (wisp.sweeps)
        from wisp.sweeps._hook import sweep_args

        id, config, project = sweep_args(id, config, project)  # noqa: A001
    project = (
        _check_str("project", project, MAX_PROJECT_LENGTH) or env.get("project") or "uncategorized"
    )
    project = _full_project(project, entity if entity is not None else env.get("entity"))
    if project_problem(project) is not None:
        raise UsageError(f"init() project {project!r} {project_problem(project)}")
    name = _check_str("name", name)
    notes = _check_str("notes", notes, MAX_NOTES_LENGTH)
    group = _check_str("group", group)
    job_type = _check_str("job_type", job_type)
    if id is not None:
        _check_str("id", id)
        if not is_valid_id(id):
            raise UsageError(f"init() id must be 1-64 letters, digits, '-' or '_', got {id!r}")
    tag_list: list[str] = []
    if tags is not None:
        if isinstance(tags, str) or not all(isinstance(t, str) for t in tags):
            raise UsageError(f"init() tags must be a list of strings, got {tags!r}")
        tag_list = list(dict.fromkeys(tags))
        if len(tag_list) > MAX_TAGS:
            raise UsageError(f"init() tags: at most {MAX_TAGS} tags, got {len(tag_list)}")
        for t in tag_list:
            _check_str(f"tag {t[:40]!r}", t, MAX_TAG_LENGTH)
    if config is not None and not isinstance(config, Mapping):
        if hasattr(config, "__dict__"):
            config = vars(config)
        else:
            raise UsageError(f"init() config must be a dict, got {type(config).__name__}")
    if resume not in (None, False, True, "allow", "must", "never", "auto"):
        raise UsageError(f"init() resume must be 'allow', 'must' or 'never', got {resume!r}")
    fork = back = None
    if fork_from is not None or resume_from is not None:
        from wisp._lineage import check_branch_args

        fork, back = check_branch_args(fork_from, resume_from, resume, id)
        if back is not None:  # a rewind resumes the run it names
            id, resume = back.run_id, "must"  # noqa: A001

    # a second init() in one process finishes the live runs first (notebook cells re-run),
    # unless reinit="create_new" keeps them
    if finish_previous:
        from wisp import _current

        previous = [r for r in (_current.run, *_run.live_runs()) if r is not None]
        _current.run = None
        for r in dict.fromkeys(previous):
            r.finish()
    if s.silent:
        import logging

        logging.getLogger("wisp").setLevel(logging.ERROR)

    from wisp import _ranks

    rank = _ranks.detect()
    if rank is not None and rank.rank != 0 and s.ranks == "zero":
        s = s.replace(mode="disabled")  # only rank 0 records unless ranks="all"
    shared = rank is not None and s.ranks == "all" and s.mode != "disabled"
    if shared and (fork or back):
        raise UsageError("init(ranks='all') cannot fork_from or resume_from a run")
    resumed = forked = None
    if fork is not None and s.mode != "disabled":
        from wisp._lineage import find_fork

        forked = find_fork(os.path.abspath(s.dir or os.getcwd()), fork)
        if project_entity(project)[1] == "uncategorized" and forked.parent_project:
            project = forked.parent_project
        config = forked.merge_config(config)
    if resume not in (None, False) and s.mode != "disabled" and not shared:
        from wisp._resume import find_resumable

        if back is not None:
            from wisp._lineage import check_rewind

            check_rewind(os.path.abspath(s.dir or os.getcwd()), back)
        resumed = find_resumable(os.path.abspath(s.dir or os.getcwd()), id, resume)
        if resumed is not None and back is not None:
            from wisp._lineage import rewind

            resumed = rewind(back, resumed)
        if resumed is not None:
            name = name or resumed.name
            if project_entity(project)[1] == "uncategorized" and resumed.project:
                project = resumed.project
            config = resumed.merge_config(config)
    run_id = id or (_ranks.shared_run_id() if shared else new_run_id())
    if id is not None and resumed is None and not shared and s.mode != "disabled":
        from wisp._resume import refuse_live_twin

        refuse_live_twin(os.path.abspath(s.dir or os.getcwd()), run_id)
    name = name or _default_name(run_id, shared=shared)
    if s.mode == "disabled":
        return Run(
            settings=s,
            project=project,
            name=name,
            run_id=run_id,
            run_dir=None,
            tags=tag_list,
            notes=notes,
            group=group,
            job_type=job_type,
            config=config,
            disabled=True,
        )
    from wisp import _hooks

    _hooks.install(signals=s.signals, exit_timeout=s.exit_timeout)
    base = os.path.abspath(s.dir or os.getcwd())
    stamp = time.strftime("%Y%m%d_%H%M%S", time.localtime())
    dir_name = _rundir.dir_name(stamp, run_id)
    if resumed is not None:
        dir_name = os.path.basename(resumed.run_dir)
    files = _rundir.rank_file_names(0)
    try:
        if shared:
            assert rank is not None
            files = _rundir.rank_file_names(rank.rank)
            runs_dir = os.path.join(base, _rundir.RUNS_DIR)
            dir_name = _ranks.claim_run_dir(runs_dir, run_id, stamp, files[0])
        run_dir = os.path.join(base, _rundir.RUNS_DIR, dir_name)
        os.makedirs(run_dir, exist_ok=True)
    except OSError as exc:
        from wisp.errors import RunFileError

        raise RunFileError(f"cannot create run directory under {base}: {exc}") from exc
    run = Run(
        settings=s,
        project=project,
        name=name,
        run_id=run_id,
        run_dir=run_dir,
        tags=tag_list,
        notes=notes,
        group=group,
        job_type=job_type,
        config=config,
        files=files,
        rank=rank._asdict() if rank is not None else None,
    )
    _run.register(run)
    if resumed is not None:
        resumed.apply(run)
        run.mark_resumed()
        if back is not None:
            from wisp._lineage import note_rewind

            note_rewind(run, back.step)
    if forked is not None:
        forked.apply(run)
        if s.mode == "online":
            forked.upload_parent(s)
    if s.mode == "online":
        from wisp._upload._live import attach
        from wisp.errors import FatalApiError

        try:
            attach(run)
        except FatalApiError:  # the server refused the run (its key): it never started
            _discard(run, keep_dir=resumed is not None or shared)
            raise
    if not s.silent and (rank is None or rank.rank == 0):
        note = None
        if forked is not None:
            note = f"forked from run {forked.moment.run_id} at step {forked.moment.step}"
        elif back is not None and resumed is not None and resumed.extra:
            aside = resumed.extra["rewind"]["rows"]
            note = f"rewound to step {back.step}: {aside} later row(s) set aside"
        _announce(run, base, resumed=resumed is not None, note=note)
    from wisp import _extras

    _extras.start(run)  # after the message: console capture does not record it
    return run


def _discard(run: Run, *, keep_dir: bool) -> None:
    """Close a run whose start failed; remove its directory unless it holds earlier data."""
    run.finish(exit_code=1, state="failed")
    if not keep_dir and run.dir is not None:
        import shutil

        shutil.rmtree(run.dir, ignore_errors=True)


def _announce(run: Run, base: str, *, resumed: bool, note: str | None = None) -> None:
    """Where the run is written and how to see it: two ``wisp:`` lines on stderr, as wandb
    prints at init (``silent`` turns them off); a fork or a rewind says so in a line between."""
    import sys

    what = "resumed run" if resumed else ("offline run" if run.url is None else "run")
    lines = [f"wisp: {what} {run.name} ({run.id}) is written to {run.dir}\n"]
    if note:
        lines.append(f"wisp: {note}\n")
    if run.url is not None:
        lines.append(f"wisp: view it at {run.url}\n")
    else:
        here = os.path.abspath(os.environ.get("WISP_DIR") or os.getcwd())
        ui = "wisp ui" if base == here else f"wisp ui --dir {base}"
        lines.append(f"wisp: view it with `{ui}`; `wisp sync {run.dir}` uploads it to a server\n")
    try:
        sys.stderr.write("".join(lines))
        sys.stderr.flush()
    except (OSError, ValueError, AttributeError):
        pass  # no usable stderr (closed, or None under pythonw): the run goes on

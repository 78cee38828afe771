"""wandb's ``Run`` attributes and methods, on wisp's Run (``import wisp as wandb``).

``run.path`` is ``entity/project/run_id`` as in wandb (the run file is
``run.file_path``); ``entity`` is the user or team owning the project on the server, from
``init(entity=...)``, else ``WISP_ENTITY``/``WANDB_ENTITY``, else ``""`` (a project named
without an owner; then ``run.path`` is ``project/run_id``).  ``run.project`` is the project's
name without its entity, as in wandb; ``run.project_path`` is the full ``entity/project`` the
server files the run under.  Setting ``name``, ``tags`` or ``notes``
mid-run records the change in the run file, where readers and the server see it.
The methods (``watch``, ``alert``, ``save``, ...) are the module-level functions
applied to this run, so they work on runs made with ``reinit="create_new"`` too.
"""

from __future__ import annotations

import os

from wisp.errors import UsageError

TYPE_CHECKING = False  # typing costs ~15 ms to import; only type checkers need it
if TYPE_CHECKING:
    from typing import Any

    from wisp._run import Run

__all__ = ["WandbRunApi"]


class WandbRunApi:
    """The wandb-shaped part of :class:`wisp.Run` (a mixin; Run holds the state)."""

    _name: str
    _tags: list[str]
    _notes: str | None
    _entity: str = ""
    _resumed: bool = False
    # provided by Run
    id: str
    project: str
    mode: str
    created_at: float
    dir: str | None

    # -- identity ------------------------------------------------------------------------------

    @property
    def name(self) -> str:
        return self._name

    @name.setter
    def name(self, value: str) -> None:
        if not isinstance(value, str) or not value:
            raise UsageError(f"run.name must be a non-empty string, got {value!r}")
        self._name = value
        self._identity_changed()

    @property
    def tags(self) -> list[str]:
        return self._tags

    @tags.setter
    def tags(self, value: Any) -> None:
        if isinstance(value, str) or not all(isinstance(t, str) for t in value):
            raise UsageError(f"run.tags must be a list of strings, got {value!r}")
        self._tags = list(dict.fromkeys(value))
        self._identity_changed()

    @property
    def notes(self) -> str | None:
        return self._notes

    @notes.setter
    def notes(self, value: str | None) -> None:
        if value is not None and not isinstance(value, str):
            raise UsageError(f"run.notes must be a string, got {type(value).__name__}")
        self._notes = value
        self._identity_changed()

    def _identity_changed(self) -> None:
        if getattr(self, "_live", False):
            self._as_run().update_identity()

    def _as_run(self) -> Run:
        return self  # type: ignore[return-value]

    @property
    def entity(self) -> str:
        """The user or team owning the run's project (``init(entity=...)``), or ``""``."""
        return self._entity

    @property
    def project_path(self) -> str:
        """The project's full name on the server: ``entity/project``, or ``project``."""
        return f"{self._entity}/{self.project}" if self._entity else self.project

    @property
    def path(self) -> str:
        """``entity/project/run_id`` as in wandb (``project/run_id`` without an entity);
        ``wisp.Api().run(run.path)`` finds the run (the run file is ``file_path``)."""
        return f"{self.project_path}/{self.id}"

    @property
    def offline(self) -> bool:
        """True unless the run uploads as it goes (``mode="online"``)."""
        return self.mode != "online"

    @property
    def disabled(self) -> bool:
        return self.mode == "disabled"

    @property
    def start_time(self) -> float:
        """When the run started (seconds since the epoch)."""
        return self.created_at

    @property
    def resumed(self) -> bool:
        """True when ``init(resume=...)`` continued an earlier run."""
        return self._resumed

    def mark_resumed(self) -> None:
        """Called by ``init()`` when it resumed an earlier run."""
        self._resumed = True

    def project_name(self) -> str:
        """The project (wandb's ``run.project_name()``)."""
        return self.project

    def get_url(self) -> str | None:
        """The run's dashboard page (``run.url``): online runs only, else None."""
        url: str | None = getattr(self, "url", None)
        return url

    def get_project_url(self) -> str | None:
        """The dashboard page of the run's project, beside :meth:`get_url`; else None."""
        url = self.get_url()
        return url.rsplit("/r/", 1)[0] if url else None

    def _label(
        self,
        code: str | None = None,
        repo: str | None = None,
        code_version: str | None = None,
        **kwargs: Any,
    ) -> None:
        """wandb's usage telemetry label (``run._label(code="transformers_trainer")``,
        called by integrations); wisp records no telemetry, so it keeps nothing."""

    # -- methods: the module-level functions, on this run ------------------------------------

    def log_artifact(
        self,
        artifact_or_path: Any,
        name: str | None = None,
        type: str | None = None,  # noqa: A002 - wandb's name
        aliases: list[str] | None = None,
        tags: list[str] | None = None,
    ) -> Any:
        """Log a ``wisp.Artifact`` (or a file/dir path) as produced by this run; returns at
        once, the work goes on in the background (see docs/artifacts.md)."""
        from wisp.artifacts._api import log_artifact

        run = self._as_run()
        if not run.live:
            run._inactive("log_artifact()")
        return log_artifact(run, artifact_or_path, name, type, aliases, tags)

    def use_artifact(
        self,
        artifact_or_name: Any,
        type: str | None = None,  # noqa: A002
        aliases: list[str] | None = None,
        use_as: str | None = None,
    ) -> Any:
        """Declare this run consumes ``"name:alias"`` / ``"name:vN"``; returns the Artifact."""
        from wisp.artifacts._api import use_artifact

        return use_artifact(self._as_run(), artifact_or_name, type, aliases, use_as)

    def watch(
        self,
        models: Any,
        criterion: Any = None,
        log: str | None = "gradients",
        log_freq: int = 100,
        idx: int | None = None,
        log_graph: bool = False,
    ) -> None:
        """``wisp.watch`` on this run."""
        from wisp.integrations._watch import watch

        watch(models, criterion, log, log_freq, idx, log_graph, run=self._as_run())

    def unwatch(self, models: Any = None) -> None:
        """``wisp.unwatch``."""
        from wisp.integrations._watch import unwatch

        unwatch(models)

    def alert(self, title: str, text: str, level: Any = None, wait_duration: Any = None) -> Any:
        """``wisp.alert`` on this run."""
        from wisp.integrations._alert import alert

        return alert(title, text, level, wait_duration, run=self._as_run())

    def save(
        self,
        glob_str: str | os.PathLike[str],
        base_path: str | os.PathLike[str] | None = None,
        policy: str = "now",
    ) -> list[str]:
        """``wisp.save`` on this run."""
        from wisp.integrations._files import save

        return save(glob_str, base_path, policy, run=self._as_run())

    def log_code(
        self,
        root: str | os.PathLike[str] = ".",
        name: str | None = None,
        include_fn: Any = None,
        exclude_fn: Any = None,
    ) -> list[str]:
        """Save source files under ``root`` into the run's ``files/code/``."""
        from wisp.integrations._files import log_code

        return log_code(root, name, include_fn, exclude_fn, run=self._as_run())

    def mark_preempting(self) -> None:
        """Record that the run is about to be preempted (an ALERT record, level WARN).

        wisp runs need no mark to be resumed: ``init(id=..., resume="allow")`` continues
        any run, and a signal-killed run is recorded as ``killed``.
        """
        run = self._as_run()
        if run.live:
            from wisp.integrations._alert import alert

            alert("preempting", f"run {run.id} is being preempted", "WARN", run=run)

    def restore(
        self,
        name: str,
        run_path: str | None = None,
        replace: bool = False,
        root: str | None = None,
    ) -> Any:
        """``wisp.restore`` (default: this run's saved files)."""
        from wisp.integrations._files import restore

        return restore(name, run_path or self.id, replace, root)

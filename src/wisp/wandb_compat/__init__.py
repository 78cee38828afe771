"""``import wandb`` that resolves to wisp, for library code you do not control.

Mirrors the module surface of wandb 0.30 that framework integrations use (Lightning's
``WandbLogger``, Transformers' ``WandbCallback``, Keras' ``WandbMetricsLogger``, ...).
Two ways to activate it:

- ``wisp.install_as_wandb()`` in a script, before the library imports wandb;
- the ``wandb`` distribution built from ``compat/wandb`` in this repository, installed
  *instead of* the real wandb: its ``wandb/__init__.py`` calls :func:`install`.

Once installed, ``sys.modules["wandb"]`` is this module and ``wandb.<sub>`` imports
resolve to ``wisp.wandb_compat.<sub>`` (a meta-path finder), so each submodule exists
once.  Attributes not defined here come from :mod:`wisp` at the moment they are read
(module ``__getattr__``), so ``wandb.run``, ``wandb.config`` and ``wandb.summary``
follow the live run.  ``wandb.Artifact``, ``log_artifact`` and ``use_artifact`` are
wisp's artifacts (docs/artifacts.md), so libraries' model logging works; ``log_model``
and ``link_model`` (no registry: logged, not linked) are defined here.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys

import wisp
from wisp.errors import RunStateError, UsageError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from types import ModuleType
    from typing import Any

__all__ = [
    "Error",
    "install",
    "link_model",
    "log_model",
    "require",
    "setup",
    "teardown",
    "termerror",
    "termlog",
    "termwarn",
]

#: The wandb API version this module mirrors.
__version__ = "0.30.0"
WANDB_API_VERSION = __version__

#: wandb's base exception; wisp's errors derive from WispError.
Error = wisp.WispError

_PREFIX = "wisp.wandb_compat"
_said: set[str] = set()


def _term(level: str, string: str, newline: bool, repeat: bool, prefix: bool) -> None:
    if not repeat:
        if string in _said:
            return
        _said.add(string)
    head = f"wandb: {level}" if prefix else ""
    sys.stderr.write(head + str(string) + ("\n" if newline else ""))


def termlog(
    string: str = "", newline: bool = True, repeat: bool = True, prefix: bool = True
) -> None:
    """Print a message to stderr, as ``wandb.termlog`` (``repeat=False`` prints it once)."""
    _term("", string, newline, repeat, prefix)


def termwarn(string: str, newline: bool = True, repeat: bool = True, prefix: bool = True) -> None:
    """Print a warning to stderr, as ``wandb.termwarn``."""
    _term("WARNING ", string, newline, repeat, prefix)


def termerror(string: str, newline: bool = True, repeat: bool = True, prefix: bool = True) -> None:
    """Print an error to stderr, as ``wandb.termerror``."""
    _term("ERROR ", string, newline, repeat, prefix)


def require(requirement: str | Sequence[str] | None = None, experiment: Any = None) -> None:
    """wandb's feature flags (``"service"``, ``"core"``): wisp needs none; accepted."""


def setup(settings: Any = None) -> None:
    """wandb starts its service process here; wisp has none.  Accepted."""


def teardown(exit_code: int | None = None) -> None:
    """Finish the current run (wandb also stops its service process)."""
    wisp.finish(exit_code or 0)


def log_model(
    path: str | os.PathLike[str], name: str | None = None, aliases: list[str] | None = None
) -> Any:
    """Log a model file or folder as a ``model`` artifact of the current run, as
    ``wandb.log_model`` (default name ``run-<id>-<base name>``); returns the
    :class:`wisp.Artifact` (wandb returns None)."""
    run = _live_run("log_model()")
    base = os.path.basename(os.path.abspath(os.fspath(path)))
    return run.log_artifact(
        path, name=name or f"run-{run.id}-{base}", type="model", aliases=aliases
    )


def link_model(
    path: str | os.PathLike[str],
    registered_model_name: str,
    name: str | None = None,
    aliases: list[str] | None = None,
) -> Any:
    """``wandb.link_model``: wisp has no model registry, so the model is logged as with
    :func:`log_model` and the link to ``registered_model_name`` is not made (warned once)."""
    termwarn(
        f"link_model(): wisp has no model registry; the model is logged as an artifact "
        f"but not linked to {registered_model_name!r}",
        repeat=False,
    )
    return log_model(path, name, aliases)


def _live_run(what: str) -> Any:
    run = wisp.run
    if run is None:
        raise RunStateError(f"You must call wandb.init() before wandb.{what}")
    return run


#: ``wandb.<name>`` submodules that resolve as attributes without an import, as in wandb
#: (``wandb.sdk.wandb_run.Run`` after a bare ``import wandb``).
_SUBMODULES = frozenset({"apis", "env", "errors", "integration", "sdk", "util", "wandb_run"})
#: Names defined by this package's own modules: name -> (module, attribute).
_OWN = {
    "Molecule": ("wisp.wandb_compat._media", "Molecule"),
    "Graph": ("wisp.wandb_compat._media", "Graph"),
    "controller": ("wisp.wandb_compat._controller", "controller"),
    "plot_table": ("wisp.plot", "plot_table"),
}


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(f"module 'wandb' has no attribute {name!r}")
    if name in _SUBMODULES:
        module = importlib.import_module(f"{_PREFIX}.{name}")
        if sys.modules.get("wandb") is sys.modules[__name__]:
            sys.modules.setdefault(f"wandb.{name}", module)
        return module
    if name in _OWN:
        where, attr = _OWN[name]
        return getattr(importlib.import_module(where), attr)
    try:
        return getattr(wisp, name)
    except AttributeError:
        raise AttributeError(f"module 'wandb' (wisp) has no attribute {name!r}") from None


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(dir(wisp)) | _SUBMODULES | set(_OWN))


class _AliasFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports ``wandb.X`` as ``wisp.wandb_compat.X`` (the same module object)."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if not fullname.startswith("wandb."):
            return None
        real = _PREFIX + fullname[len("wandb") :]
        try:
            found = importlib.util.find_spec(real)
        except ModuleNotFoundError:
            return None
        if found is None:
            return None
        return importlib.util.spec_from_loader(fullname, self, is_package=found.parent == real)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        return importlib.import_module(_PREFIX + spec.name[len("wandb") :])

    def exec_module(self, module: ModuleType) -> None:
        """The module ran when ``create_module`` imported it."""


def install() -> ModuleType:
    """Make ``import wandb`` (and ``wandb.sdk``, ``wandb.integration.keras``, ...) resolve
    to wisp in this process; returns the module.  Call it before a library imports wandb.

    Raises UsageError when the real wandb was already imported.
    """
    me = sys.modules[__name__]
    current = sys.modules.get("wandb")
    if current is not None and current is not me and getattr(current, "_WISP_DIST", None) is None:
        raise UsageError(
            "install_as_wandb(): the real wandb is already imported in this process; "
            "call wisp.install_as_wandb() before anything imports wandb"
        )
    if not any(isinstance(f, _AliasFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _AliasFinder())
    sys.modules["wandb"] = me
    for name, module in list(sys.modules.items()):  # submodules already imported
        if name.startswith(_PREFIX + "."):
            sys.modules.setdefault("wandb" + name[len(_PREFIX) :], module)
    return me

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
follow the live run.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys

import wisp
from wisp.errors import UsageError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from types import ModuleType
    from typing import Any

__all__ = [
    "Error",
    "install",
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


MODEL_LOGGING = (
    "wisp has no artifact store yet, so model logging through wandb artifacts is not "
    "supported: turn it off (Lightning WandbLogger(log_model=False), Transformers "
    "WANDB_LOG_MODEL=false, no WandbModelCheckpoint) and save checkpoints with wisp.save()"
)


def _unsupported(name: str) -> Any:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise UsageError(f"wandb.{name}(): {MODEL_LOGGING}")

    refuse.__name__ = refuse.__qualname__ = name
    return refuse


#: wandb names wisp does not provide yet: calling them raises UsageError naming the way
#: out.  A name wisp gains (``wisp.Artifact``) is forwarded instead.
_UNSUPPORTED = ("Artifact", "log_artifact", "use_artifact", "log_model", "link_model")


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(f"module 'wandb' has no attribute {name!r}")
    try:
        return getattr(wisp, name)
    except AttributeError:
        if name in _UNSUPPORTED:
            return _unsupported(name)
        raise AttributeError(f"module 'wandb' (wisp) has no attribute {name!r}") from None


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(dir(wisp)))


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

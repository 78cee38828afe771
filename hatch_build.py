"""Hatch build hook: every wheel and sdist ships the dashboard, or the build fails.

The dashboard (web/, TypeScript) is built by Vite into ``src/wisp/server/static`` (not
committed).  From a checkout, building a wheel or an sdist runs ``npm ci && npm run build``
in web/ first; the sdist then carries the built files, so a wheel built from an sdist needs
no Node.js.  Without npm, or when the build fails, the package build stops with a message
saying what to install: a server with no dashboard is never packaged silently.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

STATIC = "src/wisp/server/static"


class DashboardError(RuntimeError):
    """The dashboard could not be built into the package."""


class DashboardHook(BuildHookInterface):
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name not in ("wheel", "sdist") or version == "editable":
            return  # an editable install serves whatever `make web` built
        root = Path(self.root)
        index = root / STATIC / "index.html"
        from_sdist = (root / "PKG-INFO").is_file()
        if not from_sdist:
            build_dashboard(root / "web")
        if not index.is_file():
            where = "this sdist" if from_sdist else "web/ (npm run build)"
            raise DashboardError(
                f"wisp: the dashboard is missing: {index} was not built by {where}"
            )
        build_data["artifacts"].append(f"/{STATIC}/**")


def build_dashboard(web: Path) -> None:
    """``npm ci && npm run build`` in ``web``; a clear error when npm is missing or fails."""
    npm = shutil.which("npm")
    if npm is None:
        raise DashboardError(
            "wisp: building the package needs Node.js (npm) to build the dashboard in web/; "
            "install Node.js 20 or newer and build again (or build from an sdist, which "
            "carries the built dashboard)"
        )
    env = {**os.environ, "npm_config_audit": "false", "npm_config_fund": "false"}
    for args in (["ci"], ["run", "build"]):
        res = subprocess.run([npm, *args], cwd=web, env=env, capture_output=True, text=True)
        if res.returncode != 0:
            out = (res.stdout + res.stderr).strip()[-3000:]
            raise DashboardError(
                f"wisp: `npm {' '.join(args)}` in {web} failed (exit {res.returncode}):\n{out}"
            )

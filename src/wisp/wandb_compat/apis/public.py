"""``wandb.apis.public``: wandb's public API classes, which are wisp's (docs/api.md).

``Api`` reads runs from a wisp server (``WISP_SERVER_URL``, else ``WANDB_BASE_URL``) or a
local folder; ``Run``, ``Runs``, ``File``, ``Project`` are what it returns.
"""

from __future__ import annotations

from wisp.api import Api, File, Project, Run, Runs, User
from wisp.api._artifacts import ArtifactCollection
from wisp.artifacts._artifact import Artifact

__all__ = ["Api", "Artifact", "ArtifactCollection", "File", "Project", "Run", "Runs", "User"]

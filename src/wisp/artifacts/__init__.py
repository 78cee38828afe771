"""Artifacts: versioned, deduplicated datasets and models with lineage (docs/artifacts.md).

``wisp.Artifact`` builds one; ``run.log_artifact`` / ``run.use_artifact`` (and the
module-level ``wisp.log_artifact`` / ``wisp.use_artifact``) log and consume versions.
"""

from __future__ import annotations

from wisp.artifacts._artifact import Artifact, ArtifactEntry

__all__ = ["Artifact", "ArtifactEntry"]

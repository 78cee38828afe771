"""Reports: Markdown documents with live panels over runs (docs/reports.md).

``wisp.Report`` (``_report``) reads, builds, checks (``lint``), freezes and exports a report
file; the file format is ``_format`` (version 1), panels and run sets ``_panels``, the runs
behind them ``_source`` (a server or a local folder), panel data ``_data``, the HTML export
``_html`` and the import of wandb report specs ``_wandb``.  ``import wisp`` does not load
this package; PyYAML (the ``reports`` extra) is imported when a file is read or written.
"""

from __future__ import annotations

from wisp.reports._format import FORMAT_VERSION
from wisp.reports._panels import PANEL_TYPES, Panel, RunSet
from wisp.reports._report import Report

__all__ = ["FORMAT_VERSION", "PANEL_TYPES", "Panel", "Report", "RunSet"]

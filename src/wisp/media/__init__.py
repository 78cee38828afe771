"""Media values for ``log()``: :class:`Histogram`, :class:`Image` and :class:`Table`.

Each takes a private copy of its data when made (on the calling thread) and
does the expensive work (binning, PNG encoding, file writes) on the run's
writer thread.  Importing this package loads neither numpy nor Pillow.
"""

from __future__ import annotations

from wisp.media._histogram import Histogram
from wisp.media._image import Image
from wisp.media._table import Table

__all__ = ["Histogram", "Image", "Table"]

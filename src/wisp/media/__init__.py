"""Media values for ``log()``: Audio, Histogram, Html, Image, Object3D, Table and Video.

Each takes a private copy of its data when made (on the calling thread) and
does the expensive work (binning, PNG encoding, file writes) on the run's
writer thread.  Importing this package loads neither numpy nor Pillow.
"""

from __future__ import annotations

from wisp.media._audio import Audio
from wisp.media._histogram import Histogram
from wisp.media._html import Html
from wisp.media._image import Image
from wisp.media._object3d import Object3D
from wisp.media._table import Table
from wisp.media._video import Video

__all__ = ["Audio", "Histogram", "Html", "Image", "Object3D", "Table", "Video"]

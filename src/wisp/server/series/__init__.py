"""Numeric history: the chunk codec (``chunks``), writing (``points``) and reading (``read``)
chunk rows, downsampled series and history export (``buckets``), grouped series
(``grouped``)."""

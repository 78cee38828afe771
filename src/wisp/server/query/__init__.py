"""Runs queries: the filter language, one grammar (``filter``), and its compilation to bound
SQL with sorting and pagination (``runs``)."""

"""The database behind one facade.

``facade`` (:class:`~wisp.server.store.facade.Store`, ``open_store``), ``db`` (engines,
migrations, transactions), ``dialect`` (every SQLite/PostgreSQL difference), ``schema`` (the
tables), one module per table group (``runs``, ``records``, ``projects``, ``users``, ``keys``,
``limits``, ``media``, ``console``, ``edit``, ``batch``, ``artifacts``, ``sweeps``),
``ingest`` (a batch validated into columns before its transaction) and the Alembic
``migrations/``.
"""

"""Alembic migrations of the server database (see ``_schema.py``)."""

"""Endpoint handlers, one module per resource.

Each module holds one class of ``@endpoint``-declared handlers taking
``(store, settings, blobs)``; its request/response types are the module of the same name in
:mod:`wisp.server.schemas`, its tables and queries the one in :mod:`wisp.server.store`.
"""

"""Request/response types (msgspec Structs), one module per resource.

Named as their handlers in :mod:`wisp.server.views`; ``runs`` also holds the shared ones
(ids, project names, the error body).
"""

"""Who may do what: pure allow/deny decisions over small values (``matrix``).

The middleware applying them to requests is :mod:`wisp.server.http.auth`.
"""

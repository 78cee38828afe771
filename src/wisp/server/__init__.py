"""The wisp tracking server: HTTP API v1 over SQLite or PostgreSQL (see docs/http-api.md).

Importing this package does nothing; the names below load their modules on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from wisp.server._app import create_app
    from wisp.server._manage import (
        media_gc,
        projects_set,
        teams_add,
        teams_list,
        teams_member,
        users_add,
        users_disable,
        users_list,
        users_reset_password,
    )
    from wisp.server._serve import keys_create, keys_list, keys_revoke, serve
    from wisp.server._settings import ServerSettings
    from wisp.server._store import Store, open_store

__all__ = [
    "ServerSettings",
    "Store",
    "create_app",
    "keys_create",
    "keys_list",
    "keys_revoke",
    "media_gc",
    "open_store",
    "projects_set",
    "serve",
    "teams_add",
    "teams_list",
    "teams_member",
    "users_add",
    "users_disable",
    "users_list",
    "users_reset_password",
]

_WHERE = {
    "create_app": "_app",
    "keys_create": "_serve",
    "keys_list": "_serve",
    "keys_revoke": "_serve",
    "serve": "_serve",
    "media_gc": "_manage",
    "projects_set": "_manage",
    "teams_add": "_manage",
    "teams_list": "_manage",
    "teams_member": "_manage",
    "users_add": "_manage",
    "users_disable": "_manage",
    "users_list": "_manage",
    "users_reset_password": "_manage",
    "ServerSettings": "_settings",
    "Store": "_store",
    "open_store": "_store",
}


def __getattr__(name: str) -> Any:
    mod = _WHERE.get(name)
    if mod is None:
        raise AttributeError(f"module 'wisp.server' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f"wisp.server.{mod}"), name)

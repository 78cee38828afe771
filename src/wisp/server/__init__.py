"""The wisp tracking server: HTTP API v1 over SQLite or PostgreSQL (see docs/http-api.md).

Importing this package does nothing; the names below load their modules on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from wisp.server.app import create_app
    from wisp.server.manage import (
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
    from wisp.server.serving import keys_create, keys_list, keys_revoke, serve
    from wisp.server.settings import ServerSettings
    from wisp.server.store.facade import Store, open_store

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
    "create_app": "app",
    "keys_create": "serving",
    "keys_list": "serving",
    "keys_revoke": "serving",
    "serve": "serving",
    "media_gc": "manage",
    "projects_set": "manage",
    "teams_add": "manage",
    "teams_list": "manage",
    "teams_member": "manage",
    "users_add": "manage",
    "users_disable": "manage",
    "users_list": "manage",
    "users_reset_password": "manage",
    "ServerSettings": "settings",
    "Store": "store.facade",
    "open_store": "store.facade",
}


def __getattr__(name: str) -> Any:
    mod = _WHERE.get(name)
    if mod is None:
        raise AttributeError(f"module 'wisp.server' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f"wisp.server.{mod}"), name)

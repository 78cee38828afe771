"""Server settings: one dataclass, filled by ``serve()`` from its arguments."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["ServerSettings", "default_data_dir"]


def default_data_dir() -> Path:
    """``$WISP_SERVER_DIR``, else ``$XDG_DATA_HOME/wisp/server`` (``~/.local/share``)."""
    env = os.environ.get("WISP_SERVER_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(Path.home(), ".local", "share")
    return Path(base) / "wisp" / "server"


@dataclass
class ServerSettings:
    """Everything the app factory needs; defaults suit a single-user local server."""

    db: str = ""
    media_dir: str = ""
    host: str = "127.0.0.1"
    port: int = 8080
    workers: int = 1
    no_auth: bool = False
    heartbeat_timeout: float = 300.0
    max_body_bytes: int = 64 * 1024 * 1024
    max_media_bytes: int = 1024 * 1024 * 1024
    static_dir: str = field(default_factory=lambda: str(Path(__file__).with_name("static")))
    migrate: bool = True

    def resolved(self) -> ServerSettings:
        """A copy with the database URL and media directory defaults filled in."""
        base = default_data_dir()
        db = self.db or f"sqlite:///{base / 'wisp.db'}"
        media = self.media_dir or str(base / "media")
        return ServerSettings(**{**self.__dict__, "db": db, "media_dir": media})

"""The shapes of the direct-upload endpoints (``views.uploads``), declared once as Structs."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec
from msgspec import Meta

__all__ = [
    "UploadBody",
    "UploadCompleteBody",
    "UploadDone",
    "UploadPart",
    "UploadPath",
    "UploadPlanned",
]

Sha256 = Annotated[str, Meta(pattern=r"^[0-9a-f]{64}$")]
Suffix = Annotated[str, Meta(pattern=r"^(\.[A-Za-z0-9]{1,10})?$")]
Size = Annotated[int, Meta(ge=0)]
Kind = Literal["media", "artifact"]


class UploadPath(msgspec.Struct, forbid_unknown_fields=True):
    sha256: Sha256


class UploadBody(msgspec.Struct, forbid_unknown_fields=True):
    """``POST /uploads/{sha256}``: where should the bytes of this blob go?"""

    kind: Kind  # media (a run's logged file) or artifact (a file of an artifact version)
    size: Size
    suffix: Suffix = ""  # media: the file's suffix (it sets the content type served)


class UploadCompleteBody(msgspec.Struct, forbid_unknown_fields=True):
    """``POST /uploads/{sha256}/complete``: the parts are sent; check and record the blob."""

    kind: Kind
    size: Size
    upload_id: Annotated[str, Meta(min_length=1, max_length=1024)]
    suffix: Suffix = ""


class UploadPart(msgspec.Struct):
    number: int  # 1-based
    offset: int  # where in the file the part starts
    size: int
    url: str  # presigned: PUT the part's bytes here, without credentials


class UploadPlanned(msgspec.Struct):
    """``stored``: held already; ``direct``: PUT the bytes to ``url`` (this server);
    ``presigned``: PUT each part to its URL, then call ``complete``."""

    sha256: str
    method: Literal["stored", "direct", "presigned"]
    url: str | None = None
    upload_id: str | None = None
    part_size: int | None = None
    parts: list[UploadPart] = []
    expires_in: int | None = None


class UploadDone(msgspec.Struct):
    sha256: str
    stored: bool

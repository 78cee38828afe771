"""Read what the real ``wandb`` package recorded offline (``run-<id>.wandb``), for comparisons.

The file is a 7-byte header (``:W&B``, magic 0xBEE1, version 0) then LevelDB log
records in 32 KiB blocks (crc32c u32, length u16, type u8: 1 full, 2 first, 3 middle,
4 last), each payload a ``wandb_internal_pb2.Record``.  wandb 0.30 ships no Python
reader, so this is one; it only needs the protobuf classes wandb installs.
"""

from __future__ import annotations

import glob
import json
import os
import struct
from typing import Any

_BLOCK = 32 * 1024
_HEADER = 7


def _payloads(data: bytes) -> list[bytes]:
    assert data[:4] == b":W&B", "not a wandb transaction log"
    out, pos, parts = [], _HEADER, b""
    while pos + 7 <= len(data):
        left = _BLOCK - pos % _BLOCK
        if left < 7:
            pos += left
            continue
        _crc, length, kind = struct.unpack_from("<IHB", data, pos)
        if kind == 0 and length == 0:  # zero padding
            pos += left
            continue
        body = data[pos + 7 : pos + 7 + length]
        pos += 7 + length
        if kind == 1:
            out.append(body)
        elif kind == 2:
            parts = body
        elif kind == 3:
            parts += body
        elif kind == 4:
            out.append(parts + body)
            parts = b""
    return out


def _key(item: Any) -> str:
    return "/".join(item.nested_key) if item.nested_key else item.key


class WandbOffline:
    """History rows, summary updates, config and metrics of one offline wandb run."""

    def __init__(self, base: str) -> None:
        from wandb.proto import wandb_internal_pb2 as pb

        (path,) = glob.glob(os.path.join(base, "wandb", "offline-run-*", "run-*.wandb"))
        self.run_dir = os.path.dirname(path)
        self.history: list[dict[str, Any]] = []
        self.summary: dict[str, Any] = {}
        self.config: dict[str, Any] = {}
        self.metrics: list[Any] = []
        self.run: Any = None
        with open(path, "rb") as f:
            raw = f.read()
        for payload in _payloads(raw):
            rec = pb.Record()
            rec.ParseFromString(payload)
            kind = rec.WhichOneof("record_type")
            if kind == "history":
                self.history.append({_key(i): json.loads(i.value_json) for i in rec.history.item})
            elif kind == "summary":
                for i in rec.summary.update:
                    self.summary[_key(i)] = json.loads(i.value_json)
            elif kind == "config":
                for i in rec.config.update:
                    self.config[_key(i)] = json.loads(i.value_json)
            elif kind == "metric":
                self.metrics.append(rec.metric)
            elif kind == "run":
                self.run = rec.run
                for i in rec.run.config.update:
                    self.config[_key(i)] = json.loads(i.value_json)

    def rows(self) -> list[dict[str, Any]]:
        """History rows without wandb's own ``_step``/``_timestamp``/``_runtime`` keys."""
        return [{k: v for k, v in r.items() if not k.startswith("_")} for r in self.history]

"""Peak server memory and time for one big ingest batch (issue 15: bounded ingestion).

Starts a real ``wisp server`` (SQLite, ``wisp.testing.Server``), posts one record batch
of about ``WISP_BENCH_MIB`` MiB of JSON (default 64: the server's body limit) holding
history rows of three metrics, and prints the server's peak RSS (``VmHWM``) before and
after, the rise, and the wall time of the request.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
import urllib.request
from pathlib import Path

from wisp.testing import Server


def _hwm_mib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) // 1024
    return 0


def main() -> None:
    mib = float(os.environ.get("WISP_BENCH_MIB", "64"))
    with tempfile.TemporaryDirectory() as tmp, Server(Path(tmp)) as srv:
        assert srv.proc is not None
        srv.get("/projects")
        base = _hwm_mib(srv.proc.pid)
        recs: list[dict[str, object]] = [{"type": 1, "data": {"project": "bench"}}]
        size, step = 0, 0
        while size < (mib - 1) * 2**20:
            rows = [
                [step + i, 1.0 + i, {"loss": 0.1234567 * i, "acc": 0.5, "lr": 1e-4}]
                for i in range(1000)
            ]
            step += 1000
            rec = {"type": 3, "data": {"rows": rows}}
            size += len(json.dumps(rec))
            recs.append(rec)
        body = json.dumps({"writer_id": "w", "first_seq": 0, "records": recs}).encode()
        del recs
        hdr = {"Authorization": f"Bearer {srv.key}", "Content-Type": "application/json"}
        req = urllib.request.Request(f"{srv.url}/api/v1/runs/big/records", body, hdr, method="POST")
        t0 = time.perf_counter()
        urllib.request.urlopen(req, timeout=600).close()
        wall = time.perf_counter() - t0
        peak = _hwm_mib(srv.proc.pid)
        print(
            f"ingest {len(body) / 2**20:.1f} MiB batch ({step} rows x 3 metrics): {wall:.1f} s; "
            f"server peak RSS {base} -> {peak} MiB (+{peak - base} MiB)"
        )


if __name__ == "__main__":
    main()

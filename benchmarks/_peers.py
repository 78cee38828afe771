"""Peers the benchmarks compare with, started the same way everywhere (not a benchmark)."""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

__all__ = ["extra_requirements", "start_mlflow_server", "stop"]

ROOT = Path(__file__).resolve().parent.parent


def extra_requirements(extra: str) -> list[str]:
    """The requirements of one of pyproject.toml's extras (``bench``: the peers' venv)."""
    import tomllib  # Python 3.11+, as the benchmarks' interpreter

    with open(ROOT / "pyproject.toml", "rb") as f:
        got: list[str] = tomllib.load(f)["project"]["optional-dependencies"][extra]
    return got


def start_mlflow_server(
    pg_url: str,
    work: Path,
    port: int,
    *,
    workers: int = 1,
    name: str = "bench",
    own_session: bool = False,
) -> tuple[subprocess.Popen[bytes], str] | str:
    """An ``mlflow server`` on ``pg_url`` (its own database) at ``port``, once it answers
    ``/health``: ``(process, base URL)``, or why it could not start (its log's path).
    ``own_session``: in a session of its own, as a service (bench_concurrent.py's doc)."""
    uri = pg_url.replace("postgresql://", "postgresql+psycopg://", 1)
    log_path = Path(tempfile.gettempdir()) / f"{name}_mlflow.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "mlflow", "server", "--backend-store-uri", uri,
             "--host", "127.0.0.1", "--port", str(port), "--workers", str(workers),
             "--default-artifact-root", str(work / "mlruns")],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=own_session,
        )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 180
    while True:
        try:
            urllib.request.urlopen(base + "/health", timeout=2).read()
            return proc, base
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                stop(proc)
                return f"skipped: the MLflow server did not start (see {log_path})"
            time.sleep(1)


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    proc.wait(30)


if __name__ == "__main__":  # `python benchmarks/_peers.py requirements bench` (the Makefile)
    if sys.argv[1:2] == ["requirements"]:
        print(" ".join(extra_requirements(sys.argv[2])))

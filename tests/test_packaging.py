"""Packaging: the built wheel carries the dashboard (hatch_build.py), or the build fails."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import time
import urllib.request
from pathlib import Path

import pytest

from wisp.testing import free_port

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow


def _need(what: str, ok: bool) -> None:
    if not ok:
        if os.environ.get("CI"):
            pytest.fail(f"{what} is required for the packaging tests in CI")
        pytest.skip(f"{what} is not available")


def _source_copy(dest: Path) -> Path:
    """The checkout as git sees it (tracked and untracked files, nothing ignored) in ``dest``."""
    _need("a git checkout", (ROOT / ".git").exists() and shutil.which("git") is not None)
    out = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "-z"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for rel in filter(None, out.split("\0")):
        src = ROOT / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    assert not (dest / "src/wisp/server/static").exists()  # the copy starts unbuilt
    return dest


def _clean_env(**extra: str) -> dict[str, str]:
    drop = ("WISP_", "PYTHONPATH", "VIRTUAL_ENV")
    return {**{k: v for k, v in os.environ.items() if not k.startswith(drop)}, **extra}


def _build(
    src: Path, out: Path, *args: str, env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    try:
        import build  # noqa: F401
    except ImportError:
        _need("the build package (pip install -e '.[test-packaging]')", False)
    cmd = [sys.executable, "-m", "build", "--outdir", str(out), *args, str(src)]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)


def _get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=5) as r:
        return bytes(r.read())


def test_built_wheel_serves_the_dashboard(tmp_path: Path) -> None:
    """An sdist and a wheel built from it install into a fresh venv whose `wisp server` serves the dashboard at /."""
    _need("npm", shutil.which("npm") is not None)
    src = _source_copy(tmp_path / "src")
    dist = tmp_path / "dist"
    res = _build(src, dist, env=_clean_env())  # sdist, then the wheel from that sdist
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    (wheel,) = dist.glob("wisp_tracker-*.whl")
    built = (src / "src/wisp/server/static/index.html").read_bytes()

    env_dir = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(env_dir)], check=True, timeout=120)
    py = env_dir / "bin" / "python"
    pip = [str(py), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)]
    subprocess.run(pip, check=True, timeout=300, env=_clean_env())
    # the server's dependencies come from this interpreter's environment, after the venv's own
    site = subprocess.run(
        [str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
        env=_clean_env(),
    ).stdout.strip()
    deps = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    (Path(site) / "_wisp_test_deps.pth").write_text("\n".join(sorted(deps)) + "\n")
    where = subprocess.run(
        [str(py), "-c", "import wisp.server; print(wisp.server.__file__)"],
        capture_output=True,
        text=True,
        env=_clean_env(),
        cwd=tmp_path,
    )
    assert where.returncode == 0, where.stderr
    assert where.stdout.strip().startswith(str(env_dir)), (
        where.stdout
    )  # the wheel, not the checkout

    port = free_port()
    cmd = [
        str(env_dir / "bin" / "wisp"),
        "server",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--db",
        f"sqlite:///{tmp_path / 'server.db'}",
        "--media-dir",
        str(tmp_path / "media"),
    ]
    env = _clean_env(WISP_CONFIG=str(tmp_path / "wisp-config.json"))
    proc = subprocess.Popen(
        cmd, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                _get(f"{url}/api/openapi.json")
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    err = proc.stderr.read().decode() if proc.stderr else ""
                    pytest.fail(f"wisp server from the wheel did not start: {err[-2000:]}")
                time.sleep(0.2)
        index = _get(f"{url}/")
        assert index == built
        assert b'<main id="app"' in index and b"not built" not in index
        script = index.split(b'src="./', 1)[1].split(b'"', 1)[0].decode()
        assert script.endswith(".js") and len(_get(f"{url}/{script}")) > 10_000
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
        if proc.stderr:
            proc.stderr.close()


def test_build_without_npm_fails_loudly(tmp_path: Path) -> None:
    """With no npm on PATH, building a wheel from a checkout stops with a message naming Node.js."""
    src = _source_copy(tmp_path / "src")
    no_npm = tmp_path / "bin"
    no_npm.mkdir()
    res = _build(src, tmp_path / "dist", "--wheel", env=_clean_env(PATH=str(no_npm)))
    assert res.returncode != 0
    assert "needs Node.js (npm) to build the dashboard" in res.stdout + res.stderr
    assert not list((tmp_path / "dist").glob("*.whl"))

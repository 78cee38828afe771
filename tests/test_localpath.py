"""Names that came from a server, a run or a foreign store never place (or read) a file outside the
folder the caller chose: the one rule (wisp._localpath.local_path) and every path that uses it."""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from wisp._localpath import local_path
from wisp.errors import UsageError

PG_HOST = os.environ.get("WISP_TEST_PG", "postgresql://postgres@127.0.0.1:5432")

HOSTILE = [
    "../escape.txt",
    "a/../../escape.txt",
    "/tmp/escape.txt",
    "\\escape.txt",
    "..\\escape.txt",
    "C:\\escape.txt",
    "c:escape.txt",
    "a/C:escape.txt",
    "//host/share/escape.txt",
    "nul\0byte",
    "",
    ".",
    "./",
]


@pytest.mark.parametrize("name", HOSTILE)
def test_local_path_refuses_names_outside_the_folder(tmp_path: Path, name: str) -> None:
    """Absolute names, drive letters, '..' parts, NUL and empty names are refused, naming the file."""
    with pytest.raises(UsageError, match="refused") as err:
        local_path(tmp_path, name)
    assert repr(name) in str(err.value)


def test_local_path_keeps_relative_names(tmp_path: Path) -> None:
    """Ordinary relative names (nested, '.' parts, backslashes as separators) land under root."""
    assert local_path(tmp_path, "a/b.txt") == os.path.join(tmp_path, "a", "b.txt")
    assert local_path(tmp_path, "./a//b.txt") == os.path.join(tmp_path, "a", "b.txt")
    assert local_path(tmp_path, "a\\b.txt") == os.path.join(tmp_path, "a", "b.txt")
    assert local_path(tmp_path, "..a/b..txt") == os.path.join(tmp_path, "..a", "b..txt")


def test_local_path_refuses_a_symlink_out_of_the_folder(tmp_path: Path) -> None:
    """A name through a symbolic link already in the folder that points elsewhere is refused."""
    (tmp_path / "root").mkdir()
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "root" / "link").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(UsageError, match="resolves outside"):
        local_path(tmp_path / "root", "link/x.txt")


# -- wisp.Api: File.download over a server (SQLite, PostgreSQL) and over a local folder ---------


@pytest.fixture(params=["sqlite", "postgresql"])
def server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    from wisp.testing import Server, temporary_postgres_database

    with contextlib.ExitStack() as stack:
        db = None
        if request.param == "postgresql":
            db = stack.enter_context(temporary_postgres_database(PG_HOST))
        yield stack.enter_context(Server(tmp_path / "server", db=db))


def _run_with_hostile_files(server: Any, local: Path) -> str:
    """A run (online) that saved one honest file and posted FILE records with hostile names."""
    import wisp
    from wisp._runfile import RecordType

    run = wisp.init(
        project="names",
        dir=str(local),
        settings={
            "server_url": server.url,
            "api_key": server.key,
            "system_metrics": False,
            "console": "off",
            "git": False,
        },
    )
    src = local / "honest.txt"
    src.write_bytes(b"honest")
    wisp.save(str(src))
    digest = hashlib.sha256(b"honest").hexdigest()

    def hostile() -> None:
        assert run.writer is not None
        for name in ("../../escape.txt", "/tmp/wisp-escape.txt", "C:\\escape.txt"):
            info = {"path": "files/honest.txt", "name": name, "kind": "file", "policy": "now"}
            run.writer.append(RecordType.FILE, {**info, "size": 6, "sha256": digest})

    run.on_writer(hostile)
    run.finish()
    return run.id


def test_api_file_download_refuses_hostile_names(server: Any, tmp_path: Path) -> None:
    """Files of a run whose FILE records name '../..', '/abs' or 'C:\\' are refused by
    File.download over the server and over the local folder; nothing is written outside root."""
    import wisp

    local = tmp_path / "local"
    local.mkdir()
    run_id = _run_with_hostile_files(server, local)
    root = tmp_path / "dl" / "root"
    apis = [wisp.Api(server.url, server.key), wisp.Api(dir=str(local))]
    for api in apis:
        files = {f.name: f for f in api.run(f"names/{run_id}").files()}
        assert Path(files["honest.txt"].download(str(root), replace=True)).read_bytes() == b"honest"
        hostile = [n for n in files if n != "honest.txt"]
        assert len(hostile) == 3, files
        for name in hostile:
            with pytest.raises(UsageError, match="refused"):
                files[name].download(str(root), replace=True)
        api.close()
    assert sorted(p.name for p in (tmp_path / "dl").rglob("*")) == ["honest.txt", "root"]
    assert not Path("/tmp/wisp-escape.txt").exists()


# -- artifacts: a version whose manifest (from a server, kept in the cache) names '..' ----------


def test_artifact_download_refuses_hostile_entries(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A version whose manifest has an entry named '../x' (or a digest that is not a sha256)
    writes nothing: download() and verify() refuse it, naming the entry."""
    from wisp.artifacts._api import use_artifact
    from wisp.artifacts._cache import Cache
    from wisp.errors import ArtifactError

    monkeypatch.setenv("WISP_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("WISP_MODE", "offline")
    digest = hashlib.sha256(b"x").hexdigest()
    cache = Cache()
    with cache.receive(digest) as f:
        f.write(b"x")
    for i, entries in enumerate(
        [
            {
                "ok.txt": {"digest": digest, "size": 1},
                "../escape.txt": {"digest": digest, "size": 1},
            },
            {"ok.txt": {"digest": "../../escape", "size": 1}},
        ]
    ):
        manifest = {"version": 1, "type": "dataset", "entries": entries}
        mdigest = f"{i:064x}"
        cache.save_manifest(mdigest, manifest)
        cache.remember("p", f"ds{i}", mdigest, [], version="v0")
        art = use_artifact(None, f"p/ds{i}:v0")
        with pytest.raises((UsageError, ArtifactError), match=r"escape|not a sha256"):
            art.download(str(tmp_path / "root"))
    assert not (tmp_path / "escape.txt").exists()
    assert not (tmp_path / "root").exists()


# -- wisp.restore ------------------------------------------------------------------------------


def test_restore_refuses_names_outside_root(tmp_path: Path) -> None:
    """wisp.restore never copies to a name outside ``root``."""
    import wisp

    run = wisp.init(
        project="p",
        dir=str(tmp_path),
        mode="offline",
        settings={"system_metrics": False, "console": "off", "git": False},
    )
    (tmp_path / "a.txt").write_text("a")
    wisp.save(str(tmp_path / "a.txt"))
    run.finish()
    root = tmp_path / "restored"
    with wisp.restore("a.txt", run_path=run.id, root=str(root)) as f:
        assert f.read() == "a"
    for name in ("../escape.txt", "C:\\escape.txt"):
        with pytest.raises(UsageError):
            wisp.restore(name, run_path=run.id, root=str(root))
    assert not (tmp_path / "escape.txt").exists()


# -- wisp export --media -------------------------------------------------------------------------


def test_media_export_refuses_a_media_path_outside_the_run(tmp_path: Path) -> None:
    """A run whose media value names '../../..' is refused by `wisp export --media` (no copy of a
    file from outside the run folder), and the message names the path."""
    from tests.cli._helpers import make_run, wisp_cli

    secret = tmp_path / "secret.txt"
    secret.write_text("secret")
    make_run(
        tmp_path,
        """
        from wisp._deferred import Deferred
        class Hostile(Deferred):
            def resolve(self, ctx):
                return {"_type": "html", "path": "../../../secret.txt", "sha256": "0" * 64}
        wisp.log({"page": Hostile()}, step=0)
        """,
        name="alpha",
    )
    res = wisp_cli("export", "alpha", "--media", "out", cwd=tmp_path)
    assert res.returncode != 0
    assert "../../../secret.txt" in res.stderr and "refused" in res.stderr
    assert not any((tmp_path / "out").rglob("*.txt"))


# -- importers -----------------------------------------------------------------------------------


def test_mlflow_rest_artifact_with_a_hostile_name_is_not_written(tmp_path: Path) -> None:
    """Artifact bytes a tracking server sends under '../..' are left out of the import, never
    written outside the run's files folder."""
    from wisp.integrations.importers._mlflow import _copy_artifacts
    from wisp.integrations.importers._progress import ImportReport

    class HostileStore:
        def artifacts(self, run: Any) -> Iterator[tuple[str, bytes]]:
            yield "../../escape.bin", b"x"

    run_dir = tmp_path / "runs" / "r"
    report = ImportReport("mlflow")
    n = _copy_artifacts(
        HostileStore(),  # type: ignore[arg-type]
        SimpleNamespace(run_id="r"),  # type: ignore[arg-type]
        SimpleNamespace(dir=str(run_dir)),  # type: ignore[arg-type]
        report,
    )
    assert n == 0
    assert report.left_out == {"artifacts that could not be read (UsageError)": 1}
    assert not any(tmp_path.rglob("escape.bin"))


def test_wandb_import_reads_no_saved_file_outside_the_run(tmp_path: Path) -> None:
    """A wandb run file that lists '../../secret' as saved makes the importer skip it (counted),
    never read a file outside the run's folder."""
    from wisp.integrations.importers._wandb import _save_files

    files = tmp_path / "run" / "files"
    files.mkdir(parents=True)
    (tmp_path / "secret").write_text("s")
    skipped: dict[str, int] = {}
    out = SimpleNamespace(run=None)
    assert _save_files(out, str(files), ["../../secret", "/etc/hostname"], skipped) == 0  # type: ignore[arg-type]
    assert skipped == {"saved files missing from the run folder": 2}


def test_links_true_follows_links_already_in_the_folder_but_checks_the_name(tmp_path: Path) -> None:
    """links=True lets a link in the folder lead elsewhere (wandb's files/ links what
    wandb.save named) while names with .. or absolute paths are still refused."""
    outside = tmp_path / "outside.txt"
    outside.write_text("x")
    root = tmp_path / "files"
    root.mkdir()
    (root / "model.txt").symlink_to(outside)
    with pytest.raises(UsageError, match="resolves outside"):
        local_path(root, "model.txt")
    assert local_path(root, "model.txt", links=True) == str(root / "model.txt")
    for bad in ("../outside.txt", "/etc/passwd"):
        with pytest.raises(UsageError):
            local_path(root, bad, links=True)

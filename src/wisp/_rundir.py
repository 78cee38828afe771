"""The run directory: its layout, discovery, ``run.json`` and the upload cursor (layout version 1).

Every module that names a file in a run directory takes the name from here::

    <dir>/wisp/run-<YYYYmmdd_HHMMSS>-<id>/
        run.wisp              the run file (wisp._runfile); rank 0 under ranks="all"
        run.json              metadata, replaced atomically: {"id", "project", "name",
                              "state", "created_at", "pid", "host", "file", "rank",
                              "format_version", "exit_code"}; once the run ended
                              "last_step" and "config"; a fork's "fork_from" and a
                              rewound run's "rewinds" (wisp._lineage)
        run.rank<N>.wisp      rank N > 0 under ranks="all" (and run.rank<N>.json)
        run.fork<PID>.wisp    what a forked child process PID logged to the run: a writer
                              segment of its own (no summary, no finish record)
        media/<sha256>.<ext>  media files, by content hash
        files/...             files saved with wisp.save()
        artifacts/<job>.json  artifact jobs not yet published (wisp.artifacts._upload)
        upload.json           the upload cursor (format version 1, see :class:`Cursor`)
        upload.lock           flock'ed by whoever uploads the run
        rejected.jsonl        records the server refused (422), set aside by the uploader:
                              one JSON object per line (see :func:`add_rejected`)
        anything else         the user's own files (wandb's ``run.dir``): saved into
                              files/ at finish (:func:`user_files`)

*Fully synced* (:func:`sync_status`) has one definition, used by ``wisp sync``
to skip a run and by ``wisp gc`` to delete one: the cursor (for the given
server, when one is given) is marked done, it covers the run file to its last
byte, and the run file's last writer segment ends with a FINISH record.  A run
that crashed, or one resumed and still being written, is not fully synced even
when every byte written so far is on the server: more may come, and its local
file is what a resume continues from.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import threading

from wisp._runfile import HEADER_SIZE, RecordType, frame_types

TYPE_CHECKING = False  # typing costs ~15 ms to import; only type checkers need it
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

__all__ = [
    "ARTIFACTS_DIR",
    "CURSOR_FILE",
    "DISK_FULL",
    "FILES_DIR",
    "LOCK_FILE",
    "MEDIA_DIR",
    "META_FILE",
    "REJECTED_FILE",
    "RUNS_DIR",
    "RUN_FILE",
    "Cursor",
    "add_rejected",
    "default_disk_full_memory",
    "dir_name",
    "find_by_id",
    "fork_file_name",
    "fork_files",
    "is_run_dir",
    "lock_uploads",
    "mark_not_done",
    "rank_file_names",
    "rank_files",
    "read_meta",
    "read_rejected",
    "run_dirs_in",
    "run_dirs_under",
    "save_media",
    "sync_status",
    "unlock_uploads",
    "user_files",
    "with_parents",
    "write_meta",
    "write_rejected",
]

RUNS_DIR = "wisp"  # under the ``dir`` setting
RUN_FILE = "run.wisp"
META_FILE = "run.json"
CURSOR_FILE = "upload.json"
LOCK_FILE = "upload.lock"
REJECTED_FILE = "rejected.jsonl"
MEDIA_DIR = "media"
FILES_DIR = "files"
ARTIFACTS_DIR = "artifacts"  # artifact jobs (wisp.artifacts._upload), one JSON file each
_RANK_PREFIX, _RUN_SUFFIX, _META_SUFFIX = "run.rank", ".wisp", ".json"
_FORK_PREFIX = "run.fork"
#: errnos of a full disk or quota: writes are held back and retried, never fatal
DISK_FULL = frozenset({errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)})


def default_disk_full_memory() -> int:
    """The default ``disk_full_memory``: 256 MiB, or an eighth of physical memory if less."""
    cap = 256 * 1024 * 1024
    try:
        ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # not POSIX, or not reported
        return cap
    return min(cap, ram // 8) if ram > 0 else cap


# -- names and discovery ------------------------------------------------------------------------


def dir_name(stamp: str, run_id: str) -> str:
    """The directory name of a run started at ``stamp`` (``%Y%m%d_%H%M%S``)."""
    return f"run-{stamp}-{run_id}"


def id_of_dir(run_dir: str) -> str:
    """The run id in a run directory's name (``run-<stamp>-<id>``), else the name itself."""
    name = os.path.basename(os.path.normpath(run_dir))
    parts = name.split("-", 2)
    return parts[2] if len(parts) == 3 and parts[0] == "run" and parts[2] else name


def rank_file_names(rank: int) -> tuple[str, str]:
    """(run file, metadata file) names for ``rank`` (rank 0 uses the plain names)."""
    if rank == 0:
        return RUN_FILE, META_FILE
    return f"{_RANK_PREFIX}{rank}{_RUN_SUFFIX}", f"{_RANK_PREFIX}{rank}{_META_SUFFIX}"


def fork_file_name(pid: int) -> str:
    """The segment file of forked child ``pid``."""
    return f"{_FORK_PREFIX}{pid}{_RUN_SUFFIX}"


def fork_files(run_dir: str) -> list[str]:
    """Paths of every ``run.fork<PID>.wisp`` in ``run_dir``, sorted by name."""
    try:
        names = os.listdir(run_dir)
    except FileNotFoundError:
        return []
    return [
        os.path.join(run_dir, n)
        for n in sorted(names)
        if n.startswith(_FORK_PREFIX)
        and n.endswith(_RUN_SUFFIX)
        and n[len(_FORK_PREFIX) : -len(_RUN_SUFFIX)].isdigit()
    ]


def _is_own(name: str) -> bool:
    """True for a top-level name of ``run_dir`` that wisp writes (see the layout above)."""
    own = (RUN_FILE, META_FILE, CURSOR_FILE, LOCK_FILE, MEDIA_DIR, FILES_DIR, REJECTED_FILE)
    if name in own or name == ARTIFACTS_DIR:
        return True
    if name.startswith((_RANK_PREFIX, _FORK_PREFIX)) and name.endswith((_RUN_SUFFIX, _META_SUFFIX)):
        return True
    return ".tmp" in name  # atomic replaces in flight


def user_files(run_dir: str) -> list[str]:
    """Files the user wrote into ``run_dir`` (not wisp's own), relative, '/'-separated, sorted."""
    out = []
    try:
        with os.scandir(run_dir) as it:  # the top level: usually only wisp's own names
            mine = [e for e in it if not _is_own(e.name)]
    except OSError:
        return []
    for entry in mine:
        if entry.is_file(follow_symlinks=False):
            out.append(entry.name)
        elif entry.is_dir(follow_symlinks=False):
            for root, _dirs, names in os.walk(entry.path):
                rel_root = os.path.relpath(root, run_dir)
                for name in names:
                    path = os.path.join(root, name)
                    if os.path.isfile(path) and not os.path.islink(path):
                        out.append(os.path.join(rel_root, name).replace(os.sep, "/"))
    return sorted(out)


def save_media(run_dir: str, data: bytes, suffix: str) -> str:
    """Store ``data`` as ``media/<sha256><suffix>`` (once: the name is its content) and
    return that path, relative to ``run_dir``."""
    import hashlib

    digest = hashlib.sha256(data).hexdigest()
    name = f"{digest}{suffix}"  # the full hash: servers address media by sha256
    media_dir = os.path.join(run_dir, MEDIA_DIR)
    os.makedirs(media_dir, exist_ok=True)
    path = os.path.join(media_dir, name)
    if not os.path.exists(path):
        tmp = f"{path}.tmp{threading.get_ident()}"
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    return f"{MEDIA_DIR}/{name}"


def rank_files(run_dir: str) -> dict[int, str]:
    """rank -> run file for every ``run.rank<N>.wisp`` in ``run_dir``."""
    out: dict[int, str] = {}
    for entry in os.listdir(run_dir):
        number = entry[len(_RANK_PREFIX) : -len(_RUN_SUFFIX)]
        if entry.startswith(_RANK_PREFIX) and entry.endswith(_RUN_SUFFIX) and number.isdigit():
            out[int(number)] = os.path.join(run_dir, entry)
    return out


def is_run_dir(path: str) -> bool:
    """A directory holding a (rank 0) run file."""
    return os.path.isfile(os.path.join(path, RUN_FILE))


def find_by_id(base: str, run_id: str, *, with_file: bool = True) -> list[str]:
    """Run directories of ``run_id`` under ``<base>/wisp``, oldest first.

    ``with_file``: only directories that hold a run file (a claimed but empty one is
    skipped).
    """
    import glob  # resume and importers only: not on init()'s path

    root = glob.escape(os.path.join(base, RUNS_DIR))
    found = sorted(glob.glob(os.path.join(root, f"run-*-{glob.escape(run_id)}")))
    return [d for d in found if is_run_dir(d)] if with_file else found


def run_dirs_in(root: str) -> list[str]:
    """Run directories (``run-*`` holding a run file) directly in ``root``, by name.

    Raises FileNotFoundError when ``root`` is missing, OSError when unreadable.
    """
    return [
        os.path.join(root, n)
        for n in sorted(os.listdir(root))
        if n.startswith("run-") and is_run_dir(os.path.join(root, n))
    ]


def run_dirs_under(paths: Iterable[str | os.PathLike[str]]) -> list[str]:
    """Run directories in ``paths``: each a run dir, a ``run.wisp``, or a folder holding them.

    Raises ValueError naming a path that is none of these.
    """
    out: list[str] = []
    for p in paths:
        path = os.path.abspath(os.fspath(p))
        if os.path.isfile(path) and os.path.basename(path) == RUN_FILE:
            out.append(os.path.dirname(path))
        elif is_run_dir(path):
            out.append(path)
        elif os.path.isdir(path):
            for root in (path, os.path.join(path, RUNS_DIR)):
                if os.path.isdir(root):
                    out.extend(
                        os.path.join(root, d)
                        for d in sorted(os.listdir(root))
                        if is_run_dir(os.path.join(root, d))
                    )
        else:
            raise ValueError(f"{path} is not a run directory, run file or folder")
    return list(dict.fromkeys(out))


def with_parents(run_dirs: list[str]) -> list[str]:
    """``run_dirs`` with every fork's parents (found next to it, by ``run.json``'s
    ``fork_from``) before it, added when missing: a server gets a parent before its forks."""
    out: dict[str, None] = {}

    def add(run_dir: str, depth: int) -> None:
        if run_dir in out:
            return
        parent = read_meta(run_dir).get("fork_from")
        if isinstance(parent, dict) and isinstance(parent.get("run_id"), str) and depth < 64:
            base = os.path.dirname(os.path.dirname(run_dir))
            found = find_by_id(base, parent["run_id"])
            if found:
                add(found[-1], depth + 1)
        out[run_dir] = None

    for d in run_dirs:
        add(os.path.abspath(d), 0)
    return list(out)


# -- run.json -----------------------------------------------------------------------------------


def read_meta(run_dir: str, name: str = META_FILE) -> dict[str, Any]:
    """``run.json`` (or a rank's metadata file), or {} when missing, unreadable or not an object."""
    try:
        with open(os.path.join(run_dir, name), encoding="utf-8") as f:
            meta = json.load(f)
    except (OSError, ValueError):
        return {}
    return meta if isinstance(meta, dict) else {}


def _replace_json(path: str, doc: Any, *, indent: int | None = None) -> None:
    tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
    data = memoryview(json.dumps(doc, indent=indent).encode("utf-8"))
    try:  # a raw fd: no io objects to build for one write (finish() waits for it)
        fd = os.open(
            tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0), 0o644
        )
        try:
            done = 0
            while done < len(data):
                done += os.write(fd, data[done:])
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except OSError:  # e.g. a full disk: leave no half-written temporary file behind
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_meta(run_dir: str, meta: dict[str, Any], name: str = META_FILE) -> None:
    """Replace ``run.json`` (or a rank's metadata file) atomically."""
    _replace_json(os.path.join(run_dir, name), meta, indent=1)


# -- the upload cursor and its lock ---------------------------------------------------------------


class Cursor:
    """How much of a run file a server has acknowledged (``upload.json``, format version 1)::

        {"server": "http://host:port",   # the server the cursor is about
         "offset": 1234,                 # bytes of run.wisp acknowledged by that server
         "acked_seq": 17,                # last acknowledged seq of writer_id's segment
         "writer_id": "9f0c...",         # segment that offset is in (null before any ack)
         "done": false}                  # true when the uploader saw the run end

    A cursor for another server is ignored by :meth:`load`.
    """

    __slots__ = ("acked_seq", "done", "offset", "server", "writer_id")

    def __init__(
        self,
        server: str,
        offset: int = HEADER_SIZE,
        acked_seq: int = -1,
        writer_id: str | None = None,
        done: bool = False,
    ) -> None:
        self.server = server
        self.offset = offset
        self.acked_seq = acked_seq
        self.writer_id = writer_id
        self.done = done

    @classmethod
    def read(cls, run_dir: str) -> Cursor:
        """The saved cursor, whatever its server.

        Raises FileNotFoundError when there is none, ValueError when it is damaged.
        """
        with open(os.path.join(run_dir, CURSOR_FILE), encoding="utf-8") as f:
            doc = json.load(f)
        try:
            server, offset, acked, wid = (
                doc["server"],
                doc["offset"],
                doc["acked_seq"],
                doc["writer_id"],
            )
        except (KeyError, TypeError):
            raise ValueError(
                f"{CURSOR_FILE} lacks server, offset, acked_seq or writer_id"
            ) from None
        if type(offset) is not int or offset < HEADER_SIZE or type(acked) is not int:
            raise ValueError(f"{CURSOR_FILE} has a bad offset or acked_seq")
        return cls(server, offset, acked, wid, bool(doc.get("done")))

    @classmethod
    def load(cls, run_dir: str, server: str) -> Cursor:
        """The saved cursor for ``server``, or a fresh one (missing, damaged, other server)."""
        try:
            cursor = cls.read(run_dir)
        except (OSError, ValueError, AttributeError):
            return cls(server)
        return cursor if cursor.server == server else cls(server)

    def as_dict(self) -> dict[str, Any]:
        return {
            "server": self.server,
            "offset": self.offset,
            "acked_seq": self.acked_seq,
            "writer_id": self.writer_id,
            "done": self.done,
        }

    def save(self, run_dir: str) -> bool:
        """Replace ``upload.json``.  False when the disk is full: uploads go on with the
        cursor in memory (a later save writes it; a cursor saved late or never only makes a
        later sync send records again, which the server skips by sequence number)."""
        try:
            _replace_json(os.path.join(run_dir, CURSOR_FILE), self.as_dict())
        except OSError as exc:
            if exc.errno not in DISK_FULL:
                raise
            import logging

            logging.getLogger("wisp").info("wisp: %s not saved (%s)", CURSOR_FILE, exc)
            return False
        return True

    def save_first(self, run_dir: str) -> None:
        """:meth:`save` where the run has no cursor yet: written in place, without a
        temporary file and a rename (half the cost).  A write cut short leaves a damaged
        cursor, which :meth:`load` reads as a fresh one, as if it was never saved; an
        existing ``upload.json`` (another server's) is replaced atomically as usual."""
        path = os.path.join(run_dir, CURSOR_FILE)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            self.save(run_dir)
            return
        try:
            os.write(fd, json.dumps(self.as_dict()).encode("utf-8"))
        finally:
            os.close(fd)


# -- records set aside --------------------------------------------------------------------------


def add_rejected(run_dir: str, entry: dict[str, Any]) -> None:
    """Append one set-aside record to ``rejected.jsonl`` (under the upload lock).

    An entry is ``{"writer_id", "seq", "offset", "type", "reason", "field", "status",
    "rejected_at", "data"}``: where the record is in the run file and in its writer's
    sequence, what the server answered, and the record as it was sent (``data``,
    JSON), so ``wisp sync --retry-rejected`` can send it again.
    """
    line = json.dumps(entry, ensure_ascii=True, allow_nan=True) + "\n"
    fd = os.open(
        os.path.join(run_dir, REJECTED_FILE), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644
    )
    try:
        os.write(fd, line.encode("ascii"))
        os.fsync(fd)
    finally:
        os.close(fd)


def read_rejected(run_dir: str) -> list[dict[str, Any]]:
    """The entries of ``rejected.jsonl`` (a torn last line is skipped); [] when none."""
    try:
        with open(os.path.join(run_dir, REJECTED_FILE), encoding="ascii") as f:
            lines = f.read().splitlines()
    except FileNotFoundError:
        return []
    out = []
    for ln in lines:
        try:
            entry = json.loads(ln)
        except ValueError:
            continue
        if isinstance(entry, dict):
            out.append(entry)
    return out


def write_rejected(run_dir: str, entries: list[dict[str, Any]]) -> None:
    """Replace ``rejected.jsonl`` with ``entries`` atomically (removed when empty)."""
    path = os.path.join(run_dir, REJECTED_FILE)
    if not entries:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        return
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w", encoding="ascii") as f:
        for e in entries:
            f.write(json.dumps(e, ensure_ascii=True, allow_nan=True) + "\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def mark_not_done(run_dir: str) -> None:
    """A run that grows again (resume) is no longer complete on its server."""
    path = os.path.join(run_dir, CURSOR_FILE)
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError):
        return
    if isinstance(doc, dict) and doc.get("done"):
        doc["done"] = False
        _replace_json(path, doc)


def lock_uploads(run_dir: str) -> int | None:
    """An exclusive, non-blocking lock on the run's uploads; None if someone holds it."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX: no lock
        return -1
    fd = os.open(os.path.join(run_dir, LOCK_FILE), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


def lock_run_file(fd: int) -> bool:
    """An exclusive, non-blocking lock on an open run file, held as long as its writer keeps
    the file open (a forked child drops its copy, see ``Writer.after_fork_in_child``).
    False when another process holds it: two processes never write one run file.  A file
    system without locks (some network mounts) is written unlocked."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX: no lock
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    except OSError:  # no locks on this file system (ENOLCK, EOPNOTSUPP): go on unlocked
        return True
    return True


def writer_of(run_dir: str, file_name: str) -> str:
    """Who writes ``file_name`` of ``run_dir`` (its metadata's pid and host), for messages."""
    meta = read_meta(run_dir, file_name[: -len(_RUN_SUFFIX)] + _META_SUFFIX)
    pid, host = meta.get("pid"), meta.get("host")
    if type(pid) is not int:
        return "another process (it has not written its metadata yet)"
    return f"process {pid} on {host}"


def unlock_uploads(fd: int | None) -> None:
    if fd is not None and fd >= 0:
        os.close(fd)


# -- fully synced -------------------------------------------------------------------------------


def _last_segment_finished(path: str) -> bool:
    finished = False
    for rtype in frame_types(path):
        if rtype == RecordType.FINISH:
            finished = True
        elif rtype == RecordType.RUN:
            finished = False  # a (resumed) segment starts again
    return finished


def sync_status(run_dir: str, server: str | None = None) -> tuple[bool, str]:
    """(fully synced, why not): see the module docstring for the one definition.

    ``server``: the server the cursor must be about; None accepts any.
    """
    try:
        cursor = Cursor.read(run_dir)
    except FileNotFoundError:
        return False, "never synced"
    except (OSError, ValueError, AttributeError) as exc:
        return False, f"unreadable {CURSOR_FILE}: {exc}"
    if server is not None and cursor.server != server:
        return False, f"synced to another server ({cursor.server})"
    path = os.path.join(run_dir, RUN_FILE)
    try:
        size = os.path.getsize(path)
    except OSError:
        return False, "no run file"
    if cursor.offset != size:
        return False, f"synced {cursor.offset}/{size} bytes"
    try:
        finished = _last_segment_finished(path)
    except OSError as exc:
        return False, f"unreadable run file: {exc}"
    if not finished:
        return False, "still running or crashed (no finish record)"
    if not cursor.done:
        return False, "upload not marked done"
    return True, "fully synced"

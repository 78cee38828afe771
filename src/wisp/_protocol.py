"""The wire protocol shared by the SDK and the server (protocol version 1).

One definition of every rule both sides enforce, standard library only and
cheap to import (no ``re``, no ``typing``): record types, run states, limits
and id rules.  The SDK refuses at ``log()``/``init()`` what the server would
refuse with a 422, and the server validates uploads with the same numbers, so
the two cannot drift apart.  docs/run-file.md specifies each record type's
payload; docs/http-api.md the HTTP side.

Changing a limit here changes it for both; tightening one is a protocol change
(bump :data:`PROTOCOL_VERSION` and say so in docs/http-api.md), loosening one
needs the server deployed first.  Validation helpers are small pure functions
that return a reason (a short English phrase naming what was expected) or
``None``, so each side wraps the reason in its own error type (``UsageError``
in the SDK, a 422 ``Problem`` on the server).
"""

from __future__ import annotations

TYPE_CHECKING = False  # no typing at run time (import cost)
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

__all__ = [
    "DEFAULT_MAX_VALUE_BYTES",
    "DEFAULT_PROJECT",
    "ENTITY_RULE",
    "ID_CHARS",
    "ID_PATTERN",
    "ID_RULE",
    "MAX_DEPTH",
    "MAX_ENTITY_LENGTH",
    "MAX_EXIT_CODE",
    "MAX_ID_LENGTH",
    "MAX_INT",
    "MAX_JSON_KEY_LENGTH",
    "MAX_KEY_LENGTH",
    "MAX_LIST_ITEMS",
    "MAX_MEDIA_KIND_LENGTH",
    "MAX_NAME_LENGTH",
    "MAX_NOTES_LENGTH",
    "MAX_PROJECT_LENGTH",
    "MAX_REPORT_BYTES",
    "MAX_REPORT_PANELS",
    "MAX_RUNSETS",
    "MAX_RUNSET_RUNS",
    "MAX_SEQ",
    "MAX_STEP",
    "MAX_STREAM_LENGTH",
    "MAX_STRING_LENGTH",
    "MAX_TAGS",
    "MAX_TAG_LENGTH",
    "MAX_TIMESTAMP",
    "PROTOCOL_VERSION",
    "REPLACEMENT",
    "RUN_STATES",
    "SYSTEM_KEY_PREFIX",
    "Invalid",
    "RecordType",
    "RunState",
    "clean_json",
    "clean_text",
    "entity_problem",
    "id_problem",
    "is_valid_id",
    "key_problem",
    "name_problem",
    "project_entity",
    "project_path",
    "project_problem",
    "row_problem",
    "step_problem",
    "step_refusal",
    "text_problem",
    "url_problem",
]

PROTOCOL_VERSION = 1


class RecordType:
    """Record type codes: the u8 in each run-file frame and ``type`` in an upload batch."""

    RUN = 1  # a writer segment starts: run id, writer id, metadata
    CONFIG = 2  # full config snapshot
    HISTORY = 3  # a batch of history rows
    SUMMARY = 4  # summary snapshot
    METRIC = 5  # define_metric
    FINISH = 6  # the run ended: state, exit code
    CONSOLE = 7  # captured console lines
    SYSTEM = 8  # system metric samples
    FILE = 9  # a file saved into the run directory
    ALERT = 10  # a user alert
    WARNING = 11  # a background failure, counted
    RESUME = 12  # a resumed segment continues an earlier run (or rewinds it: wisp._lineage)
    LINEAGE = 13  # a run forked from another run at a step (wisp._lineage)

    NAMES = {
        1: "run",
        2: "config",
        3: "history",
        4: "summary",
        5: "metric",
        6: "finish",
        7: "console",
        8: "system",
        9: "file",
        10: "alert",
        11: "warning",
        12: "resume",
        13: "lineage",
    }


class RunState:
    """A run's state, as the FINISH record, ``run.json`` and the server report it."""

    RUNNING = "running"
    FINISHED = "finished"
    FAILED = "failed"
    KILLED = "killed"
    CRASHED = "crashed"  # no finish record will come: the writer died


#: Every state, in the order the API documents them.
RUN_STATES = (
    RunState.RUNNING,
    RunState.FINISHED,
    RunState.FAILED,
    RunState.KILLED,
    RunState.CRASHED,
)

# -- limits (characters unless said otherwise) ------------------------------------------------

#: A metric key: a history, system or media key, a metric name, a series query key.
MAX_KEY_LENGTH = 1024
#: keys of system samples (``wisp._system``); the server stores them at step = time in ms, so
#: what is indexed by training steps (a rewind's set-aside) leaves them alone
SYSTEM_KEY_PREFIX = "system/"
#: Run name, group, job type.
MAX_NAME_LENGTH = 1024
MAX_PROJECT_LENGTH = 128
#: the project of a run (or an online sweep) made without one
DEFAULT_PROJECT = "uncategorized"
#: A user or team name: the entity of ``entity/project``.
MAX_ENTITY_LENGTH = 64
ENTITY_RULE = "1-64 characters of a-z, 0-9, '_', '.', '-' starting with a letter or digit"
_ENTITY_FIRST = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")
_ENTITY_CHARS = _ENTITY_FIRST | frozenset("_.-")
MAX_TAGS = 256
MAX_TAG_LENGTH = 256
MAX_NOTES_LENGTH = 100_000
#: Any other string in a record (console text, JSON string values).
MAX_STRING_LENGTH = 1 << 20
#: A key inside a JSON object (config, summary, metadata).
MAX_JSON_KEY_LENGTH = 4096
#: Nesting of JSON objects and lists in a record.
MAX_DEPTH = 64
#: Steps (and system timestamps in ms) are 0 <= step < MAX_STEP (a signed 64-bit column).
MAX_STEP = 1 << 62
MAX_TIMESTAMP = 32503680000.0  # seconds since the epoch: 3000-01-01; timestamps are 0..this
#: Record sequence numbers within a writer segment (``first_seq`` of a batch).
MAX_SEQ = 1 << 62
#: A plain list of scalars logged as one value; longer lists belong in a Histogram/Table.
MAX_LIST_ITEMS = 1024
#: A media value's ``_type``, and a console line's ``stream``.
MAX_MEDIA_KIND_LENGTH = 64
MAX_STREAM_LENGTH = 16
#: ``exit_code`` is a signed 32-bit integer: abs(code) < MAX_EXIT_CODE.
MAX_EXIT_CODE = 1 << 31
#: Integers in JSON values (config, summary, logged lists and non-numeric columns):
#: -MAX_INT < i < MAX_INT.  Larger ones are refused (log them as float).
MAX_INT = 1 << 64
#: What NUL and lone surrogates become where a string *value* is sanitised (see clean_text).
REPLACEMENT = "\ufffd"
#: The default of the ``max_value_bytes`` setting (bytes one logged value may store).
DEFAULT_MAX_VALUE_BYTES = 4 * 1024 * 1024

# -- reports (wisp.reports, docs/reports.md) ---------------------------------------------------

#: A report file's size in UTF-8 bytes, its panels, run sets and the ids one run set names.
MAX_REPORT_BYTES = 1 << 20
MAX_REPORT_PANELS = 200
MAX_RUNSETS = 50
MAX_RUNSET_RUNS = 1000

# -- ids ----------------------------------------------------------------------------------------

#: Run and writer ids: 1 to MAX_ID_LENGTH of these characters (ASCII only).
ID_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
MAX_ID_LENGTH = 64
#: The same rule as a regular expression, for routes and ``re.fullmatch``.
ID_PATTERN = r"[A-Za-z0-9_-]{1,64}"
ID_RULE = f"1-{MAX_ID_LENGTH} characters of [A-Za-z0-9_-]"


def is_valid_id(value: object) -> bool:
    """True for a run or writer id: a string of 1-64 characters of ``[A-Za-z0-9_-]``."""
    return type(value) is str and 0 < len(value) <= MAX_ID_LENGTH and ID_CHARS.issuperset(value)


def id_problem(value: object) -> str | None:
    """Why ``value`` is not a valid id, or None when it is."""
    return None if is_valid_id(value) else f"expected {ID_RULE}"


# -- strings, names and JSON values ------------------------------------------------------------
#
# Two kinds of text.  *Names* (metric keys, JSON keys, project, run name, group, job type,
# tags, notes, stream names) identify things: a NUL or a lone surrogate in one is refused
# (SDK: UsageError at the call; server: 422).  *Values* (logged strings, strings in config
# and summary, console text, alert text) are data: the SDK sanitises them with clean_text()
# (NUL and each lone surrogate become U+FFFD), as wandb accepts them, and the server refuses
# what was not sanitised.  Lengths are refused on both kinds.


def _bad_unicode(s: str) -> bool:
    """True when ``s`` holds a lone surrogate (cannot be encoded as UTF-8)."""
    if s.isascii():
        return False
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def text_problem(s: str, max_len: int = MAX_STRING_LENGTH) -> str | None:
    """Why string ``s`` cannot be stored as it is, or None when it can."""
    if len(s) > max_len:
        return f"is {len(s)} characters long, over the limit of {max_len}"
    if "\x00" in s:
        return "contains a NUL character"
    if _bad_unicode(s):
        return "is not valid Unicode (it holds a lone surrogate)"
    return None


def clean_text(s: str) -> str:
    """``s`` with NUL and every lone surrogate replaced by U+FFFD (the one sanitising rule)."""
    if "\x00" in s:
        s = s.replace("\x00", REPLACEMENT)
    if _bad_unicode(s):
        s = "".join(REPLACEMENT if "\ud800" <= c <= "\udfff" else c for c in s)
    return s


def key_problem(key: str) -> str | None:
    """Why ``key`` (a string) cannot be a metric key, or None when it can."""
    if not key or len(key) > MAX_KEY_LENGTH:
        return f"must be 1 to {MAX_KEY_LENGTH} characters long"
    return text_problem(key)


def name_problem(value: str, max_len: int = MAX_NAME_LENGTH) -> str | None:
    """Why ``value`` cannot be a run name, group, job type, tag or notes; None when it can."""
    return text_problem(value, max_len)


def entity_problem(value: str) -> str | None:
    """Why ``value`` cannot be a user or team name (an entity), or None when it can."""
    if (
        not 0 < len(value) <= MAX_ENTITY_LENGTH
        or value[0] not in _ENTITY_FIRST
        or not _ENTITY_CHARS.issuperset(value)
    ):
        return f"must be {ENTITY_RULE}, got {value[:80]!r}"
    return None


def project_problem(value: str) -> str | None:
    """Why ``value`` cannot be a project name, or None when it can.

    A project is ``name`` (a server-wide name, as before entities) or ``entity/name``, owned
    by the user or team ``entity``: 1-128 printable characters in all, ``name`` not blank
    and without ``/``.

    >>> project_problem("vision/detector") is None
    True
    >>> project_problem("Vision/detector").startswith("names its owner before '/'")
    True
    """
    problem = text_problem(value, MAX_PROJECT_LENGTH)
    if problem is not None:
        return problem
    entity, sep, name = value.partition("/")
    if not sep:
        entity, name = "", value
    elif entity_problem(entity) is not None:
        return f"names its owner before '/': {entity_problem(entity)}"
    if not name.strip() or "/" in name or not name.isprintable():
        return (
            "must be printable characters without line breaks, not blank, with at most one "
            "'/' (after the user or team that owns it: 'entity/project')"
        )
    return None


def project_path(project: str) -> str:
    """A project's path in API v1: ``/projects/{name}``, or ``/entities/{entity}/projects/
    {name}`` for ``entity/name`` (docs/http-api.md, "Projects"), percent-encoded.

    >>> project_path("vision/my detector")
    '/entities/vision/projects/my%20detector'
    """
    from urllib.parse import quote

    entity, name = project_entity(project)
    base = f"/projects/{quote(name, safe='')}"
    return f"/entities/{quote(entity, safe='')}{base}" if entity else base


def project_entity(project: str) -> tuple[str, str]:
    """``(entity, name)`` of a valid project name; the entity is ``""`` when it names none."""
    entity, sep, name = project.partition("/")
    return (entity, name) if sep else ("", project)


def url_problem(url: str) -> str | None:
    """Why ``url`` cannot be a server URL (``http://`` or ``https://`` and a host), or None.

    >>> url_problem("localhost:8080")
    "must start with http:// or https://, got 'localhost:8080' (did you mean 'http://localhost:8080'?)"
    """
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        host = parts.hostname
        parts.port  # noqa: B018 - a malformed port raises ValueError here
    except ValueError as exc:
        return f"is not a valid URL ({exc}), got {url!r}"
    if parts.scheme not in ("http", "https"):
        hint = f" (did you mean 'http://{url}'?)" if "://" not in url else ""
        return f"must start with http:// or https://, got {url!r}{hint}"
    if not host:
        return f"must name a host, e.g. http://localhost:8080, got {url!r}"
    return None


def step_problem(step: int) -> str | None:
    """Why ``step`` (an int) cannot be a step: 0 <= step < 2**62."""
    if 0 <= step < MAX_STEP:
        return None
    return f"must be >= 0 and < 2**62, got {step}"


def step_refusal(keys: Iterable[str], step: int) -> str:
    """What ``log()`` says when the step a row would get (given, or the next one after
    ``step=2**62 - 1``) breaks :func:`step_problem`: the keys, the step and the rule."""
    names = [repr(k) for k in keys]
    shown = ", ".join(names[:5]) + (", ..." if len(names) > 5 else "")
    return (
        f"log() of {shown} refused: step {step_problem(step)} (wisp._protocol.MAX_STEP); "
        "nothing was recorded and the run goes on"
    )


class Invalid(ValueError):
    """A value breaks a rule: ``field`` is where (``a.b[2]``), ``reason`` which rule."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


def clean_json(value: Any, field: str, *, sanitise: bool = True, depth: int = 0) -> Any:
    """A checked copy of JSON value ``value`` (dicts with str keys, lists, scalars).

    Raises :class:`Invalid` for: nesting deeper than MAX_DEPTH, a key that is not a
    string or breaks :func:`text_problem` (MAX_JSON_KEY_LENGTH), a string over
    MAX_STRING_LENGTH, an integer outside +-MAX_INT, a type JSON has no form for.
    Strings holding NUL or lone surrogates are replaced by :func:`clean_text` when
    ``sanitise`` (the SDK) and refused otherwise (the server).  Non-finite floats stay.
    """
    if depth > MAX_DEPTH:
        raise Invalid(field, f"nested deeper than {MAX_DEPTH} levels")
    t = type(value)
    if t is str:
        s: str = value
        if len(s) > MAX_STRING_LENGTH:
            raise Invalid(field, text_problem(s) or "")
        if sanitise:
            return clean_text(s)
        problem = text_problem(s)
        if problem is not None:
            raise Invalid(field, problem)
        return s
    if t is int:
        if -MAX_INT < value < MAX_INT:
            return value
        raise Invalid(field, "integer out of range (+-2**64); log it as a float")
    if value is None or t is bool or t is float:
        return value
    if t is list or t is tuple:
        return [
            clean_json(v, f"{field}[{i}]", sanitise=sanitise, depth=depth + 1)
            for i, v in enumerate(value)
        ]
    if t is dict:
        out = {}
        for k, v in value.items():
            if type(k) is not str:
                raise Invalid(f"{field}.<key>", f"keys must be strings, got {type(k).__name__}")
            problem = text_problem(k, MAX_JSON_KEY_LENGTH)
            if problem is not None:
                raise Invalid(f"{field}.{k!r}", f"key {problem}")
            out[k] = clean_json(v, f"{field}.{k}", sanitise=sanitise, depth=depth + 1)
        return out
    raise Invalid(field, f"unsupported JSON value of type {t.__name__}")


def row_problem(row: Any) -> str | None:
    """Why a history row ``[step, timestamp, {key: value}]`` (JSON, as uploaded) would be
    refused, or None: the step, each key, and each non-number value by :func:`clean_json`."""
    if type(row) is not list or len(row) != 3 or type(row[2]) is not dict:
        return "expected [step, timestamp, {key: value}]"
    step = row[0]
    if type(step) is not int:
        return "step: expected an integer"
    problem = step_problem(step)
    if problem is not None:
        return f"step {problem}"
    for key, value in row[2].items():
        if type(key) is not str or key_problem(key) is not None:
            return f"key {key!r}: {key_problem(key) if type(key) is str else 'not a string'}"
        if type(value) is not float and type(value) is not bool and value is not None:
            try:
                clean_json(value, key, sanitise=False)
            except Invalid as exc:
                return str(exc)
    return None

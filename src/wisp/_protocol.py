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

__all__ = [
    "DEFAULT_MAX_VALUE_BYTES",
    "ID_CHARS",
    "ID_PATTERN",
    "ID_RULE",
    "MAX_DEPTH",
    "MAX_EXIT_CODE",
    "MAX_ID_LENGTH",
    "MAX_JSON_KEY_LENGTH",
    "MAX_KEY_LENGTH",
    "MAX_LIST_ITEMS",
    "MAX_MEDIA_KIND_LENGTH",
    "MAX_NAME_LENGTH",
    "MAX_NOTES_LENGTH",
    "MAX_PROJECT_LENGTH",
    "MAX_SEQ",
    "MAX_STEP",
    "MAX_STREAM_LENGTH",
    "MAX_STRING_LENGTH",
    "MAX_TAGS",
    "MAX_TAG_LENGTH",
    "MAX_TIMESTAMP",
    "PROTOCOL_VERSION",
    "RUN_STATES",
    "RecordType",
    "RunState",
    "id_problem",
    "is_valid_id",
    "key_problem",
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
    RESUME = 12  # a resumed segment continues an earlier run

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
#: Run name, group, job type.
MAX_NAME_LENGTH = 1024
MAX_PROJECT_LENGTH = 128
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
#: The default of the ``max_value_bytes`` setting (bytes one logged value may store).
DEFAULT_MAX_VALUE_BYTES = 4 * 1024 * 1024

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


def key_problem(key: str) -> str | None:
    """Why ``key`` (a string) cannot be a metric key, or None when it can."""
    if not key or len(key) > MAX_KEY_LENGTH:
        return f"must be 1 to {MAX_KEY_LENGTH} characters long"
    return None

"""The CLI's terminal helpers: a logger's records shown as a command's lines."""

from __future__ import annotations

import logging

import pytest

from wisp.cli._term import Output, log_lines


def test_log_lines_shows_a_loggers_records_on_stderr_while_the_block_runs(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Within ``log_lines`` INFO records of the logger are stderr lines; after it, nothing
    is left attached and the logger's level is as it was."""
    logger = logging.getLogger("wisp.test_term")
    with log_lines("wisp.test_term", Output(as_json=False)):
        logger.info("wisp test: %s", "shown")
        logger.debug("hidden")
    logger.info("after")
    out = capsys.readouterr()
    assert out.err == "wisp test: shown\n" and out.out == ""
    assert logger.handlers == [] and logger.level == logging.NOTSET

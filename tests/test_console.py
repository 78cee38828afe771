"""Console capture (src/wisp/_console.py)."""

from __future__ import annotations

import io
import subprocess
import sys
import textwrap
from typing import Any

from wisp._console import LIMIT_MARKER, ConsoleCapture, StreamProxy


def _feed(chunks: list[str], **kw: Any) -> tuple[list[list[Any]], str]:
    out: list[dict[str, Any]] = []
    cap = ConsoleCapture(out.append, get_time=lambda: 1.0, batch_seconds=1e9, **kw)
    shown = io.StringIO()
    proxy = StreamProxy(shown, "stdout", cap)
    cap._proxies["stdout"] = proxy
    for c in chunks:
        proxy.write(c)
    cap.flush(partial=True)
    return [line for p in out for line in p["lines"]], shown.getvalue()


def test_lines_unicode_and_passthrough() -> None:
    """Text is shown unchanged and recorded one entry per line, unicode intact."""
    lines, shown = _feed(["héllo wörld ✓ 日本\n", "a", "b\nc\n", "\n", "tail"])
    assert shown == "héllo wörld ✓ 日本\nab\nc\n\ntail"
    assert [text for _, _, text in lines] == ["héllo wörld ✓ 日本", "ab", "c", "", "tail"]
    assert all(stream == "stdout" and ts == 1.0 for ts, stream, _ in lines)


def test_carriage_returns_collapse_to_last_state() -> None:
    """A progress bar redrawn with '\\r' is recorded as its final state; '\\r\\n' is a newline."""
    bar = "".join(f"\r{i:3d}% [{'#' * (i // 10):<10}]" for i in range(101))
    lines, shown = _feed([bar, "\n", "x\r\n", "y\r", "\nz\rZ\n", "dos\r\ntext\r\n"])
    assert shown.startswith(bar)
    assert [t for _, _, t in lines] == ["100% [##########]", "x", "y", "Z", "dos", "text"]


def test_long_lines_round_trip() -> None:
    """A 1 MB line written in pieces is recorded whole."""
    piece = "0123456789" * 1000
    lines, _ = _feed([piece] * 100 + ["\n"])
    assert len(lines) == 1 and lines[0][2] == piece * 100


def test_nul_and_lone_surrogates_are_replaced_and_huge_lines_split() -> None:
    """Console text is made storable by the protocol's clean_text, and a line over the string cap becomes pieces."""
    from wisp._protocol import MAX_STRING_LENGTH

    lines, shown = _feed(["a\x00b\n", "\udcff\n"])
    assert shown == "a\x00b\n\udcff\n"  # shown unchanged
    assert [t for _, _, t in lines] == ["a\ufffdb", "\ufffd"]
    big, _ = _feed(["x" * (MAX_STRING_LENGTH + 5) + "\n"], max_bytes=1 << 30)
    assert [len(t) for _, _, t in big] == [MAX_STRING_LENGTH, 5]


def test_capture_is_bounded() -> None:
    """Past max_bytes one marker line is recorded and nothing more."""
    lines, shown = _feed(["x" * 50 + "\n"] * 100, max_bytes=1000)
    texts = [t for _, _, t in lines]
    assert texts[-1] == LIMIT_MARKER
    assert sum(len(t) for t in texts[:-1]) <= 1100
    assert shown == ("x" * 50 + "\n") * 100


def test_batches_by_line_count() -> None:
    """Lines are emitted in batches once batch_lines are waiting."""
    out: list[dict[str, Any]] = []
    cap = ConsoleCapture(out.append, batch_lines=10, batch_seconds=1e9)
    proxy = StreamProxy(io.StringIO(), "stderr", cap)
    for i in range(25):
        proxy.write(f"{i}\n")
    assert [len(p["lines"]) for p in out] == [10, 10]


def test_run_records_console_and_restores_streams(tmp_path: Any) -> None:
    """In a script, a run records stdout and stderr lines, the terminal output is unchanged, and finish restores the streams."""
    script = textwrap.dedent(f"""
        import sys, wisp
        orig_out, orig_err = sys.stdout, sys.stderr
        run = wisp.init(project="p", dir={str(tmp_path)!r}, settings={{"system_metrics": False, "console": "wrap"}})
        print("hello ✓")
        for i in range(50):
            sys.stdout.write(f"\\rstep {{i}}/49")
        print()
        print("oops", file=sys.stderr)
        sys.stdout.write("no newline at the end")
        run.finish()
        assert sys.stdout is orig_out and sys.stderr is orig_err
        print()
        print("after finish")
        d = wisp.open_run(run.dir)
        for rec in d.records["console"]:
            for ts, stream, text in rec["lines"]:
                print("REC", stream, text, file=sys.stderr)
    """)
    res = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, timeout=60, check=False
    )  # bytes: text mode would turn '\r' into '\n'
    out, err = res.stdout.decode(), res.stderr.decode()
    assert res.returncode == 0, err
    assert out.startswith("hello ✓\n\rstep 0/49\rstep 1/49")
    assert out.endswith("step 49/49\nno newline at the end\nafter finish\n")
    recs = [line[4:] for line in err.splitlines() if line.startswith("REC ")]
    assert recs == [
        "stdout hello ✓",
        "stdout step 49/49",
        "stderr oops",
        "stdout no newline at the end",
    ]


def test_console_off(tmp_path: Any) -> None:
    """With console='off' the streams are not wrapped and no console record is written."""
    script = textwrap.dedent(f"""
        import sys, wisp
        run = wisp.init(project="p", dir={str(tmp_path)!r},
                        settings={{"system_metrics": False, "console": "off"}})
        assert type(sys.stdout).__name__ != "StreamProxy"
        print("hi")
        run.finish()
        print(sorted(wisp.open_run(run.dir).records))
    """)
    res = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert res.returncode == 0, res.stderr
    assert res.stdout == "hi\n[]\n"

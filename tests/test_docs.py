"""The Python examples in docs/ work as written (the README's are run by test_readme.py).

Every ```` ```python ```` block of ``docs/**/*.md`` runs in a fresh interpreter, in an empty
folder, offline (``WISP_DIR`` and ``WISP_MODE=offline``), after ``import wisp``.  An HTML
comment on the line before the block changes that:

- ``<!-- test setup: ... -->``: Python run before the block (its inputs: a model, files);
- ``<!-- not run: <why> -->``: the block needs what a test does not have (a server holding
  given runs, a training set, a process that serves forever).  It is compiled, and every
  ``wisp`` name it imports must exist, so a renamed module or function still fails here.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"
_BLOCK = re.compile(r"(?:<!--(?P<note>(?:(?!-->).)*)-->\n)?```python\n(?P<code>.*?)```", re.S)


def _blocks() -> list[tuple[str, str, str]]:
    out = []
    for path in sorted(DOCS.rglob("*.md")):
        text = path.read_text(encoding="utf-8")
        for m in _BLOCK.finditer(text):
            line = text[: m.start("code")].count("\n")
            out.append(
                (f"{path.relative_to(DOCS)}:{line}", (m.group("note") or "").strip(), m["code"])
            )
    return out


BLOCKS = _blocks()


def test_the_docs_have_examples() -> None:
    """The collector finds the docs' examples (a changed fence would silently test nothing)."""
    assert len(BLOCKS) >= 10
    assert sum(1 for _, note, _ in BLOCKS if not note.startswith("not run")) >= 5


def _wisp_imports(code: str) -> list[tuple[str, str | None]]:
    """``(module, name)`` of each ``wisp`` import in ``code`` (name None: the module itself)."""
    out: list[tuple[str, str | None]] = []
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "wisp":
            out += [(node.module or "", a.name) for a in node.names]
        elif isinstance(node, ast.Import):
            out += [(a.name, None) for a in node.names if a.name.split(".")[0] == "wisp"]
    return out


def _names(module: str) -> set[str]:
    """What ``module`` defines or imports at its top level, read from its source (importing it
    may need an optional package the test run lacks: Keras), and its submodules."""
    spec = importlib.util.find_spec(module)
    assert spec is not None and spec.origin is not None, f"no module {module}"
    names = {
        alias.asname or alias.name.split(".")[0]
        for node in ast.parse(Path(spec.origin).read_text(encoding="utf-8")).body
        if isinstance(node, (ast.Import, ast.ImportFrom))
        for alias in node.names
    }
    for node in ast.parse(Path(spec.origin).read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
    lazy = re.findall(r'^\s*"(\w+)": [("]', Path(spec.origin).read_text(encoding="utf-8"), re.M)
    subs = (
        {p.stem for p in Path(spec.origin).parent.glob("*.py")}
        if spec.submodule_search_locations
        else set()
    )
    return names | set(lazy) | subs


@pytest.mark.parametrize(("where", "note", "code"), BLOCKS, ids=[b[0] for b in BLOCKS])
def test_docs_example(where: str, note: str, code: str, tmp_path: Path) -> None:
    """The example runs (or, marked "not run", compiles and imports only names that exist)."""
    if note.startswith("not run"):
        compile(code, where, "exec")
        for module, name in _wisp_imports(code):
            assert name is None or name in _names(module), f"{where}: {module} has no {name}"
        return
    setup = note.removeprefix("test setup:") if note.startswith("test setup:") else ""
    out = subprocess.run(
        [sys.executable, "-c", f"import wisp\n{setup}\n{code}"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=240,
        env={
            **os.environ,
            "WISP_DIR": str(tmp_path),
            "WISP_MODE": "offline",
            "WISP_CACHE_DIR": str(tmp_path / "cache"),
        },
    )
    assert out.returncode == 0, f"{where}:\n{out.stderr[-3000:]}"
    assert "Traceback" not in out.stderr, f"{where}:\n{out.stderr[-3000:]}"  # caught, printed

"""The import graph of src/wisp has no cycle, counting imports inside functions.

A lazy import keeps ``import wisp`` cheap; it is a dependency all the same, so it counts.
Imports under ``if TYPE_CHECKING:`` do not (they never run).  ``importlib.import_module``
with a literal name counts, and so do the lazy tables of package ``__init__`` modules (a
string in one that names a wisp module, like ``"wisp._run"`` in ``wisp/__init__.py``).

One edge is left out, by name: the facade's lazy ``install_as_wandb`` names
``wisp.wandb_compat``, the ``wandb`` module built on top of the facade (it forwards
``wandb.log`` and the rest to ``wisp``).  The facade only hands that module out; nothing
below the facade may import it (checked below).
"""

from __future__ import annotations

import ast
from pathlib import Path

import wisp

SRC = Path(wisp.__file__).resolve().parent.parent
#: (importer, imported) pairs left out of the graph: see the module docstring
ABOVE_THE_FACADE = {("wisp", "wisp.wandb_compat"), ("wisp", "wisp.wandb_compat._tee")}


def _modules() -> dict[str, tuple[Path, bool]]:
    out = {}
    for path in (SRC / "wisp").rglob("*.py"):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        package = parts[-1] == "__init__"
        if package:
            parts = parts[:-1]
        out[".".join(parts)] = (path, package)
    return out


def _type_checking(node: ast.If) -> bool:
    t = node.test
    return (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or (
        isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING"
    )


def import_graph() -> dict[str, set[str]]:
    """module -> the wisp modules it imports (anywhere in its body, TYPE_CHECKING aside)."""
    mods = _modules()

    def resolve(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for name, (path, package) in mods.items():
        here = name if package else name.rpartition(".")[0]
        deps: set[str] = set()

        def add(target: str) -> None:
            got = resolve(target)
            if got is not None and got != name:  # noqa: B023 - used within this iteration
                deps.add(got)  # noqa: B023

        def visit(node: ast.AST) -> None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.If) and _type_checking(child):
                    for other in child.orelse:
                        visit_node(other)
                    continue
                visit_node(child)

        def visit_node(node: ast.AST) -> None:
            if isinstance(node, ast.Import):
                for alias in node.names:
                    add(alias.name)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = here.split(".")[: len(here.split(".")) - node.level + 1]  # noqa: B023
                    base = ".".join(up) + (f".{node.module}" if node.module else "")
                for alias in node.names:
                    full = f"{base}.{alias.name}"
                    add(full if full in mods else base)
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "import_module"
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
            ):
                add(node.args[0].value)
            elif package and isinstance(node, ast.Constant) and isinstance(node.value, str):  # noqa: B023
                if node.value in mods:
                    add(node.value)
                elif f"{name}.{node.value}" in mods:  # noqa: B023 - a table of relative names
                    add(f"{name}.{node.value}")  # noqa: B023
            visit(node)

        visit(ast.parse(path.read_text(encoding="utf-8")))
        graph[name] = {d for d in deps if (name, d) not in ABOVE_THE_FACADE}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, children = work[-1]
            for w in children:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
    return out


def test_the_graph_sees_lazy_imports() -> None:
    """The graph counts imports inside functions and lazy tables, and skips TYPE_CHECKING."""
    graph = import_graph()
    assert "wisp._init" in graph["wisp"]  # `from wisp._init import start_run` inside init()
    assert "wisp._run" in graph["wisp"]  # the lazy table's ("wisp._run", "Run")
    assert "wisp.server.blobs.s3" in graph["wisp.server.blobs"]  # inside open_blob_store()
    assert "wisp.server.store.facade" not in graph["wisp.server.store.sweeps"]  # TYPE_CHECKING


def test_only_the_facade_and_what_wraps_it_import_wandb_compat() -> None:
    """The one edge left out of the graph stays the only way down to ``wisp.wandb_compat``."""
    graph = import_graph()
    users = {m for m, deps in graph.items() if "wisp.wandb_compat" in deps}
    assert all(m.startswith("wisp.wandb_compat") for m in users), users


def test_no_import_cycles() -> None:
    """No set of wisp modules imports itself round, directly or through others."""
    found = cycles(import_graph())
    assert not found, "\n".join(" <-> ".join(c) for c in found)

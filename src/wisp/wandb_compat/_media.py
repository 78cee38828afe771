"""``wandb.Molecule`` and ``wandb.Graph`` for the compatibility module.

Stored values (docs/run-file.md, "Typed values"; version 1 each)::

    {"_type": "molecule", "path": "media/<hash>.<ext>", "format": "<ext>", "caption": str|null}
    {"_type": "graph", "format": "torch"|"keras"|..., "nodes": [{"id", "name", "class_name",
     "output_shape", "num_parameters"}], "edges": [[from_id, to_id], ...]}

A molecule file (pdb, pqr, mmcif, mcif, cif, sdf, sd, gro, mol2, mmtf, or an open file
of one) is stored byte for byte; ``Molecule.from_rdkit``/``from_smiles`` (need rdkit)
store an MDL mol file.  A graph is stored inline; the dashboard lists both as media
files of the run (it draws neither).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from wisp._deferred import Deferred
from wisp.errors import UsageError
from wisp.media._common import check_caption, check_file, read_file

if TYPE_CHECKING:
    from wisp._deferred import ResolveContext

__all__ = ["Graph", "Molecule", "Node"]

SUFFIXES = (".pdb", ".pqr", ".mmcif", ".mcif", ".cif", ".sdf", ".sd", ".gro", ".mol2", ".mmtf")
_WHAT = "wandb.Molecule"


class Molecule(Deferred):
    """A molecule file (``.pdb``, ``.sdf``, ...) or an open file of one, logged as media."""

    __slots__ = ("_bytes", "_fmt", "_path", "_resolved", "caption")

    def __init__(self, data_or_path: Any, caption: str | None = None, **kwargs: Any) -> None:
        self.caption = check_caption(_WHAT, caption)
        self._resolved: dict[str, Any] | None = None
        self._bytes: bytes | None = None
        self._path: str | None = None
        self._fmt = ""
        if isinstance(data_or_path, str) or hasattr(data_or_path, "__fspath__"):
            path, _, suffix = check_file(_WHAT, os.fspath(data_or_path), SUFFIXES)
            self._path = path
            self._fmt = suffix[1:]
        elif hasattr(data_or_path, "read"):
            name = str(getattr(data_or_path, "name", "") or "")
            found = next((s for s in SUFFIXES if name.lower().endswith(s)), None)
            fmt = kwargs.get("file_type") or (found[1:] if found else None)
            if fmt is None or f".{fmt}" not in SUFFIXES:
                raise UsageError(
                    f"{_WHAT}(file): pass file_type= (one of "
                    f"{', '.join(s[1:] for s in SUFFIXES)}) for an unnamed file"
                )
            data = data_or_path.read()
            self._bytes = data.encode("utf-8") if isinstance(data, str) else bytes(data)
            self._fmt = str(fmt)
        else:
            raise UsageError(
                f"{_WHAT}(data_or_path) must be a path or an open file, got "
                f"{type(data_or_path).__name__}"
            )

    @classmethod
    def from_rdkit(cls, data_or_path: Any, caption: str | None = None, **kwargs: Any) -> Molecule:
        """A molecule from an rdkit ``Mol`` (or a file rdkit reads), stored as a mol file."""
        try:
            from rdkit import Chem  # type: ignore[import-not-found]
        except ImportError:
            raise ImportError("Molecule.from_rdkit needs rdkit: pip install rdkit") from None
        mol = data_or_path
        if isinstance(mol, str):
            mol = Chem.MolFromMolFile(mol)
        import io

        buf = io.StringIO(Chem.MolToMolBlock(mol))
        buf.name = "molecule.sdf"
        return cls(buf, caption=caption)

    @classmethod
    def from_smiles(cls, data: str, caption: str | None = None, **kwargs: Any) -> Molecule:
        try:
            from rdkit import Chem
        except ImportError:
            raise ImportError("Molecule.from_smiles needs rdkit: pip install rdkit") from None
        mol = Chem.MolFromSmiles(data)
        if mol is None:
            raise UsageError(f"{_WHAT}.from_smiles({data!r}): not a SMILES string rdkit reads")
        return cls.from_rdkit(mol, caption=caption)

    def estimate_bytes(self) -> int:
        if self._bytes is not None:
            return len(self._bytes)
        return os.path.getsize(self._path) if self._path else 0

    def resolve(self, ctx: ResolveContext) -> dict[str, Any]:
        if self._resolved is None:
            content = self._bytes if self._bytes is not None else read_file(str(self._path))
            self._resolved = {
                "_type": "molecule",
                "path": ctx.save_media(content, "." + self._fmt),
                "format": self._fmt,
                "caption": self.caption,
            }
            self._bytes = None
        return self._resolved

    def __repr__(self) -> str:
        return f"<wandb.Molecule {self._fmt}>"


class Node:
    """A node of a :class:`Graph`."""

    def __init__(
        self,
        id: str | int | None = None,  # noqa: A002 - wandb's name
        name: str | None = None,
        class_name: str | None = None,
        size: Any = None,
        parameters: Any = None,
        output_shape: Any = None,
        is_output: bool | None = None,
        num_parameters: int | None = None,
        node: Any = None,
    ) -> None:
        self.id = id
        self.name = name
        self.class_name = class_name
        self.output_shape = output_shape
        self.num_parameters = num_parameters

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "class_name": self.class_name,
            "output_shape": self.output_shape,
            "num_parameters": self.num_parameters,
        }


class Graph(Deferred):
    """wandb's model graph: ``add_node(...)``, ``add_edge(from, to)``; logged inline."""

    __slots__ = ("edges", "format", "nodes")

    def __init__(self, format: str = "keras") -> None:  # noqa: A002 - wandb's name
        self.format = format
        self.nodes: list[Node] = []
        self.edges: list[tuple[Node, Node]] = []

    def add_node(self, node: Node | None = None, **kwargs: Any) -> Node:
        node = node if node is not None else Node(**kwargs)
        if node.id is None:
            node.id = len(self.nodes)
        self.nodes.append(node)
        return node

    def add_edge(self, from_node: Node, to_node: Node) -> tuple[Node, Node]:
        edge = (from_node, to_node)
        self.edges.append(edge)
        return edge

    def estimate_bytes(self) -> int:
        return 100 * (len(self.nodes) + len(self.edges))

    def resolve(self, ctx: ResolveContext) -> dict[str, Any]:
        return {
            "_type": "graph",
            "format": self.format,
            "nodes": [n.to_json() for n in self.nodes],
            "edges": [[a.id, b.id] for a, b in self.edges],
        }

    def __repr__(self) -> str:
        return f"<wandb.Graph {self.format} nodes={len(self.nodes)}>"

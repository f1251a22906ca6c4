"""The import graph of a source tree, read from its syntax trees (no module is imported).

Every ``import`` and ``from ... import`` counts, wherever it stands: at module level, in a
function (a lazy import) or under ``if TYPE_CHECKING:``. ``from a.b import c`` is an edge to
the module ``a.b.c`` when that is a module of the tree, else to ``a.b``. Relative imports
are resolved against the importing module's package. Imports by name count too: a call
``importlib.import_module("a.b")`` (or ``import_module("a.b")``) with a literal name, and
the module names in the values of a module-level ``_EXPORTS`` dict (the table the
packages' lazy ``__getattr__`` imports from).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Module:
    """One module of the tree: its dotted name, file and whether it is a package."""

    name: str
    path: Path
    is_package: bool

    @property
    def package(self) -> str:
        """The dotted name of the package that holds the module (itself for a package)."""
        return self.name if self.is_package else self.name.rpartition(".")[0]


def find_modules(root: Path, packages: Iterable[str]) -> dict[str, Module]:
    """Return every module of ``packages`` (folders under ``root``) by dotted name."""
    found: dict[str, Module] = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            if "__pycache__" in path.parts:
                continue
            parts = list(path.relative_to(root).with_suffix("").parts)
            is_package = parts[-1] == "__init__"
            if is_package:
                parts.pop()
            found[".".join(parts)] = Module(".".join(parts), path, is_package)
    return found


def _targets(node: ast.AST, module: Module, modules: Mapping[str, Module]) -> Iterator[str]:
    if isinstance(node, ast.Import):
        for alias in node.names:
            yield alias.name
    elif isinstance(node, ast.Call):
        func = node.func
        called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        if called == "import_module" and node.args and isinstance(node.args[0], ast.Constant):
            yield str(node.args[0].value)
    elif isinstance(node, ast.Assign | ast.AnnAssign):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if any(isinstance(t, ast.Name) and t.id == "_EXPORTS" for t in targets) and isinstance(
            node.value, ast.Dict
        ):
            for value in node.value.values:
                if isinstance(value, ast.Constant) and isinstance(value.value, str):
                    yield value.value
    elif isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:
            anchor = module.package.split(".")
            anchor = anchor[: len(anchor) - (node.level - 1)]
            base = ".".join([*anchor, base] if base else anchor)
        for alias in node.names:
            sub = f"{base}.{alias.name}"
            yield sub if sub in modules else base


def import_graph(modules: Mapping[str, Module]) -> dict[str, set[str]]:
    """Return ``{module: the modules of the tree it imports}``."""
    graph: dict[str, set[str]] = {}
    for name, module in modules.items():
        tree = ast.parse(module.path.read_text(encoding="utf-8"), str(module.path))
        graph[name] = {
            target
            for node in ast.walk(tree)
            for target in _targets(node, module, modules)
            if target in modules and target != name
        }
    return graph


def cycles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """Return the strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def top_level_names(path: Path) -> set[str]:
    """Return the names a module defines at module level (inside ``if``, ``try``, ``with``
    and loops too); a name it imports is not among them."""
    defined: set[str] = set()

    def visit(body: Iterable[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                defined.add(node.name)
            elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    defined.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
            elif isinstance(node, ast.If | ast.Try | ast.With | ast.For | ast.While):
                visit(node.body)
                visit(getattr(node, "orelse", []))
                visit(getattr(node, "finalbody", []))
                for handler in getattr(node, "handlers", []):
                    visit(handler.body)
                if isinstance(node, ast.For):
                    defined.update(n.id for n in ast.walk(node.target) if isinstance(n, ast.Name))

    visit(ast.parse(path.read_text(encoding="utf-8")).body)
    return defined

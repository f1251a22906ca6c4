"""The folders follow the data flow: who may import whom, no cycles, no re-exports, small rooms.

The graph is read from the syntax trees of every module (``tests/import_graph.py``), so lazy
imports inside functions and imports under ``if TYPE_CHECKING:`` count as much as the
module-level ones. The folder map these rules encode is drawn in docs/concepts.md.
"""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.import_graph import cycles, find_modules, import_graph, top_level_names

PACKAGES = ("registry", "compiler")
MODULES = find_modules(ROOT, PACKAGES)
GRAPH = import_graph(MODULES)
ROOT_PACKAGES = frozenset(PACKAGES)

#: folder -> the folders its modules may import, besides their own. ``registry`` and
#: ``compiler`` stand for the modules directly in those folders (errors, paths, kinds,
#: report, intent, request, ...), not for the package ``__init__`` (the lazy public API).
MAY_IMPORT: dict[str, frozenset[str]] = {
    "registry": frozenset(),
    "registry.metadata": frozenset({"registry"}),
    "registry.declarations": frozenset({"registry"}),
    "registry.sources": frozenset({"registry", "registry.metadata", "registry.declarations"}),
    "registry.resolve": frozenset(
        {"registry", "registry.metadata", "registry.declarations", "registry.sources"}
    ),
    "compiler.metaschema": frozenset(),
    "compiler.guards": frozenset(),
    "compiler.schema": frozenset({"compiler", "compiler.metaschema", "compiler.guards",
                                  "registry"}),
    "compiler.pricing": frozenset(
        {"compiler", "registry", "registry.metadata", "registry.resolve"}
    ),
    "compiler.reply": frozenset({"compiler", "compiler.schema", "compiler.pricing", "registry"}),
    "compiler.tools": frozenset({"compiler", "compiler.schema", "compiler.reply", "registry"}),
    "compiler.passes": frozenset(
        {"compiler", "compiler.schema", "compiler.tools", "registry", "registry.resolve"}),
    "compiler.routes": frozenset(
        {"compiler", "compiler.schema", "compiler.reply", "compiler.passes", "compiler.tools",
         "registry", "registry.resolve"}
    ),
    "compiler": frozenset(
        {"compiler.schema", "compiler.reply", "compiler.passes", "compiler.routes",
         "compiler.tools", "compiler.pricing", "compiler.cli", "registry",
         "registry.declarations", "registry.resolve"}
    ),
    "compiler.artifacts": frozenset(
        {"compiler", "compiler.schema", "compiler.reply", "compiler.passes", "compiler.routes",
         "compiler.tools", "compiler.pricing",
         "registry", "registry.metadata", "registry.sources", "registry.declarations",
         "registry.resolve"}
    ),
    "compiler.page": frozenset(
        {"compiler", "compiler.artifacts", "compiler.pricing", "registry", "registry.metadata",
         "registry.resolve"}
    ),
    "compiler.cli": frozenset(
        {"compiler", "compiler.schema", "compiler.reply", "compiler.passes", "compiler.routes",
         "compiler.tools", "compiler.pricing",
         "compiler.artifacts", "compiler.page",
         "registry", "registry.metadata", "registry.sources", "registry.declarations",
         "registry.resolve"}
    ),
}


def folder(name: str) -> str:
    """The folder a module lives in (a package ``__init__`` is its own, ``X.__init__``)."""
    module = MODULES[name]
    return f"{name}.__init__" if module.is_package else module.package


def edges_into(prefix: str) -> list[tuple[str, str]]:
    """Every ``(importer, imported)`` edge whose target is ``prefix`` or below it."""
    return [
        (source, target)
        for source, targets in sorted(GRAPH.items())
        for target in sorted(targets)
        if target == prefix or target.startswith(prefix + ".")
    ]


def test_the_graph_reader_sees_lazy_type_checking_and_relative_imports(tmp_path: Path) -> None:
    """An import in a function, under TYPE_CHECKING, relative, of a submodule, by
    ``importlib.import_module`` or through an ``_EXPORTS`` table is an edge."""
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "a.py").write_text("def f():\n    from pkg.b import x\n")
    (pkg / "b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.sub import c\nx = 1\n"
    )
    (pkg / "sub" / "c.py").write_text("from ..a import f\nfrom . import d\n")
    (pkg / "sub" / "d.py").write_text(
        "import importlib\n_EXPORTS = {'x': 'pkg.e'}\n"
        "def g():\n    return importlib.import_module('pkg.sub')\n"
    )
    (pkg / "e.py").write_text("")
    graph = import_graph(find_modules(tmp_path, ["pkg"]))
    assert graph["pkg.a"] == {"pkg.b"}
    assert graph["pkg.b"] == {"pkg.sub.c"}
    assert graph["pkg.sub.c"] == {"pkg.a", "pkg.sub.d"}
    assert graph["pkg.sub.d"] == {"pkg.e", "pkg.sub"}
    assert cycles(graph) == [["pkg.a", "pkg.b", "pkg.sub.c"]]


def test_the_cycle_finder_reports_only_real_cycles() -> None:
    """A diamond is no cycle; a loop through three modules is one, reported once."""
    assert cycles({"a": {"b", "c"}, "b": {"d"}, "c": {"d"}, "d": set()}) == []
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_every_module_is_read() -> None:
    """The walk finds the modules of every subfolder (a sanity check on the reader)."""
    assert {"compiler.schema.projection", "registry.sources.cache", "compiler.cli.main"} <= set(
        MODULES
    )
    assert GRAPH["compiler.schema.projection"] >= {"compiler.schema.projector"}


def test_no_import_cycles() -> None:
    """No two modules import each other, directly or through others (projection and
    projector included)."""
    assert cycles(GRAPH) == []


def test_registry_never_imports_compiler() -> None:
    """The registry stands alone: no module of registry/ imports anything of compiler/."""
    assert [edge for edge in edges_into("compiler") if edge[0].startswith("registry")] == []


def test_passes_import_neither_cli_nor_artifacts() -> None:
    """A pass never reaches up to the command line or to what compiles are written into."""
    bad = [
        (source, target)
        for prefix in ("compiler.cli", "compiler.artifacts")
        for source, target in edges_into(prefix)
        if source.startswith("compiler.passes")
    ]
    assert bad == []


def test_schema_imports_no_pass() -> None:
    """The contract and its projection know nothing of the passes that use them."""
    bad = [edge for edge in edges_into("compiler.passes") if edge[0].startswith("compiler.schema")]
    assert bad == []


def test_nothing_imports_cli() -> None:
    """Only ``python -m compiler`` (compiler/__main__.py) and cli/ itself import cli/."""
    bad = [
        (source, target)
        for source, target in edges_into("compiler.cli")
        if not source.startswith("compiler.cli") and source != "compiler.__main__"
    ]
    assert bad == []


def test_each_folder_imports_only_the_folders_upstream_of_it() -> None:
    """Every edge between folders is one the data-flow table allows (a package's public
    ``__init__`` may name any module of its own package)."""
    assert set(MAY_IMPORT) == {folder(m) for m in MODULES if not MODULES[m].is_package}
    bad = []
    for source, targets in sorted(GRAPH.items()):
        here = folder(source)
        for target in sorted(targets):
            there = folder(target)
            if there in (here, "compiler.__init__", "registry.__init__"):
                continue  # a root __init__ only locates the package (compile cache)
            if here.endswith(".__init__"):  # a public API names its own package's modules
                allowed = target.split(".")[0] == source.split(".")[0]
            else:
                allowed = there in MAY_IMPORT[here]
            if not allowed:
                bad.append(f"{source} -> {target}")
    assert bad == [], "\n".join(bad)


def test_names_are_imported_from_the_module_that_defines_them() -> None:
    """No module passes on a name it imported (no compatibility shims): every
    ``from M import name`` in the packages, tests, bench and scripts names a module that
    exists and defines ``name`` (or a submodule), except the two packages' public
    ``__init__``."""
    defined: dict[str, set[str]] = {}
    bad = []
    files = [p for d in (*PACKAGES, "tests", "bench", "scripts") for p in (ROOT / d).rglob("*.py")]
    for path in sorted(files):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not isinstance(node, ast.ImportFrom) or node.level or node.module is None:
                continue
            if node.module.split(".")[0] not in ROOT_PACKAGES:
                continue
            if node.module not in MODULES:
                bad.append(f"{path.relative_to(ROOT)}:{node.lineno}: no module {node.module}")
                continue
            if node.module in ROOT_PACKAGES:
                continue  # the public API, re-exported by design
            if node.module not in defined:
                defined[node.module] = top_level_names(MODULES[node.module].path)
            for alias in node.names:
                if alias.name not in defined[node.module] and (
                    f"{node.module}.{alias.name}" not in MODULES
                ):
                    bad.append(f"{path.relative_to(ROOT)}:{node.lineno}: "
                               f"{alias.name} from {node.module}")
    assert bad == [], "\n".join(bad)


@pytest.mark.parametrize(
    "name", sorted(m for m in MODULES if m not in ROOT_PACKAGES and "__all__" in
                   MODULES[m].path.read_text(encoding="utf-8"))
)
def test_all_lists_only_names_the_module_defines(name: str) -> None:
    """An internal module's ``__all__`` exports what it defines, never what it imported."""
    defined = top_level_names(MODULES[name].path)
    tree = ast.parse(MODULES[name].path.read_text(encoding="utf-8"))
    exported: list[str] = []
    for node in tree.body:
        targets = (
            node.targets if isinstance(node, ast.Assign)
            else [node.target] if isinstance(node, ast.AnnAssign | ast.AugAssign) else []
        )
        if not any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
            continue
        assert isinstance(node.value, ast.List | ast.Tuple), "__all__ must be a literal list"
        exported += [str(elt.value) for elt in node.value.elts if isinstance(elt, ast.Constant)]
    assert exported, "__all__ is named but no list was read"
    assert [n for n in exported if n not in defined] == []


def test_modules_and_folders_stay_small() -> None:
    """No module is over 400 lines and no folder holds more than 12 modules."""
    long = {
        name: lines
        for name, module in MODULES.items()
        if (lines := len(module.path.read_text(encoding="utf-8").splitlines())) > 400
    }
    assert long == {}
    per_folder: dict[str, int] = {}
    for module in MODULES.values():
        if not module.is_package:
            per_folder[module.package] = per_folder.get(module.package, 0) + 1
    assert {f: n for f, n in per_folder.items() if n > 12} == {}


SUBPACKAGES = sorted(m for m, module in MODULES.items() if module.is_package and "." in m)


@pytest.mark.parametrize("name", SUBPACKAGES)
def test_every_subpackage_says_what_it_holds(name: str) -> None:
    """Each subfolder's ``__init__.py`` is a docstring of two or three lines (what lives
    there, where its data comes from and goes) and nothing else."""
    tree = ast.parse(MODULES[name].path.read_text(encoding="utf-8"))
    doc = ast.get_docstring(tree)
    assert doc is not None
    assert 2 <= len([line for line in doc.splitlines() if line.strip()]) <= 3
    assert len(tree.body) == 1


def test_the_folder_map_in_the_docs_names_every_folder() -> None:
    """docs/concepts.md draws the folder map: every subfolder (code or data) is in it, and
    nothing else."""
    text = (ROOT / "docs" / "concepts.md").read_text(encoding="utf-8")
    block = text.split("## Folder map", 1)[1].split("```", 2)[1]
    drawn: set[str] = set()
    top = ""
    for line in block.splitlines():
        match = re.match(r"^(\s*)([a-z_]+)/\s", line + " ")
        if match is None:
            continue
        if not match.group(1):
            top = match.group(2)
        elif top in ROOT_PACKAGES:
            drawn.add(f"{top}.{match.group(2)}")
    folders = {
        ".".join(path.relative_to(ROOT).parts)
        for package in PACKAGES
        for path in (ROOT / package).iterdir()
        if path.is_dir() and path.name != "__pycache__"
    }
    assert drawn == folders


def test_the_distribution_ships_every_folder() -> None:
    """setuptools' package discovery, as pyproject.toml configures it, finds exactly the
    packages of the tree (an editable install would hide a subpackage left out), and the
    package data lists py.typed for both packages and the seed catalog."""
    setuptools = pytest.importorskip("setuptools")
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"][
        "setuptools"
    ]
    found = setuptools.find_packages(where=str(ROOT), **config["packages"]["find"])
    assert sorted(found) == sorted(m for m, module in MODULES.items() if module.is_package)
    data = config["package-data"]
    assert "py.typed" in data["registry"] and "py.typed" in data["compiler"]
    assert any((ROOT / "registry").glob(pattern) for pattern in data["registry"] if "/" in pattern)

"""Every ``>>>`` example in the packages' docstrings runs and prints what it shows."""

from __future__ import annotations

import doctest
import importlib

import pytest

from tests.conftest import ROOT
from tests.import_graph import find_modules

MODULES = sorted(
    name
    for name, module in find_modules(ROOT, ("registry", "compiler")).items()
    if ">>>" in module.path.read_text(encoding="utf-8") and name != "compiler.__main__"
)


def test_the_examples_are_found() -> None:
    """The sweep below runs examples of many modules (a sanity check on the module list)."""
    attempted = sum(
        doctest.testmod(importlib.import_module(name), report=False).attempted
        for name in MODULES
    )
    assert len(MODULES) >= 10 and attempted >= 20


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name: str) -> None:
    """The module's examples pass as doctests, with only the imports they write out."""
    result = doctest.testmod(importlib.import_module(name), report=False)
    assert result.failed == 0

"""Reading the syntax tree ``re._parser`` builds: element kinds and their subpatterns.

Shared by :mod:`compiler.guards.regex_shape` and :mod:`compiler.guards.regex_degree`.
An element is ``(opcode, argument)``; ``opcode.name`` is its kind (``LITERAL``,
``MAX_REPEAT``, ``SUBPATTERN`` ...), as in CPython's ``Lib/re/_parser.py``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = ["REPEATS", "SINGLE", "children", "flat"]

SINGLE = frozenset({"LITERAL", "NOT_LITERAL", "ANY", "IN"})
"""Kinds that match exactly one character."""

REPEATS = frozenset({"MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"})
"""Kinds of repeat: greedy, lazy, possessive; argument ``(low, high, body)``."""


def children(name: str, av: Any) -> list[Any]:
    """The subpatterns directly inside one element of kind ``name``, argument ``av``."""
    if name in REPEATS:
        return [av[2]]
    if name == "SUBPATTERN":
        return [av[3]]
    if name == "ATOMIC_GROUP":
        return [av]
    if name in ("ASSERT", "ASSERT_NOT"):
        return [av[1]]
    if name == "BRANCH":
        return list(av[1])
    if name == "GROUPREF_EXISTS":
        return [av[1]] + ([av[2]] if av[2] is not None else [])
    return []


def flat(seq: Iterable[Any]) -> list[Any]:
    """The elements of ``seq`` with its groups opened (a group matches once)."""
    return [i for op, av in seq for i in (flat(av[3]) if op.name == "SUBPATTERN"
                                          else [(op, av)])]

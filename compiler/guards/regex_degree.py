"""The polynomial degree of a pattern under a backtracking engine (Python's ``re``).

A *free* repeat may match more than ``small_bound`` times and backtracks (greedy or lazy,
not possessive or inside an atomic group). Free repeats form a *chain* when each can
take a character that every earlier one of the chain can take, and whatever lies
between them (literals, small or optional parts) can be taken by them too: the text
between the first and the last then splits in about ``n**k`` ways for ``k`` repeats, and
a failing match tries them all. ``re.search`` (what pydantic runs) tries every start, so
a pattern not anchored by ``^`` (without MULTILINE) or ``\\A`` begins with an implicit
free ``.*?``. :func:`chain_risk` refuses a chain of :data:`MAX_DEGREE` or more:
``^[a-z]+[a-z0-9]*[a-z]+$`` (36.7 s on 3,000 characters), ``^a*a*a*b$``, unanchored
``\\d+\\d+x``; a chain of two (quadratic) passes: ``^[^@\\s]+@[^@\\s]+\\.[^@\\s]+$``,
unanchored ``\\d+x``, kept cheap by the reply's bound on the strings a python-re
pattern runs on (:data:`compiler.reply.bounds.MAX_PYTHON_RE_CHARS`).
"""

from __future__ import annotations

from typing import Any

from compiler.guards.regex_tree import REPEATS, SINGLE, children, flat

__all__ = ["MAX_DEGREE", "chain_risk"]

MAX_DEGREE = 3
"""The shortest chain of free repeats that is refused (``n**3`` splits of the text)."""

_MESSAGE = ("{k} unbounded repeats in a row can take the same characters, so matching takes "
            "time growing as the text's length to the power {k}; at most {most} are allowed "
            "(separate them by a character they cannot take)")

Chain = tuple[int, frozenset[int]]


def chain_risk(shape: Any, seq: list[Any], small_bound: int) -> str | None:
    """Say why the parsed pattern ``seq`` has a chain of :data:`MAX_DEGREE` free repeats,
    or None.

    Args:
        shape: the pattern's character sets (``universe``, ``multiline``, ``chars(seq)``,
            ``single(kind, argument)``, ``nullable(element)``), as
            :mod:`compiler.guards.regex_shape` computes them.
        seq: the top-level elements of the parsed pattern.
        small_bound: the most iterations a repeat may have and not be free.
    """
    at = [av.name for op, av in flat(seq)[:1] if op.name == "AT"]
    anchored = at == ["AT_BEGINNING_STRING"] or (at == ["AT_BEGINNING"] and not shape.multiline)
    chains = _Chains(shape, small_bound)
    try:
        chains.chain(seq, 0 if anchored else 1, frozenset() if anchored else shape.universe)
    except _Found as found:
        return str(found)
    return None


class _Found(Exception):
    """Raised with the sentence once a long enough chain is found."""


class _Chains:
    def __init__(self, shape: Any, small_bound: int) -> None:
        self.shape = shape
        self.small_bound = small_bound
        self.memo: dict[tuple[int, int, frozenset[int]], Chain] = {}

    def takes(self, item: tuple[Any, Any]) -> frozenset[int]:
        """The probe characters one element can consume."""
        name, av = item[0].name, item[1]
        if name in SINGLE:
            return frozenset(self.shape.single(name, av))
        return frozenset().union(*(self.shape.chars(sub) for sub in children(name, av)))

    def chain(self, seq: Any, k: int, common: frozenset[int]) -> Chain:
        """Follow the chain through ``seq`` (``k`` repeats so far, sharing the characters
        ``common``); return the chain at its end. Memoised per subpattern object."""
        key = (id(seq), k, common)
        if key not in self.memo:
            self.memo[key] = self._follow(seq, k, common)
        return self.memo[key]

    def _follow(self, seq: Any, k: int, common: frozenset[int]) -> Chain:
        for item in flat(seq):
            name, av = item[0].name, item[1]
            if name in ("MAX_REPEAT", "MIN_REPEAT") and av[1] > self.small_bound:
                self.chain(av[2], 0, frozenset())  # chains inside the body
                took = frozenset(self.shape.chars(av[2]))
                k, common = (k + 1, common & took) if k and common & took else (1, took)
                if k >= MAX_DEGREE:
                    raise _Found(_MESSAGE.format(k=k, most=MAX_DEGREE - 1))
            elif name in ("BRANCH", "GROUPREF_EXISTS"):
                ends = [self.chain(alt, k, common) for alt in children(name, av)]
                if name == "GROUPREF_EXISTS" and av[2] is None:
                    ends.append((k, common))
                k, common = _longest(ends)
            elif name in REPEATS and name != "POSSESSIVE_REPEAT":  # a small repeat
                ends = [(k, common)] if av[0] == 0 else []  # skipped when it may be
                for _ in range(min(int(av[1]), 2)):
                    k, common = self.chain(av[2], k, common)
                k, common = _longest([*ends, (k, common)])
            elif name in ("ASSERT", "ASSERT_NOT", "ATOMIC_GROUP", "POSSESSIVE_REPEAT"):
                for sub in children(name, av):
                    self.chain(sub, 0, frozenset())  # matched on its own, no way back in
                if name in ("ATOMIC_GROUP", "POSSESSIVE_REPEAT") and not common & self.takes(
                        item):
                    k, common = 0, frozenset()
            elif name != "AT" and not self.shape.nullable(item) and not (
                    common & self.takes(item)):
                k, common = 0, frozenset()  # a separator the chain cannot take
        return k, common


def _longest(ends: list[Chain]) -> Chain:
    """The longest of several chains (their characters joined when tied)."""
    top = max(n for n, _ in ends)
    return top, frozenset().union(*(c for n, c in ends if n == top))

"""Which regular expressions can backtrack catastrophically under Python's ``re``.

:func:`backtracking_risk` reads a pattern's syntax tree (the standard library's own
parser, ``re._parser``, which ``re.compile`` uses) and applies a conservative structural
rule. A *repeat* is any quantifier (``*``, ``+``, ``?``, ``{m,n}``); it *iterates* when it
may match more than once and is not possessive. Inside the body of an iterating repeat:

* the body must not be able to match the empty text, unless the repeat is bounded by
  at most :data:`SMALL_BOUND` (``(a*)*``, ``(a?){30}``);
* no alternation may have two branches that can start the same way, counting what
  follows them up to the next iteration (``(a|aa)+``, ``(a|a)*``);
* no inner repeat that chooses how much to take may take a character that whatever
  follows it could take too, up to the next iteration (``(a+)+``, ``(\\w+\\s?)+``): a
  separator the inner repeat cannot match, as in ``(\\.[a-z]+)+``, is what keeps the
  split of the text unique;
* no back-reference anywhere (``(a+)\\1``).

Bounded repeats outside any other are exempt while the product of their ways to match,
over the whole pattern, stays within :data:`FEW_WAYS` (``(a?){3}`` has 8; a dotted-quad
IPv4 pattern 216): that work does not grow with the text, but the ways of repeats in
sequence multiply (``(a?){10}(a?){10}(a?){10}`` has 2**30), so only the first ones
within the figure are exempt. Runs of consecutive elements outside any iterating repeat
(:meth:`_Shape.runs`) are bounded the same way: optional or bounded repeats (single
characters and classes too: ``[a-z]?`` 30 times) and alternations that can take the same
characters multiply their ways; more than :data:`FEW_WAYS` is refused.

Any of these makes the number of ways to split one text grow exponentially with its
length, which a backtracking engine tries one by one when the match fails. Character
sets are compared on a probe alphabet (Latin-1, Latin Extended, some wider letters,
digits and spaces, and every character the pattern names), so overlaps are found for
the characters that matter; a pattern the rule refuses may be safe, never the reverse
for these shapes. Under IGNORECASE two characters are the same when ``re`` matches one
with the other: the lower-case key ``re`` uses (``_sre.unicode_tolower``) plus its extra
equivalences (``re._casefix``: long s and s, micro sign and mu, theta symbol and theta,
...), and the probe alphabet gains every case-folding partner of its characters.

The polynomial degree is bounded too (:mod:`compiler.guards.regex_degree`: a chain of
three or more unbounded repeats that can take the same text is refused). Pydantic's default
engine (``rust-regex``) runs in linear time and needs none of this.
"""

from __future__ import annotations

import functools
import importlib
import re
from collections.abc import Iterable
from typing import Any

from compiler.guards.regex_degree import chain_risk
from compiler.guards.regex_tree import REPEATS, SINGLE, children, flat

__all__ = ["FEW_WAYS", "SMALL_BOUND", "backtracking_risk"]

SMALL_BOUND = 10
"""Most iterations allowed for a repeated part that can match the empty text."""

FEW_WAYS: int = 1 << SMALL_BOUND
"""A bounded repeat, outside any other, that can match in at most this many ways in all
(``(a?){3}``: 8; ``(?:(25[0-5]|2[0-4][0-9]|1?[0-9]?[0-9])[.]){3}``: 216) is exempt from the rule,
while the product of the ways of the exempt repeats of the pattern stays within it."""

_PARSER: Any = importlib.import_module("re._parser")  # no stub: typed as Any
_C: Any = importlib.import_module("re._constants")
_MAX = _C.MAXREPEAT
_CATEGORY = {
    "CATEGORY_DIGIT": r"\d", "CATEGORY_NOT_DIGIT": r"\D", "CATEGORY_SPACE": r"\s",
    "CATEGORY_NOT_SPACE": r"\S", "CATEGORY_WORD": r"\w", "CATEGORY_NOT_WORD": r"\W",
}
_BASE = frozenset(range(0x250)) | frozenset(
    map(ord, "\u0660\u0669\u0966\u00a0\u1680\u2000\u2028\u2029\u3000\u0391\u03c9\u0416\u05d0"
             "\u0627\u4e2d\u3042\uac00\uff10\uffff\U0001f600")
)


_LOWER: Any = importlib.import_module("_sre").unicode_tolower
_EXTRA: dict[int, tuple[int, ...]] = importlib.import_module("re._casefix")._EXTRA_CASES


def _lower(c: int) -> int:
    return int(_LOWER(c))


@functools.cache
def _uppers() -> dict[int, tuple[int, ...]]:
    """Every character whose case-insensitive key (``re``'s tolower) differs from it, by
    key (Kelvin sign -> k): built once, on the first pattern that ignores case."""
    found: dict[int, list[int]] = {}
    for c in range(0x110000):
        if (low := _lower(c)) != c:
            found.setdefault(low, []).append(c)
    return {k: tuple(v) for k, v in found.items()}


def _fold_closure(chars: Iterable[int]) -> set[int]:
    """``chars`` and every character ``re`` matches with one of them under IGNORECASE."""
    out: set[int] = set()
    for c in chars:
        keys = {_lower(c), *_EXTRA.get(_lower(c), ())}
        for k in keys:
            out.add(k)
            out.update(_uppers().get(k, ()))
        out.add(c)
    return out


class _Risk(Exception):
    """Raised inside the walk with the sentence that refuses the pattern."""


def backtracking_risk(pattern: str) -> str | None:
    """Say why ``pattern`` can backtrack catastrophically under Python's ``re``, or None.

    Args:
        pattern: a regular expression in Python's syntax (a JSON Schema ``pattern``).

    Returns:
        One sentence naming the shape found (see the module docstring), or None when
        the pattern has none of them. A pattern Python cannot parse returns None
        (pydantic refuses it when the contract is built).

    >>> backtracking_risk(r"^(a+)+$")[:60]
    'an inner repeat inside a repeated group can take the same ch'
    >>> backtracking_risk(r"^[\\w.+-]+@[\\w-]+(\\.[\\w-]+)+$") is None
    True
    """
    try:
        tree = _PARSER.parse(pattern)
    except (re.error, RecursionError, OverflowError, ValueError):
        return None
    try:
        shape = _Shape(tree)
        shape.scan(list(tree), frozenset(), repeated=False)
        shape.runs(list(tree))
        return chain_risk(shape, list(tree), SMALL_BOUND)
    except _Risk as risk:
        return str(risk)
    except RecursionError:
        return "the pattern nests too deeply to analyse"


class _Shape:
    """The sets, emptiness and first characters of one parsed pattern (memoised)."""

    def __init__(self, tree: Any) -> None:
        fold = bool(tree.state.flags & _C.SRE_FLAG_IGNORECASE) or _any_flag(
            tree, _C.SRE_FLAG_IGNORECASE)
        named = _BASE | _named_chars(tree)
        self.universe = frozenset(_fold_closure(named) if fold else named)
        self.fold = fold
        self._chars: dict[int, frozenset[int]] = {}
        self.multiline = bool(tree.state.flags & _C.SRE_FLAG_MULTILINE) or _any_flag(
            tree, _C.SRE_FLAG_MULTILINE)
        self.exempt_ways = 1  # product of the ways of the exempt bounded repeats so far

    def single(self, op: str, av: Any) -> frozenset[int]:
        """The probe characters one single-character element matches."""
        u = self.universe
        if op == "LITERAL":
            found = frozenset({av}) & u
        elif op == "NOT_LITERAL":
            found = u - {av}
        elif op == "ANY":
            found = u
        else:  # IN
            negate, found = False, frozenset()
            for kind, value in av:
                name = kind.name
                if name == "NEGATE":
                    negate = True
                elif name == "LITERAL":
                    found |= {value} & u
                elif name == "RANGE":
                    found |= {c for c in u if value[0] <= c <= value[1]}
                elif name == "CATEGORY" and value.name in _CATEGORY:
                    test = re.compile(_CATEGORY[value.name])
                    found |= {c for c in u if test.match(chr(c))}
                else:
                    found = u  # anything unknown: assume it matches everything
            found = u - found if negate else found
        if self.fold:  # the equivalence re itself uses (sre_compile: tolower + _casefix)
            keys = {_lower(c) for c in found}
            keys |= {x for k in list(keys) for x in _EXTRA.get(k, ())}
            found = frozenset(c for c in u if c in found or _lower(c) in keys)
        return found

    def chars(self, seq: Iterable[Any]) -> frozenset[int]:
        """Every probe character some element of ``seq`` can consume."""
        key = id(seq)
        if key in self._chars:
            return self._chars[key]
        found: set[int] = set()
        for op, av in seq:
            name = op.name
            if name in SINGLE:
                found |= self.single(name, av)
            else:
                for sub in children(name, av):
                    found |= self.chars(sub)
        result = self._chars[key] = frozenset(found)
        return result

    def nullable(self, item: tuple[Any, Any]) -> bool:
        """Whether one element can match the empty text."""
        name, av = item[0].name, item[1]
        if name in SINGLE:
            return False
        if name in REPEATS:
            return av[0] == 0 or all(self.nullable(i) for i in av[2])
        if name == "BRANCH":
            return any(all(self.nullable(i) for i in alt) for alt in av[1])
        if name == "GROUPREF_EXISTS":
            return av[2] is None or any(all(self.nullable(i) for i in alt)
                                        for alt in (av[1], av[2]))
        if name in ("SUBPATTERN", "ATOMIC_GROUP"):
            return all(self.nullable(i) for i in children(name, av)[0])
        return True  # AT, ASSERT, ASSERT_NOT, GROUPREF and anything else: may be empty

    def first(self, item: tuple[Any, Any]) -> frozenset[int]:
        """The probe characters a match of one element can start with."""
        name, av = item[0].name, item[1]
        if name in SINGLE:
            return self.single(name, av)
        if name in ("AT", "ASSERT", "ASSERT_NOT"):
            return frozenset()
        if name == "GROUPREF":
            return self.universe
        if name in REPEATS and av[1] == 0:
            return frozenset()
        found: frozenset[int] = frozenset()
        for sub in children(name, av):
            found |= self.first_of(list(sub))
        return found

    def first_of(self, seq: list[Any]) -> frozenset[int]:
        """The probe characters a match of the sequence ``seq`` can start with."""
        found: frozenset[int] = frozenset()
        for item in seq:
            found |= self.first(item)
            if not self.nullable(item):
                break
        return found

    def scan(self, seq: list[Any], follow: frozenset[int], *, repeated: bool) -> None:
        """Check ``seq``; ``follow``: what can start after it, up to the next iteration of
        the innermost iterating repeat; ``repeated``: ``seq`` lies inside such a body."""
        after = [follow] * (len(seq) + 1)  # after[i]: what can start once seq[i] is done
        for i in range(len(seq) - 1, 0, -1):
            start = self.first(seq[i])
            after[i - 1] = start | after[i] if self.nullable(seq[i]) else start
        for i, (op, av) in enumerate(seq):
            name, then = op.name, after[i]
            if name == "GROUPREF":
                raise _Risk("a back-reference makes matching backtrack over every earlier "
                            "split of the text")
            if name in REPEATS:
                self._repeat(name, av, then, repeated=repeated)
            elif name in ("BRANCH", "GROUPREF_EXISTS"):
                alts = [list(alt) for alt in children(name, av)]
                if name == "GROUPREF_EXISTS" and av[2] is None:
                    alts.append([])
                if repeated:
                    self._branches(alts, then)
                for alt in alts:
                    self.scan(alt, then, repeated=repeated)
            elif name == "SUBPATTERN":
                self.scan(list(av[3]), then, repeated=repeated)
            elif name == "ATOMIC_GROUP":  # no backtracking into it
                self.scan(list(av), then, repeated=False)
            elif name in ("ASSERT", "ASSERT_NOT"):  # matched on its own
                self.scan(list(av[1]), frozenset(), repeated=False)

    def _repeat(self, name: str, av: Any, then: frozenset[int], *, repeated: bool) -> None:
        low, high, body = av[0], av[1], list(av[2])
        if repeated and low < high and name != "POSSESSIVE_REPEAT" and (
                self.chars(av[2]) & then):
            raise _Risk("an inner repeat inside a repeated group can take the same characters "
                        "as what follows it, so the text splits in exponentially many ways")
        iterates = high > 1 and name != "POSSESSIVE_REPEAT"
        if iterates and not repeated and high != _MAX and (
                self.exempt_ways * self.ways(("R", av)) <= FEW_WAYS):
            # a bounded repeat with few ways to match, counting those before it
            self.exempt_ways *= self.ways(("R", av))
            self.scan(body, then, repeated=False)
            return
        if iterates and all(self.nullable(i) for i in body) and (
                high == _MAX or high > SMALL_BOUND):
            bound = "without bound" if high == _MAX else f"{high} times"
            raise _Risk(f"a part that can match the empty text (an optional element) is "
                        f"repeated {bound}; at most {SMALL_BOUND} is allowed")
        if iterates:
            again = self.first_of(body) | (then if repeated else frozenset())
            self.scan(body, again, repeated=True)
        else:
            self.scan(body, then, repeated=repeated)

    def ways(self, item: tuple[Any, Any]) -> int:
        """How many ways one element can match, capped just above :data:`FEW_WAYS`."""
        name, av = item[0] if isinstance(item[0], str) else item[0].name, item[1]
        cap = FEW_WAYS + 1
        if name in SINGLE or name in ("AT", "ASSERT", "ASSERT_NOT"):
            return 1
        if name in ("R", *REPEATS):
            low, high, body = int(av[0]), int(av[1]), av[2]
            if high == _MAX:
                return cap
            each = self.ways_of(body)
            total, power = 0, 1
            for _ in range(min(low, 64)):  # each ** low, capped
                power = min(cap, power * each)
            for _ in range(low, high + 1):
                total = min(cap, total + power)
                power = min(cap, power * each)
                if total >= cap:
                    break
            return total
        if name in ("BRANCH", "GROUPREF_EXISTS"):
            alts = children(name, av)
            extra = 1 if name == "GROUPREF_EXISTS" and av[2] is None else 0
            return min(cap, extra + sum(min(cap, self.ways_of(alt)) for alt in alts))
        if name in ("SUBPATTERN", "ATOMIC_GROUP"):
            return self.ways_of(children(name, av)[0])
        return cap

    def ways_of(self, seq: Iterable[Any]) -> int:
        total = 1
        for item in seq:
            total = min(FEW_WAYS + 1, total * self.ways(item))
        return total

    def runs(self, seq: list[Any]) -> None:
        """Refuse a run of consecutive elements, outside any iterating repeat, that can take
        the same characters and together match in more than :data:`FEW_WAYS` ways
        (``[a-z]?`` 30 times, ``a?`` 40 times then ``a`` 20 times, ``(?:a{0,3})`` 20
        times): each optional or bounded repeat (single characters and classes too) and
        each alternation multiplies the ways of the run; an element that must take a
        character the run cannot take ends it."""
        ways, common = 1, frozenset[int]()
        for item in flat(seq):
            name, av = item[0].name, item[1]
            took = self.single(name, av) if name in SINGLE else frozenset().union(
                *(self.chars(sub) for sub in children(name, av)))
            if name in ("BRANCH", "GROUPREF_EXISTS") or (name in REPEATS and av[1] == 1):
                for sub in children(name, av):
                    self.runs(list(sub))
            if not self.nullable(item) and not took & common:
                ways, common = 1, frozenset()  # a separator: a new run starts
            counted = name in ("BRANCH", "GROUPREF_EXISTS") or (
                name in REPEATS and name != "POSSESSIVE_REPEAT" and av[0] < av[1] != _MAX)
            each = self.ways(item) if counted else 1
            if each <= FEW_WAYS:
                ways = ways * each if took & common or ways == 1 else max(ways, each)
            common |= took
            if ways > FEW_WAYS:
                raise _Risk(f"optional or bounded parts in a row that can take the same "
                            f"characters match in more than {FEW_WAYS} ways together, so "
                            "a failing match retries exponentially many splits; separate "
                            "them by a character they cannot take")

    def _branches(self, alts: list[list[Any]], then: frozenset[int]) -> None:
        seen: frozenset[int] = frozenset()
        empties = 0
        for alt in alts:  # any two branches overlap <=> one overlaps the union before it
            empty = all(self.nullable(i) for i in alt)
            start = self.first_of(alt) | (then if empty else frozenset())
            empties += empty
            if start & seen or empties > 1:
                raise _Risk("an alternation inside a repeated group has branches that can "
                            "match the same text")
            seen |= start


def _walk(tree: Any) -> Iterable[tuple[str, Any]]:
    stack = [tree]
    while stack:
        for op, av in stack.pop():
            yield op.name, av
            stack.extend(children(op.name, av))


def _named_chars(tree: Any) -> set[int]:
    """Characters the pattern names (literals, range ends), so each is probed."""
    found: set[int] = set()
    for name, av in _walk(tree):
        items = av if name == "IN" else [(name, av)] if name in ("LITERAL", "NOT_LITERAL") else []
        for kind, value in items:
            kind_name = kind if isinstance(kind, str) else kind.name
            if kind_name in ("LITERAL", "NOT_LITERAL"):
                found.add(value)
            elif kind_name == "RANGE":
                found.update((value[0], value[1], min(value[0] + 1, value[1])))
    return {c for c in found if 0 <= c <= 0x10FFFF}


def _any_flag(tree: Any, flag: int) -> bool:
    return any(name == "SUBPATTERN" and av[1] & flag for name, av in _walk(tree))

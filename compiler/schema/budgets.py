"""Budgets and refusals that keep a contract's schema cheap to project and safe to send.

* :class:`ProjectionBudget`: how large a projection may grow while references are
  inlined (schema nodes, nesting depth, bytes of names and values), counted as it is
  built, so a schema bomb (a model with two fields of the next model, 12 levels deep)
  stops with a :class:`~compiler.errors.ProjectionError` naming the path long before any
  expensive work. The idea is from openai-agents' strict-schema conversion, which
  bounds node count and depth; the figures are ours (docs/contracts.md).
* :func:`source_problems`: what makes a contract's own schema unusable before any
  projection: more nodes than the budget, an external ``$ref``/``$dynamicRef``, a
  ``$defs`` alias cycle (``A -> B -> A`` with no schema in between).
* :func:`non_finite_numbers`: NaN and infinities (``Field(ge=float("nan"))``), which
  have no JSON form, with their paths.
* :func:`backtracking_patterns` with :func:`uses_python_re`: ``pattern`` values that
  can backtrack catastrophically, refused when a contract uses ``regex_engine=
  "python-re"`` (pydantic's default engine runs in linear time).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, get_args

from compiler.errors import ProjectionError
from compiler.schema.walk import escape_pointer, walk_schema

__all__ = ["DEFAULT_BUDGET", "BudgetCounter", "ProjectionBudget", "backtracking_patterns",
           "non_finite_numbers", "source_problems", "uses_python_re"]


@dataclass(frozen=True)
class ProjectionBudget:
    """How large one projection (and the contract schema it starts from) may be.

    Attributes:
        nodes: schema objects, counted in the contract's schema and again in the
            projection as references are inlined.
        depth: levels of schema nesting in the projection (every subschema is a level,
            so one model field is two: ``properties`` -> the field).
        bytes: characters of property names, keyword names and values in the
            projection (about its compact JSON size).
    """

    nodes: int = 10_000
    depth: int = 128
    bytes: int = 500_000


DEFAULT_BUDGET = ProjectionBudget()
"""The budget :func:`compiler.schema.projection.project` uses unless given another."""


class BudgetCounter:
    """Counts one projection against a budget; raises at the first overrun."""

    def __init__(self, budget: ProjectionBudget) -> None:
        self.budget = budget
        self.nodes = 0
        self.bytes = 0

    def node(self, pointer: str, depth: int) -> None:
        """Count one projected schema node at ``depth`` (``pointer`` into the contract)."""
        self.nodes += 1
        if self.nodes > self.budget.nodes:
            self._over(pointer, f"more than {self.budget.nodes:,} schema nodes")
        if depth > self.budget.depth:
            self._over(pointer, f"nested more than {self.budget.depth} levels deep")

    def size(self, pointer: str, key: str, value: Any) -> None:
        """Count a keyword and, for a scalar value, its text."""
        self.bytes += len(key) + (len(value) if isinstance(value, str) else 8)
        if self.bytes > self.budget.bytes:
            self._over(pointer, f"more than {self.budget.bytes:,} bytes")

    def _over(self, pointer: str, what: str) -> None:
        raise ProjectionError(
            f"{pointer or '/'}: the projected schema grows to {what} (the projection "
            "budget, docs/contracts.md); a model used in many places is inlined at each "
            "one where the dialect has no $ref: use fewer levels or a dialect that keeps "
            "references"
        )


def source_problems(schema: Mapping[str, Any], budget: ProjectionBudget) -> Iterator[str]:
    """Yield why a contract's schema cannot be projected at all (first problems first).

    Args:
        schema: the contract's JSON Schema.
        budget: its ``nodes`` bounds the schema itself.

    Yields:
        One message per problem, each naming a JSON Pointer.
    """
    for count, (pointer, node) in enumerate(walk_schema(schema), start=1):
        if count > budget.nodes:
            yield (f"{pointer or '/'}: the contract's schema has more than {budget.nodes:,} "
                   "schema nodes (the projection budget, docs/contracts.md); split the "
                   "contract")
            return
        for keyword in ("$ref", "$dynamicRef"):
            ref = node.get(keyword)
            if isinstance(ref, str) and not ref.startswith("#"):
                yield (f"external {keyword} {ref!r} at {pointer or '/'} is not supported: a "
                       "contract schema must be self-contained (local '#/...' references "
                       "only)")
    defs = schema.get("$defs")
    if isinstance(defs, Mapping):
        yield from _alias_cycles(defs)


def _alias_cycles(defs: Mapping[str, Any]) -> Iterator[str]:
    """``$defs`` entries that are only a ``$ref`` to another, around in a circle."""
    def target(name: str) -> str | None:
        node = defs.get(name)
        if not isinstance(node, Mapping) or set(node) - {"$ref", "description", "title"}:
            return None
        ref = node.get("$ref")
        prefix = "#/$defs/"
        if not isinstance(ref, str) or not ref.startswith(prefix):
            return None
        return ref[len(prefix):].replace("~1", "/").replace("~0", "~")

    reported: set[str] = set()
    for start in defs:
        seen: list[str] = []
        name: str | None = start
        while name is not None and name not in seen:
            seen.append(name)
            name = target(name)
        if name is None or name in reported:
            continue
        loop = seen[seen.index(name):]
        reported.update(loop)
        chain = " -> ".join([*loop, name])
        yield (f"/$defs/{escape_pointer(name)}: $defs alias cycle {chain}: each only refers "
               "to the next, so no schema is ever reached; define one of them")


def non_finite_numbers(value: Any, pointer: str = "") -> Iterator[str]:
    """Yield the JSON Pointer of every NaN or infinite number in a JSON-like value.

    >>> list(non_finite_numbers({"properties": {"x": {"minimum": float("nan")}}}))
    ['/properties/x/minimum']
    """
    stack: list[tuple[str, Any]] = [(pointer, value)]
    while stack:
        at, item = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            yield at or "/"
        elif isinstance(item, Mapping):
            stack.extend((f"{at}/{escape_pointer(str(k))}", v) for k, v in item.items())
        elif isinstance(item, list | tuple):
            stack.extend((f"{at}/{i}", v) for i, v in enumerate(item))


#: A group holding a quantifier, itself quantified: ``(a+)+``, ``(\w+\s?)*``, ``(.*,){9}``.
_NESTED_QUANTIFIER = re.compile(r"\((?:[^()\\]|\\.)*(?<!\\)[+*}](?:[^()\\]|\\.)*\)[+*{]")


def backtracking_patterns(schema: Mapping[str, Any]) -> list[str]:
    """The JSON Pointers of ``pattern`` values that can backtrack catastrophically.

    Only matters under pydantic's ``regex_engine="python-re"``: the default engine
    (``rust-regex``) runs in linear time. The test is a heuristic (a quantified group
    that contains a quantifier, or a back-reference), which is what the slow
    patterns seen in practice have.

    >>> backtracking_patterns({"properties": {"a": {"pattern": "^(a+)+$"}}})
    ['/properties/a/pattern']
    """
    found = []
    for pointer, node in walk_schema(schema):
        pattern = node.get("pattern")
        if isinstance(pattern, str) and (
            _NESTED_QUANTIFIER.search(pattern) or re.search(r"\\[1-9]", pattern)
        ):
            found.append(f"{pointer}/pattern")
    return found


def uses_python_re(tp: Any) -> bool:
    """Whether ``tp`` or a model it refers to sets ``regex_engine="python-re"``."""
    from pydantic import BaseModel

    stack, seen = [tp], set()
    while stack:
        item = stack.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        if isinstance(item, type) and issubclass(item, BaseModel):
            if item.model_config.get("regex_engine") == "python-re":
                return True
            stack.extend(f.annotation for f in item.model_fields.values())
        stack.extend(get_args(item))
    return False

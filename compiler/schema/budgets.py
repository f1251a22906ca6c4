"""Budgets and refusals that keep a contract's schema cheap to project and safe to send.

* :class:`ProjectionBudget`: how large a projection may grow while references are
  inlined (schema nodes, nesting depth, bytes of names and values), counted as it is
  built, so a schema bomb (a model with two fields of the next model, 12 levels deep)
  stops with a :class:`~compiler.errors.ProjectionError` naming the path long before any
  expensive work. The idea is from openai-agents' strict-schema conversion, which
  bounds node count and depth; the figures are ours (docs/contracts.md).
* :func:`source_problems`: what makes a contract's own schema unusable before any
  projection: more nodes than the budget, an external reference (``$ref``,
  ``$dynamicRef``, ``$recursiveRef``, a discriminator mapping) under any keyword that
  holds a schema, a reference cycle that never reaches a schema (:func:`alias_cycles`:
  ``A -> B -> A``, or ``A`` referring to itself).
* :func:`non_finite_numbers`: NaN and infinities (``Field(ge=float("nan"))``), which
  have no JSON form, with their paths.
* :func:`backtracking_patterns` with :func:`uses_python_re`: ``pattern`` values that
  can backtrack catastrophically (a structural rule over the parsed pattern,
  :mod:`compiler.guards.regex_shape`), refused when a contract uses ``regex_engine=
  "python-re"`` (pydantic's default engine runs in linear time).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from compiler.errors import ProjectionError
from compiler.guards.regex_shape import backtracking_risk
from compiler.schema.walk import escape_pointer, iter_schemas, schema_slot, walk_schema

__all__ = ["DEFAULT_BUDGET", "REFERENCE_KEYWORDS", "BudgetCounter", "ProjectionBudget",
           "alias_cycles", "backtracking_patterns", "lone_surrogates", "non_finite_numbers",
           "schema_value_problem", "source_problems", "uses_python_re"]


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
        """Count a keyword and, for a data value (``enum``, ``const``, ``examples``,
        ``default``, a string ...), its size in bytes as compact JSON (UTF-8).

        A keyword that holds subschemas counts only its name here: its schemas are
        counted as they are projected. A data value is measured only up to the room
        left, so a 1,000,000-entry ``enum`` costs no more than the budget to refuse.
        """
        self.bytes += len(key)
        slot = schema_slot(key, value)
        if slot is None:
            self.bytes += _data_bytes(value, self.budget.bytes - self.bytes + 1)
        elif slot == "map":  # the names count too, each at its own pointer
            for name in value:
                self.bytes += len(str(name).encode("utf-8", "surrogatepass")) + 3
                if self.bytes > self.budget.bytes:
                    cut = "..." if len(str(name)) > 40 else ""  # a name, never data
                    pointer = f"{pointer}/{escape_pointer(str(name)[:40])}{cut}"
                    break
        if self.bytes > self.budget.bytes:
            self._over(pointer, f"more than {self.budget.bytes:,} bytes",
                       "long enum, const, default and examples values count too: shorten "
                       "them, or use fewer levels or a dialect that keeps references")

    def _over(self, pointer: str, what: str,
              hint: str = "a model used in many places is inlined at each one where the "
                          "dialect has no $ref: use fewer levels or a dialect that keeps "
                          "references") -> None:
        raise ProjectionError(
            f"{pointer or '/'}: the projected schema grows to {what} (the projection "
            f"budget, docs/contracts.md); {hint}"
        )


def _data_bytes(value: Any, room: int) -> int:
    """About the compact JSON size of ``value`` in UTF-8 bytes, counted up to ``room`` only."""
    if isinstance(value, int | float) or value is None:  # a number, a boolean or null
        return len(str(value)) + 1
    total = 0
    pending: list[Iterator[Any]] = [iter((value,))]
    while pending and total <= room:
        item = next(pending[-1], _DONE)
        if item is _DONE:
            pending.pop()
        elif isinstance(item, str):
            total += len(item.encode("utf-8", "surrogatepass")) + 3  # quotes, comma
        elif isinstance(item, Mapping):
            total += 2
            pending.append(x for pair in item.items() for x in pair)
        elif isinstance(item, list | tuple):
            total += 2
            pending.append(iter(item))
        else:  # a number, a boolean or null
            total += len(str(item)) + 1
    return total


_DONE = object()


#: Keywords whose string value is a reference (2020-12, 2019-09, draft-07).
REFERENCE_KEYWORDS = ("$ref", "$dynamicRef", "$recursiveRef")


def source_problems(schema: Mapping[str, Any], budget: ProjectionBudget) -> Iterator[str]:
    """Yield why a contract's schema cannot be projected at all (first problems first).

    Checked before any projection: the node budget; every external reference
    (``$ref``, ``$dynamicRef``, ``$recursiveRef`` or an OpenAPI ``discriminator.mapping``
    entry not starting with ``#``) wherever a schema can sit, under any keyword of
    Draft 2020-12, 2019-09 or draft-07 (``dependencies``, ``additionalItems``, ...); and
    reference cycles that never reach a schema (:func:`alias_cycles`).

    Args:
        schema: the contract's JSON Schema.
        budget: its ``nodes`` bounds the schema itself.

    Yields:
        One message per problem, each naming a JSON Pointer.

    >>> schema = {"dependencies": {"a": {"$recursiveRef": "https://x.example/s"}}}
    >>> for problem in source_problems(schema, ProjectionBudget()):
    ...     print(problem[:58])
    external $recursiveRef 'https://x.example/s' at /dependenc
    """
    located = walk_schema(schema) if _located(schema, budget) else ()  # pointers if needed
    for count, (pointer, node) in enumerate(located, start=1):
        if count > budget.nodes:
            yield (f"{pointer or '/'}: the contract's schema has more than {budget.nodes:,} "
                   "schema nodes (the projection budget, docs/contracts.md); split the "
                   "contract")
            return
        for keyword, at, ref in _references(pointer, node):
            if not ref.startswith("#"):
                yield (f"external {keyword} {ref!r} at {at} is not supported: a contract "
                       "schema must be self-contained (local '#/...' references only); "
                       "define the referenced schema under $defs")
    yield from alias_cycles(schema)


def _located(schema: Mapping[str, Any], budget: ProjectionBudget) -> bool:
    """Whether a node is over the budget or a reference external (no pointer per node)."""
    for count, node in enumerate(iter_schemas(schema), start=1):
        if count > budget.nodes or ("discriminator" in node and any(
                not ref.startswith("#") for _, _, ref in _references("", node))):
            return True
        for keyword in REFERENCE_KEYWORDS:  # an odd (non-string) value: walk to be sure
            if not str(node.get(keyword, "#")).startswith("#"):
                return True
    return False


def _references(pointer: str, node: Mapping[str, Any]) -> Iterator[tuple[str, str, str]]:
    """``(keyword, pointer, value)`` of each reference one schema node makes."""
    for keyword in REFERENCE_KEYWORDS:
        ref = node.get(keyword)
        if isinstance(ref, str):
            yield keyword, pointer or "/", ref
    discriminator = node.get("discriminator")
    mapping = discriminator.get("mapping") if isinstance(discriminator, Mapping) else None
    if isinstance(mapping, Mapping):
        for name, ref in mapping.items():
            if isinstance(ref, str):
                yield ("discriminator mapping", f"{pointer}/discriminator/mapping/"
                       f"{escape_pointer(str(name))}", ref)


def alias_cycles(schema: Mapping[str, Any]) -> Iterator[str]:
    """Yield each cycle of references that never reaches a schema of its own.

    A schema's ``$ref`` and the entries of its ``allOf`` apply to the same value, so
    ``A = {"$ref": "#/$defs/B", ...}`` with ``B = {"allOf": [{"$ref": "#/$defs/A"}]}``
    (or ``A`` referring to itself, whatever keywords stand beside the ``$ref``) asks
    for ``A`` to check ``A`` before anything else: no validator or projection ends.
    A reference under ``properties`` or ``items`` is recursion, not an alias, and is
    fine. Nodes are every schema object, nested ``$defs`` included (``B = {"$ref":
    "#/$defs/B/$defs/C"}``), so a reference to any pointer is followed.

    >>> defs = {"A": {"$ref": "#/$defs/A", "default": 1}}
    >>> print(next(alias_cycles({"$defs": defs}))[:34])
    /$defs/A: $defs alias cycle A -> A
    """
    if not any("$ref" in node or "allOf" in node for node in iter_schemas(schema)):
        return  # no node has an edge (and no pointer per node is made)
    nodes: dict[str, Any] = {f"#{at}": node for at, node in walk_schema(schema)}
    # only a node with a $ref or an allOf can be on a cycle: the others have no edges
    edges = {ref: targets for ref, node in nodes.items() if "$ref" in node or "allOf" in node
             if (targets := [t for t in _in_place_refs(node) if t in nodes])}
    state: dict[str, int] = {}  # 1 on the current path, 2 done
    for start in edges:
        if start in state:
            continue
        path: list[str] = [start]
        todo: list[Iterator[str]] = [iter(edges[start])]
        state[start] = 1
        while todo:
            nxt = next(todo[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                todo.pop()
            elif state.get(nxt) == 1:
                loop = path[path.index(nxt):]
                yield _cycle_message([*loop, nxt])
            elif nxt not in state:
                state[nxt] = 1
                path.append(nxt)
                todo.append(iter(edges.get(nxt, ())))


def _in_place_refs(node: Any) -> list[str]:
    """The local references that apply to the same value as ``node`` ($ref, allOf)."""
    found: list[str] = []
    stack = [node]
    while stack:
        current = stack.pop()
        if not isinstance(current, Mapping):
            continue
        ref = current.get("$ref")
        if isinstance(ref, str):
            found.append(ref.replace("%24", "$"))
        all_of = current.get("allOf")
        if isinstance(all_of, list):
            stack.extend(all_of)
    return found


def _cycle_message(loop: list[str]) -> str:
    def name(ref: str) -> str:
        return "the root" if ref == "#" else ref.rsplit("/", 1)[1].replace(
            "~1", "/").replace("~0", "~")

    first = loop[0]
    container = "$defs" if first == "#" else first.split("/")[1]
    chain = " -> ".join(name(ref) for ref in loop)
    return (f"{first[1:] or '/'}: {container} alias cycle {chain}: each refers only to the "
            "next for the same value (keywords beside a $ref apply to that value too), so "
            "no schema is ever reached; define one of them")


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


def lone_surrogates(value: Any, pointer: str = "") -> Iterator[tuple[str, str]]:
    """Yield ``(JSON Pointer, string)`` for every string (a value or a key) that holds a
    lone surrogate code point (U+D800-U+DFFF), which UTF-8 cannot encode: Python keeps
    ``"\\ud83d\\ude00"`` written as two escapes as two such code points, not one emoji.

    >>> list(lone_surrogates({"description": "a\\ud83d"}))
    [('/description', 'a\\ud83d')]
    """
    stack: list[tuple[str, Any]] = [(pointer, value)]
    while stack:
        at, item = stack.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                yield at or "/", item
        elif isinstance(item, Mapping):
            for key, inner in item.items():
                step = f"{at}/{escape_pointer(str(key))}"
                if isinstance(key, str) and _SURROGATE.search(key):
                    yield step, key
                stack.append((step, inner))
        elif isinstance(item, list | tuple):
            stack.extend((f"{at}/{i}", v) for i, v in enumerate(item))


_SURROGATE = re.compile("[\ud800-\udfff]")


def schema_value_problem(schema: Mapping[str, Any]) -> str | None:
    """Why a contract's JSON Schema cannot be sent as JSON text, or ``None``: a NaN or an
    infinite number (JSON has none), or a string with a lone surrogate (UTF-8 has none);
    the message names the JSON Pointer(s) and suggests the fix."""
    bad = sorted(non_finite_numbers(schema))
    if bad:
        return (f"its JSON Schema has a number that is NaN or infinite at "
                f"{', '.join(bad[:5])} (JSON has no such number; use a finite bound, or none)")
    found = sorted(lone_surrogates(schema))
    if not found:
        return None
    at, text = found[0]
    joined = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    fixed = next((c for c in joined if ord(c) > 0xFFFF), None)
    halves = " ".join(f"\\u{ord(c):04x}" for c in _SURROGATE.findall(text)[:2])
    hint = (f'write the character itself ("\\U{ord(fixed):08X}") instead of '
            f"its UTF-16 halves ({halves})" if fixed is not None
            else f"remove the lone surrogate ({halves}) or write the character it was meant "
            'to be (as "\\U0001F600", not two \\u escapes)')
    more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
    return (f"its JSON Schema has a string with a lone surrogate at {at}{more}, which "
            f"UTF-8 cannot encode; {hint}")


def backtracking_patterns(schema: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The ``pattern`` values (and ``patternProperties`` keys) that can backtrack
    catastrophically, each as ``(JSON Pointer, why)``.

    Only matters under pydantic's ``regex_engine="python-re"``: the default engine
    (``rust-regex``) runs in linear time. The rule is structural and conservative
    (:func:`compiler.guards.regex_shape.backtracking_risk`): a repeated group holding a
    repeat or an alternation that can split the same text two ways, an optional part
    repeated more than a few times, a back-reference, or a chain of three or more
    unbounded repeats that can take the same text (:mod:`compiler.guards.regex_degree`).

    >>> backtracking_patterns({"properties": {"a": {"pattern": "^(a|a)*$"}}})[0][0]
    '/properties/a/pattern'
    """
    found = []
    for pointer, node in walk_schema(schema):
        pattern = node.get("pattern")
        places = [(f"{pointer}/pattern", pattern)] if isinstance(pattern, str) else []
        keyed = node.get("patternProperties")
        if isinstance(keyed, Mapping):
            places += [(f"{pointer}/patternProperties/{escape_pointer(str(key))}", str(key))
                       for key in keyed]
        for at, text in places:
            why = backtracking_risk(text)
            if why is not None:
                found.append((at, why))
    return found


def uses_python_re(tp: Any, core_schema: Any = None) -> bool:
    """Whether validating ``tp`` runs any ``pattern`` with Python's ``re``.

    Reads the core schema pydantic builds for ``tp`` (``core_schema``, else
    ``TypeAdapter(tp).core_schema``), which holds every type pydantic validates (models,
    pydantic and stdlib dataclasses, TypedDicts, NamedTuples, containers of them): True
    when some config or string schema there sets ``regex_engine="python-re"``, or a
    ``pattern`` is a compiled ``re.Pattern`` (pydantic then uses ``re`` whatever the
    engine). Conservative: one python-re model anywhere makes every pattern count."""
    if core_schema is None:
        from pydantic import TypeAdapter

        core_schema = TypeAdapter(tp).core_schema
    stack, seen = [core_schema], set()
    while stack:
        item = stack.pop()
        if isinstance(item, re.Pattern):
            return True
        if id(item) in seen:
            continue
        seen.add(id(item))
        if isinstance(item, Mapping):
            if item.get("regex_engine") == "python-re":
                return True
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return False

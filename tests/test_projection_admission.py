"""A projection either names a blocker or admits every value the contract admits.

Issue #15: an open object must never become an always-empty one, and each keyword a
dialect lacks is, per the dialect table, harmless (dropped, restated, checked on the
reply) or a blocker. The oracle (:mod:`tests.schema_instances`) drops the harmless
keywords from the original, draws values from it with a small bounded generator,
keeps those jsonschema admits, and checks that the projection (as the provider
applies it) admits each one, unless the projection has blockers.

``hypothesis-jsonschema`` is not used: its last release is 0.23.1 (2024-02) and its
PyPI page names drafts 04 to 07 and non-recursive references, while these schemas carry
2020-12 keywords (``prefixItems``, ``dependentSchemas``, ``unevaluated*``) and recursion.

Bounded: 150 generated contracts x 4 dialects (about 2 s); about a third of the
projections into a strict dialect have no blocker and are checked value by value.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict

from compiler.errors import ProjectionError
from compiler.schema.contract import OutputContract
from compiler.schema.dialects import DIALECTS, VOCABULARY, Dialect
from compiler.schema.projected import Projection
from compiler.schema.projection import project
from compiler.schema.projector import Projector
from tests.schema_instances import PATTERNS, admission_failures

DIALECT_NAMES = list(DIALECTS)


def outcome(source: dict[str, Any], dialect: Dialect) -> tuple[str, Projection | None]:
    """Project ``source``; return ``("refused" | "blocked" | "admits", projection)``.

    Raises:
        AssertionError: the projection has no blocker and rejects a value the contract
            admits, or the projector's own bug guard fired.
    """
    try:
        projection = Projector(source, dialect).run()
    except ProjectionError as exc:
        assert "internal error" not in str(exc), (dialect.name, source, exc)
        return "refused", None
    if projection.blockers:
        return "blocked", projection
    checked, failures = admission_failures(source, projection, dialect)
    assert not failures, (
        f"{dialect.name}: the projection rejects values the contract admits: "
        f"{failures[:3]}\nsource: {source}\nprojected: {projection.schema_json}"
    )
    return ("admits" if checked else "vacuous"), projection


# --------------------------------------------------------------------------- generated schemas

NAMES = st.sampled_from(["a", "b", "c"])
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-3, 9), st.sampled_from(["a", "x1"]))
ANNOTATIONS = {
    "title": st.just("T"), "description": st.just("A field."), "default": SCALARS,
    "examples": st.just([1]), "deprecated": st.booleans(), "readOnly": st.booleans(),
    "writeOnly": st.booleans(), "$comment": st.just("c"), "x-note": st.just("n"),
}


def node(fixed: dict[str, Any], **optional: Any) -> st.SearchStrategy[dict[str, Any]]:
    """Schemas with the keys of ``fixed`` (values or strategies), at most two of
    ``optional`` and at most one annotation (so most schemas carry no blocker)."""
    base = st.fixed_dictionaries(
        {key: value if isinstance(value, st.SearchStrategy) else st.just(value)
         for key, value in fixed.items()})
    annotations = {key: value for key, value in ANNOTATIONS.items() if key not in fixed}

    def some(pool: dict[str, Any], most: int) -> st.SearchStrategy[dict[str, Any]]:
        if not pool:
            return st.just({})
        keys = st.lists(st.sampled_from(sorted(pool)), max_size=most, unique=True)
        return keys.flatmap(lambda chosen: st.fixed_dictionaries(
            {key: pool[key] for key in chosen}))

    return st.tuples(base, some(optional, 2), some(annotations, 1)).map(
        lambda parts: {**parts[1], **parts[2], **parts[0]})


LEAVES = st.one_of(
    node({"type": "string"}, minLength=st.integers(0, 3), maxLength=st.integers(1, 6),
         pattern=st.sampled_from(list(PATTERNS)),
         format=st.sampled_from(["date", "email", "uri", "date-time", "uuid"]),
         contentEncoding=st.just("base64"), contentMediaType=st.just("application/json"),
         contentSchema=st.just({"type": "object"})),
    node({"type": st.sampled_from(["integer", "number"])}, minimum=st.integers(-2, 2),
         maximum=st.integers(3, 50), exclusiveMinimum=st.integers(-3, 0),
         exclusiveMaximum=st.integers(10, 60), multipleOf=st.sampled_from([1, 2, 0.5])),
    node({"type": st.sampled_from(["boolean", "null", ["string", "null"]])}),
    node({"enum": st.lists(SCALARS, min_size=1, max_size=3, unique=True)}),
    node({"const": SCALARS}),
    st.just({}),
    node({"$ref": "#/$defs/Leaf"}),
    node({"$ref": "#/$defs/Node"}),
    node({"$ref": "#/$defs/Leaf", "description": "beside a reference"}),
    node({"$ref": "#/$defs/Leaf", "maxLength": 4}),
)


def compound(children: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    """Objects, arrays and unions most of the time; the keywords that block, now and then."""
    pick = st.sampled_from(list(PATTERNS))
    objects = node(
        {"type": "object", "properties": st.dictionaries(NAMES, children, max_size=3)},
        required=st.lists(NAMES, max_size=2, unique=True),
        additionalProperties=st.one_of(st.booleans(), children),
        minProperties=st.integers(0, 2), maxProperties=st.integers(1, 4),
        discriminator=st.just({"propertyName": "a"}),
    )
    arrays = node({"type": "array", "items": children}, minItems=st.integers(0, 3),
                  maxItems=st.integers(1, 4), uniqueItems=st.booleans())
    common = st.one_of(
        objects, arrays,
        node({"type": "object"}, additionalProperties=st.one_of(st.booleans(), children)),
        node({"anyOf": st.lists(children, min_size=1, max_size=3)}),
        node({"oneOf": st.lists(children, min_size=1, max_size=3)}),
        node({"allOf": st.lists(children, min_size=1, max_size=1)}),
    )
    rare = st.one_of(
        node({"type": "object", "properties": st.dictionaries(NAMES, children, max_size=2)},
             patternProperties=st.dictionaries(pick, children, min_size=1, max_size=1),
             propertyNames=st.sampled_from([{"pattern": "^[a-z]+$"}, {"maxLength": 3}]),
             dependentRequired=st.just({"a": ["b"]}),
             dependentSchemas=st.dictionaries(NAMES, children, min_size=1, max_size=1),
             unevaluatedProperties=st.one_of(st.just(False), children),
             dependencies=st.just({"a": ["b"]})),
        node({"type": "array", "items": children}, contains=children,
             minContains=st.integers(0, 2), maxContains=st.integers(1, 3),
             unevaluatedItems=st.just(False)),
        node({"type": "array", "prefixItems": st.lists(children, min_size=1, max_size=2)},
             items=st.one_of(st.just(False), children), minItems=st.integers(0, 2)),
        node({"allOf": st.lists(children, min_size=2, max_size=2)}),
        node({"not": children}),
        node({"if": children}, then=children, **{"else": children}),
    )
    return st.one_of(common, common, common, common, common, rare)


SCHEMAS = st.recursive(LEAVES, compound, max_leaves=6)
RECURSIVE_NODE = {
    "type": "object",
    "properties": {"value": {"type": "integer"},
                   "next": {"anyOf": [{"$ref": "#/$defs/Node"}, {"type": "null"}]}},
    "required": ["value"],
}


@st.composite
def contracts(draw: st.DrawFn) -> dict[str, Any]:
    """A contract schema: usually an object root, sometimes anything (then wrapped)."""
    root = draw(st.one_of(
        node({"type": "object", "properties": st.dictionaries(NAMES, SCHEMAS, min_size=1,
                                                               max_size=3)},
             required=st.lists(NAMES, max_size=3, unique=True),
             additionalProperties=st.one_of(st.booleans(), SCHEMAS),
             **{"$schema": st.just("https://json-schema.org/draft/2020-12/schema")}),
        SCHEMAS,
    ))
    if not isinstance(root, dict):
        root = {"anyOf": [root]}
    defs = {"Leaf": draw(LEAVES.filter(lambda s: "$ref" not in s)),
            "Node": draw(st.sampled_from([RECURSIVE_NODE,
                                          {"type": "array", "items": {"$ref": "#/$defs/Node"}}]))}
    return {**root, "$defs": defs}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(contracts())
def test_a_projection_blocks_or_admits_what_the_contract_admits(source: dict[str, Any]) -> None:
    """Every dialect: blockers, a refusal, or a schema that admits every admitted value."""
    for name in DIALECT_NAMES:
        outcome(source, DIALECTS[name])


def test_a_reference_with_a_restated_sibling_is_inlined_where_siblings_are_refused() -> None:
    """Found by the property test: ``{"$ref": ..., "maxLength": 4}`` under openai-strict
    kept the reference and restated maxLength in a description beside it, which the
    dialect refuses (the bug guard fired). The reference is now inlined there."""
    source = {"type": "object", "required": ["v"],
              "properties": {"v": {"$ref": "#/$defs/Leaf", "maxLength": 4}},
              "$defs": {"Leaf": {"type": "string"}}}
    for name in DIALECT_NAMES:
        assert outcome(source, DIALECTS[name])[0] == "admits", name
    strict = Projector(source, DIALECTS["openai-strict"]).run()
    assert strict.schema["properties"]["v"] == {
        "type": "string", "description": "Constraints: maxLength 4."}


# --------------------------------------------------------------------------- every keyword

#: One small contract per keyword of the dialect table; the keyword sits at /properties/v.
KEYWORD_CASES: dict[str, dict[str, Any]] = {
    "$schema": {"type": "string", "$schema": "https://json-schema.org/draft/2020-12/schema"},
    "$id": {"type": "string", "$id": "https://example.invalid/v"},
    "$ref": {"$ref": "#/$defs/Node"},
    "$anchor": {"type": "string", "$anchor": "v"},
    "$dynamicRef": {"$dynamicRef": "#/$defs/Leaf"},
    "$dynamicAnchor": {"type": "string", "$dynamicAnchor": "v"},
    "$vocabulary": {"type": "string", "$vocabulary": {}},
    "$comment": {"type": "string", "$comment": "c"},
    "$defs": {"type": "string", "$defs": {"X": {"type": "integer"}}},
    "prefixItems": {"type": "array", "prefixItems": [{"type": "integer"}], "items": False},
    "items": {"type": "array", "items": {"type": "integer"}},
    "contains": {"type": "array", "items": {}, "contains": {"type": "integer"}},
    "additionalProperties": {"type": "object", "additionalProperties": {"type": "integer"}},
    "properties": {"type": "object", "properties": {"a": {"type": "integer"}}},
    "patternProperties": {"type": "object", "patternProperties": {"^x": {"type": "integer"}}},
    "dependentSchemas": {"type": "object", "properties": {"a": {"type": "integer"}},
                         "dependentSchemas": {"a": {"required": ["a"]}}},
    "propertyNames": {"type": "object", "propertyNames": {"maxLength": 3}},
    "if": {"type": "integer", "if": {"minimum": 3}, "then": {"multipleOf": 3}},
    "then": {"type": "integer", "then": {"multipleOf": 3}},
    "else": {"type": "integer", "else": {"multipleOf": 3}},
    "allOf": {"allOf": [{"type": "integer"}, {"minimum": 0}]},
    "anyOf": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
    "oneOf": {"oneOf": [{"type": "integer"}, {"type": "string"}]},
    "not": {"type": "integer", "not": {"const": 3}},
    "unevaluatedItems": {"type": "array", "prefixItems": [{"type": "integer"}],
                         "unevaluatedItems": False},
    "unevaluatedProperties": {"type": "object", "properties": {"a": {"type": "integer"}},
                              "unevaluatedProperties": {"type": "string"}},
    "type": {"type": "integer"},
    "const": {"const": "x1"},
    "enum": {"enum": ["a", "x1"]},
    "multipleOf": {"type": "integer", "multipleOf": 2},
    "maximum": {"type": "integer", "maximum": 7},
    "exclusiveMaximum": {"type": "integer", "exclusiveMaximum": 7},
    "minimum": {"type": "integer", "minimum": 1},
    "exclusiveMinimum": {"type": "integer", "exclusiveMinimum": 1},
    "maxLength": {"type": "string", "maxLength": 3},
    "minLength": {"type": "string", "minLength": 2},
    "pattern": {"type": "string", "pattern": "^x"},
    "maxItems": {"type": "array", "items": {"type": "integer"}, "maxItems": 1},
    "minItems": {"type": "array", "items": {"type": "integer"}, "minItems": 2},
    "uniqueItems": {"type": "array", "items": {"type": "integer"}, "uniqueItems": True},
    "maxContains": {"type": "array", "items": {}, "contains": {"type": "integer"},
                    "maxContains": 1},
    "minContains": {"type": "array", "items": {"type": "integer"}, "contains": {"const": 7},
                    "minContains": 0},
    "maxProperties": {"type": "object", "properties": {"a": {}, "b": {}}, "maxProperties": 1},
    "minProperties": {"type": "object", "properties": {"a": {"type": "integer"}},
                      "minProperties": 1},
    "required": {"type": "object", "properties": {"a": {"type": "integer"}},
                 "required": ["a"]},
    "dependentRequired": {"type": "object", "properties": {"a": {}, "b": {}},
                          "dependentRequired": {"a": ["b"]}},
    "format": {"type": "string", "format": "email"},
    "contentEncoding": {"type": "string", "contentEncoding": "base64"},
    "contentMediaType": {"type": "string", "contentMediaType": "application/json"},
    "contentSchema": {"type": "string", "contentMediaType": "application/json",
                      "contentSchema": {"type": "object"}},
    "title": {"type": "string", "title": "V"},
    "description": {"type": "string", "description": "A value."},
    "default": {"type": "string", "default": "a"},
    "deprecated": {"type": "string", "deprecated": True},
    "readOnly": {"type": "string", "readOnly": True},
    "writeOnly": {"type": "string", "writeOnly": True},
    "examples": {"type": "string", "examples": ["a"]},
    "definitions": {"type": "string", "definitions": {"X": {"type": "integer"}}},
    "dependencies": {"type": "object", "properties": {"a": {}, "b": {}},
                     "dependencies": {"a": ["b"]}},
    "discriminator": {"oneOf": [{"type": "object", "properties": {"k": {"const": "a"}}}],
                      "discriminator": {"propertyName": "k"}},
}


def keyword_contract(keyword: str) -> dict[str, Any]:
    return {"type": "object", "properties": {"v": KEYWORD_CASES[keyword]}, "required": ["v"],
            "$defs": {"Leaf": {"type": "string"}, "Node": RECURSIVE_NODE}}


def test_every_keyword_of_the_table_has_a_case() -> None:
    """The per-keyword cases cover the dialect table's vocabulary exactly."""
    assert set(KEYWORD_CASES) == VOCABULARY


@pytest.mark.parametrize("name", DIALECT_NAMES)
@pytest.mark.parametrize("keyword", sorted(VOCABULARY))
def test_each_keyword_is_harmless_or_a_blocker(keyword: str, name: str) -> None:
    """A keyword the dialect lacks is a blocker at its pointer exactly when the dialect
    table says so; otherwise the projection still admits what the contract admits."""
    dialect = DIALECTS[name]
    result, projection = outcome(keyword_contract(keyword), dialect)
    at = f"/properties/v/{keyword}"
    blocked_here = projection is not None and any(
        b.startswith(at + ":") for b in projection.blockers
    )
    if keyword in dialect.blocking_drops and keyword not in _REWRITTEN.get(name, ()):
        assert result == "refused" or blocked_here or _blocked_otherwise(keyword, projection)
    else:
        assert not blocked_here, projection and projection.blockers
    if keyword in dialect.harmless_drops and projection is not None:
        assert at in {c.pointer for c in projection.changes}, projection.changes


#: Keywords a dialect lacks that the projection rewrites instead of dropping them.
_REWRITTEN: dict[str, frozenset[str]] = {
    "openai-strict": frozenset({"oneOf"}),
    "anthropic": frozenset({"oneOf"}),
    "gemini": frozenset({"oneOf", "const"}),
}


def _blocked_otherwise(keyword: str, projection: Projection | None) -> bool:
    """A blocking keyword that never reaches the drop: an inlined recursive ``$ref``
    (the recursion blocks) or ``then``/``else`` beside no ``if`` (ignored everywhere)."""
    assert projection is not None
    if keyword == "$ref":
        return any("recursive" in b for b in projection.blockers)
    return False


# --------------------------------------------------------------------------- open objects


class Rows(BaseModel):
    """Rows of free-form records."""

    rows: list[dict[str, Any]]


class Counts(BaseModel):
    """A typed mapping."""

    counts: dict[str, int]


class Loose(BaseModel):
    """A model that keeps undeclared keys."""

    model_config = ConfigDict(extra="allow")
    name: str


class HoldsLoose(BaseModel):
    """A model whose field is an open model (a ``$ref`` to it)."""

    inner: Loose


OPEN = {Rows: "/properties/rows/items", Counts: "/properties/counts", Loose: "",
        HoldsLoose: "/$defs/Loose"}


@pytest.mark.parametrize("name", DIALECT_NAMES)
@pytest.mark.parametrize("model", list(OPEN), ids=lambda m: m.__name__)
def test_an_open_object_stays_open_or_blocks(model: type[BaseModel], name: str) -> None:
    """Never an always-empty object: kept open where the dialect can say so, else a blocker
    naming the object's pointer."""
    dialect = DIALECTS[name]
    p = project(OutputContract.from_type(model), dialect)
    if dialect.open_objects:
        assert p.blockers == ()
        assert admission_failures(OutputContract.from_type(model).schema, p, dialect)[1] == []
        assert '"additionalProperties"' in p.schema_json
        return
    where = OPEN[model]
    if model is HoldsLoose and not dialect.supports_ref:
        where = "/properties/inner"  # inlined at its use site
    assert p.blockers, p.schema_json
    assert any(b.startswith(f"{where or '/'}:") or b.startswith(f"{where}/additionalProperties:")
               for b in p.blockers), p.blockers
    assert "schema.keyword_dropped" not in {
        c.kind for c in p.changes if c.pointer.endswith("/additionalProperties")
    }

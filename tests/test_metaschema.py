"""The fast meta-schema check vouches only for what jsonschema's check_schema accepts.

:func:`compiler.metaschema.draft2020.vouch` replaces ``check_schema`` in the projection
guard whenever it says ``True``; these tests hold it to the rule that makes this safe
(``vouch(s)`` implies ``check_schema(s)`` passes), so the guard still rejects every
schema it rejected, and check that every projection of the contract corpus takes the
fast path (else the speed-up would be lost without a sound).
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from compiler.errors import ProjectionError
from compiler.metaschema.draft2020 import format_checker, meta_schema_error, vouch
from compiler.schema.checks import verify_projected
from compiler.schema.contract import OutputContract
from compiler.schema.dialects import DIALECTS
from compiler.schema.frozen_json import thaw_json
from compiler.schema.projection import project
from tests.fixtures.contracts.corpus import CORPUS


def valid(schema: Any) -> bool:
    """``check_schema`` with ``format: regex`` read as the contract's engines do (Python's
    ``re`` or pydantic-core's ``rust-regex``)."""
    try:
        Draft202012Validator.check_schema(schema, format_checker=format_checker())
    except SchemaError:
        return False
    return True


#: Values for each keyword: valid ones and ones the meta-schema rejects, mixed, plus
#: odd ones (tuples, floats for counts, bools for numbers, bad regexes, bad anchors).
ODD_VALUES: list[Any] = [
    None, True, False, 0, 1, -1, 1.0, 2.5, -0.5, 0.0, "", "string", "integer", "#",
    "#/$defs/A", "http://x/y#z", "a b", "#/$defs/a b", "(", "[a-z]+", "^#x$", [], [1],
    "^\\p{L}+$", "(?=a)", "\\p{Greek}", "[[:alpha:]]", {"\\p{L}": {}},
    ["a"], ["a", "a"], ["string", "null"], ["string", "string"], ["strin"], [True],
    {}, {"a": {}}, {"a": 1}, {"(": {}}, {"a": ["b"]}, {"a": ["b", "b"]}, ("a",),
    [{}], [{"type": "strin"}], {"type": "string"}, {"type": 3}, float("inf"),
]
KEYWORDS = [
    "type", "properties", "items", "prefixItems", "anyOf", "allOf", "oneOf", "not", "$defs",
    "definitions", "required", "enum", "const", "default", "minItems", "maxItems",
    "minLength", "maxLength", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
    "multipleOf", "pattern", "patternProperties", "format", "title", "description",
    "additionalProperties", "propertyNames", "uniqueItems", "dependentRequired",
    "dependentSchemas", "contains", "minContains", "maxContains", "minProperties",
    "maxProperties", "if", "then", "else", "unevaluatedProperties", "unevaluatedItems",
    "$ref", "$dynamicRef", "$id", "$schema", "$anchor", "$dynamicAnchor", "$comment",
    "$vocabulary", "dependencies", "deprecated", "readOnly", "writeOnly", "examples",
    "contentEncoding", "contentMediaType", "contentSchema", "discriminator", "x-custom",
]


def test_every_projection_of_the_corpus_is_vouched_for_and_valid() -> None:
    for name, kind in CORPUS.items():
        contract = OutputContract.from_type(kind)
        for dialect in DIALECTS.values():
            try:
                projection = project(contract, dialect)
            except ProjectionError:
                continue
            thawed = thaw_json(projection.schema)
            assert vouch(thawed), (name, dialect.name)
            assert valid(thawed), (name, dialect.name)


@pytest.mark.parametrize("keyword", KEYWORDS)
def test_a_keyword_value_is_vouched_for_only_when_valid(keyword: str) -> None:
    for value in ODD_VALUES:
        for schema in ({keyword: value}, {"type": "object", "properties": {"a": {keyword: value}}},
                       {"anyOf": [{"type": "null"}, {keyword: value}]}):
            if vouch(schema):
                assert valid(schema), schema
            else:
                assert (meta_schema_error(schema) is None) == valid(schema), schema


def test_the_guard_still_rejects_what_check_schema_rejects() -> None:
    rejected = [{"type": "strin"}, {"required": ["a", "a"]}, {"minItems": -1},
                {"properties": {"a": 3}}, {"anyOf": []}, {"pattern": "("},
                {"$defs": {"A": {"type": ["string", "string"]}}}, {"multipleOf": 0}]
    for schema in rejected:
        assert not vouch(schema)
        with pytest.raises(ProjectionError, match="not valid JSON Schema at"):
            verify_projected(schema, DIALECTS["json"], blockers=["display only"])


_leaf = st.sampled_from(ODD_VALUES[:-1])
_schema = st.recursive(
    st.dictionaries(st.sampled_from(KEYWORDS), _leaf, max_size=4),
    lambda inner: st.dictionaries(
        st.sampled_from(KEYWORDS),
        st.one_of(_leaf, inner, st.lists(inner, max_size=3),
                  st.dictionaries(st.sampled_from(["a", "b", "(", "c"]), inner, max_size=3)),
        max_size=4),
    max_leaves=12,
)


@settings(max_examples=400, deadline=None)
@given(_schema)
def test_vouch_implies_check_schema_passes(schema: dict[str, Any]) -> None:
    if vouch(schema):
        assert valid(schema)


PATTERNS = [
    # (a Field pattern valid under pydantic's default engine, rust-regex, not under re;
    #  a string it matches)
    (r"^\p{L}+$", "\u00e9t\u00e9"),
    (r"^\p{Greek}{2,}$", "\u03b1\u03b2"),
    (r"^[\p{Lu}\d]+$", "AB1"),
    (r"^[[:alpha:]]+$", "abc"),
    (r"^\pL+$", "abc"),
]  # fmt: skip


@pytest.mark.parametrize(("pattern", "sample"), PATTERNS)
def test_a_pattern_of_the_contracts_engine_is_never_an_internal_error(
    pattern: str, sample: str
) -> None:
    """Issue 21/22 follow-up: ``Field(pattern=r"^\\p{L}+$")`` made every dialect keeping
    ``pattern`` fail its guard ("internal error: ... is not a 'regex'"), since the guard
    compiled it with Python's ``re``. The guard takes the contract's own engine, and the
    pattern is sent as it is (no dialect has a rule on pattern syntax)."""
    from pydantic import BaseModel, Field, create_model

    model: type[BaseModel] = create_model("U", u=(str, Field(pattern=pattern)))
    contract = OutputContract.from_type(model)
    for dialect in DIALECTS.values():
        projection = project(contract, dialect)  # no ProjectionError
        thawed = thaw_json(projection.schema)
        assert meta_schema_error(thawed) is None, dialect.name
    assert contract.adapter.validate_python({"u": sample}).u == sample


INVALID_EXTRA = [
    # (json_schema_extra of a field, the message part): no engine takes it
    ({"pattern": "("}, "$.properties.u.pattern: '(' is not a 'regex'"),
    ({"minLength": -1}, "$.properties.u.minLength: -1 is less than the minimum of 0"),
    ({"type": "strin"}, "$.properties.u.type"),
]  # fmt: skip


@pytest.mark.parametrize(("extra", "message"), INVALID_EXTRA)
def test_a_schema_value_no_engine_takes_is_a_contract_error(
    extra: dict[str, Any], message: str
) -> None:
    from pydantic import BaseModel, Field, create_model

    from compiler.errors import ContractError

    model: type[BaseModel] = create_model("U", u=(str, Field(json_schema_extra=extra)))
    with pytest.raises(ContractError, match="is not valid JSON Schema") as caught:
        OutputContract.from_type(model)
    assert message in str(caught.value) and "internal error" not in str(caught.value)

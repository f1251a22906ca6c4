"""Schema projection into dialects: rules, blockers, determinism, guards, and instructions."""

from __future__ import annotations

import copy
import dataclasses
import itertools
import json
from pathlib import Path
from typing import Annotated, Any, Literal, Optional

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator  # type: ignore[import-untyped]
from pydantic import BaseModel, Field, WithJsonSchema, create_model

import compiler.schema.projection as projection_module
import compiler.schema.projector as projector_module
from compiler.errors import ProjectionError
from compiler.schema.checks import check_dialect, measure
from compiler.schema.contract import OutputContract, load_contract
from compiler.schema.dialects import DIALECTS, Dialect, get_dialect
from compiler.schema.frozen_json import canonical_sha256
from compiler.schema.instructions import DEFAULT_TEMPLATE, extract_shown_schema, render_instructions
from compiler.schema.projected import Projection
from compiler.schema.projection import project
from tests.fault_cases import case_contract

HERE = Path(__file__).parent
SHAPES = ["Order", "Coded", "Node", "Counts", "Outer"]
#: Output models of fault cases, built from the case's own snippet in
#: ../shared/cases/faults.yaml (a test using one skips when the file is absent).
CASES = {"Profile": "C18", "Outcome": "C20", "Chart": "C22", "Contact": "C24", "StepList": "C26"}


def contract(name: str) -> OutputContract:
    """Load a fixture contract from shapes.py, or a fault case's output model by its name."""
    if name in CASES:
        return case_contract(CASES[name])
    return load_contract(f"fixtures/contracts/shapes.py:{name}", base_dir=HERE)


def kinds(p: Projection) -> dict[str, list[str]]:
    """Group change pointers by kind."""
    out: dict[str, list[str]] = {}
    for change in p.changes:
        out.setdefault(change.kind, []).append(change.pointer)
    return out


@pytest.mark.parametrize("dialect", sorted(DIALECTS))
@pytest.mark.parametrize("name", SHAPES + list(CASES))
def test_projection_never_mutates_the_contract(name: str, dialect: str) -> None:
    """Projecting leaves the contract's schema exactly as it was, and shares nothing with it."""
    c = contract(name)
    before = copy.deepcopy(c.schema)
    projection_module._CACHE.clear()
    p = project(c, DIALECTS[dialect])
    assert copy.deepcopy(c.schema) == before
    assert p.schema is not c.schema
    with pytest.raises(TypeError):
        p.schema["type"] = "array"  # type: ignore[index]
    assert json.loads(p.schema_json) == p.schema
    assert p.sha256 == canonical_sha256(json.loads(p.schema_json))


@pytest.mark.parametrize("dialect", sorted(DIALECTS))
@pytest.mark.parametrize("name", SHAPES + list(CASES))
def test_projection_satisfies_its_dialect_unless_blocked(name: str, dialect: str) -> None:
    """Every enforceable projection passes the meta-schema and its dialect's own check."""
    p = project(contract(name), DIALECTS[dialect])
    Draft202012Validator.check_schema(p.schema)
    if not p.blockers:
        assert check_dialect(p.schema, DIALECTS[dialect]) == []


def test_projection_is_cached_per_dialect_value() -> None:
    """Same contract and dialect: same object; a replaced dialect with the same name: a new one."""
    c = contract("Contact")
    gemini = DIALECTS["gemini"]
    assert project(c, gemini) is project(c, gemini)
    narrowed = dataclasses.replace(gemini, string_formats=frozenset({"date"}))
    assert project(c, narrowed) is not project(c, gemini)
    assert "format" in project(c, narrowed).schema["properties"]["born"]


def test_external_ref_is_refused() -> None:
    """A $ref that does not start with '#' is always a ProjectionError, in every dialect."""
    Remote = create_model(
        "Remote",
        thing=(Annotated[str, WithJsonSchema({"$ref": "https://example.com/thing.json"})], ...),
    )
    for dialect in DIALECTS.values():
        with pytest.raises(ProjectionError, match="external \\$ref"):
            project(OutputContract.from_type(Remote), dialect)


def test_recursion_blocks_dialects_without_recursion() -> None:
    """A model containing itself blocks anthropic and gemini, but not openai-strict or json."""
    c = contract("Node")
    for name in ("anthropic", "gemini"):
        p = project(c, DIALECTS[name])
        assert any("recursive" in b for b in p.blockers), name
        assert "$ref" in p.schema_json  # kept, so the json rung can still show it
    for name in ("openai-strict", "json"):
        assert project(c, DIALECTS[name]).blockers == ()


def test_reused_submodel_is_not_recursion() -> None:
    """A definition used twice is inlined under gemini and needs no blocker anywhere."""
    c = contract("Chart")
    for dialect in DIALECTS.values():
        assert project(c, dialect).blockers == ()
    assert "$ref" not in project(c, DIALECTS["gemini"]).schema_json


def test_open_dict_blocks_closed_dialects() -> None:
    """dict[str, int] cannot be closed without forcing it empty: a blocker, not a silent change.

    Under gemini (no ``additionalProperties``) the object could hold no keys at all, so
    the dropped keyword is the blocker, not a ``schema.keyword_dropped`` change.
    """
    c = contract("Counts")
    for name in ("openai-strict", "anthropic"):
        p = project(c, DIALECTS[name])
        assert p.blockers and "/properties/counts" in p.blockers[0]
        assert p.schema["properties"]["counts"]["additionalProperties"] == {"type": "integer"}
    gemini = project(c, DIALECTS["gemini"])
    (blocker,) = gemini.blockers
    assert blocker.startswith("/properties/counts/additionalProperties: ")
    assert "only {} could be sent" in blocker
    assert "additionalProperties" not in gemini.schema["properties"]["counts"]
    assert "schema.keyword_dropped" not in kinds(gemini)


def test_dropped_keywords_are_restated_and_reported() -> None:
    """Under anthropic, pattern and maxLength move to the description and are reported."""
    p = project(contract("Coded"), DIALECTS["anthropic"])
    code = p.schema["properties"]["code"]
    assert "pattern" not in code and "maxLength" not in code
    assert code["description"] == 'Constraints: maxLength 3; pattern "^[A-Z]{3}$".'
    dropped = kinds(p)["schema.keyword_dropped"]
    assert "/properties/code/pattern" in dropped and "/properties/code/maxLength" in dropped
    assert "/properties/label/default" in kinds(p)["schema.default_stripped"]


def test_anthropic_min_items_only_zero_or_one() -> None:
    """minItems 0 or 1 is kept for anthropic; larger values are dropped and reported."""
    Lists = create_model(
        "Lists",
        one=(list[int], Field(min_length=1)),
        three=(list[int], Field(min_length=3)),
    )
    p = project(OutputContract.from_type(Lists), DIALECTS["anthropic"])
    assert p.schema["properties"]["one"]["minItems"] == 1
    assert "minItems" not in p.schema["properties"]["three"]
    assert kinds(p)["schema.keyword_dropped"] == ["/properties/three/minItems"]


def test_optional_becomes_required_nullable_only_where_demanded() -> None:
    """openai-strict requires every property (null added where needed); anthropic keeps optional."""
    c = contract("Order")
    strict = project(c, DIALECTS["openai-strict"])
    line = strict.schema["$defs"]["Line"]
    assert line["required"] == ["sku", "qty", "note", "tags"]
    assert line["properties"]["note"]["anyOf"] == [{"type": "string"}, {"type": "null"}]
    assert ("$defs", "Line", "properties", "note") in strict.nullable_added
    already_nullable = ("$defs", "Address", "properties", "postcode")
    assert already_nullable not in strict.nullable_added
    loose = project(c, DIALECTS["anthropic"])
    assert loose.schema["$defs"]["Line"]["required"] == ["sku"]
    assert loose.nullable_added == frozenset()


def test_non_object_root_is_wrapped() -> None:
    """An array root is wrapped in {"result": ...} where the root must be an object."""
    c = OutputContract.from_type(list[int])
    p = project(c, DIALECTS["openai-strict"])
    assert p.wrapped_root == "result"
    assert p.schema["required"] == ["result"] and p.schema["additionalProperties"] is False
    assert p.schema["properties"]["result"]["type"] == "array"
    assert "additionalProperties" not in project(c, DIALECTS["gemini"]).schema
    assert project(c, DIALECTS["json"]).wrapped_root is None


def test_recursive_root_is_inlined_once() -> None:
    """A root that is a bare $ref becomes an object schema (openai-strict) with its $defs kept."""
    p = project(contract("Node"), DIALECTS["openai-strict"])
    assert p.schema["type"] == "object" and "$ref" not in p.schema
    assert "Node" in p.schema["$defs"]
    assert "" in kinds(p)["schema.refs_inlined"]


def test_limits_become_blockers() -> None:
    """Exceeding a size limit of the dialect gives one blocker per limit."""
    tight = dataclasses.replace(
        DIALECTS["openai-strict"], max_properties=3, max_depth=1, max_enum_values=1,
        max_total_chars=10,
    )
    stats = measure(project(contract("Order"), DIALECTS["json"]).schema)
    assert stats.depth == 2 and stats.properties == 16
    p = project(contract("Order"), tight)
    assert len(p.blockers) == 4
    assert any("object levels" in b for b in p.blockers)


def test_get_dialect_suggests_close_names() -> None:
    """An unknown dialect name is a ProjectionError with a did-you-mean."""
    assert get_dialect("anthropic").name == "anthropic"
    with pytest.raises(ProjectionError, match="did you mean 'openai-strict'"):
        get_dialect("openai-strct")


def test_inconsistent_dialect_is_rejected() -> None:
    """Dialect data that contradicts itself fails at construction."""
    with pytest.raises(ValueError, match="closed_objects"):
        dataclasses.replace(DIALECTS["gemini"], closed_objects=True)
    with pytest.raises(ValueError, match="supports_recursion"):
        dataclasses.replace(DIALECTS["gemini"], supports_recursion=True)


def test_every_dialect_cites_its_source() -> None:
    """Each built-in dialect names the vendor page its facts come from."""
    for dialect in DIALECTS.values():
        assert dialect.source.startswith("https://")


def test_check_dialect_finds_violations() -> None:
    """check_dialect reports open objects, optional properties, keywords, formats, refs, roots."""
    bad: dict[str, Any] = {
        "type": "object",
        "properties": {
            "a": {"type": "string", "format": "uri", "maxLength": 3},
            "b": {"$ref": "#/$defs/B"},
        },
        "required": ["b"],
        "$defs": {"B": {"type": "object", "properties": {"b": {"$ref": "#/$defs/B"}}}},
    }
    strict = check_dialect(bad, DIALECTS["openai-strict"])
    assert any("additionalProperties" in p for p in strict)
    assert any("not required: a" in p for p in strict)
    assert any("'maxLength'" in p for p in strict)
    assert any("format 'uri'" in p for p in strict)
    gemini = check_dialect(bad, DIALECTS["gemini"])
    assert any("'$ref' is not supported" in p for p in gemini)
    assert any("recursive reference" in p for p in gemini)
    assert check_dialect({"type": "array"}, DIALECTS["gemini"])[0].startswith("/: the root")
    assert check_dialect(bad, DIALECTS["json"]) == []


def test_a_projection_breaking_its_dialect_is_a_bug(monkeypatch: pytest.MonkeyPatch) -> None:
    """If a rewrite step fails to apply, the self-check raises instead of returning a bad schema."""
    monkeypatch.setattr(projector_module.Projector, "_close", lambda *args: None)
    projection_module._CACHE.clear()
    with pytest.raises(ProjectionError, match=r"internal error.*additionalProperties"):
        project(contract("Chart"), DIALECTS["openai-strict"])
    projection_module._CACHE.clear()


def test_a_projection_that_is_not_json_schema_is_a_bug(monkeypatch: pytest.MonkeyPatch) -> None:
    """The meta-schema check catches a malformed result."""
    monkeypatch.setattr(projector_module, "nullable", lambda inner, *_: {"anyOf": "broken"})
    projection_module._CACHE.clear()
    with pytest.raises(ProjectionError, match="not valid JSON Schema"):
        project(contract("Order"), DIALECTS["openai-strict"])
    projection_module._CACHE.clear()


# --------------------------------------------------------------------------- instructions


def test_instructions_show_exactly_the_projected_schema() -> None:
    """The rendered text carries the word JSON and the schema, which parses back unchanged."""
    p = project(contract("StepList"), DIALECTS["json"])
    text = render_instructions(p)
    assert "JSON" in text and p.schema_json in text
    assert extract_shown_schema(text) == p.schema
    assert render_instructions(p) == text  # never varies


def test_custom_template_with_other_braces() -> None:
    """A template may contain other braces; only {schema} is replaced."""
    p = project(contract("StepList"), DIALECTS["openai-strict"])
    template = "Use {{this}} shape {x}:\n{schema}\nThanks {y}."
    text = render_instructions(p, template)
    assert text.startswith("Use {{this}} shape {x}:\n") and text.endswith("\nThanks {y}.")
    assert extract_shown_schema("System preamble.\n" + text, template) == p.schema


def test_template_without_placeholder_is_refused() -> None:
    """A template must contain {schema} exactly once."""
    p = project(contract("StepList"), DIALECTS["json"])
    with pytest.raises(ProjectionError, match="exactly once"):
        render_instructions(p, "Reply in JSON.")
    with pytest.raises(ProjectionError):
        extract_shown_schema("nothing here", DEFAULT_TEMPLATE)


# --------------------------------------------------------------------------- properties

_names = itertools.count()
_LEAVES: list[Any] = [str, int, float, bool, Literal["a", "b"]]
_DEFAULTS: dict[Any, Any] = {str: "x", int: 0, float: 0.5, bool: False, Literal["a", "b"]: "a"}


def _model(fields: list[tuple[Any, bool]]) -> type[BaseModel]:
    spec: dict[str, Any] = {}
    for index, (tp, optional) in enumerate(fields):
        if optional and tp in _DEFAULTS:
            spec[f"f{index}"] = (tp, _DEFAULTS[tp])
        elif optional:
            spec[f"f{index}"] = (Optional[tp], None)  # noqa: UP045 - a runtime type
        else:
            spec[f"f{index}"] = (tp, ...)
    return create_model(f"Gen{next(_names)}", **spec)


_types = st.recursive(
    st.sampled_from(_LEAVES),
    lambda inner: st.one_of(
        inner.map(lambda t: Optional[t]),  # noqa: UP045
        inner.map(lambda t: list[t]),  # type: ignore[valid-type]
        st.lists(st.tuples(inner, st.booleans()), min_size=1, max_size=3).map(_model),
    ),
    max_leaves=6,
)
_models = st.lists(st.tuples(_types, st.booleans()), min_size=1, max_size=4).map(_model)


@settings(max_examples=50, deadline=None)
@given(_models)
def test_generated_models_project_cleanly(model: type[BaseModel]) -> None:
    """Any generated model projects into every dialect deterministically, without mutation."""
    c = OutputContract.from_type(model)
    before = copy.deepcopy(c.schema)
    for dialect in DIALECTS.values():
        first = project(c, dialect)
        assert not first.blockers
        assert check_dialect(first.schema, dialect) == []
        Draft202012Validator.check_schema(first.schema)
        projection_module._CACHE.pop((c.sha256, dialect))
        again = project(c, dialect)
        assert again is not first
        assert again.schema_json == first.schema_json
        assert again.changes == first.changes
    assert copy.deepcopy(c.schema) == before


def _same_dialect(d: Dialect) -> Dialect:
    return dataclasses.replace(d)


def test_dialect_values_are_hashable_keys() -> None:
    """Equal dialect values share a cache entry."""
    c = contract("Chart")
    assert project(c, _same_dialect(DIALECTS["gemini"])) is project(c, DIALECTS["gemini"])

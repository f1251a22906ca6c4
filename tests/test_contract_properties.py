"""Property tests over generated contracts: rules, instances, shown == enforced, determinism.

Models are generated with hypothesis (scalars, Literal, a string enum, optional
fields with and without defaults, lists, nested models and unions of models).
``hypothesis-jsonschema`` is not a dependency, so instances are drawn by a small
strategy that reads the *projected* schema (the subset these models produce), and
each drawn instance is first checked with jsonschema, so it is exactly what a
provider enforcing that schema could send.
"""

from __future__ import annotations

import copy
import itertools
import json
from enum import StrEnum
from functools import cache
from pathlib import Path
from typing import Any, Literal, Optional

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator  # type: ignore[import-untyped]
from pydantic import BaseModel, create_model

import compiler.schema.projection as projection_module
from compiler import Intent, compile_request
from compiler.intent import CEILINGS
from compiler.reply.parse import parse_reply
from compiler.schema.checks import check_dialect
from compiler.schema.contract import OutputContract
from compiler.schema.dialects import DIALECTS
from compiler.schema.frozen_json import canonical_sha256
from compiler.schema.instructions import extract_shown_schema
from compiler.schema.projection import project
from registry.resolve.resolver import Registry
from tests.conftest import ROOT

#: One model per dialect: the bundled models.yaml selects openai-strict, anthropic and
#: gemini by provider glob; ``json`` is declared for one model in a copy of it.
MODEL_OF = {
    "openai-strict": "openai/gpt-4o-mini",
    "anthropic": "anthropic/claude-sonnet-4.5",
    "gemini": "google/gemini-2.5-flash",
    "json": "meta-llama/llama-3.3-70b-instruct",
}


@cache
def registry_for(directory: Path) -> Registry:
    """The bundled seed and models.yaml, plus ``json`` declared for MODEL_OF["json"].

    Built lazily inside a test, so the offline settings of conftest apply.
    """
    declared = yaml.safe_load((ROOT / "models.yaml").read_text(encoding="utf-8"))
    declared["models"][MODEL_OF["json"]] = {"structured_output": {"dialect": "json"}}
    path = directory / "models-with-json-dialect.yaml"
    path.write_text(yaml.safe_dump(declared, sort_keys=False), encoding="utf-8")
    registry = Registry.load(models=path)
    for dialect, model in MODEL_OF.items():
        assert registry.resolve(model).dialect == dialect
    return registry


# --------------------------------------------------------------------------- generated models


class Tone(StrEnum):
    """A string enum for generated fields."""

    CALM = "calm"
    LOUD = "loud"


_LEAVES: list[Any] = [str, int, float, bool, Literal["x", "y"], Tone]
_DEFAULTS: dict[Any, Any] = {str: "d", int: 7, float: 0.25, bool: True,
                             Literal["x", "y"]: "y", Tone: Tone.CALM}
_names = itertools.count()


def _model(fields: list[tuple[Any, int]]) -> type[BaseModel]:
    """Fields as ``(type, how)``: 0 required, 1 optional with a default, 2 ``X | None = None``."""
    spec: dict[str, Any] = {}
    for index, (tp, how) in enumerate(fields):
        if how == 1 and tp in _DEFAULTS:
            spec[f"f{index}"] = (tp, _DEFAULTS[tp])
        elif how >= 1:
            spec[f"f{index}"] = (Optional[tp], None)  # noqa: UP045 - a runtime type
        else:
            spec[f"f{index}"] = (tp, ...)
    return create_model(f"Prop{next(_names)}", **spec)


_types: st.SearchStrategy[Any] = st.recursive(
    st.sampled_from(_LEAVES),
    lambda inner: st.one_of(
        inner.map(lambda t: list[t]),  # type: ignore[valid-type]
        st.lists(st.tuples(inner, st.integers(0, 2)), min_size=1, max_size=3).map(_model),
        st.tuples(
            st.lists(st.tuples(inner, st.integers(0, 2)), min_size=1, max_size=2).map(_model),
            st.lists(st.tuples(inner, st.integers(0, 2)), min_size=1, max_size=2).map(_model),
        ).map(lambda pair: pair[0] | pair[1]),
    ),
    max_leaves=5,
)
models = st.lists(st.tuples(_types, st.integers(0, 2)), min_size=1, max_size=4).map(_model)


# --------------------------------------------------------------------------- instances


_TEXT = st.text(st.characters(codec="utf-8"), max_size=6)  # no lone surrogates


def instances(node: Any, root: Any) -> st.SearchStrategy[Any]:
    """Values valid under ``node`` (a schema in the subset generated models project to)."""
    if node is True or node == {}:
        return st.integers()
    ref = node.get("$ref")
    if isinstance(ref, str):
        target = root
        for part in ref[2:].split("/"):
            target = target[part]
        return instances(target, root)
    if "anyOf" in node:
        return st.one_of([instances(branch, root) for branch in node["anyOf"]])
    if "enum" in node:
        return st.sampled_from(node["enum"])
    if "const" in node:
        return st.just(node["const"])
    kind = node.get("type")
    if isinstance(kind, list):
        return st.one_of([instances({**node, "type": k}, root) for k in kind])
    if kind == "object":
        props = node.get("properties", {})
        required = set(node.get("required", []))
        return st.fixed_dictionaries(
            {name: instances(sub, root) for name, sub in props.items() if name in required},
            optional={name: instances(sub, root) for name, sub in props.items()
                      if name not in required},
        )
    if kind == "array":
        return st.lists(instances(node.get("items", {}), root),
                        min_size=node.get("minItems", 0), max_size=3)
    simple: dict[str, st.SearchStrategy[Any]] = {
        "string": _TEXT,
        "integer": st.integers(-(2**53), 2**53),
        "number": st.one_of(st.integers(-1000, 1000),
                            st.floats(allow_nan=False, allow_infinity=False, width=32)),
        "boolean": st.booleans(),
        "null": st.none(),
    }
    return simple[str(kind)]


# --------------------------------------------------------------------------- properties


@settings(max_examples=25, deadline=None)
@given(models, st.data())
def test_generated_contracts(model: type[BaseModel], data: st.DataObject) -> None:
    """For every dialect: the projection meets the dialect's rules (``project`` itself also
    runs the meta-schema check), every instance valid under it parses into the contract,
    and projecting again (cache dropped) gives byte-identical JSON without touching the
    contract's schema."""
    contract = OutputContract.from_type(model)
    before = copy.deepcopy(contract.schema)
    for dialect in DIALECTS.values():
        p = project(contract, dialect)
        assert p.blockers == ()
        assert check_dialect(p.schema, dialect) == []
        schema = json.loads(p.schema_json)
        value = data.draw(instances(schema, schema), label=dialect.name)
        assert Draft202012Validator(schema).is_valid(value)
        parsed = parse_reply(json.dumps(value), contract, p, strip_fence=False)
        assert isinstance(parsed, model)
    again_in = data.draw(st.sampled_from(sorted(DIALECTS)), label="projected twice")
    dialect = DIALECTS[again_in]
    first = project(contract, dialect)
    projection_module._CACHE.pop((contract.sha256, dialect), None)
    again = project(contract, dialect)
    assert again is not first
    assert again.schema_json.encode() == first.schema_json.encode()
    assert again.sha256 == first.sha256 and again.changes == first.changes
    assert again.nullable_added == first.nullable_added
    assert copy.deepcopy(contract.schema) == before


@settings(max_examples=30, deadline=None)
@given(models, st.sampled_from(sorted(MODEL_OF)), st.sampled_from(CEILINGS))
def test_shown_equals_enforced(
    tmp_path_factory: Any, model: type[BaseModel], dialect: str, ceiling: str
) -> None:
    """compile_request shows exactly the schema it enforces, and the report's hashes agree."""
    registry = registry_for(tmp_path_factory.getbasetemp())
    contract = OutputContract.from_type(model)
    intent = Intent(stage="generated", contract=contract, ceiling=ceiling)
    req = compile_request(intent, MODEL_OF[dialect], [{"role": "user", "content": "go"}],
                          registry=registry)
    assert req.rung == ceiling
    assert req.instructions is not None and req.body["messages"][0] == req.instructions
    shown = extract_shown_schema(req.instructions["content"])
    assert shown == req.shown_schema
    assert req.report.shown_sha256 == canonical_sha256(shown)
    if ceiling == "schema":
        assert req.enforced_schema == shown
        assert req.report.enforced_sha256 == req.report.shown_sha256
        assert req.projection is not None and req.projection.dialect == dialect
    else:
        assert req.enforced_schema is None and req.report.enforced_sha256 is None
        assert shown == project(contract, DIALECTS["json"]).schema

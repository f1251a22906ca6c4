"""Regressions for three projection/reply defects found by the differential and property tests.

1. openai-strict kept keywords beside ``$ref`` (``{"$ref": ..., "description": ...}``, what
   pydantic writes for ``x: Sub = Field(description=...)``); the API refuses that.
2. openai-strict enforced schemas that accept any value (``Any`` is ``{}``; a tuple whose
   ``prefixItems`` were dropped is an array without ``items``).
3. A null the projection added in one branch of a union of models was kept when another
   branch declared the same property, so a reply the provider enforced failed to parse.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any, Literal

import pytest
from pydantic import BaseModel, Field

from compiler import Intent, OutputContract, compile_request
from compiler.errors import ReplyValidationError
from compiler.reply.parse import parse_reply
from compiler.schema.checks import check_dialect, untyped_schemas
from compiler.schema.dialects import DIALECTS
from compiler.schema.projection import project
from registry.resolve.resolver import Registry
from tests.conftest import ROOT

STRICT = DIALECTS["openai-strict"]


class Point(BaseModel):
    """A referenced sub-model."""

    x: int


class Described(BaseModel):
    """A reference with a description beside it, and one inside a nullable union."""

    start: Point = Field(description="Where it starts.")
    end: Point | None = Field(default=None, description="Where it ends.")


def test_reference_with_siblings_is_inlined_for_openai_strict() -> None:
    """The described reference is inlined (description kept); a pure one stays a $ref."""
    p = project(OutputContract.from_type(Described), STRICT)
    start = p.schema["properties"]["start"]
    assert "$ref" not in start
    assert start["description"] == "Where it starts." and start["type"] == "object"
    assert start["additionalProperties"] is False
    assert p.schema["properties"]["end"]["anyOf"][0] == {"$ref": "#/$defs/Point"}
    inlined = [c for c in p.changes if c.kind == "schema.refs_inlined"]
    assert [c.pointer for c in inlined] == ["/properties/start"]
    assert "beside $ref" in inlined[0].reason
    assert check_dialect(p.schema, STRICT) == []


def test_dialects_that_allow_siblings_keep_the_reference() -> None:
    """anthropic and json keep ``$ref`` with its description; check_dialect tells them apart."""
    for name in ("anthropic", "json"):
        start = project(OutputContract.from_type(Described), DIALECTS[name]).schema
        assert start["properties"]["start"]["$ref"] == "#/$defs/Point"
    node = {"type": "object", "properties": {"a": {"$ref": "#/$defs/P", "title": "A"}},
            "required": ["a"], "additionalProperties": False,
            "$defs": {"P": {"type": "string"}}}
    assert check_dialect(node, DIALECTS["anthropic"]) == []
    assert check_dialect(node, STRICT) == [
        "/properties/a: keywords beside '$ref' are not supported (title)"
    ]


class Anything(BaseModel):
    """A field of any JSON value."""

    payload: Any


class Pair(BaseModel):
    """A tuple: prefixItems, which openai-strict lacks."""

    pair: tuple[int, str]


class Bag(BaseModel):
    """A list of anything."""

    things: list[Any]


def test_a_tuple_blocks_every_dialect_without_prefix_items() -> None:
    """Dropping ``prefixItems`` is a blocker in the dialect table: the tuple's item
    schemas are lost. openai-strict also names the array left without ``items``."""
    for name in ("openai-strict", "anthropic", "gemini"):
        p = project(OutputContract.from_type(Pair), DIALECTS[name])
        assert p.blockers[0].startswith(f"/properties/pair/prefixItems: {name} does not "
                                        "support 'prefixItems'; "), name
        assert "/properties/pair/prefixItems" not in {c.pointer for c in p.changes}
    assert len(project(OutputContract.from_type(Pair), STRICT).blockers) == 2
    assert project(OutputContract.from_type(Pair), DIALECTS["json"]).blockers == ()


@pytest.mark.parametrize(
    ("model", "where"),
    [(Anything, "/properties/payload"), (Bag, "/properties/things/items")],
)
def test_schemas_accepting_any_value_block_openai_strict(model: type[BaseModel],
                                                          where: str) -> None:
    """Such a schema is a blocker under openai-strict only; other dialects project it as is."""
    p = project(OutputContract.from_type(model), STRICT)
    assert len(p.blockers) == 1 and p.blockers[0].startswith(f"{where}: ")
    assert untyped_schemas(p.schema) and check_dialect(p.schema, STRICT)
    loose = dataclasses.replace(STRICT, typed_schemas=False)
    assert project(OutputContract.from_type(model), loose).blockers == ()
    for name in ("anthropic", "gemini", "json"):
        assert project(OutputContract.from_type(model), DIALECTS[name]).blockers == ()


def test_untyped_contract_is_compiled_one_rung_lower() -> None:
    """For an OpenAI model the compiler falls back below strict output and says why."""
    registry = Registry.load(models=ROOT / "models.yaml")
    intent = Intent(stage="any", contract=OutputContract.from_type(Anything))
    req = compile_request(intent, "openai/gpt-4o-mini", registry=registry)
    # gpt-4o-mini lists tools and tool_choice, but a tool's parameters take the same
    # dialect, so the blocker also rules out the forced call: JSON mode, schema shown.
    assert req.rung == "json"
    assert "tools" not in req.body
    (downgrade,) = [a for a in req.report.adjustments if a.kind == "output.downgraded"]
    assert "accepts any JSON value" in downgrade.reason
    assert req.parse_reply('{"payload": [1, {"a": null}]}') == Anything(payload=[1, {"a": None}])


class Sized(BaseModel):
    """Union member where ``size`` is required."""

    kind: Literal["sized"]
    size: Literal["s", "m"]


class Counted(BaseModel):
    """Union member where ``size`` is optional with a non-null default."""

    kind: Literal["counted"]
    size: int = 7
    note: str | None = None


class Holder(BaseModel):
    """A union of models in a field and in a list."""

    thing: Sized | Counted
    more: list[Sized | Counted] = Field(default_factory=list)


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ({"thing": {"kind": "counted", "size": None, "note": None}, "more": None},
         Holder(thing=Counted(kind="counted"))),
        ({"thing": {"kind": "sized", "size": "m"},
          "more": [{"kind": "counted", "size": None, "note": "n"},
                   {"kind": "sized", "size": "s"}]},
         Holder(thing=Sized(kind="sized", size="m"),
                more=[Counted(kind="counted", note="n"), Sized(kind="sized", size="s")])),
        ({"thing": {"kind": "counted", "size": 3, "note": None}, "more": []},
         Holder(thing=Counted(kind="counted", size=3), more=[])),
    ],
)
def test_added_null_in_one_branch_of_a_union_means_absent(reply: dict[str, Any],
                                                           expected: Holder) -> None:
    """The branch the value satisfies decides which nulls were added by the projection."""
    contract = OutputContract.from_type(Holder)
    p = project(contract, STRICT)
    assert parse_reply(json.dumps(reply), contract, p, strip_fence=False) == expected


def test_null_that_no_branch_added_is_still_rejected() -> None:
    """A null where the chosen branch requires a value still fails, at its path."""
    contract = OutputContract.from_type(Holder)
    p = project(contract, STRICT)
    with pytest.raises(ReplyValidationError) as info:
        parse_reply('{"thing": {"kind": "sized", "size": null}, "more": null}', contract, p,
                    strip_fence=False)
    assert {path for path, _ in info.value.errors} == {"$.thing.kind", "$.thing.size"}

"""Budgets for contracts, schemas and replies (issue 22): one row per input class, each
ending in a clear error naming the path. No wall-clock assertion: each row asserts that
the limit fired (its message)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict, Field, create_model, field_validator

from compiler.errors import ContractError, ProjectionError, ReplyValidationError
from compiler.reply import parse as reply_parse
from compiler.reply.parse import parse_reply
from compiler.schema.budgets import DEFAULT_BUDGET, ProjectionBudget, non_finite_numbers
from compiler.schema.contract import OutputContract
from compiler.schema.dialects import DIALECTS
from compiler.schema.projection import project
from compiler.schema.projector import Projector


def bomb(levels: int) -> type[BaseModel]:
    """A model with two fields of the next model, ``levels`` deep (2**levels leaves)."""
    model = create_model("Leaf", x=(int, 0))
    for level in range(1, levels):
        model = create_model(f"Level{level}", a=(model, ...), b=(model, ...))
    return model


def chain(levels: int) -> type[BaseModel]:
    model = create_model("C0", x=(int, 0))
    for level in range(1, levels):
        model = create_model(f"C{level}", c=(model, ...))
    return model


@pytest.mark.parametrize("dialect", ["gemini", "json"])
def test_a_schema_bomb_stops_at_the_budget_naming_the_path(dialect: str) -> None:
    """gemini inlines every $ref: 12 levels would be a 2 MB schema; json keeps refs."""
    contract = OutputContract.from_type(bomb(12))
    if dialect == "json":
        assert project(contract, DIALECTS[dialect]).blockers == ()
        return
    with pytest.raises(ProjectionError, match=r"^/properties/(a|b)/.*more than 10,000 schema"):
        project(contract, DIALECTS[dialect])


def test_depth_budget() -> None:
    contract = OutputContract.from_type(chain(40))
    with pytest.raises(ProjectionError, match=r"nested more than 30 levels deep"):
        project(contract, DIALECTS["gemini"], ProjectionBudget(depth=30))
    assert project(contract, DIALECTS["gemini"]).schema["type"] == "object"  # 80 < 128


def test_bytes_budget() -> None:
    model = create_model("Wide", **{f"field_{i:04}": (str, ...) for i in range(200)})
    with pytest.raises(ProjectionError, match=r"more than 1,000 bytes"):
        project(OutputContract.from_type(model), DIALECTS["json"], ProjectionBudget(bytes=1000))


def test_too_many_fields_is_refused_before_any_projection() -> None:
    schema = {"type": "object", "properties": {f"f{i}": {"type": "string"} for i in range(20_000)}}
    with pytest.raises(ProjectionError, match=r"more than 10,000 schema nodes.*split"):
        Projector(schema, DIALECTS["json"], DEFAULT_BUDGET)


def test_a_raw_defs_chain_is_bounded() -> None:
    """30 levels of $defs, each using the next twice: stops at the budget."""
    defs: dict[str, Any] = {"D0": {"type": "string"}}
    for i in range(1, 30):
        defs[f"D{i}"] = {"type": "object", "properties": {
            "a": {"$ref": f"#/$defs/D{i - 1}"}, "b": {"$ref": f"#/$defs/D{i - 1}"}}}
    schema = {"$ref": "#/$defs/D29", "$defs": defs}
    with pytest.raises(ProjectionError, match="more than 10,000 schema nodes"):
        Projector(schema, DIALECTS["gemini"]).run()


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        ({"type": "object", "properties": {"a": {"$dynamicRef": "https://x.example/s#n"}}},
         r"external \$dynamicRef 'https://x.example/s#n' at /properties/a"),
        ({"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}},
          "$defs": {"A": {"$ref": "#/$defs/B"}, "B": {"$ref": "#/$defs/A"}}},
         r"/\$defs/A: \$defs alias cycle A -> B -> A"),
    ],
)
@pytest.mark.parametrize("dialect", ["json", "openai-strict"])
def test_refs_that_go_nowhere_are_refused(schema: dict[str, Any], message: str,
                                          dialect: str) -> None:
    with pytest.raises(ProjectionError, match=message):
        Projector(schema, DIALECTS[dialect]).run()


def test_non_finite_numbers_are_refused_with_the_path() -> None:
    class Bound(BaseModel):
        x: float = Field(ge=float("nan"))

    with pytest.raises(ContractError, match=r"NaN or infinite at /properties/x/minimum"):
        OutputContract.from_type(Bound)
    schema = {"properties": {"y": {"maximum": float("-inf"), "enum": [1.0, float("inf")]}}}
    assert sorted(non_finite_numbers(schema)) == ["/properties/y/enum/1",
                                                  "/properties/y/maximum"]


def test_backtracking_patterns_are_refused_under_python_re() -> None:
    class Slow(BaseModel):
        model_config = ConfigDict(regex_engine="python-re")
        word: str = Field(pattern=r"^(a+)+$")

    class Safe(BaseModel):  # the default engine (rust-regex) runs in linear time
        word: str = Field(pattern=r"^(a+)+$")

    with pytest.raises(ContractError, match=r"/properties/word/pattern: an inner repeat"):
        OutputContract.from_type(Slow)
    contract = OutputContract.from_type(Safe)
    projection = project(contract, DIALECTS["json"])
    with pytest.raises(ReplyValidationError):
        parse_reply(json.dumps({"word": "a" * 40 + "!"}), contract, projection, strip_fence=False)


class Item(BaseModel):
    n: int


class Items(BaseModel):
    items: list[Item]


def test_reply_errors_are_capped_and_say_how_many_more() -> None:
    contract = OutputContract.from_type(Items)
    projection = project(contract, DIALECTS["json"])
    reply = json.dumps({"items": [{"n": "x"}] * 1000})
    with pytest.raises(ReplyValidationError) as failed:
        parse_reply(reply, contract, projection, strip_fence=False)
    errors = failed.value.errors
    assert len(errors) == reply_parse.MAX_REPLY_ERRORS + 1
    assert errors[-1] == ("$", "... and 950 more errors (MAX_REPLY_ERRORS)")


def test_a_reply_over_the_size_limit_is_refused_unread(monkeypatch: pytest.MonkeyPatch) -> None:
    contract = OutputContract.from_type(Items)
    projection = project(contract, DIALECTS["json"])
    monkeypatch.setattr(reply_parse, "MAX_REPLY_CHARS", 1000)
    with pytest.raises(ReplyValidationError, match="more than the 1,000 accepted"):
        parse_reply(" " * 1001, contract, projection, strip_fence=False)


class Secretive(BaseModel):
    code: str

    @field_validator("code")
    @classmethod
    def _check(cls, value: str) -> str:
        raise ValueError(f"code {value[:6]!r}... is not one we issued")


def test_validator_free_text_never_leaks_a_fragment_of_the_value() -> None:
    contract = OutputContract.from_type(Secretive)
    projection = project(contract, DIALECTS["json"])
    with pytest.raises(ReplyValidationError) as failed:
        parse_reply('{"code": "SECRET-12345"}', contract, projection, strip_fence=False)
    assert list(failed.value.errors) == [
        ("$.code", "Value error (a validator of the contract; its message is withheld)")
    ]
    assert "SECRET" not in str(failed.value) and "SECRE" not in str(failed.value)

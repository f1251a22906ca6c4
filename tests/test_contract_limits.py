"""Contract, schema and reply limits after the break test of issue 22: one table row per
finding, each asserting that the limit or refusal fired (its message), never a time."""

from __future__ import annotations

import json
import re
import shutil
import uuid
from pathlib import Path
from typing import Any, Literal

import pytest
from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic_core import PydanticCustomError

from compiler.cli.main import main
from compiler.errors import ContractError, ProjectionError, ReplyValidationError
from compiler.guards.regex_shape import SMALL_BOUND, backtracking_risk
from compiler.reply import parse as reply_parse
from compiler.reply.parse import count_values, parse_reply
from compiler.schema.budgets import backtracking_patterns
from compiler.schema.contract import OutputContract
from compiler.schema.dialects import DIALECTS
from compiler.schema.projection import project
from compiler.schema.projector import Projector
from tests.conftest import ROOT

# ----------------------------------------------------------------- 1. python-re patterns

BACKTRACKING = [
    (r"^((a+))+$", "inner repeat"),
    (r"^(a|a)*$", "alternation"),
    (r"^(a?){30}a{30}$", "repeated 30 times"),
    (r"(a+)+", "inner repeat"),
    (r"(a*)*", "repeated without bound"),
    (r"(a|aa)+", "alternation"),
    (r"(\w+\s?)+$", "inner repeat"),
    (r"^(\d+|\d+\.\d+)*$", "alternation"),
    (r"(a{1,9}){10}", "inner repeat"),
    (r"^(a+)\1$", "back-reference"),
    # issue 22 round 3: runs of optional or bounded single elements outside a group
    ("^" + "[a-z]?" * 30 + "$", "in a row"),  # 17 characters took 11.1 s
    ("a?" * 40 + "a" * 20, "in a row"),
    ("(?:a{0,3})" * 20 + "b", "in a row"),
    ("(?:a|aa)" * 30 + "b", "in a row"),
    # case-folding pairs re matches under IGNORECASE (re._casefix): long s, micro, theta
    ("(?i)^(?:s|\u017fs)+$", "alternation"),  # 42 characters took 51.5 s
    ("(?i)^(?:\u00b5|\u03bc\u03bc)+$", "alternation"),
    ("(?i)^(?:\u03d1|\u03b8\u03b8)+$", "alternation"),
    ("(?i)^s+\u017f*s+$", "power 3"),
    ("(?i)^[a-z]+[K]*\u212a+$", "power 3"),  # the Kelvin sign folds to k
]
LINEAR = [
    r"^[a-z]+$",
    r"^\d{3}-\d{4}$",
    r"^[\w.+-]+@[\w-]+(\.[\w-]+)+$",
    r"^[^@\s]+@[^@\s]+\.[^@\s]+$",  # quadratic (degree 2): admitted, strings bounded
    r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$",
    r"^([A-Z][a-z]+ )*[A-Z][a-z]+$",
    r"^(cat|dog)+$",
    r"^(?:\d{1,3}\.){3}\d{1,3}$",
    r"^((25[0-5]|2[0-4]\d|1?\d?\d)\.){3}(25[0-5]|2[0-4]\d|1?\d?\d)$",
    r"(a?){3}",
    r"(a++)+",
    "".join(f"{chr(c)}?" for c in range(ord("a"), ord("z") + 1)),  # disjoint: one way each
    r"^-?\d+(\.\d+)?([eE][+-]?\d+)?$",
    r"^\+?[0-9]{1,3}[ -]?\(?[0-9]{3}\)?[ -]?[0-9]{3}[ -]?[0-9]{4}$",
    r"^(?:19|20)\d\d-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])$",
    "(?i)^(?:s|t)+$",
    "(?i)^[a-z]+$",
    "^" + "[a-z]?" * 10 + "$",  # 2**10 ways: within FEW_WAYS
]


@pytest.mark.parametrize(("pattern", "why"), BACKTRACKING)
def test_backtracking_shapes_are_found(pattern: str, why: str) -> None:
    found = backtracking_risk(pattern)
    assert found is not None and why in found
    schema = {"properties": {"w": {"pattern": pattern}}}
    assert [at for at, _ in backtracking_patterns(schema)] == ["/properties/w/pattern"]


@pytest.mark.parametrize("pattern", LINEAR)
def test_linear_patterns_pass(pattern: str) -> None:
    assert backtracking_risk(pattern) is None


def test_an_optional_part_may_repeat_a_few_times() -> None:
    assert backtracking_risk(f"(a?){{{SMALL_BOUND}}}") is None
    assert backtracking_risk(f"(a?){{{SMALL_BOUND + 1}}}") is not None


@pytest.mark.parametrize("pattern", [r"^(a|a)*$", r"^(a?){30}a{30}$", r"^((a+))+$"])
def test_python_re_contracts_with_them_are_refused(pattern: str) -> None:
    slow = type("Slow", (BaseModel,), {
        "__annotations__": {"w": str}, "w": Field(pattern=pattern),
        "model_config": ConfigDict(regex_engine="python-re")})
    with pytest.raises(ContractError, match=r"python-re.*/properties/w/pattern: "):
        OutputContract.from_type(slow)


def test_a_compiled_pattern_runs_under_python_re_so_it_is_checked_too() -> None:
    """pydantic runs a compiled ``re.Pattern`` with Python's re whatever the engine."""
    class Compiled(BaseModel):
        w: str = Field(pattern=re.compile(r"^(a|a)*$"))

    class Plain(BaseModel):  # the default engine (rust-regex) runs in linear time
        w: str = Field(pattern=r"^(a|a)*$")

    with pytest.raises(ContractError, match=r"/properties/w/pattern: an alternation"):
        OutputContract.from_type(Compiled)
    assert OutputContract.from_type(Plain).name == "Plain"


def test_a_linear_pattern_under_python_re_is_a_contract() -> None:
    class Email(BaseModel):
        model_config = ConfigDict(regex_engine="python-re")
        address: str = Field(pattern=r"^[\w.+-]+@[\w-]+(\.[\w-]+)+$")

    contract = OutputContract.from_type(Email)
    reply = json.dumps({"address": "x@example.org"})
    assert parse_reply(reply, contract, project(contract, DIALECTS["json"]),
                       strip_fence=False).address == "x@example.org"


# ----------------------------------------------------------------- 2. reply cost


class Words(BaseModel):
    items: list[str]


def test_a_reply_of_millions_of_wrong_items_is_refused_before_validation() -> None:
    """1,900,000 items (3.8 MB, under the size limit) would build 1.9 million errors."""
    contract = OutputContract.from_type(Words)
    text = '{"items": [' + ",".join(["0"] * 1_900_000) + "]}"
    with pytest.raises(ReplyValidationError) as failed:
        parse_reply(text, contract, project(contract, DIALECTS["json"]), strip_fence=False)
    (path, message), = failed.value.errors
    assert path == "$" and "about 1,900,003 JSON values" in message
    assert "MAX_REPLY_NODES" in message and "not validated" in message


def test_the_value_count_ignores_strings_and_is_settable(monkeypatch: pytest.MonkeyPatch) -> None:
    assert count_values('["a,b:c[{", {"k": [1, 2]}]') == 7
    contract = OutputContract.from_type(Words)
    projection = project(contract, DIALECTS["json"])
    monkeypatch.setattr(reply_parse, "MAX_REPLY_NODES", 20)
    with pytest.raises(ReplyValidationError, match="more than the 20 validated"):
        parse_reply(json.dumps({"items": ["x"] * 30}), contract, projection, strip_fence=False)
    assert parse_reply(json.dumps({"items": ["x," * 30]}), contract, projection,
                       strip_fence=False).items == ["x," * 30]


# ----------------------------------------------------------------- 3. external references

EXTERNAL = "https://x.example/s.json"


@pytest.mark.parametrize(("schema", "where"), [
    ({"dependencies": {"a": {"$ref": EXTERNAL}, "b": ["a"]}}, "/dependencies/a"),
    ({"additionalItems": {"$ref": EXTERNAL}}, "/additionalItems"),
    ({"items": [{"type": "string"}, {"$ref": EXTERNAL}]}, "/items/1"),
    ({"properties": {"a": {"$recursiveRef": EXTERNAL}}}, "/properties/a"),
    ({"$defs": {"A": {"$dynamicRef": EXTERNAL}}}, "/$defs/A"),
    ({"definitions": {"A": {"$ref": EXTERNAL}}}, "/definitions/A"),
    ({"dependentSchemas": {"a": {"$ref": EXTERNAL}}}, "/dependentSchemas/a"),
    ({"if": {"not": {"$ref": EXTERNAL}}}, "/if/not"),
    ({"contentSchema": {"$ref": EXTERNAL}}, "/contentSchema"),
    ({"propertyNames": {"$ref": EXTERNAL}}, "/propertyNames"),
    ({"prefixItems": [{"$ref": EXTERNAL}]}, "/prefixItems/0"),
    ({"unevaluatedItems": {"$ref": EXTERNAL}}, "/unevaluatedItems"),
    ({"discriminator": {"propertyName": "k", "mapping": {"a": EXTERNAL}}},
     "/discriminator/mapping/a"),
])
@pytest.mark.parametrize("dialect", ["json", "openai-strict"])
def test_external_references_are_refused_wherever_they_are(
        schema: dict[str, Any], where: str, dialect: str) -> None:
    source = {"type": "object", "properties": {"x": {"type": "string"}}, **schema}
    with pytest.raises(ProjectionError) as failed:
        Projector(source, DIALECTS[dialect]).run()
    assert f"'{EXTERNAL}' at {where} is not supported" in str(failed.value)


# ----------------------------------------------------------------- 4. values in reply errors


class Coded(BaseModel):
    code: str

    @field_validator("code")
    @classmethod
    def _check(cls, value: str) -> str:
        raise PydanticCustomError("string_too_short", "bad {x}", {"x": value[:6],
                                                                  "min_length": len(value)})


class Bounded(BaseModel):
    n: int = Field(ge=10)
    id: uuid.UUID
    word: str = Field(min_length=3)
    tag: str = Field(pattern=r"^[a-z]+$")


@pytest.mark.parametrize(("model", "reply", "expected"), [
    (Coded, {"code": "SECRET-12345"}, [("$.code", "String is shorter than the contract allows")]),
    (Bounded, {"n": 1, "id": "12345678-SECRET", "word": "10", "tag": "SECRET"}, [
        ("$.n", "Input should be greater than or equal to 10"),
        ("$.id", "Input should be a valid UUID"),
        ("$.word", "String should have at least 3 characters"),
        ("$.tag", "String should match pattern '^[a-z]+$'"),
    ]),
])
@pytest.mark.parametrize("dialect", ["json", "anthropic"])
def test_reply_errors_carry_only_the_type_and_schema_constraints(
        model: type[BaseModel], reply: dict[str, Any], expected: list[tuple[str, str]],
        dialect: str) -> None:
    contract = OutputContract.from_type(model)
    with pytest.raises(ReplyValidationError) as failed:
        parse_reply(json.dumps(reply), contract, project(contract, DIALECTS[dialect]),
                    strip_fence=False)
    assert list(failed.value.errors) == expected
    text = json.dumps(failed.value.to_dict())
    assert "SECRE" not in text and "12" not in text and "<value>" not in text


# ----------------------------------------------------------------- 5. data values in the budget


@pytest.mark.parametrize(("field", "where"), [
    ({"enum": list(range(1_000_000))}, "/properties/x/enum"),
    ({"const": "c" * 600_000}, "/properties/x/const"),
    ({"default": "d" * 600_000}, "/properties/x/default"),
    ({"examples": ["e" * 300_000, "f" * 300_000]}, "/properties/x/examples"),
])
def test_data_values_count_towards_the_byte_budget(field: dict[str, Any], where: str) -> None:
    source = {"type": "object", "properties": {"x": {"type": "string", **field}}}
    with pytest.raises(ProjectionError, match=rf"^{where}: .*more than 500,000 bytes"):
        Projector(source, DIALECTS["json"]).run()


# ----------------------------------------------------------------- 6. self-aliases

@pytest.mark.parametrize("alias", [
    {"$ref": "#/$defs/A", "default": 1},
    {"$ref": "#/$defs/A", "minimum": 1},
    {"allOf": [{"$ref": "#/$defs/A"}], "description": "x"},
])
@pytest.mark.parametrize("dialect", sorted(DIALECTS))
def test_a_definition_that_only_refers_to_itself_is_refused(alias: dict[str, Any],
                                                            dialect: str) -> None:
    source = {"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}},
              "$defs": {"A": alias}}
    with pytest.raises(ProjectionError, match=r"^/\$defs/A: \$defs alias cycle A -> A"):
        Projector(source, DIALECTS[dialect]).run()


def test_recursion_through_a_property_is_no_alias() -> None:
    node = {"type": "object", "properties": {"next": {"$ref": "#/$defs/N"}}}
    source = {"$ref": "#/$defs/N", "$defs": {"N": node}}
    assert Projector(source, DIALECTS["openai-strict"]).run().blockers == ()


# ----------------------------------------------------------------- 7. capc check


def test_check_reports_a_contract_every_compile_refuses(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "big.py").write_text(
        "from typing import Literal\nfrom pydantic import BaseModel\n"
        "class Big(BaseModel):\n"
        "    x: Literal[tuple(f'value-{i}' for i in range(60_000))]\n")
    (tmp_path / "stages.yaml").write_text(
        "stages:\n  big:\n    contract: big.py:Big\n    output_tokens: 100\n"
        "    output: schema\n    models: [openai/gpt-4o-mini]\n")
    shutil.copy(ROOT / "models.yaml", tmp_path / "models.yaml")
    code = main(["check", "--models", str(tmp_path / "models.yaml"),
                 "--stages", str(tmp_path / "stages.yaml")])
    err = capsys.readouterr().err
    assert code == 2
    assert "stages.yaml:3:" in err and "stages.big.contract" in err
    assert "every compile refused" in err and "/properties/x/enum" in err
    assert "Traceback" not in err


class Choice(BaseModel):
    colour: Literal["red", "green"]


def test_allowed_values_are_shown_only_as_the_schema_lists_them() -> None:
    contract = OutputContract.from_type(Choice)
    projection = project(contract, DIALECTS["json"])
    with pytest.raises(ReplyValidationError) as failed:
        parse_reply('{"colour": "SECRET"}', contract, projection, strip_fence=False)
    assert list(failed.value.errors) == [("$.colour", "Input should be 'red' or 'green'")]

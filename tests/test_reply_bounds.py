"""Issue 22, second break test: one row per reproduction, each asserting that the refusal
or limit fired (its message and path), never a time. No catastrophic pattern is run:
every slow input is refused before a pattern sees it, or runs under a linear engine."""

from __future__ import annotations

import dataclasses
import json
from typing import Annotated, Any, Literal, NamedTuple, Union

import pytest
from pydantic import BaseModel, ConfigDict, Field, create_model, field_validator
from pydantic.networks import IPv4Address
from pydantic_core import PydanticCustomError, PydanticKnownError
from typing_extensions import TypedDict

from compiler.artifacts.lock_reply import contract_record
from compiler.errors import ContractError, ProjectionError, ReplyValidationError
from compiler.guards.regex_degree import MAX_DEGREE
from compiler.guards.regex_shape import backtracking_risk
from compiler.reply.bounds import (
    MAX_ERROR_WORK,
    MAX_PYTHON_RE_CHARS,
    MAX_REPLY_DEPTH,
    fan_out,
)
from compiler.reply.parse import parse_reply
from compiler.reply.schema_check import check_reply, pattern_matches
from compiler.schema.budgets import DEFAULT_BUDGET
from compiler.schema.contract import OutputContract
from compiler.schema.dialects import DIALECTS
from compiler.schema.projection import project
from compiler.schema.projector import Projector

PYTHON_RE = ConfigDict(regex_engine="python-re")


def _parse(text: str, tp: Any) -> Any:
    contract = OutputContract.from_type(tp)
    return parse_reply(text, contract, project(contract, DIALECTS["json"]), strip_fence=False)


def _errors(text: str, tp: Any) -> list[tuple[str, str]]:
    with pytest.raises(ReplyValidationError) as caught:
        _parse(text, tp)
    return list(caught.value.errors)


# ------------------------------------------------------ 1-2. python-re patterns refused

REFUSED = [
    (r"^(a?){10}(a?){10}(a?){10}a{30}$", "inner repeat"),  # ways multiply: 2**30
    (r"^(?:a|aa){1,9}(?:a|aa){1,9}(?:a|aa){1,9}(?:a|aa){1,9}b$", "alternation"),
    (r"^[a-z]+[a-z0-9]*[a-z]+$", f"power {MAX_DEGREE}"),
    (r"^a*a*a*a*a*a*a*a*b$", f"power {MAX_DEGREE}"),
    (r"^\d*\d*\d*\d*\d*\d*x$", f"power {MAX_DEGREE}"),
    (r"\d+\d+x", f"power {MAX_DEGREE}"),  # unanchored: an implicit leading .*?
    (r"(?m)^\d+\d+x$", f"power {MAX_DEGREE}"),  # ^ under MULTILINE starts every line
    (r"^a+(?:a+|b)a+$", f"power {MAX_DEGREE}"),
]
ADMITTED = [
    r"^[^@\s]+@[^@\s]+\.[^@\s]+$",  # degree 2, bounded by MAX_PYTHON_RE_CHARS
    r"\d+x",
    r"^\d+\d+x",
    r"^a+-a+-a+$",
    r"^(a?){10}a{10}$",
    r"^((25[0-5]|2[0-4]\d|1?\d?\d)\.){3}(25[0-5]|2[0-4]\d|1?\d?\d)$",
]


@pytest.mark.parametrize(("pattern", "why"), REFUSED)
def test_python_re_pattern_is_refused(pattern: str, why: str) -> None:
    found = backtracking_risk(pattern)
    assert found is not None and why in found
    slow = create_model("Slow", __config__=PYTHON_RE, s=(str, Field(pattern=pattern)))
    with pytest.raises(ContractError, match="/properties/s/pattern"):
        OutputContract.from_type(slow)


@pytest.mark.parametrize("pattern", ADMITTED)
def test_python_re_pattern_is_admitted(pattern: str) -> None:
    assert backtracking_risk(pattern) is None


# ------------------------------------------------------ 2. the string length bound

class Email(BaseModel):
    model_config = PYTHON_RE
    x: str = Field(pattern=r"^[^@\s]+@[^@\s]+\.[^@\s]+$")


def test_a_long_string_under_python_re_is_refused_before_the_pattern_runs() -> None:
    text = json.dumps({"x": "a@" + "." * MAX_PYTHON_RE_CHARS})
    [(path, message)] = _errors(text, Email)
    assert path == "$.x" and "MAX_PYTHON_RE_CHARS" in message and "10,000" in message
    assert _parse(json.dumps({"x": "a@b.c"}), Email).x == "a@b.c"


def test_a_long_key_under_python_re_is_refused() -> None:
    key = Annotated[str, Field(pattern=r"^k+$")]
    keyed = create_model("Keyed", __config__=PYTHON_RE, d=(dict[key, int], ...))  # type: ignore[valid-type]
    [(path, message)] = _errors(json.dumps({"d": {"k" * (MAX_PYTHON_RE_CHARS + 1): 1}}), keyed)
    assert path == "$.d[*]" and "Key is 10,001 characters" in message


def test_the_default_engine_has_no_string_bound() -> None:
    plain = create_model("Plain", x=(str, Field(pattern=r"^a+$")))
    assert len(_parse(json.dumps({"x": "a" * 20_000}), plain).x) == 20_000


# ------------------------------------------------------ 3. python-re in any container

class Slow(BaseModel):
    model_config = PYTHON_RE
    s: str = Field(pattern=r"^(a+)+$")


class InTypedDict(TypedDict):
    inner: Slow


@dataclasses.dataclass
class InDataclass:
    inner: Slow


class InNamedTuple(NamedTuple):
    inner: Slow


class InList(BaseModel):
    inner: list[InDataclass]


@pytest.mark.parametrize("tp", [InTypedDict, InDataclass, InNamedTuple, InList])
def test_python_re_model_inside_any_container_is_checked(tp: Any) -> None:
    with pytest.raises(ContractError, match=r"python-re.*Slow/properties/s/pattern"):
        OutputContract.from_type(tp)


def test_the_lock_records_the_engine() -> None:
    assert contract_record(OutputContract.from_type(Email), None)["regex_engine"] == "python-re"
    plain = OutputContract.from_type(create_model("P", x=(str, ...)))
    assert contract_record(plain, None)["regex_engine"] == "rust-regex"


# ------------------------------------------------------ 4. the lock reader's JSON Schema path

OBJ = {"type": "object", "properties": {"n": {"type": "integer"},
                                        "s": {"type": "string", "pattern": "^(a+)+$"},
                                        "xs": {"type": "array", "items": {"type": "integer"}}}}


def _check(text: str, schema: dict[str, Any] = OBJ, *, python_re: bool = False) -> Any:
    contract = OutputContract.from_type(create_model("Any", x=(int, 0)))
    projection = project(contract, DIALECTS["json"])  # no absent nulls, no wrapper
    key = str(hash((json.dumps(schema, sort_keys=True), python_re)))
    return check_reply(text, schema=schema, sha256=key, python_re=python_re,
                       strip_fence=False, projection=projection, wrapper=None)


def _check_errors(text: str, schema: dict[str, Any] = OBJ, **kw: Any) -> list[Any]:
    with pytest.raises(ReplyValidationError) as caught:
        _check(text, schema, **kw)
    return list(caught.value.errors)


LOCK_ROWS = [
    ('{"n": "Zqxkwv"}', "$.n", "Input fails the contract's type: \"integer\""),
    ('{"xs": [' + ",".join(['"Zq"'] * 200) + "]}", "$", "... and 150 more errors"),
    ("[" * 5_000 + "]" * 5_000, "$", "nests 5,000 levels"),
    ('{"n": NaN}', "$.n", "NaN and Infinity are not JSON"),
    ('{"s": "' + "a" * 40 + '!"}', "$.s", "pattern"),  # rust-regex: linear time
]


@pytest.mark.parametrize(("text", "path", "message"), LOCK_ROWS)
def test_lock_reader_json_schema_path_is_bounded(text: str, path: str, message: str) -> None:
    errors = _check_errors(text)
    assert (path, message) in [(p, m) for p, m in errors] or any(
        p == path and message in m for p, m in errors)
    assert not any("Zq" in m or "aaaa" in m for _, m in errors)
    assert len(errors) <= 51


def test_lock_reader_bounds_python_re_strings() -> None:
    text = json.dumps({"s": "a" * (MAX_PYTHON_RE_CHARS + 1)})
    [(path, message)] = _check_errors(text, python_re=True)
    assert path == "$.s" and "MAX_PYTHON_RE_CHARS" in message


def test_patterns_run_with_the_contracts_engine() -> None:
    assert pattern_matches(r"^(a+)+$", "a" * 50 + "!", python_re=False) is False
    assert pattern_matches(r"^a+$", "aaa", python_re=True) is True
    assert _check(json.dumps({"n": 3, "s": "aaa", "xs": [1]})) == {"n": 3, "s": "aaa", "xs": [1]}


# ------------------------------------------------------ 5. union fan-out

def test_union_fan_out_is_bounded_before_validation() -> None:
    members = [create_model(f"M{k}", **{f"f{k}_{i}": (int, ...) for i in range(5)})
               for k in range(30)]
    root = create_model("Root", xs=(list[Union[tuple(members)]], ...))  # type: ignore[valid-type]  # noqa: UP007
    contract = OutputContract.from_type(root)
    assert fan_out(contract.sha256, contract.schema) == 150
    [(path, message)] = _errors('{"xs": [' + ",".join(["{}"] * 20_000) + "]}", root)
    assert path == "$" and "MAX_ERROR_WORK" in message and f"{MAX_ERROR_WORK:,}" in message


def test_a_discriminated_union_tries_one_branch() -> None:
    a = create_model("A", kind=(Literal["a"], ...), x=(int, ...))
    b = create_model("B", kind=(Literal["b"], ...), y=(int, ...))
    root = create_model("R", v=(Union[a, b], Field(discriminator="kind")))  # type: ignore[valid-type]  # noqa: UP007
    contract = OutputContract.from_type(root)
    assert fan_out(contract.sha256, contract.schema) == 2


# ------------------------------------------------------ 6-7. validators' errors

def _validated(raise_it: Any) -> type[BaseModel]:
    class Checked(BaseModel):
        x: str

        @field_validator("x")
        @classmethod
        def check(cls, v: str) -> str:
            raise raise_it(v)

    return Checked


@pytest.mark.parametrize("kind", [RuntimeError, KeyError, TypeError])
def test_a_validator_raising_another_exception_is_a_contract_error(kind: Any) -> None:
    with pytest.raises(ContractError, match=kind.__name__) as caught:
        _parse('{"x": "Zqxkwv"}', _validated(kind))
    assert "Zqxkwv" not in str(caught.value)


VALUE_ERRORS = [
    lambda v: PydanticKnownError("json_invalid", {"error": f"{v} at line 1 column 1"}),
    lambda v: PydanticCustomError(f"zqx_{v.lower()}", "bad"),
    lambda v: PydanticCustomError("value_error", f"{v}"),
]


@pytest.mark.parametrize("raise_it", VALUE_ERRORS)
def test_validator_text_and_type_names_are_never_echoed(raise_it: Any) -> None:
    [(path, message)] = _errors('{"x": "Zqxkwv"}', _validated(raise_it))
    assert path == "$.x" and "zqx" not in message.lower()


def test_our_own_json_parse_reports_invalid_json() -> None:
    [(path, message)] = _errors('{"x": ', create_model("J", x=(str, ...)))
    assert path == "$" and message.startswith("Invalid JSON: ")


# ------------------------------------------------------ 8. nested $defs alias cycle

def test_an_alias_cycle_through_nested_defs_is_found_with_its_path() -> None:
    schema = {"type": "object", "properties": {"x": {"$ref": "#/$defs/A"}},
              "$defs": {"A": {"$ref": "#/$defs/B"},
                        "B": {"$defs": {"C": {"$ref": "#/$defs/A"}},
                              "$ref": "#/$defs/B/$defs/C"}}}
    for dialect in ("openai-strict", "json"):
        with pytest.raises(ProjectionError, match=r"^/\$defs/A: \$defs alias cycle A -> B"):
            Projector(schema, DIALECTS[dialect], DEFAULT_BUDGET).run()


# ------------------------------------------------------ 9. NaN and Infinity

@pytest.mark.parametrize("token", ["NaN", "Infinity", "-Infinity"])
def test_non_finite_numbers_are_refused_at_their_path(token: str) -> None:
    floats = create_model("F", x=(float, ...), ys=(list[float], []))
    errors = _errors('{"x": 1.5, "ys": [1, ' + token + ']}', floats)
    assert errors == [("$.ys[1]", "NaN and Infinity are not JSON numbers; a finite number "
                                  "is expected")]


# ------------------------------------------------------ 10. smaller ones

def test_pydantic_own_types_are_worded_as_such() -> None:
    ip = create_model("Ip", a=(IPv4Address, ...))
    [(path, message)] = _errors('{"a": "Zqxkwv"}', ip)
    assert (path, message) == ("$.a", "Input should be a valid IPv4 address")


def test_a_reply_nested_past_the_depth_bound_is_refused_clearly() -> None:
    deep = create_model("Deep", x=(list[Any], ...))
    n = MAX_REPLY_DEPTH + 72  # valid JSON pydantic's parser would fail on (about 200)
    [(path, message)] = _errors('{"x": ' + "[" * n + "]" * n + "}", deep)
    assert path == "$" and "MAX_REPLY_DEPTH" in message and f"{n + 1:,} levels" in message


def test_a_property_name_over_the_byte_budget_is_reported_at_the_property() -> None:
    schema = {"type": "object", "properties": {"x" * 600_000: {"type": "string"}}}
    with pytest.raises(ProjectionError, match=r"^/properties/x{40}\.\.\.: the projected"):
        Projector(schema, DIALECTS["json"], DEFAULT_BUDGET).run()


def test_lock_reader_matches_keys_with_the_contracts_engine() -> None:
    schema = {"type": "object", "patternProperties": {"^(a+)+$": {"type": "integer"}},
              "additionalProperties": False}
    assert _check(json.dumps({"aaa": 1}), schema) == {"aaa": 1}
    errors = _check_errors(json.dumps({"a" * 40 + "!": 1}), schema)  # rust-regex: linear
    assert errors == [("$", "Object has a property the contract does not allow")]


def test_an_optional_separator_does_not_break_a_chain() -> None:
    assert backtracking_risk(r"^a+-?a+-?a+$") is not None  # "aaaa" has no dash at all
    assert backtracking_risk(r"^a+-a+-a+$") is None


def test_deeply_nested_small_repeats_are_analysed_once_each() -> None:
    assert backtracking_risk("(?:" * 40 + "a" + "){2}" * 40) is None  # memoised, not 2**40


def test_no_string_bound_without_any_pattern() -> None:
    free = create_model("Free", __config__=PYTHON_RE, x=(str, ...))
    assert len(_parse(json.dumps({"x": "a" * (MAX_PYTHON_RE_CHARS + 1)}), free).x) == 10_001

"""Reply parsing: undo the projection, validate with the contract, report paths without values."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator  # type: ignore[import-untyped]
from pydantic import BaseModel

from compiler.errors import ReplyValidationError
from compiler.reply.parse import parse_reply
from compiler.schema.contract import OutputContract, load_contract
from compiler.schema.dialects import DIALECTS
from compiler.schema.projected import Projection
from compiler.schema.projection import project
from tests.fault_cases import FAULTS, case_class, case_contract

HERE = Path(__file__).parent


#: Output models of fault cases, built from the case's own snippet in
#: ../shared/cases/faults.yaml (a test using one skips when the file is absent).
CASES = {"Profile": "C18", "Outcome": "C20", "Chart": "C22", "StepList": "C26"}


def load(module: str, name: str) -> OutputContract:
    """Load a fixture contract from shapes.py, or (module ``cases``) a fault case's model."""
    if module == "cases":
        return case_contract(CASES[name])
    return load_contract(f"fixtures/contracts/{module}.py:{name}", base_dir=HERE)


def cls(module: str, name: str) -> Any:
    """Return a fixture class: the contract's target, or a class of a case's snippet."""
    if module == "cases":
        return case_class(CASES.get(name) or CASES[_OWNER[name]], name)
    return load(module, name).target


#: Classes a case snippet defines beside its output model.
_OWNER = {"Affiliation": "Profile", "Axis": "Chart"}


def as_strict_reply(value: Any, schema: Any, root: dict[str, Any]) -> Any:
    """Return ``value`` as a model bound by ``schema`` would send it: absent properties as null."""
    if isinstance(schema, dict) and "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        return as_strict_reply(value, root["$defs"][name], root)
    if isinstance(schema, dict) and "anyOf" in schema:
        if value is None:
            return None
        validator = Draft202012Validator(root)
        for branch in schema["anyOf"]:
            candidate = as_strict_reply(value, branch, root)
            if validator.evolve(schema={**branch, "$defs": root.get("$defs", {})}).is_valid(
                candidate
            ):
                return candidate
        return value
    if isinstance(value, dict) and isinstance(schema, dict) and "properties" in schema:
        props = schema["properties"]
        out = {k: as_strict_reply(v, props.get(k, {}), root) for k, v in value.items()}
        for name in schema.get("required", []):
            out.setdefault(name, None)
        return out
    if isinstance(value, list) and isinstance(schema, dict) and "items" in schema:
        return [as_strict_reply(v, schema["items"], root) for v in value]
    return value


def reply_for(instance: Any, p: Projection, *, omit_defaults: bool) -> str:
    """Serialise an instance as the model would answer under projection ``p``."""
    if isinstance(instance, BaseModel):
        data: Any = instance.model_dump(mode="json", by_alias=True, exclude_defaults=omit_defaults)
    else:
        data = [i.model_dump(mode="json", by_alias=True, exclude_defaults=omit_defaults)
                for i in instance]
    if p.wrapped_root:
        data = {p.wrapped_root: data}
    if p.nullable_added:  # a strict dialect: every property is present, absent ones as null
        schema = json.loads(p.schema_json)
        data = as_strict_reply(data, schema, schema)
        assert Draft202012Validator(schema).is_valid(data)
    return json.dumps(data)


def instances() -> list[tuple[OutputContract, Any]]:
    """Valid values of several contracts, each with optional fields both set and left out."""
    Order, Line, Address = cls("shapes", "Order"), cls("shapes", "Line"), cls("shapes", "Address")
    Node, Coded = cls("shapes", "Node"), cls("shapes", "Coded")
    full_order = Order(
        orderId="A-1", placed=date(2024, 5, 1), colour="green", kind="trade",
        lines=[Line(sku="ABC-123", qty=3, note="fragile", tags=["x"]), Line(sku="XYZ-999")],
        billing=Address(street="1 Road", city="Town", postcode="T1"),
        shipping=Address(street="2 Lane", city="City"), gift=True, discount=1.5,
    )
    lean_order = Order(orderId="B-2", placed=date(2024, 5, 2), lines=[Line(sku="QQQ-000")],
                       billing=Address(street="3 Way", city="Ville"))
    tree = Node(value=1, children=[Node(value=2, children=[Node(value=3)]), Node(value=4)])
    out: list[tuple[OutputContract, Any]] = [
        (load("shapes", "Order"), full_order),
        (load("shapes", "Order"), lean_order),
        (load("shapes", "Node"), tree),
        (load("shapes", "Coded"), Coded(code="ABC")),
        (load("shapes", "Coded"), Coded(code="ABC", label="short")),
        (OutputContract.from_type(list[Line]),  # type: ignore[valid-type]
         [Line(sku="ABC-123"), Line(sku="DEF-456", qty=2)]),
    ]
    if FAULTS.is_file():  # the output models of fault cases C18 and C22, from their snippets
        Profile, Affiliation = cls("cases", "Profile"), cls("cases", "Affiliation")
        Chart, Axis = cls("cases", "Chart"), cls("cases", "Axis")
        out += [
            (load("cases", "Profile"), Profile(organizations=[
                Affiliation(name="a"), Affiliation(name="b", roles=["r"], division="d")])),
            (load("cases", "Chart"), Chart(x_axis=Axis(label="x"), y_axis=Axis(label="y"))),
        ]
    return out


@pytest.mark.parametrize("dialect", sorted(DIALECTS))
@pytest.mark.parametrize("omit_defaults", [True, False])
def test_round_trip(dialect: str, omit_defaults: bool) -> None:
    """A valid value, sent as a model bound by the projection would send it, parses back equal."""
    for contract, instance in instances():
        p = project(contract, DIALECTS[dialect])
        text = reply_for(instance, p, omit_defaults=omit_defaults)
        assert parse_reply(text, contract, p, strip_fence=False) == instance, text


def test_projection_added_null_becomes_the_default() -> None:
    """A null where the projection added null means absent: the contract's default applies."""
    c = load("shapes", "Order")
    p = project(c, DIALECTS["openai-strict"])
    reply = {
        "orderId": "C-3", "placed": "2024-01-01", "colour": None, "kind": None, "gift": None,
        "discount": None, "shipping": None,
        "lines": [{"sku": "ABC-123", "qty": None, "note": None, "tags": None}],
        "billing": {"street": "s", "city": "c", "postcode": None},
    }
    order = parse_reply(json.dumps(reply), c, p, strip_fence=False)
    assert order.colour.value == "red" and order.kind == "retail" and order.gift is False
    assert order.lines[0].qty == 1 and order.lines[0].note == "n/a" and order.lines[0].tags == []
    assert order.billing.postcode is None and order.shipping is None


def test_nulls_deep_in_recursion_are_undone() -> None:
    """Nulls the projection added inside a recursive definition are removed at every depth."""
    c = load("shapes", "Node")
    p = project(c, DIALECTS["openai-strict"])
    text = '{"value": 1, "children": [{"value": 2, "children": [{"value": 3, "children": null}]}]}'
    tree = parse_reply(text, c, p, strip_fence=False)
    assert tree.children[0].children[0].children == []


def test_null_for_a_required_field_is_rejected() -> None:
    """Only projection-added nulls are removed: null for a required field is still an error."""
    c = load("shapes", "Order")
    p = project(c, DIALECTS["openai-strict"])
    text = json.dumps({"orderId": "abc", "placed": None, "lines": [{"sku": "ABC-123"}],
                       "billing": {"street": "s", "city": "c"}})
    with pytest.raises(ReplyValidationError) as info:
        parse_reply(text, c, p, strip_fence=False)
    assert [path for path, _ in info.value.errors] == ["$.placed"]


def test_wrapped_root_is_unwrapped() -> None:
    """A reply to a wrapped union root parses to a member of the union, not the wrapper."""
    c = load("cases", "Outcome")
    p = project(c, DIALECTS["openai-strict"])
    value = parse_reply('{"result": {"status": "error", "reason": "no data"}}', c, p,
                        strip_fence=False)
    assert type(value).__name__ == "NotDone"
    with pytest.raises(ReplyValidationError) as info:
        parse_reply('{"status": "error", "reason": "no data"}', c, p, strip_fence=False)
    assert info.value.errors == (("$.result", "Field required"),)
    with pytest.raises(ReplyValidationError) as info:
        parse_reply('[1]', c, p, strip_fence=False)
    assert info.value.errors[0][0] == "$"


def test_fence_is_removed_only_when_asked() -> None:
    """One surrounding ```json fence is stripped with strip_fence, and is invalid JSON without."""
    c = load("cases", "StepList")
    p = project(c, DIALECTS["json"])
    fenced = '```json\n{"steps": ["a", "b"]}\n```\n'
    assert parse_reply(fenced, c, p, strip_fence=True).steps == ["a", "b"]
    assert parse_reply('```{"steps": []}```', c, p, strip_fence=True).steps == []
    with pytest.raises(ReplyValidationError) as info:
        parse_reply(fenced, c, p, strip_fence=False)
    assert info.value.errors[0][0] == "$"


@pytest.mark.parametrize("text", ["", "{bad", '{"steps": [1, 2', "the answer is 42"])
def test_invalid_json(text: str) -> None:
    """Text that is not JSON fails at path $ with the decoder's message."""
    for dialect in ("json", "openai-strict"):
        c = load("cases", "StepList" if dialect == "json" else "Outcome")
        p = project(c, DIALECTS[dialect])
        with pytest.raises(ReplyValidationError) as info:
            parse_reply(text, c, p, strip_fence=True)
        (path, message), = info.value.errors
        assert path == "$" and message.startswith("Invalid JSON")


SECRET = "SECRET-VALUE-0123456789"


def test_unenforced_constraints_are_checked_on_the_reply() -> None:
    """pattern and maxLength, dropped for anthropic, still reject a reply (paths, no values)."""
    c = load("shapes", "Coded")
    p = project(c, DIALECTS["anthropic"])
    assert "pattern" not in p.schema["properties"]["code"]
    with pytest.raises(ReplyValidationError) as info:
        parse_reply(json.dumps({"code": SECRET, "label": SECRET}), c, p, strip_fence=False)
    paths = sorted(path for path, _ in info.value.errors)
    assert paths == ["$.code", "$.label"]
    assert SECRET not in str(info.value) and SECRET not in json.dumps(info.value.to_dict())
    assert info.value.__cause__ is None and info.value.__context__ is None


def test_nested_and_wrapped_paths() -> None:
    """Paths follow the reply as written: array indexes, the wrapper, never union member names."""
    c = load("shapes", "Order")
    p = project(c, DIALECTS["openai-strict"])
    reply = {"orderId": "abc", "placed": "2024-01-01", "colour": None, "kind": None,
             "gift": None, "discount": None, "shipping": None,
             "lines": [{"sku": "ABC-123", "qty": None, "note": None, "tags": None},
                       {"sku": SECRET, "qty": 500, "note": None, "tags": None}],
             "billing": {"street": "s", "city": "c", "postcode": None}}
    with pytest.raises(ReplyValidationError) as info:
        parse_reply(json.dumps(reply), c, p, strip_fence=False)
    assert sorted(path for path, _ in info.value.errors) == ["$.lines[1].qty", "$.lines[1].sku"]
    assert SECRET not in str(info.value) and "500" not in str(info.value)

    union = load("cases", "Outcome")
    up = project(union, DIALECTS["openai-strict"])
    with pytest.raises(ReplyValidationError) as info:
        parse_reply('{"result": {"status": "success"}}', union, up, strip_fence=False)
    assert info.value.errors == (("$.result.answer", "Field required"),)
    with pytest.raises(ReplyValidationError) as info:
        parse_reply(json.dumps({"result": {"status": SECRET}}), union, up, strip_fence=False)
    (path, message), = info.value.errors
    assert path == "$.result" and SECRET not in message and "tag" in message


def test_dict_keys_are_located_without_being_echoed() -> None:
    """A key of a dict field is reply data: its entry is located as [*], not by the key."""
    Odd = load("shapes", "Counts")
    p = project(Odd, DIALECTS["json"])
    with pytest.raises(ReplyValidationError) as info:
        parse_reply('{"counts": {"a b": "x"}}', Odd, p, strip_fence=False)
    assert info.value.errors[0][0] == "$.counts[*]"


def test_dict_keys_from_the_reply_are_not_echoed_in_paths() -> None:
    """A failing entry of a dict field is located as [*], never by the reply's own key."""
    from pydantic import BaseModel

    from compiler.errors import ReplyValidationError
    from compiler.reply.parse import parse_reply
    from compiler.schema.contract import OutputContract
    from compiler.schema.dialects import DIALECTS
    from compiler.schema.projection import project

    class Scores(BaseModel):
        by_name: dict[str, int]

    contract = OutputContract.from_type(Scores)
    projection = project(contract, DIALECTS["json"])
    with pytest.raises(ReplyValidationError) as info:
        parse_reply('{"by_name": {"alice-ssn-123-45-6789": "x"}}', contract, projection,
                    strip_fence=False)
    text = str(info.value) + repr(info.value.errors)
    assert "alice" not in text
    assert info.value.errors[0][0] == "$.by_name[*]"

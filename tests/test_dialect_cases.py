"""Fault cases C18, C20, C22, C24 and C26 (../shared/cases/faults.yaml) as projection tests.

Each expected schema below is transcribed from the case; when the case file is
present, a test checks the transcription against it. Schemas compare ignoring
``title`` and ``description``, after resolving local ``$ref`` (unless the case is
about ``$ref`` itself), with ``type: [X, "null"]`` equal to ``anyOf [X, null]``.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from compiler.errors import ReplyValidationError
from compiler.reply.parse import parse_reply
from compiler.schema.contract import OutputContract, load_contract
from compiler.schema.dialects import DIALECTS, Dialect
from compiler.schema.instructions import extract_shown_schema, render_instructions
from compiler.schema.projected import Projection
from compiler.schema.projection import project

HERE = Path(__file__).parent
FAULTS = HERE.parents[1] / "shared" / "cases" / "faults.yaml"


def case_contract(name: str) -> OutputContract:
    """Load a case's output model from the fixtures."""
    return load_contract(f"fixtures/contracts/cases.py:{name}", base_dir=HERE)


def normalise(schema: Any, root: Any = None) -> Any:
    """Resolve local refs, drop title/description/$defs, and spell nullable types as anyOf."""
    root = schema if root is None else root
    if isinstance(schema, list):
        return [normalise(item, root) for item in schema]
    if not isinstance(schema, dict):
        return schema
    if "$ref" in schema:
        target = root
        for part in schema["$ref"].lstrip("#/").split("/"):
            target = target[part]
        rest = {k: v for k, v in schema.items() if k != "$ref"}
        return normalise({**target, **rest}, root)
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in ("title", "description", "$defs"):
            continue
        if key == "properties":
            out[key] = {name: normalise(sub, root) for name, sub in value.items()}
        else:
            out[key] = normalise(value, root)
    kind = out.get("type")
    if isinstance(kind, list) and "null" in kind and len(kind) == 2:
        (other,) = [k for k in kind if k != "null"]
        rest = {k: v for k, v in out.items() if k != "type"}
        return {"anyOf": [{"type": other, **rest}, {"type": "null"}]}
    return out


def changes(p: Projection, kind: str) -> list[str]:
    """Pointers of the changes of one kind."""
    return [c.pointer for c in p.changes if c.kind == kind]


def shown_equals_enforced(p: Projection) -> None:
    """The schema parsed out of the instruction text equals the projected (enforced) schema."""
    assert extract_shown_schema(render_instructions(p)) == json.loads(p.schema_json) == p.schema


# --------------------------------------------------------------------------- expected schemas

C18_EXPECTED = {
    "type": "object",
    "properties": {
        "organizations": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "roles": {"anyOf": [{"type": "array", "items": {"type": "string"}},
                                        {"type": "null"}]},
                    "division": {"anyOf": [{"type": "string"}, {"type": "null"}]},
                },
                "required": ["name", "roles", "division"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["organizations"],
    "additionalProperties": False,
}

C22_EXPECTED = {
    "type": "object",
    "properties": {
        "x_axis": {"type": "object", "properties": {"label": {"type": "string"}},
                   "required": ["label"]},
        "y_axis": {"type": "object", "properties": {"label": {"type": "string"}},
                   "required": ["label"]},
    },
    "required": ["x_axis", "y_axis"],
}

C24_EXPECTED = {
    "type": "object",
    "properties": {
        "email": {"type": "string"},
        "website": {"type": "string"},
        "born": {"type": "string"},
        "updated_at": {"type": "string", "format": "date-time"},
    },
    "required": ["email", "website", "born", "updated_at"],
}

C24_DIALECT: Dialect = dataclasses.replace(
    DIALECTS["gemini"], string_formats=frozenset({"date-time"})
)


def test_c18_optional_fields_in_array_items() -> None:
    """C18: every property required at every depth, optional ones nullable, objects closed."""
    c = case_contract("Profile")
    p = project(c, DIALECTS["openai-strict"])
    assert normalise(p.schema) == C18_EXPECTED
    made = changes(p, "schema.made_required_nullable")
    assert sorted(made) == ["/$defs/Affiliation/properties/division",
                            "/$defs/Affiliation/properties/roles"]
    shown_equals_enforced(p)
    reply = {"organizations": [{"name": "Acme", "roles": None, "division": None}]}
    profile = parse_reply(json.dumps(reply), c, p, strip_fence=False)
    assert profile.organizations[0].roles is None and profile.organizations[0].division is None
    assert profile == c.target(organizations=[{"name": "Acme"}])


def test_c20_discriminated_union_root() -> None:
    """C20: the union is wrapped in an object, oneOf becomes anyOf, discriminator dropped."""
    c = case_contract("Outcome")
    p = project(c, DIALECTS["openai-strict"])
    assert p.schema["type"] == "object" and "anyOf" not in p.schema and "oneOf" not in p.schema
    assert "discriminator" not in p.schema_json and '"oneOf"' not in p.schema_json
    assert p.wrapped_root == "result" and p.blockers == ()
    assert changes(p, "schema.root_wrapped") == [""]
    assert changes(p, "schema.oneof_to_anyof") == ["/oneOf"]
    assert changes(p, "schema.discriminator_dropped") == ["/discriminator"]
    shown_equals_enforced(p)
    done = parse_reply('{"result": {"status": "success", "answer": "42"}}', c, p,
                       strip_fence=False)
    not_done = parse_reply('{"result": {"status": "error", "reason": "offline"}}', c, p,
                           strip_fence=False)
    assert (type(done).__name__, type(not_done).__name__) == ("Done", "NotDone")


def test_c22_reused_submodel_under_a_dialect_without_refs() -> None:
    """C22: every non-recursive $ref is inlined for gemini; a reused sub-model is no cycle."""
    c = case_contract("Chart")
    p = project(c, DIALECTS["gemini"])
    assert "$ref" not in p.schema_json and "$defs" not in p.schema_json
    assert normalise(p.schema) == C22_EXPECTED
    assert p.blockers == ()
    assert changes(p, "schema.refs_inlined") == ["/properties/x_axis", "/properties/y_axis"]
    shown_equals_enforced(p)
    chart = parse_reply('{"x_axis": {"label": "t"}, "y_axis": {"label": "v"}}', c, p,
                        strip_fence=False)
    assert chart.y_axis.label == "v"


def test_c24_string_formats_the_dialect_lacks() -> None:
    """C24: email, uri and date formats are dropped (and reported); date-time is kept."""
    c = case_contract("Contact")
    p = project(c, C24_DIALECT)
    projected = normalise(p.schema)
    assert projected == C24_EXPECTED
    assert sorted(changes(p, "schema.format_dropped")) == [
        "/properties/born/format", "/properties/email/format", "/properties/website/format",
    ]
    requested = {ch.pointer: ch.requested for ch in p.changes if ch.kind == "schema.format_dropped"}
    assert requested["/properties/website/format"] == "uri"
    assert "email" in p.schema["properties"]["email"]["description"]
    shown_equals_enforced(p)
    reply = {"email": "a@example.com", "website": "https://example.com", "born": "2000-01-31",
             "updated_at": "2024-05-01T10:00:00Z"}
    contact = parse_reply(json.dumps(reply), c, p, strip_fence=False)
    assert str(contact.born) == "2000-01-31"
    bad = {**reply, "email": "not-an-email"}
    with pytest.raises(ReplyValidationError, match=r"\$\.email"):
        parse_reply(json.dumps(bad), c, p, strip_fence=False)


def test_c26_json_mode_shows_the_validation_schema() -> None:
    """C26: in JSON mode the instructions say JSON and carry exactly the validation schema."""
    c = case_contract("StepList")
    p = project(c, DIALECTS["json"])
    text = render_instructions(p)
    assert "JSON" in text and p.schema_json in text
    shown_equals_enforced(p)


@pytest.mark.parametrize(
    ("case_id", "expected"),
    [("C18", C18_EXPECTED), ("C22", C22_EXPECTED), ("C24", C24_EXPECTED)],
)
def test_transcription_matches_the_case_file(case_id: str, expected: dict[str, Any]) -> None:
    """The expected schemas above equal those in faults.yaml (when the shared file is present)."""
    if not FAULTS.is_file():
        pytest.skip("../shared/cases/faults.yaml is absent")
    cases = {case["id"]: case for case in yaml.safe_load(FAULTS.read_text(encoding="utf-8"))}
    assert normalise(cases[case_id]["expected"]["expected_schema"]) == expected

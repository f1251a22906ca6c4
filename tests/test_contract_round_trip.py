"""Round trip of the example contracts through compile_request and parse_reply.

For every model in ``contracts/examples.py``, every dialect (one model of the
bundled seed per dialect) and every enforcement rung: a valid instance,
serialised as a model bound by what was shown (and, at rung ``schema``,
enforced) would send it, comes back equal from ``CompiledRequest.parse_reply``.
A reply breaking a constraint the rung or dialect could not enforce is rejected
with the right JSON path and without the offending value.
"""

from __future__ import annotations

import copy
import json
from datetime import date
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft202012Validator  # type: ignore[import-untyped]
from pydantic import BaseModel

from compiler import CompiledRequest, Intent, OutputContract, compile_request
from compiler.errors import ReplyValidationError
from compiler.intent import CEILINGS
from compiler.schema.instructions import extract_shown_schema
from contracts.examples import Analysis, Finding, Invoice, LineItem, Party, TicketLabel
from registry.errors import DeclarationError
from registry.resolve.resolver import Registry
from tests.conftest import ROOT

#: One model per dialect: models.yaml selects openai-strict, anthropic and gemini by
#: provider glob; ``json`` is declared for the last one in a copy of models.yaml.
MODEL_OF = {
    "openai-strict": "openai/gpt-4o-mini",
    "anthropic": "anthropic/claude-sonnet-4.5",
    "gemini": "google/gemini-2.5-flash",
    "json": "meta-llama/llama-3.3-70b-instruct",
}


@cache
def seed_registry(directory: Path) -> Registry:
    """The bundled seed with models.yaml, plus dialect ``json`` for MODEL_OF["json"]."""
    declared = yaml.safe_load((ROOT / "models.yaml").read_text(encoding="utf-8"))
    declared["models"][MODEL_OF["json"]] = {"structured_output": {"dialect": "json"}}
    path = directory / "round-trip-models.yaml"
    path.write_text(yaml.safe_dump(declared, sort_keys=False), encoding="utf-8")
    return Registry.load(models=path)


@pytest.fixture
def registry(tmp_path_factory: pytest.TempPathFactory) -> Registry:
    """The registry above, built once per session (after conftest made it offline)."""
    return seed_registry(tmp_path_factory.getbasetemp())


def compiled(registry: Registry, target: Any, dialect: str, ceiling: str) -> CompiledRequest:
    """Compile ``target`` as the contract of a one-off stage for the dialect's model."""
    intent = Intent(stage="round_trip", contract=OutputContract.from_type(target),
                    ceiling=ceiling)
    req = compile_request(intent, MODEL_OF[dialect], [{"role": "user", "content": "..."}],
                          registry=registry)
    assert req.rung == ceiling
    assert req.projection is not None
    assert req.projection.dialect == (dialect if ceiling == "schema" else "json")
    return req


# --------------------------------------------------------------------------- instances


def _party(full: bool) -> Party:
    if full:
        return Party(name="Acme GmbH", vat_id="DE123456789", address="1 Main St")
    return Party(name="Bob")


def _invoice(full: bool) -> Invoice:
    items = [LineItem(description="Bolt", quantity=3, unit_price=0.5, sku="B-1"),
             LineItem(description="Nut", quantity=1, unit_price=0.0)]
    if full:
        return Invoice(number="INV-1", issued_on=date(2026, 1, 31), currency="EUR",
                       seller=_party(True), buyer=_party(False), items=items, notes="Paid.")
    return Invoice(number="INV-2", issued_on=date(2026, 2, 1), currency="GBP",
                   seller=_party(False), items=items[1:])


def _analysis(full: bool) -> Analysis:
    findings = [Finding(claim="Latency doubled", evidence=["p99 graph"], severity="high")]
    if full:
        return Analysis(summary="S.", findings=findings, recommendation="Roll back.",
                        open_questions=["Why now?"])
    return Analysis(summary="S.", findings=[], recommendation="Wait.")


EXAMPLES: dict[type[BaseModel], list[BaseModel]] = {
    Invoice: [_invoice(True), _invoice(False)],
    Party: [_party(True), _party(False)],
    LineItem: [LineItem(description="X", quantity=2, unit_price=9.99, sku="S"),
               LineItem(description="Y", quantity=1, unit_price=1)],
    TicketLabel: [TicketLabel(category="bug", urgent=True, confidence=0.75),
                  TicketLabel(category="other", urgent=False, confidence=0)],
    Finding: [Finding(claim="c", evidence=[], severity="low")],
    Analysis: [_analysis(True), _analysis(False)],
}


def test_every_example_model_is_covered() -> None:
    """EXAMPLES lists every pydantic model of contracts/examples.py."""
    import contracts.examples as module

    models = {value for value in vars(module).values() if isinstance(value, type)
              and issubclass(value, BaseModel) and value is not BaseModel}
    assert models == set(EXAMPLES)


def _deref(node: Any, root: Any) -> Any:
    while isinstance(node, dict) and "$ref" in node:
        target = root
        for part in node["$ref"][2:].split("/"):
            target = target[part]
        node = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
    return node


def _valid(value: Any, node: Any, root: Any) -> bool:
    schema = {**node, "$defs": root["$defs"]} if "$defs" in root else node
    return bool(Draft202012Validator(schema).is_valid(value))


def with_nulls(value: Any, node: Any, root: Any) -> Any:
    """``value`` with every required-but-absent property sent as null (what a strict
    provider makes a model send for a field it leaves out)."""
    node = _deref(node, root)
    if not isinstance(node, dict):
        return value
    if "anyOf" in node and value is not None:
        for branch in node["anyOf"]:
            candidate = with_nulls(value, branch, root)
            if _valid(candidate, branch, root):
                return candidate
        return value
    if isinstance(value, dict) and "properties" in node:
        props = node["properties"]
        out = {key: with_nulls(item, props.get(key, {}), root) for key, item in value.items()}
        for name in node.get("required", []):
            out.setdefault(name, None)
        return out
    if isinstance(value, list) and "items" in node:
        return [with_nulls(item, node["items"], root) for item in value]
    return value


def replies(instance: BaseModel, req: CompiledRequest) -> list[str]:
    """The instance as replies: every field written out, and only the fields that were set."""
    shown = json.loads(req.projection.schema_json)  # type: ignore[union-attr]
    texts = []
    for data in (instance.model_dump(mode="json"),
                 instance.model_dump(mode="json", exclude_unset=True)):
        reply = with_nulls(data, shown, shown)
        assert _valid(reply, shown, shown), reply  # what was shown (and enforced) allows it
        texts.append(json.dumps(reply))
    return texts


# --------------------------------------------------------------------------- round trip


@pytest.mark.parametrize("ceiling", CEILINGS)
@pytest.mark.parametrize("dialect", sorted(MODEL_OF))
@pytest.mark.parametrize("target", list(EXAMPLES), ids=lambda t: t.__name__)
def test_round_trip(registry: Registry, target: type[BaseModel], dialect: str,
                    ceiling: str) -> None:
    """A valid instance, serialised and parsed back, is equal to itself; a code fence is
    removed only where the provider did not enforce JSON."""
    req = compiled(registry, target, dialect, ceiling)
    for instance in EXAMPLES[target]:
        for text in replies(instance, req):
            assert req.parse_reply(text) == instance, text
            fenced = f"```json\n{text}\n```"
            if ceiling == "schema":
                with pytest.raises(ReplyValidationError) as info:
                    req.parse_reply(fenced)
                assert [path for path, _ in info.value.errors] == ["$"]
            else:
                assert req.parse_reply(fenced) == instance


# --------------------------------------------------------------------------- unenforced constraints

SECRET = "NOT-A-VAT-ID-0123456789"


def _set(data: Any, path: tuple[Any, ...], value: Any) -> None:
    for step in path[:-1]:
        data = data[step]
    data[path[-1]] = value


@pytest.mark.parametrize(
    ("dialect", "ceiling", "target", "where", "bad", "expected"),
    [
        # anthropic has no pattern, no minimum/maximum
        ("anthropic", "schema", Invoice, ("seller", "vat_id"), SECRET, "$.seller.vat_id"),
        ("anthropic", "schema", Invoice, ("items", 1, "quantity"), 0, "$.items[1].quantity"),
        ("anthropic", "schema", TicketLabel, ("confidence",), 1.5, "$.confidence"),
        # gemini keeps only the date-time format, and no pattern or minimum
        ("gemini", "schema", Invoice, ("issued_on",), SECRET, "$.issued_on"),
        ("gemini", "schema", Invoice, ("buyer", "vat_id"), SECRET, "$.buyer.vat_id"),
        ("gemini", "schema", Invoice, ("items", 0, "unit_price"), -1, "$.items[0].unit_price"),
        # below rung schema nothing is enforced by the provider, whatever the dialect
        ("openai-strict", "json", Invoice, ("seller", "vat_id"), SECRET, "$.seller.vat_id"),
        ("openai-strict", "prompt", Analysis, ("findings", 0, "severity"), SECRET,
         "$.findings[0].severity"),
    ],
)
def test_unenforced_constraint_is_rejected(
    registry: Registry, dialect: str, ceiling: str, target: type[BaseModel],
    where: tuple[Any, ...], bad: Any, expected: str,
) -> None:
    """The provider could send it (it satisfies the enforced schema, or nothing was enforced);
    the contract rejects it at the right JSON path, and the message hides the value."""
    req = compiled(registry, target, dialect, ceiling)
    reply = json.loads(replies(EXAMPLES[target][0], req)[0])
    _set(reply, where, bad)
    if ceiling == "schema":
        enforced = copy.deepcopy(req.enforced_schema)
        assert enforced is not None and _valid(reply, enforced, enforced)
    with pytest.raises(ReplyValidationError) as info:
        req.parse_reply(json.dumps(reply))
    assert [path for path, _ in info.value.errors] == [expected]
    assert SECRET not in str(info.value) and SECRET not in json.dumps(info.value.to_dict())


def test_openai_strict_enforces_what_anthropic_cannot(registry: Registry) -> None:
    """The vat_id pattern is a keyword of the openai-strict schema (the provider enforces it);
    under anthropic it is only restated in the description, and the change is reported."""
    pattern = "^[A-Z]{2}[0-9A-Z]{2,12}$"
    strict = compiled(registry, Invoice, "openai-strict", "schema").enforced_schema
    assert strict is not None
    assert strict["$defs"]["Party"]["properties"]["vat_id"]["anyOf"][0]["pattern"] == pattern
    loose = compiled(registry, Invoice, "anthropic", "schema")
    assert loose.enforced_schema is not None
    branch = loose.enforced_schema["$defs"]["Party"]["properties"]["vat_id"]["anyOf"][0]
    assert "pattern" not in branch and pattern in branch["description"]
    assert any(a.kind == "schema.keyword_dropped"
               and a.path == "schema:/$defs/Party/properties/vat_id/anyOf/0/pattern"
               for a in loose.report.adjustments)


# --------------------------------------------------------------------------- stage wording

TEMPLATE = (
    "Label the ticket. {Answer} with one JSON object valid under this schema:\n{schema}\n"
    "JSON only."
)


def test_stage_instructions_are_the_same_for_every_model(tmp_path: Path) -> None:
    """A stage's ``instructions:`` template is used verbatim for every model and rung; only
    the schema inside it differs, and it is the schema enforced."""
    stages = tmp_path / "stages.yaml"
    stages.write_text(yaml.safe_dump({"stages": {"label": {
        "contract": f"{ROOT / 'contracts' / 'examples.py'}:TicketLabel",
        "instructions": TEMPLATE,
        "output": "schema",
    }}}), encoding="utf-8")
    registry = Registry.load(models=ROOT / "models.yaml", stages=stages)
    before, _, after = TEMPLATE.partition("{schema}")
    for model in ("openai/gpt-4o-mini", "anthropic/claude-sonnet-4.5",
                  "google/gemini-2.5-flash", "mistralai/mistral-small-3.1-24b-instruct"):
        req = compile_request("label", model, registry=registry)
        assert req.instructions is not None and req.projection is not None
        text = req.instructions["content"]
        assert text == before + req.projection.schema_json + after
        assert extract_shown_schema(text, TEMPLATE) == req.shown_schema
        if req.rung == "schema":
            assert req.enforced_schema == req.shown_schema
    assert req.rung == "prompt"  # the last model lists no response_format


def test_a_template_without_the_schema_is_refused(tmp_path: Path) -> None:
    """stages.yaml is rejected when ``instructions`` has no ``{schema}``."""
    stages = tmp_path / "stages.yaml"
    stages.write_text(yaml.safe_dump({"stages": {"label": {
        "contract": "contracts/examples.py:TicketLabel",
        "instructions": "Answer in JSON.",
    }}}), encoding="utf-8")
    with pytest.raises(DeclarationError, match=r"\{schema\}"):
        Registry.load(models=ROOT / "models.yaml", stages=stages)

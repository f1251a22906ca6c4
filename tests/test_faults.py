"""Fault cases from ../shared/cases/faults.yaml, compiled through the real pipeline.

Each case's ``capabilities`` becomes a one-model metadata catalog, its ``overrides``
a models.yaml written to a temporary directory, and its ``intent`` an Intent.
"""

from __future__ import annotations

import dataclasses
import json
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

from compiler import AdjustmentRefused, Intent, PromptTooLongError, compile_request
from compiler.schema.contract import OutputContract
from compiler.schema.instructions import extract_shown_schema
from registry.declarations.files import load_models_file
from registry.metadata.catalog import Catalog
from registry.metadata.shapes import EndpointList, ModelInfo
from registry.resolve.resolver import Registry
from tests.conftest import SHARED

FAULTS = SHARED / "cases" / "faults.yaml"
pytestmark = pytest.mark.skipif(not FAULTS.is_file(), reason="../shared/cases absent")

CEILING = {"strict": "schema", "json": "json", "none": "prompt"}


def load_case(case_id: str) -> dict[str, Any]:
    """Return one case of faults.yaml by id."""
    cases = yaml.safe_load(FAULTS.read_text(encoding="utf-8"))
    return next(c for c in cases if c["id"] == case_id)


def overrides_to_yaml(model_id: str, overrides: dict[str, Any]) -> dict[str, Any]:
    """Translate a case's override block into a models.yaml entry of ours."""
    entry: dict[str, Any] = {}
    sampling = overrides.get("sampling", {})
    if "mutually_exclusive" in sampling:
        entry.setdefault("sampling", {})["mutually_exclusive"] = sampling["mutually_exclusive"]
    reasoning = dict(overrides.get("reasoning", {}))
    if reasoning:
        mapped = {
            k: reasoning[k]
            for k in ("style", "budget_min", "budget_max", "can_disable")
            if k in reasoning
        }
        if "effort_to_budget" in reasoning:
            mapped["effort_budgets"] = reasoning["effort_to_budget"]
        entry["reasoning"] = mapped
    when = overrides.get("when_reasoning_enabled", {})
    if when:
        rules: dict[str, Any] = {}
        for name, rule in when.items():
            if rule == "unsupported":
                rules.setdefault("unsupported", []).append(name)
            elif isinstance(rule, dict) and "fixed" in rule:
                rules.setdefault("fixed", {})[name] = rule["fixed"]
        entry.setdefault("sampling", {})["while_reasoning"] = rules
    return {"models": {model_id: entry}} if entry else {"models": {}}


def build(case: dict[str, Any], tmp_path: Path, **intent_changes: Any) -> tuple[Registry, Intent]:
    """Build a registry and an intent from a fault case."""
    inp = case["input"]
    caps = dict(inp["capabilities"])
    endpoints = caps.pop("endpoints", None)
    info = ModelInfo.model_validate({"id": inp["model_id"], **caps})
    catalog = Catalog(
        models={info.id: info},
        source=f"faults.yaml {case['id']}",
        fetched_at=str(case["date"]),
        origin="file",
    )
    models_yaml = tmp_path / "models.yaml"
    models_yaml.write_text(yaml.safe_dump(overrides_to_yaml(info.id, inp["overrides"])))
    endpoint_lists = {}
    if endpoints:
        endpoint_lists[info.id] = EndpointList.model_validate({
            "id": info.id,
            "endpoints": [
                {"provider_name": e["provider"], "tag": e["provider"].lower().replace(" ", "-"),
                 "supported_parameters": e["supported_parameters"]}
                for e in endpoints
            ],
        })
    registry = Registry(catalog=catalog, models_file=load_models_file(models_yaml),
                        endpoint_lists=endpoint_lists)
    intent_in = inp["intent"]
    contract = None
    if inp.get("output_model"):
        namespace: dict[str, Any] = {}
        exec(  # the case's own snippet, defining pydantic models
            "from typing import Any, Literal, Annotated\nfrom datetime import date, datetime\n"
            "from pydantic import BaseModel, Field\n" + textwrap.dedent(inp["output_model"]),
            namespace,
        )
        target = (
            namespace.get("Outcome")
            or [
                v for v in namespace.values() if isinstance(v, type) and v.__module__ == "builtins"
            ][-1]
        )
        contract = OutputContract.from_type(target)
    fields: dict[str, Any] = {
        "stage": case["id"],
        "contract": contract,
        "reasoning": intent_in.get("reasoning"),
        "output_tokens": intent_in.get("max_output_tokens"),
        "sampling": tuple((intent_in.get("sampling") or {}).items()),
        "ceiling": CEILING[intent_in.get("output", "none")],
        "estimated_prompt_tokens": intent_in.get("estimated_prompt_tokens"),
        "provider": intent_in.get("routing"),
        "max_tokens": intent_in.get("max_output_tokens")
        if intent_in.get("output_budget_is_hard_cap") else None,
    }
    fields.update(intent_changes)
    return registry, Intent(**fields)


def dotted(body: dict[str, Any], path: str) -> Any:
    """Return the value at a dotted path of the body, or a sentinel when absent."""
    node: Any = body
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            return MISSING
        node = node[part]
    return node


MISSING = object()


def test_c01_temperature_dropped_for_reasoning_model(tmp_path: Path) -> None:
    """C01: temperature is omitted (not listed) and the drop is reported."""
    case = load_case("C01")
    registry, intent = build(case, tmp_path)
    req = compile_request(intent, case["input"]["model_id"], registry=registry)
    for path, value in case["expected"]["request"]["must_include"].items():
        assert dotted(req.body, path) == value
    for path in case["expected"]["request"]["must_not_include"]:
        assert dotted(req.body, path) is MISSING
    dropped = req.report.by_kind("param.dropped")
    assert [(a.path, a.requested, a.applied) for a in dropped] == [("temperature", 0.0, None)]
    assert dropped[0].evidence is not None and "supported_parameters" in dropped[0].evidence.field
    listed = set(case["input"]["capabilities"]["supported_parameters"])
    assert {k for k in req.body if k not in ("model", "messages", "provider")} <= listed


def test_c03_mutually_exclusive_keeps_first_declared(tmp_path: Path) -> None:
    """C03: temperature and top_p both set -> temperature kept, top_p dropped and reported."""
    case = load_case("C03")
    registry, intent = build(case, tmp_path)
    req = compile_request(intent, case["input"]["model_id"], registry=registry)
    assert req.body["temperature"] == 0.3
    assert "top_p" not in req.body
    [adj] = req.report.by_kind("param.mutually_exclusive")
    assert (adj.path, adj.requested, adj.applied) == ("top_p", 0.9, None)
    assert adj.evidence is not None and adj.evidence.layer == "models.yaml"


def test_c03_variant_never_injects_unset_parameter(tmp_path: Path) -> None:
    """C03 variant: with only top_p set, top_p is sent and no temperature is added."""
    case = load_case("C03")
    registry, intent = build(case, tmp_path, sampling=(("top_p", 0.9),))
    req = compile_request(intent, case["input"]["model_id"], registry=registry)
    assert req.body["top_p"] == 0.9
    assert "temperature" not in req.body
    assert not [a for a in req.report.adjustments if a.kind.startswith("param.")]


def test_c07_minimal_maps_to_low(tmp_path: Path) -> None:
    """C07: minimal on a none/low/medium/high model maps to low (tie toward medium), reported."""
    case = load_case("C07")
    registry, intent = build(case, tmp_path)
    req = compile_request(intent, case["input"]["model_id"], registry=registry)
    assert req.body["reasoning"] == {"effort": "low"}
    [adj] = req.report.by_kind("reasoning.effort_mapped")
    assert (adj.requested, adj.applied) == ("minimal", "low")


def test_c05_temperature_fixed_while_thinking(tmp_path: Path) -> None:
    """C05: reasoning stays on and temperature 0 becomes 1 (the only value while thinking)."""
    case = load_case("C05")
    registry, intent = build(case, tmp_path)
    req = compile_request(intent, case["input"]["model_id"], registry=registry)
    assert "reasoning" in req.body
    assert req.body.get("temperature", "absent") in case["expected"]["request"][
        "acceptable_temperature"]
    [adj] = req.report.by_kind("param.fixed")
    assert (adj.path, adj.requested, adj.applied) == ("temperature", 0.0, 1)


def test_c09_none_on_mandatory_reasoning_uses_minimum_budget(tmp_path: Path) -> None:
    """C09: none on a model that cannot disable thinking sends the minimum budget, reported."""
    case = load_case("C09")
    registry, intent = build(case, tmp_path)
    req = compile_request(intent, case["input"]["model_id"], registry=registry)
    for path, bad in case["expected"]["request"]["must_not_include_values"].items():
        assert dotted(req.body, path) not in bad
    assert 128 <= req.body["reasoning"]["max_tokens"] <= 32768
    assert req.body["reasoning"]["max_tokens"] < req.body["max_tokens"]
    [adj] = req.report.by_kind("reasoning.cannot_disable")
    assert adj.requested == "none" and "128" in adj.applied


def test_c11_budget_capped_under_hard_max_tokens(tmp_path: Path) -> None:
    """C11: a 48000 budget under a hard cap of 4000 is clamped into [1024, 3999], reported."""
    case = load_case("C11")
    # max_output_tokens with output_budget_is_hard_cap is a cap on the whole completion,
    # not an answer budget (an answer budget of 4000 would leave reasoning no room at all)
    registry, intent = build(case, tmp_path, output_tokens=None)
    req = compile_request(intent, case["input"]["model_id"], registry=registry)
    assert req.body["max_tokens"] == 4000
    assert 1024 <= req.body["reasoning"]["max_tokens"] < 4000
    clamped = req.report.by_kind("reasoning.budget_clamped")
    assert clamped and clamped[-1].requested == 48000


def test_c11_variant_minimum_budget_cannot_fit(tmp_path: Path) -> None:
    """C11 variant: with a cap of 1000 even the 1024 minimum cannot fit, so reasoning is dropped."""
    case = load_case("C11")
    registry, intent = build(case, tmp_path, output_tokens=1000, max_tokens=1000)
    req = compile_request(intent, case["input"]["model_id"], registry=registry)
    assert "reasoning" not in req.body
    assert req.body["max_tokens"] == 1000
    [adj] = req.report.by_kind("reasoning.dropped")
    assert adj.applied is None


def test_c13_max_tokens_leaves_room_for_prompt(tmp_path: Path) -> None:
    """C13: without an answer budget, max_tokens is clamped so prompt + output fit the context."""
    case = load_case("C13")
    registry, intent = build(case, tmp_path)
    req = compile_request(intent, case["input"]["model_id"], registry=registry)
    assert req.body["max_tokens"] > 0
    assert req.body["max_tokens"] + 7884 <= 131072
    [adj] = req.report.by_kind("tokens.clamped")
    assert adj.requested == 131072


def test_c13_variant_prompt_alone_exceeds_context(tmp_path: Path) -> None:
    """C13 variant: a prompt larger than the context is refused before sending."""
    case = load_case("C13")
    registry, intent = build(case, tmp_path, estimated_prompt_tokens=140000)
    with pytest.raises(PromptTooLongError, match="context"):
        compile_request(intent, case["input"]["model_id"], registry=registry)


def test_c15_capabilities_come_from_pinned_endpoint(tmp_path: Path) -> None:
    """C15: pinned to OpenAI, whose endpoint lacks temperature, temperature is dropped."""
    case = load_case("C15")
    registry, intent = build(case, tmp_path)
    req = compile_request(intent, case["input"]["model_id"], registry=registry)
    assert req.body["provider"]["only"] == ["OpenAI"]
    assert req.body["provider"]["require_parameters"] is True
    assert "temperature" not in req.body
    [adj] = req.report.by_kind("param.dropped")
    assert adj.path == "temperature"
    assert adj.evidence is not None and adj.evidence.layer == "endpoints"
    openai = set(case["input"]["capabilities"]["endpoints"][0]["supported_parameters"])
    assert set(req.body) - {"model", "messages", "provider"} <= openai


def test_c17_strict_request_restricted_to_structured_output_endpoints(tmp_path: Path) -> None:
    """C17: a strict request is routed only to endpoints that list structured_outputs."""
    case = load_case("C17")
    registry, intent = build(case, tmp_path)
    req = compile_request(intent, case["input"]["model_id"], registry=registry)
    assert req.body["response_format"]["type"] == "json_schema"
    assert req.body["response_format"]["json_schema"]["strict"] is True
    assert req.body["provider"]["require_parameters"] is True
    assert req.body["provider"]["only"] == ["anthropic"]
    [adj] = req.report.by_kind("route.attempt")
    assert adj.applied == ["anthropic"]
    # the endpoints without structured outputs get their own attempt, not nothing
    assert req.attempts and all(a.rung != "schema" for a in req.attempts)
    single = compile_request(intent, case["input"]["model_id"], registry=registry,
                             coverage="first")
    [adj] = single.report.by_kind("routing.restricted")
    assert adj.applied == ["anthropic"]


def test_c17_variant_no_strict_endpoint_downgrades_or_refuses(tmp_path: Path) -> None:
    """C17 variant: with Anthropic ignored, strict output downgrades to JSON mode (or refuses)."""
    case = load_case("C17")
    registry, intent = build(case, tmp_path, provider={"ignore": ["Anthropic"]})
    req = compile_request(intent, case["input"]["model_id"], registry=registry)
    # The nearest rung below strict json_schema that Vertex supports: a forced tool call
    # (it lists tools and tool_choice), else JSON mode; both are reported downgrades.
    assert req.rung in ("tool", "json")
    assert "structured_outputs" not in str(req.body.get("response_format", {}))
    assert req.body.get("response_format", {}).get("type") != "json_schema"
    assert req.report.by_kind("output.downgraded")
    required = dataclasses.replace(intent, output_policy="required")
    with pytest.raises(AdjustmentRefused):
        compile_request(required, case["input"]["model_id"], registry=registry)


def test_c26_json_mode_shows_schema_and_sets_max_tokens(tmp_path: Path) -> None:
    """C26: JSON mode carries a JSON-only instruction with the validation schema, and max_tokens."""
    case = load_case("C26")
    registry, intent = build(case, tmp_path)
    req = compile_request(intent, case["input"]["model_id"], registry=registry)
    assert req.body["response_format"] == {"type": "json_object"}
    assert 0 < req.body["max_tokens"] <= 4096
    text = req.body["messages"][0]["content"]
    assert "JSON" in text
    assert req.projection is not None and req.projection.schema_json in text
    assert extract_shown_schema(text) == json.loads(req.projection.schema_json)
    assert req.parse_reply('{"steps": ["a", "b"]}').steps == ["a", "b"]

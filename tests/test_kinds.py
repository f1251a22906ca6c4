"""Every adjustment kind is produced by a scenario made to trigger it (table-driven).

Each row names a kind, a published model (OpenRouter shape), a models.yaml text, the
intent, and optionally endpoint data; compiling it must report that kind.
"""

from __future__ import annotations

import dataclasses
from datetime import date
from pathlib import Path
from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel, Field, WithJsonSchema

from compiler import Intent, OutputContract, compile_request
from compiler.kinds import KINDS
from compiler.tools.tool import Tool
from registry.declarations.files import load_models_file
from registry.metadata.catalog import Catalog
from registry.metadata.shapes import EndpointList, ModelInfo
from registry.resolve.resolver import Registry

MODEL = "acme/model-1"
ALL = ["max_tokens", "temperature", "top_p", "top_k", "seed", "stop", "reasoning",
       "include_reasoning", "response_format", "structured_outputs", "tools", "tool_choice"]


class Item(BaseModel):
    """A nested object."""

    label: str


class Record(BaseModel):
    """Optional fields, a default, a nested model used twice, a bounded string."""

    name: str = Field(max_length=20)
    note: str | None = None
    first: Item
    second: Item


class Dated(BaseModel):
    """A date (format the gemini dialect lacks) and a single-value Literal (const)."""

    day: date
    kind: Literal["event"]


class Wrapped(BaseModel):
    """A field whose schema is a one-entry allOf."""

    code: Annotated[str, WithJsonSchema({"allOf": [{"type": "string"}]})]


class Cat(BaseModel):
    """Branch of a discriminated union."""

    pet: Literal["cat"]
    lives: int


class Dog(BaseModel):
    """Branch of a discriminated union."""

    pet: Literal["dog"]
    good: bool


class Owner(BaseModel):
    """Holds a discriminated union (oneOf plus discriminator in pydantic's schema)."""

    animal: Annotated[Cat | Dog, Field(discriminator="pet")]


def scenario(
    tmp_path: Path,
    *,
    published: dict[str, Any] | None = None,
    models_yaml: str = "models: {}\n",
    endpoints: list[dict[str, Any]] | None = None,
    **intent: Any,
) -> tuple[Registry, Intent]:
    """Build a one-model registry and an intent."""
    data = {"id": MODEL, "context_length": 100000, "supported_parameters": ALL,
            "top_provider": {"max_completion_tokens": 8000}, **(published or {})}
    catalog = Catalog(models={MODEL: ModelInfo.model_validate(data)}, source="kinds.json",
                      fetched_at="2026-08-19", origin="file")
    (tmp_path / "models.yaml").write_text(models_yaml)
    lists = {} if endpoints is None else {
        MODEL: EndpointList.model_validate({"id": MODEL, "endpoints": endpoints})}
    registry = Registry(catalog=catalog, models_file=load_models_file(tmp_path / "models.yaml"),
                        endpoint_lists=lists)
    contract = intent.pop("contract", None)
    return registry, Intent(stage="t", contract=None if contract is None
                            else OutputContract.from_type(contract), **intent)


NO_STRICT = [p for p in ALL if p != "structured_outputs"]
LOOKUP = Tool.from_model(Item, name="lookup")
BUDGET = "models:\n  acme/*:\n    reasoning: {style: budget, budget_min: 1024, budget_max: 4000}\n"

ROWS: dict[str, dict[str, Any]] = {
    "output.downgraded": {"published": {"supported_parameters": NO_STRICT}, "contract": Item},
    "schema.made_required_nullable": {"contract": Record},
    "schema.closed_object": {"contract": Item},
    "schema.keyword_dropped": {"contract": Record, "models_yaml":
                               "models:\n  acme/*:\n    structured_output: {dialect: anthropic}\n"},
    "schema.format_dropped": {"contract": Dated, "models_yaml":
                              "models:\n  acme/*:\n    structured_output: {dialect: gemini}\n"},
    "schema.default_stripped": {"contract": Record},
    "schema.refs_inlined": {"contract": Record, "models_yaml":
                            "models:\n  acme/*:\n    structured_output: {dialect: gemini}\n"},
    "schema.root_wrapped": {"contract": list[Item]},
    "schema.oneof_to_anyof": {"contract": Owner},
    "schema.discriminator_dropped": {"contract": Owner},
    "schema.allof_merged": {"contract": Wrapped},
    "schema.const_to_enum": {"contract": Dated, "models_yaml":
                             "models:\n  acme/*:\n    structured_output: {dialect: gemini}\n"},
    "reasoning.unsupported": {"published": {"supported_parameters": ["max_tokens"]},
                              "reasoning": "high"},
    "reasoning.cannot_disable": {"published": {"reasoning": {"mandatory": True}},
                                 "reasoning": "none"},
    "reasoning.effort_mapped": {"published": {"reasoning": {
        "mandatory": False, "supported_efforts": ["high", "low"]}}, "reasoning": "medium"},
    "reasoning.budget_clamped": {"models_yaml": BUDGET, "reasoning": "max", "output_tokens": 500},
    "reasoning.dropped": {"models_yaml": BUDGET, "reasoning": "low", "output_tokens": 800,
                          "max_tokens": 900},
    "reasoning.effort_ignored": {"models_yaml":
                                 "models:\n  acme/*:\n    reasoning: {style: toggle}\n",
                                 "reasoning": "high"},
    "tokens.clamped": {"output_tokens": 50000},
    "tokens.filled": {"published": {"top_provider": {}}},
    "tokens.no_length_param": {"published": {"supported_parameters": ["temperature"]},
                               "output_tokens": 100},
    "param.dropped": {"published": {"supported_parameters": ["max_tokens"]},
                      "sampling": (("temperature", 0.5),)},
    "param.refused_while_reasoning": {
        "models_yaml": "models:\n  acme/*:\n    sampling:\n      while_reasoning:\n"
                       "        unsupported: [temperature]\n",
        "reasoning": "high", "sampling": (("temperature", 0.5),)},
    "param.fixed": {"models_yaml": "models:\n  acme/*:\n    sampling:\n      fixed: {top_k: 40}\n",
                    "sampling": (("top_k", 10),)},
    "param.clamped": {"sampling": (("temperature", 3.5),)},
    "param.mutually_exclusive": {
        "models_yaml": "models:\n  acme/*:\n    sampling:\n"
                       "      mutually_exclusive: [[temperature, top_p]]\n",
        "sampling": (("top_p", 0.9), ("temperature", 0.2))},
    "routing.require_parameters": {"output_tokens": 100},
    "routing.param_dropped": {
        "endpoints": [{"tag": "a", "supported_parameters": ["max_tokens", "top_p"]},
                      {"tag": "b", "supported_parameters": ["max_tokens", "temperature"]}],
        "sampling": (("temperature", 0.5), ("top_p", 0.9)), "output_tokens": 100,
        "coverage": "first"},
    "routing.restricted": {
        "endpoints": [{"tag": "a", "supported_parameters": ALL},
                      {"tag": "b", "supported_parameters": NO_STRICT}],
        "contract": Item, "coverage": "first"},
    "limits.lowered": {
        "models_yaml": "models:\n  acme/*:\n    limits: {max_completion_tokens: 500}\n",
        "endpoints": [{"tag": "a", "supported_parameters": ALL, "max_completion_tokens": 4000}],
        "output_tokens": 100},
    "limits.capped": {
        "models_yaml": "models:\n  acme/*:\n    limits: {max_completion_tokens: 9000}\n",
        "endpoints": [{"tag": "a", "supported_parameters": ALL, "max_completion_tokens": 4000}],
        "output_tokens": 100},
    "route.attempt": {
        "endpoints": [{"tag": "a", "supported_parameters": ALL},
                      {"tag": "b", "supported_parameters": NO_STRICT}],
        "contract": Item},
    "route.attempt_differs": {
        "endpoints": [{"tag": "a", "supported_parameters": ALL},
                      {"tag": "b", "supported_parameters": NO_STRICT}],
        "contract": Item},
    "route.parameters_assumed": {"endpoints": [{"tag": "a"}], "output_tokens": 100},
    "route.tag_ambiguous": {
        "endpoints": [{"tag": "a", "supported_parameters": ALL},
                      {"tag": "a", "supported_parameters": NO_STRICT}],
        "contract": Item},
    "route.slug_derived": {
        "endpoints": [{"provider_name": "Acme One", "supported_parameters": ALL},
                      {"provider_name": "Beta", "supported_parameters": NO_STRICT}],
        "contract": Item},
    "reasoning.effort_lowered": {"reasoning": "high", "output_tokens": 1000, "max_tokens": 4000,
                                 "models_yaml": "models:\n  '*':\n    reasoning:\n"
                                 "      effort_budgets: {low: 1000, medium: 2000, high: 8000}\n"},
    "tokens.answer_short": {"output_tokens": 1000, "min_output_tokens": 900, "max_tokens": 500},
    "output.not_strict": {"published": {"supported_parameters": NO_STRICT},
                          "contract": Item},
    "output.downgraded_after_error": {"contract": Item, "_after_error": (400, {"error": {
        "code": 400, "message": "Provider returned error", "metadata": {
            "raw": "response_format json_schema is not supported", "provider_name": "Acme"}}})},
    "route.degraded_kept": {
        "endpoints": [{"tag": "a", "supported_parameters": ALL, "status": -2}],
        "output_tokens": 100},
    "tools.dropped": {"published": {"supported_parameters": ["max_tokens"]},
                      "tools": (LOOKUP,)},
    "tools.choice_mapped": {
        "endpoints": [{"tag": "a", "supported_parameters": ALL, "supports_tool_choice": {
            "auto": True, "none": True, "required": False, "function": False}}],
        "tools": (LOOKUP,), "tool_choice": "required"},
    "tools.not_strict": {"published": {"supported_parameters": NO_STRICT}, "tools": (LOOKUP,)},
    "messages.breakpoint_dropped": {
        "models_yaml": "models:\n  acme/*:\n    prompt_cache: {max_breakpoints: 1}\n",
        "messages": [{"role": "user", "content": [
            {"type": "text", "text": "a", "cache_control": {"type": "ephemeral"}},
            {"type": "text", "text": "b", "cache_control": {"type": "ephemeral"}}]}]},
    "messages.part_dropped": {
        "published": {"architecture": {"input_modalities": ["text"]}},
        "messages": [{"role": "user", "content": [
            {"type": "text", "text": "what is this?"},
            {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}]}]},
    "model.alias": {"published": {"alias_target": {"slug": "acme/model-5", "name": "Model 5"}},
                    "output_tokens": 100},
}


def test_every_kind_has_a_row() -> None:
    """The table covers exactly the kinds of the vocabulary."""
    assert set(ROWS) == set(KINDS)


@pytest.mark.parametrize("kind", sorted(ROWS))
def test_kind_is_produced(kind: str, tmp_path: Path) -> None:
    """Compiling the kind's scenario reports that kind, with a reason."""
    row = dict(ROWS[kind])
    after_error = row.pop("_after_error", None)
    messages = row.pop("messages", ())
    registry, intent = scenario(tmp_path, **row)
    req = compile_request(intent, MODEL, messages, registry=registry)
    if after_error is not None:  # produced by the reply loop, not by a compile
        retry = req.after_error(*after_error).retry
        assert retry is not None
        req = retry
    found = [a for attempt in req.plan for a in attempt.report.by_kind(kind)]
    assert found, [a.kind for attempt in req.plan for a in attempt.report.adjustments]
    assert all(a.reason for a in found)


@pytest.mark.parametrize("kind", ["param.dropped", "reasoning.effort_mapped", "output.downgraded"])
def test_refuse_policy_raises_with_report(kind: str, tmp_path: Path) -> None:
    """A stage policy of refuse for a kind raises AdjustmentRefused carrying the report."""
    from compiler import AdjustmentRefused

    registry, intent = scenario(tmp_path, **ROWS[kind])
    intent = dataclasses.replace(intent, policy={kind.split(".")[0] + ".*": "refuse"})
    with pytest.raises(AdjustmentRefused) as info:
        compile_request(intent, MODEL, registry=registry)
    assert kind in info.value.kinds and info.value.report.by_kind(kind)


def test_warn_policy_issues_adjustment_warning(tmp_path: Path) -> None:
    """A stage policy of warn issues an AdjustmentWarning and still returns the request."""
    from compiler import AdjustmentWarning

    registry, intent = scenario(tmp_path, **ROWS["param.dropped"])
    intent = dataclasses.replace(intent, policy={"param.dropped": "warn"})
    with pytest.warns(AdjustmentWarning, match="param.dropped"):
        req = compile_request(intent, MODEL, registry=registry)
    assert "temperature" not in req.body


def test_same_inputs_give_identical_body_and_report(tmp_path: Path) -> None:
    """Determinism: compiling twice gives byte-identical JSON for body and report."""
    import json

    registry, intent = scenario(tmp_path, **ROWS["schema.made_required_nullable"])
    first = compile_request(intent, MODEL, registry=registry)
    second = compile_request(intent, MODEL, registry=registry)
    dump = lambda r: json.dumps([r.body, r.report.to_dict()], sort_keys=True)  # noqa: E731
    assert dump(first) == dump(second)

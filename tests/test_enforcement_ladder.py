"""The enforcement ladder: strict schema > forced tool call > JSON mode > prompt only."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from compiler import Intent, OutputContract, compile_request
from compiler.schema.instructions import extract_shown_schema
from registry.declarations.files import load_models_file
from registry.metadata.catalog import Catalog
from registry.metadata.shapes import EndpointList, ModelInfo
from registry.resolve.resolver import Registry

MODEL = "acme/tooly"
TOOLS = ["max_tokens", "tools", "tool_choice", "response_format", "reasoning"]


class Verdict(BaseModel):
    """A tiny contract."""

    ok: bool
    note: str | None = None


def registry(
    tmp_path: Path,
    params: list[str],
    models_yaml: str = "models: {}\n",
    endpoints: list[dict[str, Any]] | None = None,
) -> Registry:
    """One published model with the given supported_parameters."""
    info = ModelInfo.model_validate(
        {"id": MODEL, "supported_parameters": params, "context_length": 32000}
    )
    (tmp_path / "models.yaml").write_text(models_yaml)
    lists = (
        {}
        if endpoints is None
        else {MODEL: EndpointList.model_validate({"id": MODEL, "endpoints": endpoints})}
    )
    return Registry(
        catalog=Catalog(models={MODEL: info}, source="t.json", fetched_at=None, origin="file"),
        models_file=load_models_file(tmp_path / "models.yaml"),
        endpoint_lists=lists,
    )


def intent(**changes: Any) -> Intent:
    """A stage with the Verdict contract."""
    return Intent(
        stage="t", contract=OutputContract.from_type(Verdict), output_tokens=100, **changes
    )


def test_tool_rung_when_structured_outputs_missing(tmp_path: Path) -> None:
    """Without structured_outputs but with tools, a forced call carries the shown schema,
    not strict and not claimed as enforced (no evidence that the provider enforces it)."""
    req = compile_request(intent(), MODEL, registry=registry(tmp_path, TOOLS))
    assert req.rung == "tool"
    function = req.body["tools"][0]["function"]
    assert req.body["tool_choice"] == {"type": "function", "function": {"name": function["name"]}}
    assert extract_shown_schema(req.body["messages"][0]["content"]) == function["parameters"]
    assert "strict" not in function
    assert req.enforced_schema is None and req.report.enforced_sha256 is None
    assert req.report.shown_sha256 is not None
    assert req.report.by_kind("output.not_strict")
    assert "response_format" not in req.body
    assert req.parse_reply(json.dumps({"ok": True, "note": None})) == Verdict(ok=True)
    [down] = req.report.by_kind("output.downgraded")
    assert (down.requested, down.applied) == ("schema", "tool")


def test_forced_tool_skipped_while_reasoning_when_forbidden(tmp_path: Path) -> None:
    """A provider that forbids forced tools while thinking gets JSON mode when reasoning is on."""
    reg = registry(
        tmp_path,
        TOOLS,
        "models:\n  '*':\n    structured_output:\n      forced_tool_with_reasoning: false\n",
    )
    assert compile_request(intent(reasoning="high"), MODEL, registry=reg).rung == "json"
    assert compile_request(intent(reasoning="none"), MODEL, registry=reg).rung == "tool"


@pytest.mark.parametrize(
    ("ceiling", "rung"), [("schema", "tool"), ("json", "json"), ("prompt", "prompt")]
)
def test_ceiling_bounds_the_ladder(tmp_path: Path, ceiling: str, rung: str) -> None:
    """The ceiling is the strongest rung allowed: a json ceiling never uses a tool call."""
    req = compile_request(intent(ceiling=ceiling), MODEL, registry=registry(tmp_path, TOOLS))
    assert req.rung == rung


def test_endpoints_that_cannot_force_a_function_are_excluded(tmp_path: Path) -> None:
    """Endpoints whose supports_tool_choice forbids naming a function are routed around."""
    endpoints = [
        {
            "tag": "good",
            "supported_parameters": TOOLS,
            "supports_tool_choice": {
                "auto": True,
                "none": True,
                "required": True,
                "function": True,
            },
        },
        {
            "tag": "autoonly",
            "supported_parameters": TOOLS,
            "supports_tool_choice": {
                "auto": True,
                "none": True,
                "required": False,
                "function": False,
            },
        },
    ]
    req = compile_request(intent(), MODEL, registry=registry(tmp_path, TOOLS, endpoints=endpoints))
    assert req.rung == "tool"
    assert req.body["provider"]["only"] == ["good"]
    assert req.body["provider"]["allow_fallbacks"] is False
    assert req.report.by_kind("route.attempt")
    [later] = req.attempts  # the endpoint that cannot force a function is not left out
    assert later.endpoints == ("autoonly",) and later.rung == "json"
    assert "tools" not in later.body
    first = compile_request(intent(), MODEL, coverage="first",
                            registry=registry(tmp_path, TOOLS, endpoints=endpoints))
    assert first.body["provider"]["only"] == ["good"] and not first.attempts
    assert first.report.by_kind("routing.restricted")
    only_auto = [endpoints[1]]
    req = compile_request(intent(), MODEL, registry=registry(tmp_path, TOOLS, endpoints=only_auto))
    assert req.rung == "json"
    assert "tools" not in req.body


def test_strict_tool_only_with_structured_outputs(tmp_path: Path) -> None:
    """A forced call is strict, and enforced, only where structured_outputs is listed."""
    # no response_format, so no json_schema rung; structured_outputs is the evidence
    params = [p for p in TOOLS if p != "response_format"] + ["structured_outputs"]
    req = compile_request(intent(), MODEL, registry=registry(tmp_path, params))
    assert req.rung == "tool"
    function = req.body["tools"][0]["function"]
    assert function["strict"] is True
    assert req.enforced_schema == function["parameters"]
    assert req.report.enforced_sha256 == req.report.shown_sha256 is not None
    assert not req.report.by_kind("output.not_strict")


def test_compatibility_policy_is_json_mode_whatever_the_model_supports(tmp_path: Path) -> None:
    """output.policy compatibility: JSON mode with the schema shown, even where strict works."""
    params = [*TOOLS, "structured_outputs"]
    strict = compile_request(intent(), MODEL, registry=registry(tmp_path, params))
    assert strict.rung == "schema"
    compat = Intent(stage="t", contract=intent().contract, output_policy="compatibility")
    req = compile_request(compat, MODEL, registry=registry(tmp_path, params))
    assert req.rung == "json" and req.body["response_format"] == {"type": "json_object"}
    assert not req.report.by_kind("output.downgraded")
    none = compile_request(compat, MODEL, registry=registry(tmp_path, ["max_tokens"]))
    assert none.rung == "prompt" and none.report.by_kind("output.downgraded")

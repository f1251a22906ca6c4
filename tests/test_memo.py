"""Memoised compilations give exactly what a fresh compilation gives, for any messages."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from compiler import Intent, compile_request
from registry.declarations.files import load_models_file
from registry.metadata.catalog import Catalog
from registry.metadata.shapes import ModelInfo
from registry.resolve.resolver import Registry
from tests.conftest import ROOT


def fresh_registry() -> Registry:
    """A new registry of the example configuration (no memo yet)."""
    return Registry.load(
        models=ROOT / "models.yaml",
        stages=ROOT / "stages.yaml",
        metadata=ROOT / "registry" / "data" / "seed-models-2026-08-19.json",
    )


def dump(req: object) -> str:
    """Body and report of a compiled request as canonical JSON."""
    return json.dumps([req.body, req.report.to_dict()], sort_keys=True)  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "stage", ["extract_invoice", "classify_ticket", "deep_analysis", "draft_reply"]
)
@pytest.mark.parametrize(
    "model", ["openai/gpt-4o-mini", "anthropic/claude-sonnet-4.5", "google/gemini-2.5-pro"]
)
def test_repeat_with_other_messages_equals_fresh(stage: str, model: str) -> None:
    """A second call with different messages equals a fresh compile with those messages."""
    registry = fresh_registry()
    compile_request(stage, model, [{"role": "user", "content": "first " * 50}], registry=registry)
    second = [{"role": "user", "content": "second message " * 20}]
    memoised = compile_request(stage, model, second, registry=registry)
    assert dump(memoised) == dump(compile_request(stage, model, second, registry=fresh_registry()))
    assert memoised.body["messages"][-1] == second[0]


def test_binding_context_is_recompiled(tmp_path: Path) -> None:
    """When the prompt size decides max_tokens, each call is compiled for its own prompt."""
    info = ModelInfo.model_validate(
        {"id": "acme/small", "context_length": 4000, "supported_parameters": ["max_tokens"]}
    )
    (tmp_path / "models.yaml").write_text("models: {}\n")
    registry = Registry(
        catalog=Catalog(models={info.id: info}, source="t", fetched_at=None, origin="file"),
        models_file=load_models_file(tmp_path / "models.yaml"),
    )
    intent = Intent(stage="t", output_tokens=3000)
    short = compile_request(
        intent, "acme/small", [{"role": "user", "content": "x" * 30}], registry=registry
    )
    long = compile_request(
        intent, "acme/small", [{"role": "user", "content": "x" * 6000}], registry=registry
    )
    assert short.body["max_tokens"] == 3000
    assert long.body["max_tokens"] < 3000 and long.report.by_kind("tokens.clamped")


def test_mutating_a_returned_body_does_not_leak(tmp_path: Path) -> None:
    """Changing a returned body's top-level values does not change the next result."""
    registry = fresh_registry()
    first = compile_request("classify_ticket", "openai/gpt-4o-mini", registry=registry)
    first.body["provider"]["require_parameters"] = False
    first.body["max_tokens"] = 1
    again = compile_request("classify_ticket", "openai/gpt-4o-mini", registry=registry)
    assert again.body["provider"]["require_parameters"] is True
    assert again.body["max_tokens"] == 200

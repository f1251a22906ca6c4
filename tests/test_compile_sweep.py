"""Every example stage compiled for every model of a real OpenRouter snapshot.

One process, one registry: the sweep checks the invariants the compiler promises
for each body, whatever the model.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from compiler import compile_request
from compiler.errors import PromptTooLongError
from compiler.schema.instructions import extract_shown_schema
from registry.errors import UnsupportedModalityError
from registry.metadata.catalog import load_catalog
from registry.resolve.resolver import Registry
from tests.conftest import OPENROUTER, ROOT

SNAPSHOT = OPENROUTER / "models-2026-08-19.json"
pytestmark = pytest.mark.skipif(not SNAPSHOT.is_file(), reason="../shared snapshot absent")

ENVELOPE = {"model", "messages", "provider"}
MESSAGES = [{"role": "user", "content": "Here is the document to work on: ..."}]


def check_body(body: dict[str, Any], published: dict[str, Any], report: Any) -> None:
    """Assert the invariants of one compiled body against the model's published metadata."""
    listed = set(published.get("supported_parameters") or ())
    for key in body:
        if key not in ENVELOPE:
            assert key in listed, f"{key} not in supported_parameters"
    fmt = body.get("response_format")
    if fmt is not None and fmt["type"] == "json_schema":
        assert "structured_outputs" in listed
        shown = extract_shown_schema(body["messages"][0]["content"], None)
        assert shown == fmt["json_schema"]["schema"]
        assert fmt["json_schema"]["strict"] is True
    if "tools" in body:
        shown = extract_shown_schema(body["messages"][0]["content"], None)
        assert body["tool_choice"]["function"]["name"] == body["tools"][0]["function"]["name"]
        assert shown == body["tools"][0]["function"]["parameters"]
        assert report.rung == "tool"
    length_keys = [k for k in ("max_tokens", "max_completion_tokens") if k in body]
    assert len(length_keys) <= 1
    if "max_tokens" in listed:
        expected_key: str | None = "max_tokens"
    elif "max_completion_tokens" in listed:
        expected_key = "max_completion_tokens"
    else:
        expected_key = None
    if expected_key is None:
        assert not length_keys
        assert report.by_kind("tokens.no_length_param")
    else:
        assert length_keys == [expected_key]
        total = body[expected_key]
        top = published.get("top_provider") or {}
        if top.get("max_completion_tokens"):
            assert total <= top["max_completion_tokens"]
        if published.get("context_length"):
            assert total < published["context_length"]
        assert total >= 1
        reasoning = body.get("reasoning", {})
        if "max_tokens" in reasoning:
            assert 0 < reasoning["max_tokens"] < total
    if set(body) - ENVELOPE:
        assert body["provider"]["require_parameters"] is True


def test_every_example_stage_for_every_model() -> None:
    """All 4 example stages x 414 models compile, and each body honours the invariants."""
    registry = Registry.load(
        metadata=SNAPSHOT, models=ROOT / "models.yaml", stages=ROOT / "stages.yaml"
    )
    published = {m["id"]: m for m in json.loads(SNAPSHOT.read_text())["data"]}
    assert len(published) == 414
    compiled = 0
    for stage in registry.stage_names():
        for model_id in published:
            try:
                req = compile_request(stage, model_id, MESSAGES, registry=registry)
            except PromptTooLongError:
                continue
            check_body(req.body, published[model_id], req.report)
            compiled += 1
    assert compiled >= 4 * 400


SNAPSHOTS = sorted(OPENROUTER.glob("models-*.json")) if OPENROUTER.is_dir() else []


@pytest.mark.parametrize("snapshot", SNAPSHOTS, ids=[p.name for p in SNAPSHOTS])
def test_invariants_hold_for_every_snapshot(snapshot: Path) -> None:
    """Every model of every shared snapshot x every example stage honours the invariants."""
    registry = Registry.load(metadata=snapshot, models=ROOT / "models.yaml",
                             stages=ROOT / "stages.yaml")
    published = {m["id"]: m for m in json.loads(snapshot.read_text())["data"]}
    for stage in registry.stage_names():
        for model_id in published:
            try:
                req = compile_request(stage, model_id, MESSAGES, registry=registry)
            except PromptTooLongError as exc:
                assert exc.prompt_tokens >= exc.context_length == published[model_id][
                    "context_length"]
                continue
            except UnsupportedModalityError as exc:  # embeddings, speech, image-only
                assert "text" not in published[model_id]["architecture"]["output_modalities"]
                assert exc.model == model_id
                continue
            listed = published[model_id].get("supported_parameters")
            if listed is None:  # 2025-04: nothing published, only the built-in default
                assert set(req.body) - ENVELOPE <= {"max_tokens"}
                continue
            check_body(req.body, published[model_id], req.report)
            model = registry.resolve(model_id)
            budget = req.body.get("reasoning", {}).get("max_tokens")
            if budget is not None and model.reasoning.budget_min is not None:
                assert budget >= model.reasoning.budget_min


def test_effort_always_accepted_when_published() -> None:
    """A sent reasoning.effort is one of the model's published supported_efforts."""
    registry = Registry.load(
        metadata=SNAPSHOT, models=ROOT / "models.yaml", stages=ROOT / "stages.yaml"
    )
    catalog = load_catalog(SNAPSHOT)
    for stage in registry.stage_names():
        for model_id in catalog.ids():
            info = catalog.require(model_id)
            body = compile_request(stage, model_id, registry=registry).body
            effort = body.get("reasoning", {}).get("effort")
            efforts = info.reasoning.supported_efforts if info.reasoning else None
            if effort is not None and efforts is not None:
                assert effort in efforts, (stage, model_id, effort, efforts)

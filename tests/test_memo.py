"""Memoised compilations give exactly what a fresh compilation gives, for any messages."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from compiler import Intent, compile_request
from compiler.compiled import CompiledRequest
from compiler.request import memo_table
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


def _scribble(value: Any) -> int:
    """Edit every plain dict and list inside ``value`` in place; return how many."""
    edited = 0
    if type(value) is dict:
        for item in list(value.values()):
            edited += _scribble(item)
        value["scribbled"] = True
        edited += 1
    elif type(value) is list:
        for item in list(value):
            edited += _scribble(item)
        value.append("scribbled")
        edited += 1
    return edited


def plan_dump(req: CompiledRequest) -> str:
    """Every attempt's body, report, instructions and endpoints, as canonical JSON."""
    return json.dumps([[a.body, a.report.to_dict(), a.instructions, list(a.endpoints)]
                       for a in req.plan], sort_keys=True)


@pytest.mark.parametrize("model", ["meta-llama/llama-3.3-70b-instruct",
                                   "anthropic/claude-sonnet-4.5", "openai/gpt-4o-mini"])
def test_editing_every_part_of_a_result_does_not_reach_the_memo(model: str) -> None:
    """A route plan (bundled seed endpoints): the caller edits every dict and list of the
    first result and of a replay, every attempt; the next replay still equals a fresh
    compile. The schemas inside are read-only instead (a copy.deepcopy is mutable)."""
    registry = Registry.load(models=ROOT / "models.yaml", stages=ROOT / "stages.yaml")
    first = compile_request("extract_invoice", model, [{"role": "user", "content": "a"}],
                            registry=registry)
    replayed = compile_request("extract_invoice", model, [{"role": "user", "content": "b"}],
                               registry=registry)
    assert len(replayed.plan) > 1 and memo_table(registry)
    for req in (first, replayed):
        for attempt in req.plan:
            assert _scribble(attempt.body) > 5
        if req.instructions is not None and type(req.instructions) is dict:
            req.instructions["content"] = "scribbled"
    schema = replayed.body["response_format"]["json_schema"]["schema"]
    with pytest.raises(TypeError, match="read-only"):
        schema["properties"] = {}
    with pytest.raises(TypeError, match="read-only"):
        schema["required"].append("x")
    copied = copy.deepcopy(replayed.body)
    copied["response_format"]["json_schema"]["schema"]["required"].append("x")
    last = [{"role": "user", "content": "c"}]
    again = compile_request("extract_invoice", model, last, registry=registry)
    fresh = Registry.load(models=ROOT / "models.yaml", stages=ROOT / "stages.yaml")
    assert plan_dump(again) == plan_dump(compile_request("extract_invoice", model, last,
                                                         registry=fresh))


def test_each_attempt_carries_the_same_later_attempts() -> None:
    """Attempt i's attempts are attempts i+1... of the plan, the very objects, in a fresh
    compile and in a replay alike."""
    registry = Registry.load(models=ROOT / "models.yaml", stages=ROOT / "stages.yaml")
    for text in ("one", "two"):
        req = compile_request("deep_analysis", "meta-llama/llama-3.3-70b-instruct",
                              [{"role": "user", "content": text}], registry=registry)
        assert len(req.plan) > 2
        for index, attempt in enumerate(req.plan):
            assert len(attempt.attempts) == len(req.plan) - index - 1
            assert all(a is b for a, b in zip(attempt.attempts, req.plan[index + 1:],
                                              strict=True))
            assert attempt.body["messages"][-1]["content"] == text


def test_a_registry_that_compiled_is_freed_when_dropped() -> None:
    """The memo (whose requests reach their registry through ``origin``) is kept on the
    registry, so a registry no one holds goes with its memo; a request still held keeps
    its registry alive and can still price a reply."""
    import gc
    import weakref

    registry = fresh_registry()
    kept = compile_request("classify_ticket", "openai/gpt-4o-mini", registry=registry)
    compile_request("extract_invoice", "openai/gpt-4o-mini", registry=registry)
    assert memo_table(registry)
    gone = weakref.ref(registry)
    del registry
    gc.collect()
    assert gone() is not None  # held by ``kept``'s origin
    assert kept.origin is not None and kept.origin.prices().model.prices
    del kept
    gc.collect()
    assert gone() is None


def test_a_copied_registry_has_a_memo_of_its_own() -> None:
    """``copy.copy`` of a registry shares its attributes; the memo is not shared."""
    registry = fresh_registry()
    compile_request("classify_ticket", "openai/gpt-4o-mini", registry=registry)
    clone = copy.copy(registry)
    assert memo_table(clone) == {} and memo_table(registry)


def test_evolve_is_dataclasses_replace() -> None:
    """compiler.memo.evolver's evolve gives what dataclasses.replace gives, field by field,
    and refuses a name that is no field, as replace does."""
    import dataclasses

    from compiler.memo import evolver
    from compiler.report import AdjustmentReport

    registry = fresh_registry()
    request = compile_request("extract_invoice", "openai/gpt-4o-mini", registry=registry)
    evolve = evolver(CompiledRequest)
    changes: dict[str, Any] = {"attempts": (request,), "timeout_seconds": 9.5, "retries": 3,
                               "origin": None}
    for made in (evolve(request, **changes), evolve(request)):
        want = dataclasses.replace(request, **changes) if made.retries == 3 else request
        for field in dataclasses.fields(CompiledRequest):
            assert getattr(made, field.name) is getattr(want, field.name), field.name
        assert type(made) is CompiledRequest and made is not request
    report = evolver(AdjustmentReport)(request.report, notes=("x",))
    assert report == dataclasses.replace(request.report, notes=("x",))
    with pytest.raises(TypeError):
        evolve(request, nope=1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        report.notes = ()  # type: ignore[misc]


def test_an_audit_and_a_lock_keep_no_compilation_in_the_memo() -> None:
    """Bulk compiles (``compile_once``) meet each pair once: none is kept for reuse, and
    each result is the one ``compile_request`` gives; a pair already memoised is read."""
    from compiler.artifacts.audit import audit
    from compiler.artifacts.lock import build_lock
    from compiler.request import compile_once

    registry = Registry.load(models=ROOT / "models.yaml", stages=ROOT / "stages.yaml")
    rows = audit(registry)
    build_lock(registry)
    assert rows and memo_table(registry) == {}
    fresh = Registry.load(models=ROOT / "models.yaml", stages=ROOT / "stages.yaml")
    for stage in fresh.stage_names():
        for model in fresh.stage(stage).models:
            once = compile_once(stage, model, registry=registry)
            assert once.body == compile_request(stage, model, registry=fresh).body
    assert memo_table(registry) == {}
    memoised = compile_request("classify_ticket", "openai/gpt-4o-mini", registry=registry)
    assert len(memo_table(registry)) == 1
    again = compile_once("classify_ticket", "openai/gpt-4o-mini", registry=registry)
    assert again.body == memoised.body and again is not memoised


def test_a_compiled_request_deep_copies_and_converts_to_a_dict() -> None:
    """``copy.deepcopy`` and ``dataclasses.asdict`` of a request work, and the copy
    shares where it came from (it does not copy the registry)."""
    import dataclasses

    registry = fresh_registry()
    compiled = compile_request("draft_reply", "openai/gpt-4o-mini",
                               [{"role": "user", "content": "hi"}], registry=registry)
    copied = copy.deepcopy(compiled)
    assert copied.body == compiled.body and copied.origin is not None
    assert copied.origin.prices() is compiled.origin.prices()
    assert dataclasses.asdict(compiled)["body"] == compiled.body


def test_a_registry_with_nothing_memoised_is_freed_without_the_collector() -> None:
    """An audit keeps nothing in the memo, and the memo table's owner is a weak
    reference: dropping the registry frees it by reference counting alone."""
    import gc
    import weakref

    from compiler.artifacts.audit import audit

    registry = fresh_registry()
    audit(registry)
    gone = weakref.ref(registry)
    gc.disable()
    try:
        del registry
        assert gone() is None
    finally:
        gc.enable()


def test_stages_declaring_equal_prices_in_other_digits_keep_their_own(tmp_path: Path) -> None:
    """Price books are shared by stages that declare the same prices digit for digit:
    ``0.000003`` and ``0.0000030`` are equal numbers, but each stage's costs keep the
    digits it declared, as when every stage had a book of its own."""
    from compiler.artifacts.audit import audit

    stages = tmp_path / "stages.yaml"
    stages.write_text("stages:\n" + "".join(
        f"  s{n}:\n    reasoning: none\n    output_tokens: 1000\n    overrides:\n"
        f"      openai/gpt-4o-mini: {{pricing: {{prompt: '{price}'}}}}\n"
        "    models: [openai/gpt-4o-mini]\n"
        for n, price in ((1, "0.000003"), (2, "0.0000030"), (3, "0.000003"))))
    registry = Registry.load(metadata=ROOT / "registry" / "data" / "seed-models-2026-08-19.json",
                             stages=stages)
    prices = [str(row.cost.prompt_price) for row in audit(registry)]  # type: ignore[union-attr]
    assert prices == ["0.000003", "0.0000030", "0.000003"]

"""Each fault's whole kind, over many models and many values (not one example each).

Where the rule comes from real metadata, the rows are every model of the 2026-08-19
snapshot; elsewhere they are grids of values around each boundary.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from compiler import Intent, PromptTooLongError, compile_request
from compiler.passes.reasoning import nearest_effort
from registry.declarations.files import load_models_file
from registry.metadata.catalog import Catalog
from registry.metadata.shapes import ModelInfo
from registry.resolve.capabilities import EFFORT_RANK
from registry.resolve.resolver import Registry
from tests.conftest import OPENROUTER

SNAPSHOT = OPENROUTER / "models-2026-08-19.json"
EFFORTS = list(EFFORT_RANK)
MODEL = "acme/m"


def one_model(tmp_path: Path, data: dict[str, Any], models_yaml: str = "models: {}\n") -> Registry:
    """Return a registry holding one published model and the given models.yaml."""
    info = ModelInfo.model_validate({"id": MODEL, **data})
    (tmp_path / "models.yaml").write_text(models_yaml)
    return Registry(catalog=Catalog(models={MODEL: info}, source="t.json", fetched_at=None,
                                    origin="file"),
                    models_file=load_models_file(tmp_path / "models.yaml"))


@pytest.mark.parametrize(("requested", "ladder"), [
    (r, ladder)
    for ladder in (["low", "medium", "high"], ["none", "low", "medium", "high"], ["high"],
                   ["xhigh", "high", "medium", "low", "none"], ["max", "high", "medium", "low"],
                   ["minimal", "low", "medium", "high"], ["xhigh", "high"], ["low", "high"])
    for r in EFFORTS if r != "none"
])
def test_effort_maps_to_nearest_accepted(requested: str, ladder: list[str]) -> None:
    """The mapped effort is accepted, nearest by rank, and ties go toward medium."""
    accepted = [e for e in ladder if e != "none"]
    got = nearest_effort(requested, accepted)
    assert got in accepted
    distance = abs(EFFORT_RANK[got] - EFFORT_RANK[requested])
    assert distance == min(abs(EFFORT_RANK[e] - EFFORT_RANK[requested]) for e in accepted)
    ties = [e for e in accepted if abs(EFFORT_RANK[e] - EFFORT_RANK[requested]) == distance]
    assert abs(EFFORT_RANK[got] - 3) == min(abs(EFFORT_RANK[e] - 3) for e in ties)


@pytest.mark.skipif(not SNAPSHOT.is_file(), reason="../shared absent")
def test_unlisted_sampling_is_dropped_for_every_model() -> None:
    """Every 2026-08 model x sampling parameter: unlisted ones are dropped and reported."""
    registry = Registry.load(metadata=SNAPSHOT)
    sampling = (("temperature", 0.5), ("top_p", 0.9), ("top_k", 40), ("min_p", 0.1),
                ("frequency_penalty", 0.2), ("presence_penalty", 0.2),
                ("repetition_penalty", 1.1), ("seed", 7), ("stop", ["END"]))
    intent = Intent(stage="sweep", sampling=sampling, output_tokens=500)
    checked = 0
    for model_id in registry.catalog.ids():
        listed = set(registry.catalog.require(model_id).supported_parameters or ())
        req = compile_request(intent, model_id, registry=registry)
        dropped = {a.path for a in req.report.by_kind("param.dropped")}
        for name, _ in sampling:
            assert (name in req.body) == (name in listed), (model_id, name)
            assert (name in dropped) == (name not in listed)
            checked += 1
    assert checked == 9 * 414


@pytest.mark.parametrize(("name", "value", "expected"), [
    ("temperature", -0.5, 0.0), ("temperature", 0.0, 0.0), ("temperature", 2.0, 2.0),
    ("temperature", 2.5, 2.0), ("top_p", 1.5, 1.0), ("top_p", -1.0, 0.0), ("top_p", 0.3, 0.3),
    ("frequency_penalty", -3.0, -2.0), ("frequency_penalty", 3.0, 2.0),
    ("presence_penalty", 2.1, 2.0), ("repetition_penalty", 2.5, 2.0), ("min_p", 1.2, 1.0),
    ("top_k", -5, 0), ("top_k", 50, 50),
])
def test_values_clamped_to_documented_ranges(tmp_path: Path, name: str, value: float,
                                             expected: float) -> None:
    """Sampling values outside OpenRouter's documented ranges are clamped and reported."""
    registry = one_model(tmp_path, {"supported_parameters": ["max_tokens", name]})
    req = compile_request(Intent(stage="t", sampling=((name, value),)), MODEL, registry=registry)
    assert req.body[name] == expected
    assert bool(req.report.by_kind("param.clamped")) == (value != expected)


@pytest.mark.parametrize(("order", "kept"), [
    (("temperature", "top_p"), "temperature"), (("top_p", "temperature"), "top_p"),
    (("top_k", "top_p", "temperature"), "top_p"), (("temperature",), "temperature"),
])
def test_mutually_exclusive_keeps_first_declared(tmp_path: Path, order: tuple[str, ...],
                                                 kept: str) -> None:
    """Of a mutually exclusive group, the first the stage declared is kept, whatever the order."""
    registry = one_model(
        tmp_path, {"supported_parameters": ["max_tokens", "temperature", "top_p", "top_k"]},
        "models:\n  '*':\n    sampling:\n      mutually_exclusive: [[temperature, top_p]]\n")
    values = {"temperature": 0.2, "top_p": 0.8, "top_k": 5}
    req = compile_request(Intent(stage="t", sampling=tuple((n, values[n]) for n in order)),
                          MODEL, registry=registry)
    group = {"temperature", "top_p"} & set(order)
    assert [n for n in group if n in req.body] == [kept]


BUDGET_YAML = ("models:\n  '*':\n    reasoning: {style: budget, budget_min: 1024, "
               "budget_max: 32000, effort_budgets: {low: 2048, medium: 8000, high: 16000, "
               "max: 32000}}\n")


@pytest.mark.parametrize(("effort", "output", "cap", "ceiling"), list(itertools.product(
    ["low", "medium", "high", "max"], [1, 500, 1000, 4000, 20000], [None, 1000, 4000, 30000],
    [2000, 16000, 64000])))
def test_reasoning_budget_fits_under_max_tokens(tmp_path: Path, effort: str, output: int,
                                                cap: int | None, ceiling: int) -> None:
    """Budget-style reasoning stays >= its minimum and < max_tokens, or is dropped, reported."""
    registry = one_model(tmp_path, {
        "supported_parameters": ["max_tokens", "reasoning"], "context_length": 200000,
        "top_provider": {"max_completion_tokens": ceiling}}, BUDGET_YAML)
    intent = Intent(stage="t", reasoning=effort, output_tokens=output, max_tokens=cap)
    req = compile_request(intent, MODEL, registry=registry)
    total = req.body["max_tokens"]
    assert total <= ceiling and (cap is None or total <= cap)
    budget = req.body.get("reasoning", {}).get("max_tokens")
    if budget is None:
        assert req.report.by_kind("reasoning.dropped")
    else:
        assert 1024 <= budget < total


@pytest.mark.parametrize(("prompt", "context", "ceiling"), list(itertools.product(
    [0, 1000, 7884, 100000, 130000], [8192, 131072, 200000], [None, 4096, 131072])))
def test_max_tokens_leaves_room_for_the_prompt(tmp_path: Path, prompt: int, context: int,
                                               ceiling: int | None) -> None:
    """max_tokens + prompt never exceeds the context; a prompt that alone fills it is refused."""
    top = {} if ceiling is None else {"max_completion_tokens": ceiling}
    registry = one_model(tmp_path, {"supported_parameters": ["max_tokens"],
                                    "context_length": context, "top_provider": top})
    intent = Intent(stage="t", estimated_prompt_tokens=prompt)
    if prompt >= context:
        with pytest.raises(PromptTooLongError):
            compile_request(intent, MODEL, registry=registry)
        return
    total = compile_request(intent, MODEL, registry=registry).body["max_tokens"]
    assert total > 0 and total + prompt <= context
    assert ceiling is None or total <= ceiling


@pytest.mark.skipif(not SNAPSHOT.is_file(), reason="../shared absent")
def test_none_on_mandatory_models_never_sends_none() -> None:
    """For every 2026-08 model with mandatory reasoning, none becomes its lowest setting."""
    registry = Registry.load(metadata=SNAPSHOT)
    data = json.loads(SNAPSHOT.read_text())["data"]
    mandatory = [m["id"] for m in data if (m.get("reasoning") or {}).get("mandatory")
                 and "reasoning" in (m.get("supported_parameters") or [])]
    assert len(mandatory) > 50
    for model_id in mandatory:
        req = compile_request(Intent(stage="t", reasoning="none", output_tokens=500), model_id,
                              registry=registry)
        sent = req.body.get("reasoning", {})
        assert sent.get("effort") != "none" and sent.get("enabled") is not False
        assert req.report.by_kind("reasoning.cannot_disable"), model_id

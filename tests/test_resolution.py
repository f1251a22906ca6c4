"""Layer precedence, unset, glob specificity and provenance of resolved capabilities."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from compiler import compile_request
from registry.declarations.files import load_models_file, load_stages_file
from registry.errors import UnknownModelError
from registry.metadata.catalog import Catalog
from registry.metadata.shapes import ModelInfo
from registry.resolve.resolver import Registry
from tests.conftest import ROOT

MODEL = "acme/widget-1"
PUBLISHED = {
    "id": MODEL,
    "context_length": 100000,
    "top_provider": {"max_completion_tokens": 8000},
    "supported_parameters": ["max_tokens", "temperature", "top_p", "reasoning"],
    "reasoning": {"mandatory": False, "supported_efforts": ["high", "medium", "low"]},
}


def registry_with(tmp_path: Path, models_yaml: str, stages_yaml: str | None = None) -> Registry:
    """Build a registry of one published model plus the given YAML texts."""
    catalog = Catalog(
        models={MODEL: ModelInfo.model_validate(PUBLISHED)},
        source="test.json",
        fetched_at="2026-08-19",
        origin="file",
    )
    (tmp_path / "models.yaml").write_text(models_yaml)
    stages = None
    if stages_yaml is not None:
        (tmp_path / "stages.yaml").write_text(stages_yaml)
        stages = load_stages_file(tmp_path / "stages.yaml")
    return Registry(catalog=catalog, models_file=load_models_file(tmp_path / "models.yaml"),
                    stages_file=stages)


def test_metadata_beats_builtin_default(tmp_path: Path) -> None:
    """Published supported_parameters replace the built-in default list."""
    model = registry_with(tmp_path, "models: {}\n").resolve(MODEL)
    assert "temperature" in model.supported_parameters
    source = model.source_of("supported_parameters")
    assert source is not None and source.layer == "metadata" and source.fetched_at == "2026-08-19"


def test_glob_beats_metadata(tmp_path: Path) -> None:
    """A models.yaml glob entry overrides a published limit, and says which line."""
    model = registry_with(
        tmp_path, "models:\n  'acme/*':\n    limits:\n      max_completion_tokens: 4000\n"
    ).resolve(MODEL)
    assert model.max_completion_tokens == 4000
    source = model.source_of("limits.max_completion_tokens")
    assert source is not None and source.source == "models.yaml:4"


def test_more_specific_glob_wins_whatever_the_order(tmp_path: Path) -> None:
    """Of two matching globs, the one with more literal characters wins, even if written first."""
    text = (
        "models:\n"
        "  'acme/widget-*':\n    limits: {max_completion_tokens: 3000}\n"
        "  'acme/*':\n    limits: {max_completion_tokens: 5000}\n"
        "  '*':\n    limits: {max_completion_tokens: 7000}\n"
    )
    assert registry_with(tmp_path, text).resolve(MODEL).max_completion_tokens == 3000


def test_exact_entry_beats_every_glob(tmp_path: Path) -> None:
    """The exact id entry wins over a more specific-looking glob."""
    text = (
        "models:\n"
        f"  '{MODEL}':\n    limits: {{max_completion_tokens: 1000}}\n"
        "  'acme/widget-?':\n    limits: {max_completion_tokens: 3000}\n"
    )
    assert registry_with(tmp_path, text).resolve(MODEL).max_completion_tokens == 1000


def test_stage_override_beats_exact_entry(tmp_path: Path) -> None:
    """A stage's per-model override wins over models.yaml, for that stage only."""
    registry = registry_with(
        tmp_path,
        f"models:\n  '{MODEL}':\n    limits: {{max_completion_tokens: 1000}}\n",
        f"stages:\n  s:\n    overrides:\n      '{MODEL}':\n        limits:\n"
        "          max_completion_tokens: 500\n",
    )
    assert registry.resolve(MODEL, "s").max_completion_tokens == 500
    assert registry.resolve(MODEL).max_completion_tokens == 1000
    source = registry.resolve(MODEL, "s").source_of("limits.max_completion_tokens")
    assert source is not None and source.layer == "stages.yaml" and source.source == "stages.yaml:6"


def test_unset_removes_inherited_value(tmp_path: Path) -> None:
    """unset in a later layer removes a value set by an earlier one (here, a published limit)."""
    text = f"models:\n  '{MODEL}':\n    limits:\n      max_completion_tokens: unset\n"
    model = registry_with(tmp_path, text).resolve(MODEL)
    assert model.max_completion_tokens is None
    assert model.source_of("limits.max_completion_tokens") is None


def test_mappings_merge_deeply_lists_replace(tmp_path: Path) -> None:
    """Mappings merge key by key across layers, while a list replaces the inherited one."""
    text = (
        "models:\n"
        "  '*':\n    reasoning: {effort_budgets: {low: 100, high: 300}}\n"
        "    sampling: {unsupported: [top_p]}\n"
        f"  '{MODEL}':\n    reasoning: {{effort_budgets: {{high: 900}}}}\n"
        "    sampling: {unsupported: [temperature]}\n"
    )
    model = registry_with(tmp_path, text).resolve(MODEL)
    assert dict(model.reasoning.effort_budgets) == {"low": 100, "high": 900}
    assert "top_p" in model.supported_parameters
    assert "temperature" not in model.supported_parameters


def test_unknown_model_suggests_close_ids(tmp_path: Path) -> None:
    """An id in no source raises UnknownModelError listing close ids."""
    with pytest.raises(UnknownModelError) as info:
        registry_with(tmp_path, "models: {}\n").resolve("acme/widget-2")
    assert info.value.suggestions[0] == MODEL


def test_new_model_declared_whole_compiles_every_stage(tmp_path: Path) -> None:
    """A model absent from metadata, declared whole in models.yaml, compiles for every stage."""
    for name in ("models.yaml", "stages.yaml"):
        shutil.copy(ROOT / name, tmp_path / name)
    shutil.copytree(ROOT / "contracts", tmp_path / "contracts")
    with (tmp_path / "models.yaml").open("a") as fh:
        fh.write(
            "\n  my-org/private-llm:\n"
            "    supported_parameters: [max_tokens, temperature, response_format, reasoning]\n"
            "    limits: {context_length: 32768, max_completion_tokens: 4096}\n"
            "    reasoning: {efforts: [low, high]}\n"
            "    notes: self-hosted behind an OpenRouter-compatible API\n"
        )
    registry = Registry.load(models=tmp_path / "models.yaml", stages=tmp_path / "stages.yaml")
    for stage in registry.stage_names():
        req = compile_request(stage, "my-org/private-llm", registry=registry)
        assert req.body["model"] == "my-org/private-llm"
        assert req.body["max_tokens"] <= 4096
        assert set(req.body) - {"model", "messages", "provider"} <= {
            "max_tokens", "temperature", "response_format", "reasoning"}
        assert "absent from metadata" in req.report.metadata
    deep = compile_request("deep_analysis", "my-org/private-llm", registry=registry)
    # 16000 answer tokens asked, 4096 possible: no effort's reserve fits beside the answer
    assert deep.body["reasoning"] == {"enabled": False}
    assert deep.report.by_kind("reasoning.dropped")
    assert deep.rung == "json"


def _with_endpoints(registry: Registry) -> Registry:
    """Attach two endpoints of MODEL to a registry: 'fast' (small limits) and 'big'."""
    from registry.metadata.shapes import EndpointList

    lists = {MODEL: EndpointList.model_validate({"id": MODEL, "endpoints": [
        {"tag": "fast", "supported_parameters": ["max_tokens", "top_p"],
         "context_length": 32000, "max_completion_tokens": 2000},
        {"tag": "big", "supported_parameters": ["max_tokens", "temperature", "top_p"],
         "context_length": 100000, "max_completion_tokens": 8000},
    ]})}
    return Registry(catalog=registry.catalog, models_file=registry.models_file,
                    stages_file=registry.stages_file, endpoint_lists=lists)


def test_pinned_endpoint_beats_model_metadata(tmp_path: Path) -> None:
    """Pinned to one endpoint, its parameters and limits replace the model-level ones."""
    registry = _with_endpoints(registry_with(tmp_path, "models: {}\n"))
    model = registry.resolve(MODEL, provider={"only": ["fast"]})
    assert model.routing_restricted
    assert model.supported_parameters == {"max_tokens", "top_p"}
    assert (model.context_length, model.max_completion_tokens) == (32000, 2000)
    source = model.source_of("limits.max_completion_tokens")
    assert source is not None and source.layer == "endpoints" and "fast" in source.source
    unpinned = registry.resolve(MODEL)
    assert not unpinned.routing_restricted and unpinned.max_completion_tokens == 8000


def test_glob_beats_pinned_endpoint(tmp_path: Path) -> None:
    """A models.yaml glob still wins over the endpoint layer."""
    registry = _with_endpoints(registry_with(
        tmp_path, "models:\n  'acme/*':\n    limits: {max_completion_tokens: 1500}\n"))
    model = registry.resolve(MODEL, provider={"only": ["fast"]})
    assert model.max_completion_tokens == 1500
    assert model.context_length == 32000


def test_unknown_provider_slug_suggests_close_ones(tmp_path: Path) -> None:
    """A routing slug that matches no endpoint is an error naming the closest slugs."""
    from registry.errors import RoutingError

    registry = _with_endpoints(registry_with(tmp_path, "models: {}\n"))
    with pytest.raises(RoutingError, match="'fast'"):
        registry.resolve(MODEL, provider={"only": ["fats"]})


def test_resolved_models_pickle_copy_and_serialise(tmp_path: Path) -> None:
    """A resolved model (lazy provenance, shared sampling rules, empty mappings included)
    pickles, deep-copies and converts with dataclasses.asdict to equal values, and its
    empty mappings are plain JSON-serialisable dicts."""
    import copy
    import dataclasses
    import json
    import pickle

    model = registry_with(
        tmp_path, "models:\n  'acme/*':\n    limits:\n      max_completion_tokens: 4000\n"
    ).resolve(MODEL)
    for clone in (pickle.loads(pickle.dumps(model)), copy.deepcopy(model)):
        assert clone == model
        assert clone.source_of("limits.max_completion_tokens") == \
            model.source_of("limits.max_completion_tokens")
    flat = dataclasses.asdict(model)
    assert dict(flat["provenance"]) == dict(model.provenance)
    assert flat["sampling"]["ranges"] == dict(model.sampling.ranges)
    assert json.dumps([model.provider, model.sampling.fixed, model.reasoning.effort_budgets,
                       model.sampling.fixed_while_reasoning]) == "[{}, {}, {}, {}]"


def test_caller_routing_given_as_a_dict_subclass_merges_key_by_key(tmp_path: Path) -> None:
    """A caller's provider object built from OrderedDicts merges into the declared one key
    by key, like a plain dict, and is copied rather than kept by reference."""
    from collections import OrderedDict

    registry = registry_with(
        tmp_path,
        "models:\n  'acme/*':\n    provider:\n      sort:\n        by: price\n"
        "        partition: model\n",
    )
    wanted = OrderedDict(sort=OrderedDict(by="latency"))
    model = registry.resolve(MODEL, provider=wanted)
    assert model.provider["sort"] == {"by": "latency", "partition": "model"}
    assert model.provider["sort"] is not wanted["sort"]
    by = model.source_of("provider.sort.by")
    partition = model.source_of("provider.sort.partition")
    assert by is not None and by.layer == "caller"
    assert partition is not None and partition.layer == "models.yaml"


def test_shared_sampling_rules_never_cross_models(tmp_path: Path) -> None:
    """Models without sampling declarations share one rules object; a model with its own
    declaration gets its own, whichever is resolved first."""
    other = "acme/widget-2"
    (tmp_path / "models.yaml").write_text(
        f"models:\n  {MODEL}:\n    sampling:\n      fixed:\n        temperature: 1.0\n"
    )
    for order in ((MODEL, other, "acme/widget-3"), ("acme/widget-3", other, MODEL)):
        catalog = Catalog(
            models={m: ModelInfo.model_validate({**PUBLISHED, "id": m})
                    for m in (MODEL, other, "acme/widget-3")},
            source="test.json", fetched_at="2026-08-19", origin="file",
        )
        registry = Registry(catalog=catalog,
                            models_file=load_models_file(tmp_path / "models.yaml"))
        resolved = {m: registry.resolve(m) for m in order}
        assert resolved[MODEL].sampling.fixed == {"temperature": 1.0}
        assert resolved[other].sampling.fixed == {}
        assert resolved[other].sampling is resolved["acme/widget-3"].sampling
        assert resolved[MODEL].sampling is not resolved[other].sampling


def test_the_resolve_memo_is_bounded_and_a_dropped_model_resolves_the_same(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Past ``RESOLVE_MEMO`` resolutions the oldest is dropped (memory stays bounded when
    every model of a large list is resolved); resolving it again gives an equal result."""
    from registry.resolve import resolver

    registry = Registry.load(models=ROOT / "models.yaml", stages=ROOT / "stages.yaml")
    ids = registry.catalog.ids()[:5]
    first = registry.resolve(ids[0])
    monkeypatch.setattr(resolver, "RESOLVE_MEMO", 3)
    for model_id in ids[1:]:
        registry.resolve(model_id)
    assert len(registry._cache) == 3
    assert (ids[0], None, "", None) not in registry._cache
    again = registry.resolve(ids[0])
    assert again is not first and again == first

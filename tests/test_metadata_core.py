"""registry.metadata.core: core fields at load, full models on first use, same results."""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from registry.errors import MetadataError, UnknownModelError
from registry.metadata.catalog import Catalog, bundled_catalog, load_catalog
from registry.metadata.core import core_json, core_of, parse_core_json
from registry.metadata.lazy import LazyModels
from registry.metadata.parse import parse_models, parse_models_json, read_json
from registry.metadata.shapes import ModelInfo, is_unknown_price
from registry.resolve.resolver import Registry
from registry.sources.cache import MetadataCache, RejectedPayload, check_payload
from registry.sources.cache_entry import CacheEntry
from registry.sources.load import load_metadata
from registry.sources.settings import Settings
from registry.sources.urls import models_url
from tests.conftest import OPENROUTER, SEED_MODELS

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "metadata"
SNAPSHOTS = sorted(OPENROUTER.glob("models-*.json"))


def _eager(catalog: Catalog, path: Path) -> Catalog:
    """The same catalog with every model validated whole up front (no core table)."""
    models = parse_models(read_json(path, source=str(path)), source=str(path))
    by_id: dict[str, ModelInfo] = {}
    for model in models:
        by_id.setdefault(model.id, model)
    return dataclasses.replace(catalog, models=by_id)


@pytest.mark.parametrize("path", SNAPSHOTS, ids=lambda p: p.name)
def test_core_fields_resolve_like_full_models(path: Path) -> None:
    """Every model of every shared snapshot resolves to the same capabilities (values,
    provenance, prices) from the core fields as from whole ModelInfo objects, and
    resolving them all builds no ModelInfo."""
    lazy = load_catalog(path)
    assert isinstance(lazy.models, LazyModels)
    eager = _eager(lazy, path)
    from_core, from_full = Registry(catalog=lazy), Registry(catalog=eager)
    for model_id in lazy.ids():
        assert from_core.resolve(model_id) == from_full.resolve(model_id), model_id
    assert not lazy.models.built
    assert lazy.ids() == eager.ids()


def test_core_of_matches_parsed_core_on_the_seed() -> None:
    """core_of (from a validated model) and the JSON core parser agree value by value."""
    catalog = bundled_catalog()
    for model_id in catalog.ids():
        parsed = catalog.core(model_id)
        built = core_of(catalog.models[model_id])
        assert parsed is not None
        for key in ("id", "context_length", "supported_parameters"):
            assert parsed.get(key) == built.get(key), (model_id, key)
        for key, fields in (("top_provider", ("max_completion_tokens",)),
                            ("reasoning", ("mandatory", "supported_efforts", "default_effort")),
                            ("pricing", ("prompt", "completion"))):
            got, want = parsed.get(key), built.get(key)
            assert (got is None) == (want is None), (model_id, key)
            for name in fields:
                assert (got or {}).get(name) == (want or {}).get(name), (model_id, key, name)


def _write(tmp_path: Path, models: list[dict[str, object]]) -> Path:
    path = tmp_path / "models-2026-09-01.json"
    path.write_text(json.dumps({"data": models}))
    return path


def test_a_bad_field_outside_the_core_costs_that_field_when_that_model_is_used(
    tmp_path: Path,
) -> None:
    """A malformed non-core field does not stop loading, resolving or using the other
    models; looking that model up reads the field as unknown with a note, as building
    every model (as ``capc models`` does) reads it."""
    path = _write(tmp_path, [
        {"id": "good/one", "supported_parameters": ["max_tokens"]},
        {"id": "bad/two", "architecture": {"tokenizer": 5}},
    ])
    catalog = load_catalog(path)
    assert catalog.ids() == ["good/one", "bad/two"]
    assert "bad/two" in catalog and len(catalog) == 2
    assert Registry(catalog=catalog).resolve("good/one").supports("max_tokens")
    good = catalog.get("good/one")
    assert good is not None and good.id == "good/one" and catalog.get("good/one") is good
    looked_up = catalog.get("bad/two")  # that model's field, read as unknown with a note
    assert looked_up is not None and looked_up.out_of_range == {
        "architecture.tokenizer": "a number 5, not a string"}
    built = {model.id: model for model in catalog.models.values()}  # as capc models does
    assert built["bad/two"].out_of_range == looked_up.out_of_range  # the same either way


def test_a_lookup_builds_only_the_model_asked_for(tmp_path: Path) -> None:
    """Pricing a few models of a large catalog builds those models' objects only."""
    path = _write(tmp_path, [{"id": f"v/m{i}", "pricing": {"prompt": "0.1"}}
                             for i in range(50)])
    catalog = load_catalog(path)
    assert isinstance(catalog.models, LazyModels)
    for model_id in ("v/m3", "v/m40", "v/m3"):
        info = catalog.get(model_id)
        assert info is not None and info.id == model_id
    assert catalog.models.built == 2
    assert catalog.get("v/none") is None and catalog.models.built == 2


@pytest.mark.parametrize(
    ("models", "fragment"),
    [
        ([{"id": "a/b", "context_length": "many"}, {"id": "c/d", "reasoning": 5}],
         "context_length"),  # two of two models malformed: not a list a few spoil
        ([{"id": "a/b", "pricing": {"prompt": "free"}}, {"id": "c/d", "alias_target": 1}],
         "2 of 2 models have malformed values .the first, 'a/b': pricing.prompt is a "
         'string "free".'),
        ([{"id": ""}], "no string 'id'"),
        ([{"name": "no id"}], "no string 'id'"),
    ],
)
def test_a_bad_core_field_fails_the_load(
    tmp_path: Path, models: list[dict[str, object]], fragment: str
) -> None:
    """A body whose models are mostly malformed (or one without an id) is an error at
    load, from the explaining parser."""
    with pytest.raises(MetadataError, match=fragment):
        load_catalog(_write(tmp_path, models))


def test_unknown_prices_are_none_in_the_core() -> None:
    """The core follows the metadata rule: a negative price means unknown (None)."""
    raw = json.dumps({"data": [{"id": "r/x", "pricing": {"prompt": "-1", "completion": -2,
                                                           "request": "0.5"}}]}).encode()
    cores = parse_core_json(raw)
    assert cores is not None
    assert cores[0].get("pricing") == {"prompt": None, "completion": None}


def test_lazy_models_mapping() -> None:
    """Ids, order, len and membership never build; a value lookup builds that model
    once; unknown ids raise KeyError without building."""
    calls: list[str] = []

    def build(model_id: str) -> ModelInfo:
        calls.append(model_id)
        return ModelInfo(id=model_id, name="built")

    models = LazyModels({"a/b": {"id": "a/b"}, "c/d": {"id": "c/d"}}, build)
    assert list(models) == ["a/b", "c/d"] and len(models) == 2 and "c/d" in models
    assert "x/y" not in models and not models.built and calls == []
    first = models["a/b"]
    assert models["a/b"] is first and calls == ["a/b"] and models.built == 1
    with pytest.raises(KeyError):
        models["x/y"]
    assert models.get("c/d") == ModelInfo(id="c/d", name="built")
    assert models.built == 2 and calls == ["a/b", "c/d"]


def test_a_cached_copy_with_a_bad_field_outside_the_core_is_mended(tmp_path: Path) -> None:
    """A cached models list is trusted for its core fields; a field its full parse cannot
    read later (e.g. this version reads it differently) costs that field only."""
    settings = Settings(cache_dir=tmp_path / "cache", offline=True)
    url = models_url(settings)
    body = json.dumps({"data": [{"id": "a/b", "architecture": {"tokenizer": 5}}]}).encode()
    entry = CacheEntry(source=url, kind="models", fetched_at=datetime.now(UTC), count=1,
                       payload=body)
    with MetadataCache(settings.cache_dir) as cache:
        cache._open().set(url, entry.to_bytes())  # bypasses the guard on purpose
    catalog = load_metadata(settings=settings)
    assert catalog.origin == "cache" and catalog.ids() == ["a/b"]
    assert catalog.require("a/b").out_of_range == {
        "architecture.tokenizer": "a number 5, not a string"}


def test_fixture_without_data_key_loads_eagerly() -> None:
    """A bare array (which the core parser does not take) loads whole, as before."""
    catalog = load_catalog(FIXTURES / "models-bare-list.json")
    assert not isinstance(catalog.models, LazyModels)
    assert catalog.core(catalog.ids()[0]) is not None


def test_replacing_the_models_replaces_what_resolves() -> None:
    """A catalog derived with dataclasses.replace(models=...) resolves from its new models
    only: no core field of the old ones survives the swap."""
    catalog = bundled_catalog()
    mini = catalog.models["openai/gpt-4o-mini"].model_copy(update={"context_length": 1000})
    derived = dataclasses.replace(catalog, models={"openai/gpt-4o-mini": mini})
    registry = Registry(catalog=derived)
    assert registry.resolve("openai/gpt-4o-mini").context_length == 1000
    with pytest.raises(UnknownModelError):
        registry.resolve("anthropic/claude-sonnet-4.5")


def test_core_fields_are_read_only() -> None:
    """Catalog.core hands out read-only mappings, so no caller can change what later
    resolutions (of the process-wide seed, say) read."""
    core = bundled_catalog().core("openai/gpt-4o-mini")
    assert core is not None
    with pytest.raises(TypeError):
        core["context_length"] = 5  # type: ignore[index]
    with pytest.raises(TypeError):
        core["pricing"]["prompt"] = 0  # type: ignore[index]
    assert Registry(catalog=bundled_catalog()).resolve("openai/gpt-4o-mini").context_length \
        == bundled_catalog().models["openai/gpt-4o-mini"].context_length


def test_an_empty_id_is_rejected_on_every_path(tmp_path: Path) -> None:
    """The integrity guard, the one-pass parser and a file load all refuse an empty id."""
    body = b'{"data": [{"id": ""}, {"id": "a/b"}]}'
    assert parse_models_json(body) is None
    with pytest.raises(RejectedPayload, match="no string 'id'"):
        check_payload("models", body, source="u")
    path = tmp_path / "models.json"
    path.write_bytes(body)
    with pytest.raises(MetadataError, match="no string 'id'"):
        load_catalog(path)


@pytest.mark.parametrize("path", [SEED_MODELS, *SNAPSHOTS], ids=lambda p: p.name)
def test_the_core_body_reads_exactly_like_the_body(path: Path) -> None:
    """core_json keeps every core value, type and decimal spelling (repr compares
    Decimal('1E-7') and Decimal('1.0E-7') as different), at a fraction of the size."""
    raw = path.read_bytes()
    core = core_json(raw)
    assert core is not None and len(core) < len(raw)
    assert repr(parse_core_json(core)) == repr(parse_core_json(raw))


def test_core_json_declines_what_the_core_parser_declines() -> None:
    """No core body is made from a bare array or a body with a malformed core field."""
    assert core_json(b'[{"id": "a/b"}]') is None
    assert core_json(b'{"data": [{"id": "a/b", "alias_target": "long"}]}') is None


def _store(settings: Settings, entry: CacheEntry) -> None:
    with MetadataCache(settings.cache_dir) as cache:
        cache._open().set(models_url(settings), entry.to_bytes())  # no guard, on purpose


def test_a_cache_load_reads_the_core_part_not_the_body(tmp_path: Path) -> None:
    """The core fields come from the entry's core part (shown by a core part that
    disagrees with its body); the full models still come from the body."""
    settings = Settings(cache_dir=tmp_path / "cache", offline=True)
    body = json.dumps({"data": [{"id": "a/b", "context_length": 1000, "name": "B"}]}).encode()
    core = json.dumps({"data": [{"id": "a/b", "context_length": 2000}]}).encode()
    _store(settings, CacheEntry(models_url(settings), "models", datetime.now(UTC), 1, body,
                                core=core))
    catalog = load_metadata(settings=settings)
    assert catalog.origin == "cache"
    assert Registry(catalog=catalog).resolve("a/b").context_length == 2000
    assert catalog.require("a/b").name == "B"


def test_an_unreadable_core_part_falls_back_to_the_body(tmp_path: Path) -> None:
    """A core part the core parser refuses (checksum fine) is ignored: the body's core
    fields are read instead."""
    settings = Settings(cache_dir=tmp_path / "cache", offline=True)
    body = json.dumps({"data": [{"id": "a/b", "context_length": 1000}]}).encode()
    _store(settings, CacheEntry(models_url(settings), "models", datetime.now(UTC), 1, body,
                                core=b"not json"))
    catalog = load_metadata(settings=settings)
    assert Registry(catalog=catalog).resolve("a/b").context_length == 1000


def test_the_largest_snapshot_resolves_alike_from_cache_and_file(
    shared_dir: Path, tmp_path: Path
) -> None:
    """Stored by the integrity guard and loaded back (from the core part), every model
    of the largest snapshot resolves as it does from the file, building no ModelInfo."""
    path = shared_dir / "models-all-2026-08-19.json"
    settings = Settings(cache_dir=tmp_path / "cache", offline=True)
    with MetadataCache(settings.cache_dir) as cache:
        entry, _ = cache.store(models_url(settings), path.read_bytes(), kind="models",
                               fetched_at=datetime.now(UTC), max_shrink=0.5)
    assert entry.core is not None
    cached, filed = load_metadata(settings=settings), load_catalog(path)
    assert cached.origin == "cache" and cached.ids() == filed.ids()
    from_cache, from_file = Registry(catalog=cached), Registry(catalog=filed)
    for model_id in cached.ids():
        got, want = from_cache.resolve(model_id), from_file.resolve(model_id)
        assert dataclasses.replace(got, provenance={}) == dataclasses.replace(
            want, provenance={}), model_id
    assert isinstance(cached.models, LazyModels) and not cached.models.built


_PRICE = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.integers(min_value=-(10**6), max_value=10**6),
    st.decimals(allow_nan=False, allow_infinity=False, places=9).map(str),
    st.sampled_from(["-1", "-0", "0", "0.0", "1E-7", "1.0E-7", " -2", "0.000001", -0.0, 0.0]),
    st.none(),
)
_MODEL = st.fixed_dictionaries(
    {"id": st.text(min_size=1, max_size=12)},
    optional={
        "context_length": st.one_of(st.none(), st.integers(0, 10**12)),
        "supported_parameters": st.one_of(
            st.none(), st.lists(st.sampled_from(["tools", "reasoning", "seed", "x_new"]))
        ),
        "top_provider": st.one_of(
            st.none(),
            st.fixed_dictionaries({}, optional={
                "max_completion_tokens": st.one_of(st.none(), st.integers(0, 10**9))}),
        ),
        "reasoning": st.one_of(
            st.none(),
            st.fixed_dictionaries({}, optional={
                "mandatory": st.booleans(),
                "supported_efforts": st.one_of(
                    st.none(), st.lists(st.sampled_from(["low", "medium", "high", "max"]))),
                "default_effort": st.one_of(st.none(), st.sampled_from(["low", "high"])),
            }),
        ),
        "pricing": st.one_of(
            st.none(),
            st.fixed_dictionaries({}, optional={"prompt": _PRICE, "completion": _PRICE}),
        ),
        "description": st.text(max_size=20),
    },
)


@settings(max_examples=120, deadline=None)
@given(st.lists(_MODEL, min_size=1, max_size=4))
def test_the_core_body_round_trips_generated_models(models: list[dict[str, object]]) -> None:
    """For generated models (prices as floats, ints and decimal strings, negative zero
    and "-1" included), the core body reads exactly like the body, and its prices agree
    with the whole ModelInfo a file load would build."""
    raw = json.dumps({"data": models}).encode()
    cores = parse_core_json(raw)
    assert cores is not None
    core = core_json(raw)
    assert core is not None
    assert repr(parse_core_json(core)) == repr(cores)
    whole = parse_models_json(raw)
    if whole is None:  # mostly malformed values (" -2" as a price): the list is refused
        with pytest.raises(MetadataError):  # and parse_models says why
            parse_models(json.loads(raw), source="generated")
        return
    for fields, info in zip(cores, whole, strict=True):
        pricing = fields.get("pricing")
        if pricing and info.pricing is not None:
            assert pricing.get("prompt") == info.pricing.prompt
            assert pricing.get("completion") == info.pricing.completion


@pytest.mark.parametrize("value", [-0.0, "-0", "-0.0", Decimal("-0"), -1, "-1", " -2"])
def test_any_price_written_with_a_minus_sign_is_unknown(value: object) -> None:
    """Negative zero counts as unknown whether it arrives as a number or as a string, so
    a price stored as a decimal string (the cache's core part) reads like the original."""
    assert is_unknown_price(value)
    price = str(value) if isinstance(value, Decimal) else value
    raw = json.dumps({"data": [{"id": "a/b", "pricing": {"prompt": price}}]})
    cores = parse_core_json(raw.encode())
    assert cores is not None and cores[0].get("pricing") == {"prompt": None}


@pytest.mark.parametrize("value", [0, 0.0, "0", "0.0", Decimal("0"), "1E-7", False])
def test_zero_and_positive_prices_are_known(value: object) -> None:
    """Zero (free) and positive prices are kept; a boolean is not a price sign."""
    assert not is_unknown_price(value)

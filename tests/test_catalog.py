"""Tests for registry.metadata.catalog: snapshot files, the bundled seed and endpoints files."""

from __future__ import annotations

import importlib.util
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from registry.errors import MetadataError, UnknownModelError
from registry.metadata.catalog import Catalog, bundled_catalog, load_catalog, load_endpoints
from registry.metadata.parse import parse_models
from registry.metadata.shapes import ModelInfo
from tests.conftest import OPENROUTER

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "metadata"
SEED_FILE = ROOT / "registry" / "data" / "seed-models-2026-08-19.json"

REQUIRED_SEED_IDS = (
    "openai/gpt-4o-mini",
    "openai/gpt-4o",
    "openai/o3-mini",
    "openai/gpt-5.1",
    "openai/gpt-5.5",
    "anthropic/claude-sonnet-4.5",
    "anthropic/claude-opus-4.6",
    "google/gemini-2.5-pro",
    "google/gemini-2.5-flash",
    "meta-llama/llama-3.3-70b-instruct",
    "mistralai/mistral-large",
    "deepseek/deepseek-chat-v3.1",
    "qwen/qwen3-235b-a22b",
)

needs_shared = pytest.mark.skipif(
    not OPENROUTER.is_dir(), reason="../shared/data/openrouter is absent"
)


def _shared(pattern: str) -> list[Path]:
    """List shared snapshot files matching ``pattern`` (empty when shared is absent)."""
    return sorted(OPENROUTER.glob(pattern)) if OPENROUTER.is_dir() else []


def _raw_models(path: Path) -> list[dict[str, object]]:
    """Return the raw model objects of a snapshot file."""
    payload = json.loads(path.read_text(encoding="utf-8"))
    data = payload["data"] if isinstance(payload, dict) else payload
    assert isinstance(data, list)
    return data


def _keys_anywhere(value: object) -> Iterator[str]:
    """Yield every object key in a JSON value, at any depth."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from _keys_anywhere(item)
    elif isinstance(value, list):
        for item in value:
            yield from _keys_anywhere(item)


# --- every shared file loads ----------------------------------------------------------


@needs_shared
@pytest.mark.parametrize("path", _shared("models-*.json"), ids=lambda p: p.name)
def test_every_models_snapshot_loads(path: Path) -> None:
    """Each shared models-*.json loads as a catalog and every model in it parses."""
    catalog = load_catalog(path)
    raw = _raw_models(path)
    assert len(catalog) == len(raw)
    assert catalog.ids() == [m["id"] for m in raw]
    assert catalog.origin == "file"
    assert catalog.source == str(path)
    date = re.search(r"\d{4}-\d{2}-\d{2}", path.name)
    assert date is not None and catalog.fetched_at == date.group(0)


@needs_shared
@pytest.mark.parametrize("path", _shared("endpoints-*.json"), ids=lambda p: p.name)
def test_every_endpoints_file_loads(path: Path) -> None:
    """Each shared endpoints-*.json loads, with every endpoint of every model parsed."""
    loaded = load_endpoints(path)
    payload = json.loads(path.read_text(encoding="utf-8"))
    bodies = payload.get("endpoints", {"single": payload})
    assert len(loaded) == len(bodies)
    expected = sum(len(b["data"]["endpoints"]) for b in bodies.values())
    assert sum(len(e.endpoints) for e in loaded.values()) == expected


@needs_shared
def test_endpoints_bundle_counts() -> None:
    """The 2026-05-18 bundle gives 356 models and 933 endpoints, keyed by the requested id."""
    loaded = load_endpoints(OPENROUTER / "endpoints-all-2026-05-18.json")
    assert len(loaded) == 356
    assert sum(len(e.endpoints) for e in loaded.values()) == 933
    assert loaded["openai/gpt-oss-120b:free"].id == "openai/gpt-oss-120b"
    assert loaded["google/gemini-2.5-pro-preview"].id == "google/gemini-2.5-pro"
    assert loaded["openrouter/auto"].endpoints == ()


@needs_shared
def test_single_endpoints_file_keyed_by_data_id() -> None:
    """A single /endpoints response is keyed by its data.id and keeps tags."""
    loaded = load_endpoints(OPENROUTER / "endpoints-google-gemini-2.5-pro-preview-2025-05-23.json")
    (listing,) = loaded.values()
    assert list(loaded) == ["google/gemini-2.5-pro-preview"]
    assert [e.routing_slug for e in listing.endpoints] == ["google-vertex", "google-ai-studio"]
    assert [e.max_completion_tokens for e in listing.endpoints] == [65535, 65536]


# --- Catalog behaviour ----------------------------------------------------------------


def _small_catalog() -> Catalog:
    """Build a two-model catalog from the undated fixture."""
    return load_catalog(FIXTURES / "models-undated.json")


def test_get_require_contains_len_ids() -> None:
    """Lookup helpers behave like a read-only mapping in source order."""
    catalog = _small_catalog()
    assert len(catalog) == 2
    assert catalog.ids() == ["acme/widget-1", "acme/widget-2"]
    assert "acme/widget-1" in catalog
    assert "acme/nothing" not in catalog
    assert catalog.get("acme/nothing") is None
    assert catalog.require("acme/widget-2").id == "acme/widget-2"
    with pytest.raises(TypeError):
        catalog.models["x/y"] = ModelInfo(id="x/y")  # type: ignore[index]


def test_require_unknown_suggests() -> None:
    """require() raises UnknownModelError with close matches."""
    catalog = _small_catalog()
    with pytest.raises(UnknownModelError) as info:
        catalog.require("acme/widget-3")
    assert info.value.name == "acme/widget-3"
    assert "acme/widget-1" in info.value.suggestions


def test_undated_file_has_no_date(tmp_path: Path) -> None:
    """A file name without a date gives no date: never the mtime (a touch changes nothing)."""
    path = tmp_path / "models.json"
    path.write_text('{"data": [{"id": "a/b"}]}', encoding="utf-8")
    os.utime(path, (1_767_225_600, 1_767_225_600))  # 2026-01-01T00:00:00Z
    catalog = load_catalog(path)
    assert catalog.fetched_at is None
    assert catalog.describe() == "models.json (file)"


def test_dated_file_name_and_describe(tmp_path: Path) -> None:
    """The first YYYY-MM-DD in the file name is the fetch date and shows in describe()."""
    path = tmp_path / "models-2026-08-19.json"
    path.write_text('[{"id": "a/b"}]', encoding="utf-8")
    catalog = load_catalog(str(path))
    assert catalog.fetched_at == "2026-08-19"
    assert catalog.describe() == "models-2026-08-19.json (file, as of 2026-08-19)"


def test_file_url(tmp_path: Path) -> None:
    """A file:// URL loads like a path and is kept as the source."""
    path = tmp_path / "snap 2025-05-23.json"
    path.write_text('{"data": [{"id": "a/b"}]}', encoding="utf-8")
    url = path.as_uri()
    catalog = load_catalog(url)
    assert catalog.source == url
    assert catalog.ids() == ["a/b"]
    assert catalog.fetched_at == "2025-05-23"


def test_describe_stale() -> None:
    """A stale catalog says so in describe()."""
    catalog = Catalog(
        models={}, source="/x/models.json", fetched_at=None, origin="cache", stale=True
    )
    assert catalog.describe() == "models.json (cache, stale)"


@pytest.mark.parametrize(
    ("name", "fragment"),
    [
        ("models-truncated.json", "line 6"),
        ("models-html.json", "HTML"),
        ("models-error-response.json", "No auth credentials found"),
        ("models-empty.json", "empty"),
        ("does-not-exist.json", "cannot read file"),
    ],
)
def test_load_catalog_errors(name: str, fragment: str) -> None:
    """Unreadable or unusable files raise MetadataError naming the file."""
    with pytest.raises(MetadataError) as info:
        load_catalog(FIXTURES / name)
    assert name in str(info.value)
    assert fragment in str(info.value)


def test_load_catalog_rejects_other_schemes() -> None:
    """Only paths and file:// URLs are accepted by load_catalog."""
    with pytest.raises(MetadataError, match="unsupported location scheme 'https'"):
        load_catalog("https://openrouter.ai/api/v1/models")


def test_load_endpoints_fixture() -> None:
    """A hand-made single /endpoints file loads by its data.id."""
    loaded = load_endpoints(FIXTURES / "endpoints-no-tag.json")
    assert list(loaded) == ["acme/widget-1"]


def test_load_endpoints_rejects_models_list() -> None:
    """A models list is not mistaken for endpoints."""
    with pytest.raises(MetadataError, match="parse_models"):
        load_endpoints(FIXTURES / "models-undated.json")


# --- the bundled seed -----------------------------------------------------------------


def test_seed_catalog_basics() -> None:
    """The seed loads from package data with origin "seed", its date and the required ids."""
    seed = bundled_catalog()
    assert seed is bundled_catalog()
    assert seed.origin == "seed"
    assert seed.source == "bundled seed"
    assert seed.fetched_at == "2026-08-19"
    assert seed.describe() == "bundled seed (as of 2026-08-19)"
    assert len(seed) >= 25
    missing = [i for i in REQUIRED_SEED_IDS if i not in seed]
    assert not missing


def test_seed_file_shape_and_no_prose() -> None:
    """The seed file is {"data": [...]} sorted by id, without descriptions or benchmarks."""
    payload = json.loads(SEED_FILE.read_text(encoding="utf-8"))
    assert list(payload) == ["data"]
    ids = [m["id"] for m in payload["data"]]
    assert ids == sorted(ids)
    keys = set(_keys_anywhere(payload))
    for dropped in ("description", "benchmarks", "links", "hugging_face_id", "alias_target"):
        assert dropped not in keys


def test_seed_mixes_capabilities() -> None:
    """The seed holds reasoning and non-reasoning models, with and without structured_outputs."""
    models = list(bundled_catalog().models.values())
    params = [set(m.supported_parameters or ()) for m in models]
    assert any(m.reasoning is not None for m in models)
    assert any(m.reasoning is None for m in models)
    assert any("structured_outputs" in p for p in params)
    assert any("structured_outputs" not in p for p in params)
    vendors = {m.id.split("/")[0] for m in models}
    expected = {"openai", "anthropic", "google", "meta-llama", "mistralai", "deepseek", "qwen"}
    assert expected | {"x-ai"} <= vendors


@needs_shared
def test_seed_matches_snapshot() -> None:
    """Every seed model's parameters, limits, reasoning and pricing equal the snapshot's."""
    snapshot = load_catalog(OPENROUTER / "models-2026-08-19.json")
    for model in bundled_catalog().models.values():
        real = snapshot.require(model.id)
        for field in (
            "supported_parameters",
            "context_length",
            "top_provider",
            "reasoning",
            "pricing",
        ):
            assert getattr(model, field) == getattr(real, field), (model.id, field)
        assert model.reasoning is None or (
            model.reasoning.model_fields_set == (real.reasoning and real.reasoning.model_fields_set)
        )


def _load_make_seed() -> ModuleType:
    """Import scripts/make_seed.py as a module."""
    spec = importlib.util.spec_from_file_location("make_seed", ROOT / "scripts" / "make_seed.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@needs_shared
def test_seed_is_reproducible(tmp_path: Path) -> None:
    """Re-running scripts/make_seed.py on the snapshot reproduces the bundled seed byte for byte."""
    make_seed = _load_make_seed()
    out = tmp_path / "seed.json"
    assert make_seed.main([str(OPENROUTER / "models-2026-08-19.json"), "--out", str(out)]) == 0
    assert out.read_bytes() == SEED_FILE.read_bytes()
    ids = [m.id for m in parse_models(json.loads(out.read_text()), source="seed")]
    assert ids == sorted(make_seed.SEED_IDS)

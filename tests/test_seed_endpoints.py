"""The bundled endpoints seed: its content, its loader and its generator."""

from __future__ import annotations

import fnmatch
import importlib.util
import json
import tomllib
from collections.abc import Iterator
from importlib.resources.abc import Traversable
from pathlib import Path
from types import ModuleType

import pytest

from registry.declarations.files import load_stages_file
from registry.errors import MetadataError
from registry.metadata import seed_endpoints
from registry.metadata.catalog import bundled_catalog, load_endpoints
from registry.metadata.seed_endpoints import (
    SEED_ENDPOINTS_DATE,
    SEED_ENDPOINTS_RESOURCE,
    bundled_endpoints,
)
from tests.conftest import OPENROUTER, ROOT

SEED_FILE = ROOT / "registry" / SEED_ENDPOINTS_RESOURCE
EXAMPLE_MODELS = (
    "openai/gpt-4o-mini",
    "anthropic/claude-sonnet-4.5",
    "google/gemini-2.5-pro",
    "meta-llama/llama-3.3-70b-instruct",
    "mistralai/mistral-large",
    "openai/gpt-5.1",
    "deepseek/deepseek-chat-v3.1",
)


def _script() -> ModuleType:
    """Import scripts/make_seed_endpoints.py as a module."""
    path = ROOT / "scripts" / "make_seed_endpoints.py"
    spec = importlib.util.spec_from_file_location("make_seed_endpoints", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _keys_anywhere(value: object) -> Iterator[str]:
    """Yield every object key in a JSON value, at any depth."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from _keys_anywhere(item)
    elif isinstance(value, list):
        for item in value:
            yield from _keys_anywhere(item)


@pytest.fixture
def fresh_loader() -> Iterator[None]:
    """Clear the loader's cache before and after a test that swaps the packaged file."""
    bundled_endpoints.cache_clear()
    yield
    bundled_endpoints.cache_clear()


def test_the_seed_names_exactly_the_models_of_the_example_stages() -> None:
    """Every model stages.yaml names has its endpoints in the seed, and nothing else does;
    each is also in the models seed, and lists at least one endpoint."""
    named = load_stages_file(ROOT / "stages.yaml").model_ids()
    assert set(named) == set(EXAMPLE_MODELS)
    seed = bundled_endpoints()
    assert list(seed) == sorted(named)
    for model_id, listing in seed.items():
        assert listing.id == model_id and listing.endpoints, model_id
        assert model_id in bundled_catalog(), model_id
        assert all(e.tag and e.supported_parameters for e in listing.endpoints), model_id


def test_the_file_parses_as_a_bundle_and_the_loader_agrees() -> None:
    """load_endpoints reads the packaged file; the loader returns the same lists, cached and
    read-only; the file is sorted, indent=1, with a trailing newline."""
    assert dict(bundled_endpoints()) == load_endpoints(SEED_FILE)
    assert bundled_endpoints() is bundled_endpoints()
    with pytest.raises(TypeError):
        bundled_endpoints()["x/y"] = bundled_endpoints()["openai/gpt-5.1"]  # type: ignore[index]
    text = SEED_FILE.read_text(encoding="utf-8")
    payload = json.loads(text)
    assert text == json.dumps(payload, indent=1) + "\n"
    assert list(payload["endpoints"]) == sorted(payload["endpoints"])
    assert payload["fetched_at"].startswith(SEED_ENDPOINTS_DATE)
    assert SEED_ENDPOINTS_DATE in SEED_FILE.name


def test_the_seed_keeps_facts_only() -> None:
    """No description anywhere; only the allowed keys of each response and endpoint."""
    script = _script()
    payload = json.loads(SEED_FILE.read_text(encoding="utf-8"))
    assert "description" not in set(_keys_anywhere(payload))
    for response in payload["endpoints"].values():
        assert set(response) == {"data"}
        assert set(response["data"]) <= set(script.KEEP_MODEL_KEYS)
        for endpoint in response["data"]["endpoints"]:
            assert set(endpoint) <= set(script.KEEP_ENDPOINT_KEYS)
            assert isinstance(endpoint["context_length"], int)


def test_the_wheel_ships_the_seed() -> None:
    """pyproject's package data for ``registry`` matches the endpoints seed."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    patterns = config["tool"]["setuptools"]["package-data"]["registry"]
    assert any(fnmatch.fnmatch(SEED_ENDPOINTS_RESOURCE, p) for p in patterns)


@pytest.mark.parametrize("content", [None, b"{not json", b'{"data": []}', b'{"endpoints": []}'])
def test_a_broken_install_is_a_metadata_error(
    content: bytes | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_loader: None
) -> None:
    """A missing or corrupt packaged file raises MetadataError naming the seed."""
    path = tmp_path / "seed.json"
    if content is not None:
        path.write_bytes(content)

    def broken() -> Traversable:
        return path

    monkeypatch.setattr(seed_endpoints, "_resource", broken)
    with pytest.raises(MetadataError, match="bundled endpoints seed"):
        bundled_endpoints()


def test_model_ids_of_a_stages_file(tmp_path: Path) -> None:
    """models lists then overrides keys, stage by stage, each id once."""
    path = tmp_path / "stages.yaml"
    path.write_text(
        "stages:\n"
        "  a:\n"
        "    models: [x/one, x/two]\n"
        "    overrides:\n"
        "      x/three: {supported_parameters: [max_tokens]}\n"
        "  b:\n"
        "    models: [x/two, x/four:free]\n"
        "  c: {}\n",
        encoding="utf-8",
    )
    assert load_stages_file(path).model_ids() == ("x/one", "x/two", "x/three", "x/four:free")


def test_the_generator_refuses_a_missing_model() -> None:
    """A model the bundle lacks, or no model at all, stops the script."""
    script = _script()
    bundle = {"endpoints": {"x/one": {"data": {"id": "x/one", "endpoints": []}}}}
    with pytest.raises(SystemExit, match="x/two"):
        script.build_seed(bundle, ("x/one", "x/two"))
    with pytest.raises(SystemExit, match="names no model"):
        script.build_seed(bundle, ())
    assert script.build_seed(bundle, ("x/one",))["endpoints"] == {
        "x/one": {"data": {"id": "x/one", "endpoints": []}}
    }


@pytest.mark.skipif(not OPENROUTER.is_dir(), reason="../shared/data/openrouter is absent")
def test_the_generator_is_byte_identical(tmp_path: Path) -> None:
    """Re-running scripts/make_seed_endpoints.py reproduces the packaged file byte for byte."""
    out = tmp_path / "seed.json"
    bundle = OPENROUTER / "endpoints-all-2026-05-18.json"
    argv = [str(bundle), "--stages", str(ROOT / "stages.yaml"), "--out", str(out)]
    assert _script().main(argv) == 0
    assert out.read_bytes() == SEED_FILE.read_bytes()

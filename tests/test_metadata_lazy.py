"""A full model is built from its own bytes: no walk of the other models, file or cache."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import registry.metadata.core as core_module
import registry.metadata.lazy as lazy_module
from registry.metadata.catalog import load_catalog
from registry.metadata.core import core_json, parse_core_json, parse_core_part, scan_cores
from registry.metadata.lazy import lazy_models
from registry.metadata.parse import parse_models, read_json
from registry.sources.cache import MetadataCache
from registry.sources.load import load_metadata
from registry.sources.settings import Settings
from registry.sources.urls import models_url
from tests.conftest import OPENROUTER, SEED_MODELS

SNAPSHOTS = sorted(OPENROUTER.glob("models-*.json"))


def _no_walk(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make any walk or whole decode of a body after the load fail the test."""
    def refuse(*args: object, **kwargs: object) -> Any:
        raise AssertionError("the whole body was walked or decoded")

    monkeypatch.setattr(lazy_module, "model_spans", refuse)
    monkeypatch.setattr(lazy_module, "from_json", refuse)


@pytest.mark.parametrize("path", [SEED_MODELS, *SNAPSHOTS], ids=lambda p: p.name)
def test_the_walk_reads_the_core_fields_as_the_json_parser_does(path: Path) -> None:
    """scan_cores (the load's walk) gives the same core fields, types and decimal
    spellings as parse_core_json, and one span per model."""
    raw = path.read_bytes()
    found = scan_cores(raw)
    assert found is not None
    assert repr(found.values) == repr(parse_core_json(raw))
    assert len(found.spans) == len(found.values)


@pytest.mark.parametrize("path", [SEED_MODELS, *SNAPSHOTS[-3:]], ids=lambda p: p.name)
def test_a_file_builds_each_model_from_its_own_bytes(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After the load, looking models up never walks or decodes the whole body, and
    every model equals the one the whole parse builds (non-ASCII bodies included: the
    offsets are bytes)."""
    catalog = load_catalog(path)
    _no_walk(monkeypatch)
    whole = parse_models(read_json(path, source=str(path)), source=str(path))
    assert [catalog.models[m.id] for m in whole] == whole


def test_a_cached_copy_builds_each_model_from_its_own_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cached list's core part says where each entry sits: the load reads it (no
    walk of the body), and so do the lookups."""
    settings_ = Settings(cache_dir=tmp_path / "cache", offline=True)
    url = models_url(settings_)
    payload = SEED_MODELS.read_bytes()
    with MetadataCache(settings_.cache_dir) as cache:
        entry, _ = cache.store(url, payload, kind="models", fetched_at=datetime.now(UTC),
                               max_shrink=0.5)
    assert entry.core is not None and b'"spans"' in entry.core
    monkeypatch.setattr(core_module, "model_spans", _refuse_walk)
    _no_walk(monkeypatch)
    cached = load_metadata(settings=settings_)
    assert cached.origin == "cache"
    want = parse_models(json.loads(payload), source="seed")
    assert [cached.models[m.id] for m in want] == want


def _refuse_walk(*args: object, **kwargs: object) -> Any:
    raise AssertionError("the load walked the body instead of reading the core part")


def _steps(raw: bytes) -> list[int]:
    core = core_json(raw)
    assert core is not None
    return list(json.loads(core)["spans"])


_BODY = json.dumps({"data": [{"id": "a/b", "name": "A"}, {"id": "c/d", "name": "C"}]}).encode()


@pytest.mark.parametrize(
    "steps",
    [[], [0, 5], [0, 5, 1, 5, 2], [-1, 30, 2, 30], [9, 0, 2, 30], [0, 30, 2, 10**9],
     [0, 30, 2, "x"]],
    ids=["none", "one model", "odd", "negative", "empty entry", "past the end", "text"],
)
def test_offsets_that_cannot_be_right_are_not_used(steps: list[object]) -> None:
    """A core part with offsets of the wrong count, negative, empty or past the body is
    read for its core fields (offsets dropped), or not at all when they are no numbers."""
    part = json.dumps({"data": [{"id": "a/b"}, {"id": "c/d"}], "spans": steps}).encode()
    found = parse_core_part(part, _BODY)
    if "x" in steps:
        assert found is None
        return
    assert found is not None and [c["id"] for c in found[0]] == ["a/b", "c/d"]
    assert found[1] is None


def test_the_stored_offsets_locate_each_entry() -> None:
    raw = b' {"x": 1, "data" : [ {"id":"a/b"} ,\n {"id":"caf\xc3\xa9/d"}]} '
    steps = _steps(raw)
    found = parse_core_part(core_json(raw) or b"", raw)
    assert found is not None and found[1] is not None
    assert [json.loads(raw[s:e]) for s, e in found[1]] == json.loads(raw)["data"]
    assert steps == [21, 12, 4, 16]  # gap, length, ...; the é counts 2 bytes


@pytest.mark.parametrize("swap", ["swapped", "shifted"])
def test_offsets_that_point_elsewhere_are_never_trusted(swap: str) -> None:
    """Offsets that do not locate the model asked for (a part written for other bytes)
    make the lookup walk the body instead: the model built is always the right one."""
    gap, length, gap_c, length_c = _steps(_BODY)
    start_c = gap + length + gap_c
    end_c = start_c + length_c
    if swap == "swapped":  # a/b's offsets locate c/d's entry, c/d's the closing "]}"
        steps = [start_c, length_c, 0, len(_BODY) - end_c]
    else:  # one byte late: a cut entry, which does not decode
        steps = [gap + 1, length, gap_c, length_c]
    part = json.dumps({"data": [{"id": "a/b"}, {"id": "c/d"}], "spans": steps}).encode()
    models = lazy_models(_BODY, source="cache", core=part)
    assert models is not None
    assert models["a/b"].name == "A" and models["c/d"].name == "C"


def test_a_bad_field_costs_that_field_on_a_lookup_from_the_cached_offsets() -> None:
    raw = json.dumps({"data": [{"id": "a/b", "name": "A"},
                               {"id": "c/d", "architecture": {"tokenizer": 5}}]}).encode()
    models = lazy_models(raw, source="cache", hint="refetch it", core=core_json(raw))
    assert models is not None and models["a/b"].name == "A"
    assert models["c/d"].architecture is not None and models["c/d"].architecture.tokenizer is None
    assert models["c/d"].out_of_range == {"architecture.tokenizer": "a number 5, not a string"}


_TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=6)
_VALUE = st.recursive(st.none() | st.booleans() | st.integers() | _TEXT,
                      lambda inner: st.lists(inner, max_size=3)
                      | st.dictionaries(_TEXT, inner, max_size=3), max_leaves=6)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.fixed_dictionaries({"id": _TEXT.filter(bool)}, optional={
    "name": _TEXT, "context_length": st.integers(-5, 10**10) | _TEXT,
    "pricing": st.fixed_dictionaries({}, optional={"prompt": _TEXT | st.integers()}),
    "description": _TEXT, "extra": _VALUE}), min_size=1, max_size=4),
    st.booleans(), st.booleans())
def test_generated_bodies(models: list[dict[str, object]], ascii_: bool, spaced: bool) -> None:
    """For generated bodies (any text, spaced or compact, escaped or raw UTF-8), the
    walk reads what the JSON parser reads, and the stored offsets locate every entry."""
    raw = json.dumps({"data": models}, ensure_ascii=ascii_,
                     indent=1 if spaced else None).encode()
    cores = parse_core_json(raw)
    found = scan_cores(raw)
    assert (found is None) == (cores is None)
    if found is None:
        return
    assert repr(found.values) == repr(cores)
    part = parse_core_part(core_json(raw) or b"", raw)
    assert part is not None and part[1] is not None
    assert [json.loads(raw[s:e]) for s, e in part[1]] == models

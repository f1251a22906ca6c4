"""Locating each model of a models body so one model can be decoded alone."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import registry.metadata.core as core_module
import registry.metadata.lazy as lazy_module
from registry.metadata.catalog import load_catalog
from registry.metadata.parse import parse_models, read_json
from registry.metadata.spans import model_spans
from tests.conftest import OPENROUTER, SEED_MODELS

SNAPSHOTS = sorted(OPENROUTER.glob("models-*.json"))


@pytest.mark.parametrize("path", [SEED_MODELS, *SNAPSHOTS], ids=lambda p: p.name)
def test_every_element_decodes_as_the_whole_body_does(path: Path) -> None:
    raw = path.read_bytes()
    spans = model_spans(raw)
    assert spans is not None
    items = json.loads(raw)["data"]
    assert len(spans.spans) == len(items)
    assert all(spans.element(i) == item for i, item in enumerate(items))


@pytest.mark.parametrize(
    ("body", "count"),
    [
        (' { "x" : [1, {"data": [9]}] , "data" : [ {"id":"a"} , {"id":"b"} ] , "y": 2 } \n', 2),
        ('{"data": []}', 0),
        ('{"data": [{"id": "a"}], "data": [{"id": "b"}, {"id": "c"}]}', 2),  # last wins
        ('{"data": [{"id": "a \\" ] }"}]}', 1),
        ('{"data": [{"id": "caf\\u00e9 \u00e9"}]}', 1),
    ],
)
def test_shapes_that_are_located(body: str, count: int) -> None:
    spans = model_spans(body.encode())
    assert spans is not None and len(spans.spans) == count
    assert [spans.element(i) for i in range(count)] == json.loads(body)["data"]


@pytest.mark.parametrize(
    "body",
    [b"[1]", b'{"a": 1}', b"{}", b'{"data": 5}', b'{"data": [1] x', b'{"data": [1]} x',
     b'{"data": [1 2]}', b'{"data": [{"id": }]}', b"\xff", b"", b'{"data": [1], "data": 2}'],
)
def test_shapes_that_are_not(body: bytes) -> None:
    assert model_spans(body) is None


@settings(max_examples=60, deadline=None)
@given(st.lists(st.dictionaries(st.text(max_size=5), st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner,
                                                                max_size=3),
    max_leaves=8), max_size=4), max_size=5), st.booleans())
def test_random_bodies(items: list[dict[str, object]], spaced: bool) -> None:
    body = json.dumps({"before": items[:1], "data": items, "after": "]}"},
                      indent=1 if spaced else None)
    spans = model_spans(body.encode())
    assert spans is not None
    assert [spans.element(i) for i in range(len(spans.spans))] == items


def test_a_body_the_scanner_refuses_is_decoded_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without spans the models are still built one at a time, with the same notes."""
    monkeypatch.setattr(core_module, "model_spans", lambda raw, read=None: None)
    monkeypatch.setattr(lazy_module, "model_spans", lambda raw, read=None: None)
    path = tmp_path / "models.json"
    path.write_text(json.dumps({"data": [{"id": "a/b", "name": "A"},
                                         {"id": "c/d", "architecture": {"tokenizer": 5}}]}))
    catalog = load_catalog(path)
    info = catalog.get("a/b")
    assert info is not None and info.name == "A"
    assert catalog.require("c/d").out_of_range == {
        "architecture.tokenizer": "a number 5, not a string"}


@pytest.mark.parametrize("path", SNAPSHOTS[-2:], ids=lambda p: p.name)
def test_models_built_one_at_a_time_equal_the_whole_parse(path: Path) -> None:
    catalog = load_catalog(path)
    whole = parse_models(read_json(path, source=str(path)), source=str(path))
    assert [catalog.models[m.id] for m in whole] == whole

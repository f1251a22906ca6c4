"""A malformed value in one model of a models list costs that field, never the list
(issue 21/22 follow-up): table-driven over value classes and fields, through every
loader (a file read lazily or whole, the cache's guard), and the guard still refuses a
body that is mostly garbage."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from registry.errors import MetadataError
from registry.metadata.catalog import load_catalog
from registry.metadata.parse import parse_models
from registry.metadata.ranges import range_notes
from registry.resolve.resolver import Registry
from registry.sources.cache import MetadataCache, RejectedPayload
from tests.conftest import ROOT, SEED_MODELS

SEED: dict[str, Any] = json.loads(SEED_MODELS.read_bytes())
TARGET = "openai/gpt-4o-mini"
URL = "https://openrouter.ai/api/v1/models"
NOW = datetime(2026, 8, 19, 10, 0, tzinfo=UTC)

CASES = [
    # (dotted key, published value, the note's tail after "<key> is ")
    ("context_length", "", 'a string "", not a token count from 1 to 2,147,483,648'),
    ("context_length", "0x10", 'a string "0x10", not a token count from 1'),
    ("context_length", [128000], "an array [128000], not a token count from 1"),
    ("top_provider.max_completion_tokens", {"n": 1}, 'an object {"n": 1}, not a token count'),
    ("pricing.prompt", "", 'a string "", not a price from 0 to 1 USD per token'),
    ("pricing.completion", "0x10", 'a string "0x10", not a price from 0 to 1 USD per token'),
    ("alias_target", "openai/gpt-4o", 'a string "openai/gpt-4o", not an object'),
    ("alias_target", ["openai/gpt-4o"], 'an array ["openai/gpt-4o"], not an object'),
    ("top_provider", "big", 'a string "big", not an object'),
    ("pricing", "free", 'a string "free", not an object'),
    ("reasoning", [1], "an array [1], not an object"),
    ("supported_parameters", "tools", 'a string "tools", not an array'),
    ("architecture.input_modalities", "text", 'a string "text", not an array'),
    ("architecture", 5, "a number 5, not an object"),
]  # fmt: skip


def _body(*edits: tuple[str, str, object]) -> dict[str, Any]:
    data = copy.deepcopy(SEED)
    for model_id, dotted, value in edits:
        model = next(m for m in data["data"] if m["id"] == model_id)
        outer, _, inner = dotted.rpartition(".")
        (model[outer] if outer else model)[inner] = value
    return data


@pytest.mark.parametrize(("dotted", "value", "tail"), CASES)
def test_one_malformed_value_costs_that_field_with_a_note(
    tmp_path: Path, dotted: str, value: object, tail: str
) -> None:
    path = tmp_path / "models-2026-08-19.json"
    path.write_text(json.dumps(_body((TARGET, dotted, value))), encoding="utf-8")
    catalog = load_catalog(path)
    assert len(catalog) == len(SEED["data"])  # every model kept
    notes = range_notes(TARGET, catalog.core(TARGET) or {})
    assert any(note.startswith(f"metadata of {TARGET}: {dotted} is {tail}")
               and note.endswith("; read as unknown") for note in notes), notes
    assert Registry(catalog=catalog).resolve(TARGET).id == TARGET  # still compiles
    other = "anthropic/claude-sonnet-4.5"
    assert range_notes(other, catalog.core(other) or {}) == []
    # the guard of the cache takes it too, keeping the count
    with MetadataCache(tmp_path / "cache") as cache:
        entry, _ = cache.store(URL, path.read_bytes(), kind="models", fetched_at=NOW,
                               max_shrink=0.5)
    assert entry.count == len(SEED["data"])


@pytest.mark.parametrize("share", [0.6, 1.0])
def test_a_body_mostly_malformed_is_refused_and_the_good_copy_stays(
    tmp_path: Path, share: float
) -> None:
    ids = [m["id"] for m in SEED["data"]]
    bad = ids[: int(len(ids) * share)]
    for dotted, value in (("context_length", "x"), ("alias_target", "x")):
        payload = json.dumps(_body(*((i, dotted, value) for i in bad))).encode()
        with MetadataCache(tmp_path / "cache") as cache:
            good = SEED_MODELS.read_bytes()
            cache.store(URL, good, kind="models", fetched_at=NOW, max_shrink=0.5)
            with pytest.raises(RejectedPayload, match=r"malformed values|in \d+ other model"):
                cache.store(URL, payload, kind="models", fetched_at=NOW, max_shrink=0.5)
            entry = cache.get(URL)
            assert entry is not None and entry.payload == good


def test_half_or_fewer_malformed_is_still_a_list() -> None:
    """Up to half the models (or a single one of a one-model list) may be mended."""
    items = [{"id": "a/b", "alias_target": 1}, {"id": "c/d"}]
    parsed = parse_models(items, source="src")
    assert [m.id for m in parsed] == ["a/b", "c/d"]
    assert parsed[0].alias_target is None
    assert parsed[0].out_of_range == {"alias_target": "a number 1, not an object"}
    (alone,) = parse_models([{"id": "a/b", "top_provider": []}], source="src")
    assert alone.top_provider is None
    with pytest.raises(MetadataError, match=r"model #0 \('a/b'\): alias_target"):
        parse_models([*items[:1], {"id": "c/d", "reasoning": 2}], source="src")


def test_an_element_that_names_no_model_still_fails_the_list() -> None:
    with pytest.raises(MetadataError, match="model #1 has no string 'id'"):
        parse_models([{"id": "a/b"}, {"id": 5}], source="src")


DISPLAY_CASES = [
    # (dotted key resolution never reads, published value, the note's tail)
    ("name", [1], "an array [1], not a string"),
    ("name", {}, "an object {}, not a string"),
    ("name", True, "a boolean true, not a string"),
    ("canonical_slug", 5, "a number 5, not a string"),
]  # fmt: skip


@pytest.mark.parametrize(("dotted", "value", "tail"), DISPLAY_CASES)
def test_a_malformed_display_field_is_noted_by_capc_show_and_models(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
    dotted: str, value: object, tail: str,
) -> None:  # fmt: skip
    """Only the full model records a field the core does not hold: ``capc show`` and
    ``capc models`` read it and say so (issue 21/22 follow-up: ``name: null``, no note)."""
    from compiler.cli.main import main

    monkeypatch.setenv("CAPC_OFFLINE", "1")
    monkeypatch.setenv("CAPC_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "models-2026-08-19.json"
    path.write_text(json.dumps(_body((TARGET, dotted, value))), encoding="utf-8")
    note = f"metadata of {TARGET}: {dotted} is {tail}; read as unknown"
    base = ["--metadata", str(path), "--models", str(ROOT / "models.yaml"),
            "--stages", str(ROOT / "stages.yaml")]
    assert main(["show", TARGET, *base, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["notes"] == [note]
    assert main(["show", TARGET, *base]) == 0
    assert f"note: {note}" in capsys.readouterr().out
    base = base[:4]  # capc models takes no --stages
    assert main(["models", "--search", TARGET, *base, "--json"]) == 0
    [row] = [r for r in json.loads(capsys.readouterr().out)["models"] if r["id"] == TARGET]
    assert row["notes"] == [note]
    assert main(["models", "--search", TARGET, *base]) == 0
    assert f"read as unknown (malformed or out of range): {TARGET}" in capsys.readouterr().err

"""Issue 21, round 2 (registry side and inputs): one table per class of the smaller
defects. models.yaml prices above the ceiling, --messages numbers that are not finite
(with line:column), ``capc models --json`` notes, the offline note over an unusable
cached copy."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

import registry.sources.fallback as fallback
from compiler.cli.main import main
from registry.sources.cache import MetadataCache
from registry.sources.load import load_metadata
from registry.sources.settings import load_settings
from registry.sources.urls import models_url
from tests.conftest import ROOT, SEED_MODELS

MODEL = "openai/gpt-4o-mini"


@pytest.mark.parametrize(("value", "expect"), [
    ("'1e999'", "must be <= 1"), ("'" + "9" * 5000 + "'", "(5,"), ("9" * 5000, "too long"),
    ("2", "must be <= 1"), (".nan", "not a finite number"), ("'0.5'", None), ("0", None),
])
def test_models_yaml_prices_have_a_ceiling(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], value: str, expect: str | None
) -> None:
    models = tmp_path / "models.yaml"
    models.write_text(f"models:\n  {MODEL}:\n    pricing:\n      prompt: {value}\n")
    code = main(["check", "--models", str(models), "--stages", str(ROOT / "stages.yaml")])
    err = capsys.readouterr().err
    if expect is None:
        assert code == 0, err
        return
    assert code == 2 and f"{models}:4:" in err and expect in err and len(err) < 400, err


@pytest.mark.parametrize(("text", "where", "what"), [
    ('[{"role": "user",\n  "content": "hi", "x": NaN}]', ":2:25:", "NaN"),
    ('[{"role": "user",\n "x": -Infinity}]', ":2:7:", "-Infinity"),
    ('[{"role": "user", "x": 1e999}]', ":1:24:", "1e999"),
])
def test_messages_numbers_not_finite_are_located(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, where: str, what: str
) -> None:
    messages = tmp_path / "m.json"
    messages.write_text(text)
    assert main(["compile", "classify_ticket", MODEL, "--messages", str(messages),
                 "--stages", str(ROOT / "stages.yaml")]) == 2
    err = capsys.readouterr().err
    assert f"{messages}{where} messages: {what}" in err, err


def test_models_json_rows_carry_the_notes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = json.loads(SEED_MODELS.read_text(encoding="utf-8"))
    for model in data["data"]:
        if model["id"] == MODEL:
            model["context_length"] = "-5"
    path = tmp_path / "models-2026-08-19.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    assert main(["models", "--json", "--metadata", str(path), "--search", "gpt-4o"]) == 0
    rows = {r["id"]: r for r in json.loads(capsys.readouterr().out)["models"]}
    assert rows[MODEL]["context_length"] is None
    [note] = rows[MODEL]["notes"]
    assert 'context_length is "-5"' in note
    assert all(r["notes"] == [] for i, r in rows.items() if i != MODEL)


def test_an_unusable_cached_copy_is_not_called_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CAPC_CACHE_DIR", str(tmp_path))
    settings = load_settings()
    with MetadataCache(tmp_path) as cache:
        cache.store(models_url(settings), SEED_MODELS.read_bytes(), kind="models",
                    fetched_at=datetime.now(UTC), max_shrink=1)
    monkeypatch.setattr(fallback, "parsed_entry", lambda entry: None)
    note = load_metadata(settings=settings).note or ""
    assert "the cached copy of" in note and "is unusable" in note, note
    monkeypatch.setenv("CAPC_CACHE_DIR", str(tmp_path / "empty"))
    assert "no cached copy" in (load_metadata(settings=load_settings()).note or "")


def test_cache_info_marks_an_unusable_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("CAPC_CACHE_DIR", str(tmp_path))
    with MetadataCache(tmp_path) as cache:
        cache.store(models_url(load_settings()), SEED_MODELS.read_bytes(), kind="models",
                    fetched_at=datetime.now(UTC), max_shrink=1)
    assert main(["cache", "info", "--json"]) == 0
    assert [e["usable"] for e in json.loads(capsys.readouterr().out)["entries"]] == [True]
    monkeypatch.setattr(fallback, "parsed_entry", lambda entry: None)
    assert main(["cache", "info"]) == 0
    assert " unusable " in capsys.readouterr().out
    assert main(["cache", "info", "--json"]) == 0
    assert [e["usable"] for e in json.loads(capsys.readouterr().out)["entries"]] == [False]

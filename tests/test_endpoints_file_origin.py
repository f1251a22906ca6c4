"""An endpoints file names itself and its date in the evidence it gives (issue 21:
endpoint evidence carries the endpoints' own date, not the models file's, and never null
when the file says when it was fetched)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from registry.resolve.resolver import Registry
from tests.conftest import SEED_MODELS

MODEL = "openai/gpt-4o-mini"
SINGLE = {"data": {"id": MODEL, "endpoints": [
    {"tag": "openai", "provider_name": "OpenAI", "context_length": 128000,
     "max_completion_tokens": 16384, "supported_parameters": ["max_tokens", "seed"]}]}}


@pytest.mark.parametrize(("name", "body", "date"), [
    ("endpoints-openai-gpt-4o-mini-2026-05-18.json", SINGLE, "2026-05-18"),
    ("ep.json", SINGLE, None),
    ("bundle-2026-01-01.json", {"fetched_at": "2026-05-18T21:38:38Z", "endpoints": {MODEL: SINGLE}},
     "2026-05-18T21:38:38Z"),
    ("bundle-2026-01-01.json", {"endpoints": {MODEL: SINGLE}}, "2026-01-01"),
])  # fmt: skip
def test_the_evidence_names_the_file_and_its_date(
    tmp_path: Path, name: str, body: dict[str, object], date: str | None
) -> None:
    path = tmp_path / name
    path.write_text(json.dumps(body), encoding="utf-8")
    registry = Registry.load(metadata=SEED_MODELS, endpoints=path)
    assert registry.endpoints(MODEL) is not None
    assert registry.endpoint_source(MODEL) == (f"endpoints file {name}", date)
    model = registry.resolve(MODEL, group=registry.endpoint_caps(MODEL))
    evidence = model.source_of("supported_parameters")
    assert evidence is not None and evidence.fetched_at == date
    assert name in evidence.source

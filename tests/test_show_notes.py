"""``capc show`` lists malformed fields outside the core (docs/metadata.md's examples):
``"created": 1e999`` and ``architecture.tokenizer: 5``, in ``--json`` ``notes`` and as
``note:`` lines of the text output."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from compiler.cli.main import main
from tests.conftest import SEED_MODELS

MODEL = "openai/gpt-4o-mini"


def test_show_lists_display_field_notes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = json.loads(SEED_MODELS.read_text(encoding="utf-8"))
    entry = next(m for m in data["data"] if m["id"] == MODEL)
    entry["created"] = "__CREATED__"
    entry["architecture"]["tokenizer"] = 5
    path = tmp_path / "models.json"
    path.write_text(json.dumps(data).replace('"__CREATED__"', "1e999"), encoding="utf-8")
    assert main(["show", MODEL, "--metadata", str(path), "--json"]) == 0
    notes = json.loads(capsys.readouterr().out)["notes"]
    assert any("created is a number" in n and "read as unknown" in n for n in notes), notes
    assert any("architecture.tokenizer is a number 5, not a string" in n for n in notes)
    assert main(["show", MODEL, "--metadata", str(path)]) == 0
    text = capsys.readouterr()
    both = text.out + text.err
    assert "created is a number" in both and "architecture.tokenizer is a number 5" in both

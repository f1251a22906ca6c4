"""Alias ids whose ``alias_target`` is another alias, itself, a loop or an unknown id
(issue 21): one row each, checked in the resolved model, ``capc show`` and ``capc
check`` (a note for a model the YAML names), never a silent default."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from compiler.cli.main import main
from registry.resolve.aliases import MAX_ALIAS_HOPS
from registry.resolve.resolver import Registry

REAL = {"id": "acme/real-1", "context_length": 1000,
        "supported_parameters": ["max_tokens", "response_format"]}


def alias(id_: str, slug: str) -> dict[str, Any]:
    return {**REAL, "id": id_, "alias_target": {"name": "x", "slug": slug}}


LONG = [alias(f"~acme/l{i}", f"~acme/l{i + 1}") for i in range(MAX_ALIAS_HOPS + 1)]
#: (name, the extra models, the id resolved, its target, a piece of its note or None)
ROWS: list[tuple[str, list[dict[str, Any]], str, str | None, str | None]] = [
    ("plain", [alias("~acme/a", "acme/real-1")], "~acme/a", "acme/real-1", None),
    ("chain", [alias("~acme/a", "acme/real-1"), alias("~acme/c", "~acme/a")], "~acme/c",
     "acme/real-1", "is itself an alias; followed to acme/real-1 (~acme/c -> ~acme/a ->"),
    ("self", [alias("~acme/s", "~acme/s")], "~acme/s", None, "is the id itself"),
    ("cycle", [alias("~acme/a", "~acme/b"), alias("~acme/b", "~acme/a")], "~acme/a", None,
     "loops (~acme/a -> ~acme/b -> ~acme/a)"),
    ("unknown", [alias("~acme/u", "nosuch/model")], "~acme/u", "nosuch/model",
     "alias_target nosuch/model is not in the metadata"),
    ("too long", [*LONG, alias(f"~acme/l{MAX_ALIAS_HOPS + 1}", "acme/real-1")], "~acme/l0",
     None, f"longer than {MAX_ALIAS_HOPS} hops"),
]


@pytest.mark.parametrize(("name", "extra", "model", "target", "note"), ROWS,
                         ids=[r[0] for r in ROWS])
def test_alias_rows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str,
    extra: list[dict[str, Any]], model: str, target: str | None, note: str | None,
) -> None:
    meta = tmp_path / "models-2026-08-19.json"
    meta.write_text(json.dumps({"data": [REAL, *extra]}), encoding="utf-8")
    (tmp_path / "models.yaml").write_text(
        "models:\n  acme/*:\n    structured_output:\n      dialect: anthropic\n")
    resolved = Registry.load(metadata=meta, models=tmp_path / "models.yaml").resolve(model)
    assert resolved.alias_target == target
    notes = [n for n in resolved.metadata_notes if "alias" in n]
    assert (notes == []) if note is None else (len(notes) == 1 and note in notes[0]), notes
    if target is not None and target.startswith("acme/"):  # its glob applies, via the chain
        assert resolved.dialect == "anthropic"
    assert main(["show", model, "--metadata", str(meta)]) == 0
    out = capsys.readouterr().out
    assert note is None or note in out
    (tmp_path / "stages.yaml").write_text(
        f"stages:\n  s:\n    output_tokens: 10\n    models: ['{model}']\n")
    assert main(["check", "--metadata", str(meta), "--models", str(tmp_path / "models.yaml"),
                 "--stages",
                 str(tmp_path / "stages.yaml"), "--json"]) == 0
    checked = [n for n in json.loads(capsys.readouterr().out)["notes"] if "alias" in n]
    assert checked == notes

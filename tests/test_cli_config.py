"""capc show, capc check and capc schema on the example configuration and broken copies."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from compiler.cli.main import main
from registry.declarations.schema import models_json_schema, stages_json_schema
from tests.conftest import ROOT

EXAMPLE = ["--models", str(ROOT / "models.yaml"), "--stages", str(ROOT / "stages.yaml")]


def test_show_gives_each_value_with_its_source(capsys: pytest.CaptureFixture[str]) -> None:
    """capc show MODEL --stage S lists every effective value with file:line or metadata field."""
    assert main(["show", "anthropic/claude-sonnet-4.5", "--stage", "deep_analysis", *EXAMPLE]) == 0
    out = capsys.readouterr().out
    lines = {line.split()[0]: line for line in out.splitlines()[2:]}
    assert "models.yaml:" in lines["reasoning.budget_min"]
    assert "metadata supported_parameters (bundled seed, as of 2026-08-19)" in lines[
        "supported_parameters"]
    assert "built-in default" in lines["sampling.ranges.top_p.max"]


def test_show_json_lists_sources(capsys: pytest.CaptureFixture[str]) -> None:
    """capc show --json gives each value's layer, source and field."""
    assert main(["show", "google/gemini-2.5-pro", *EXAMPLE, "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    rows = {r["path"]: r for r in payload["values"]}
    assert rows["reasoning.can_disable"]["value"] is False
    assert rows["reasoning.can_disable"]["source"]["layer"] == "models.yaml"


def test_check_passes_on_example(capsys: pytest.CaptureFixture[str]) -> None:
    """capc check on the example configuration exits 0."""
    assert main(["check", *EXAMPLE]) == 0
    assert capsys.readouterr().out.startswith("ok:")


def test_check_names_unknown_model_with_line_and_suggestions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A stage listing a misspelt model id fails with file:line and the three closest ids."""
    shutil.copytree(ROOT / "contracts", tmp_path / "contracts")
    text = (ROOT / "stages.yaml").read_text().replace(
        "      - meta-llama/llama-3.3-70b-instruct", "      - meta-llama/llama-3.3-70b-instrct")
    (tmp_path / "stages.yaml").write_text(text)
    line = text.splitlines().index("      - meta-llama/llama-3.3-70b-instrct") + 1
    code = main(["check", "--models", str(ROOT / "models.yaml"),
                 "--stages", str(tmp_path / "stages.yaml")])
    err = capsys.readouterr().err
    assert code == 2
    assert f"stages.yaml:{line}:" in err
    assert "'meta-llama/llama-3.3-70b-instruct'" in err


def test_check_reports_contract_that_does_not_import(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A contract naming a missing class is reported with the stage's contract line."""
    shutil.copytree(ROOT / "contracts", tmp_path / "contracts")
    text = (ROOT / "stages.yaml").read_text().replace("examples.py:TicketLabel",
                                                      "examples.py:TicketLabl")
    (tmp_path / "stages.yaml").write_text(text)
    code = main(["check", "--models", str(ROOT / "models.yaml"),
                 "--stages", str(tmp_path / "stages.yaml")])
    err = capsys.readouterr().err
    assert code == 2
    assert "TicketLabl" in err and "TicketLabel" in err


@pytest.mark.parametrize(("which", "build"), [("models", models_json_schema),
                                              ("stages", stages_json_schema)])
def test_schema_command_matches_published_file(which: str, build: object,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """capc schema prints the schema, and docs/schema/<which>.schema.json is current."""
    assert main(["schema", which]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert callable(build) and printed == build()
    saved = json.loads((ROOT / "docs" / "schema" / f"{which}.schema.json").read_text())
    assert saved == printed

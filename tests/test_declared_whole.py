"""Models declared whole in models.yaml are listed and shown as such (issue 21).

A model absent from the metadata but declared whole (an exact models.yaml entry with
``supported_parameters``) is a model ``capc compile`` accepts, so ``capc models`` lists it
(after the published ones, with the file it is declared in) and ``capc show`` names that
file as its source rather than the metadata in use.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from compiler.cli.main import main
from tests.conftest import SEED_MODELS

MODELS_YAML = """\
models:
  "openai/*": {notes: a glob is no model}
  openai/gpt-4o-mini: {notes: published and listed once from the metadata}
  my-org/private-llm:
    supported_parameters: [max_tokens, temperature, response_format]
    limits: {context_length: 32768, max_completion_tokens: 4096}
  my-org/thinker:
    supported_parameters: [max_tokens, reasoning, structured_outputs]
    reasoning: {efforts: [low, high], can_disable: false}
  my-org/half: {notes: no supported_parameters so not declared whole}
"""

LISTING = [
    # (extra argv, ids of declared-whole rows expected)
    ([], ["my-org/private-llm", "my-org/thinker"]),
    (["--search", "thinker"], ["my-org/thinker"]),
    (["--supports", "reasoning"], ["my-org/thinker"]),
    (["--supports", "response_format", "temperature"], ["my-org/private-llm"]),
    (["--search", "gpt-4o-mini"], []),
]  # fmt: skip


@pytest.fixture
def models_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("CAPC_OFFLINE", "1")
    path = tmp_path / "models.yaml"
    path.write_text(MODELS_YAML, encoding="utf-8")
    return path


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main([*argv, "--metadata", str(SEED_MODELS)])
    return code, capsys.readouterr().out


@pytest.mark.parametrize(("extra", "expected"), LISTING)
def test_models_lists_the_models_declared_whole(
    models_file: Path, capsys: pytest.CaptureFixture[str], extra: list[str], expected: list[str]
) -> None:
    """``--json`` rows carry ``declared_in``; filters apply to them as to the others."""
    code, out = _run(capsys, "models", "--json", "--models", str(models_file), *extra)
    assert code == 0
    rows = json.loads(out)["models"]
    assert [r["id"] for r in rows if r["declared_in"]] == expected
    assert all(r["declared_in"] in (None, str(models_file)) for r in rows)
    assert len({r["id"] for r in rows}) == len(rows)


def test_a_declared_row_has_its_declared_capabilities(
    models_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Limits in tokens, structured output, reasoning efforts: from models.yaml."""
    _, out = _run(capsys, "models", "--json", "--models", str(models_file), "--search", "my-org")
    rows = {r["id"]: r for r in json.loads(out)["models"]}
    assert set(rows) == {"my-org/private-llm", "my-org/thinker"}
    private, thinker = rows["my-org/private-llm"], rows["my-org/thinker"]
    assert (private["context_length"], private["max_output_tokens"]) == (32768, 4096)
    assert private["structured_outputs"] is False and private["reasoning"] is False
    assert thinker["structured_outputs"] is True
    assert thinker["reasoning_efforts"] == ["low", "high"]
    assert thinker["reasoning_mandatory"] is True


def test_the_table_marks_declared_rows_and_counts_them(
    models_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each declared row names its file; the footer counts them apart from the metadata."""
    code, out = _run(capsys, "models", "--models", str(models_file), "--search", "my-org")
    lines = out.splitlines()
    assert code == 0 and len(lines) == 4
    assert all(f"(declared whole in {models_file})" in line for line in lines[1:3])
    assert lines[-1].startswith(
        f"2 of 54 (52 in the metadata, 2 declared whole in {models_file}) models; metadata: "
    )


SHOW = [
    # (model, declared in models.yaml)
    ("my-org/private-llm", True),
    ("my-org/thinker", True),
    ("openai/gpt-4o-mini", False),
]  # fmt: skip


@pytest.mark.parametrize(("model", "declared"), SHOW)
def test_show_names_models_yaml_as_the_source_of_a_model_declared_whole(
    models_file: Path, capsys: pytest.CaptureFixture[str], model: str, declared: bool
) -> None:
    """Text and ``--json``: the models file for a declared model, the metadata otherwise."""
    code, out = _run(capsys, "show", model, "--models", str(models_file))
    second = out.splitlines()[1]
    assert code == 0
    if declared:
        assert second.startswith(f"source: declared whole in {models_file} (not in the metadata")
    else:
        assert second.startswith("metadata: ")
    _, out = _run(capsys, "show", model, "--models", str(models_file), "--json")
    document = json.loads(out)
    assert document["declared_in"] == (str(models_file) if declared else None)
    assert document["declared_only"] is declared

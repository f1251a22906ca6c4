"""``audit(model=GLOB)`` (``capc audit --model GLOB``) compiles only the pairs the glob
matches, gives the rows the unfiltered audit gives for them, and still raises a stage's
own error (a contract that does not import) where the glob matches none of its models."""

from __future__ import annotations

import fnmatch
from pathlib import Path
from typing import Any

import pytest

from compiler.artifacts import lock
from compiler.artifacts.audit import audit
from compiler.errors import ContractError
from registry.resolve.resolver import Registry
from tests.conftest import ROOT

GLOBS = ["openai/*", "*mini*", "anthropic/claude-sonnet-4.5", "nobody/*", "[ag]*", "*"]


def example_registry() -> Registry:
    return Registry.load(models=ROOT / "models.yaml", stages=ROOT / "stages.yaml")


@pytest.mark.parametrize("glob", GLOBS)
def test_a_glob_gives_the_unfiltered_audits_rows_for_the_pairs_it_matches(glob: str) -> None:
    """Row for row (every field, the page's included), in stages.yaml order."""
    every = audit(example_registry())
    expected = [row for row in every if fnmatch.fnmatchcase(row.model, glob)]
    assert audit(example_registry(), model=glob) == expected
    assert every, "the example stages list models"


def test_only_the_matching_pairs_are_compiled(monkeypatch: pytest.MonkeyPatch) -> None:
    """The audit of a glob costs its pairs, not the stage's whole model list."""
    compiled: list[tuple[str, str]] = []
    real = lock.compile_once

    def counting(stage: str, model: str, **kwargs: Any) -> Any:
        compiled.append((stage, model))
        return real(stage, model, **kwargs)

    monkeypatch.setattr(lock, "compile_once", counting)
    registry = example_registry()
    rows = audit(registry, model="openai/*")
    wanted = [(name, model) for name in registry.stage_names()
              for model in registry.stage(name).models if model.startswith("openai/")]
    assert compiled == wanted == [(row.stage, row.model) for row in rows]
    assert 0 < len(wanted) < sum(len(registry.stage(n).models) for n in registry.stage_names())


def _broken(tmp_path: Path) -> Registry:
    (tmp_path / "broken.py").write_text("import no_such_module_here\n", encoding="utf-8")
    (tmp_path / "stages.yaml").write_text(
        "stages:\n"
        "  good:\n"
        "    models: [openai/gpt-4o-mini]\n"
        "  bad:\n"
        "    contract: broken.py:Reply\n"
        "    models: [anthropic/claude-sonnet-4.5]\n", encoding="utf-8")
    return Registry.load(stages=tmp_path / "stages.yaml")


@pytest.mark.parametrize("glob", [None, "openai/*", "nobody/*"])
def test_a_broken_contract_raises_whatever_the_glob_matches(tmp_path: Path,
                                                          glob: str | None) -> None:
    """The stage's declaration is checked even when none of its models is asked for."""
    with pytest.raises(ContractError, match=r"broken\.py"):
        audit(_broken(tmp_path), model=glob)


def test_stage_and_glob_together_leave_the_other_stages_alone(tmp_path: Path) -> None:
    """With the broken stage left out by ``stage``, the glob's rows come back."""
    rows = audit(_broken(tmp_path), stage="good", model="openai/*")
    assert [(row.stage, row.model) for row in rows] == [("good", "openai/gpt-4o-mini")]


def test_a_broken_stage_that_lists_no_model_fails_no_audit(tmp_path: Path) -> None:
    """Unfiltered, a stage with no models compiles nothing and so raises nothing; a glob,
    even ``*``, does the same."""
    (tmp_path / "broken.py").write_text("import no_such_module_here\n", encoding="utf-8")
    (tmp_path / "stages.yaml").write_text(
        "stages:\n  good:\n    models: [openai/gpt-4o-mini]\n"
        "  bad:\n    contract: broken.py:Reply\n    models: []\n", encoding="utf-8")
    registry = Registry.load(stages=tmp_path / "stages.yaml")
    every = [(row.stage, row.model) for row in audit(registry)]
    assert every == [("good", "openai/gpt-4o-mini")]
    for glob in ("*", "openai/*", "nobody/*"):
        assert [(row.stage, row.model) for row in audit(registry, model=glob)] == [
            pair for pair in every if fnmatch.fnmatchcase(pair[1], glob)]


@pytest.mark.parametrize("glob", [None, "openai/*", "nobody/*"])
def test_a_bad_coverage_is_refused_whatever_the_glob_matches(glob: str | None) -> None:
    """``coverage`` is checked for every stage that lists models, compiled or not."""
    with pytest.raises(ValueError, match="coverage must be one of"):
        audit(example_registry(), model=glob, coverage="bogus")


def test_an_empty_glob_is_named_in_the_no_match_note(capsys: pytest.CaptureFixture[str]) -> None:
    """``--model ''`` matches no id: the note names that filter, not a missing models list."""
    from compiler.cli.main import main

    assert main(["audit", "--models", str(ROOT / "models.yaml"),
                 "--stages", str(ROOT / "stages.yaml"), "--model", ""]) == 0
    err = capsys.readouterr().err
    assert "no stage/model pair matches --model ''" in err, err

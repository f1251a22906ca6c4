"""CLI conventions of issue 21 beyond --json: every help text has an example, options
that do not apply are not offered, a filter that matches nothing says so, ``--output``
and ``--html`` create missing folders, ``capc cache info`` lists the compile cache."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from compiler.cli.main import _parser, main
from tests.conftest import ROOT, SEED_MODELS

EXAMPLE = ["--models", str(ROOT / "models.yaml"), "--stages", str(ROOT / "stages.yaml")]


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    parser, _ = _parser([])
    [action] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(action.choices)


def _options(parser: argparse.ArgumentParser) -> set[str]:
    return {o for a in parser._actions if a.help != argparse.SUPPRESS for o in a.option_strings}


def test_every_help_text_has_an_example() -> None:
    """``capc --help`` and each ``capc COMMAND --help`` end with a runnable example."""
    parser, _ = _parser([])
    assert "example: capc compile " in parser.format_help()
    for name, sub in _subparsers().items():
        assert f"example: capc {name}" in sub.format_help(), name


@pytest.mark.parametrize(
    ("command", "option"),
    [("diff", "--metadata"), ("models", "--stages"), ("lock", "--schema"),
     ("cache", "--metadata"), ("schema", "--json")],
)  # fmt: skip
def test_options_that_do_not_apply_are_not_offered(command: str, option: str) -> None:
    assert option not in _options(_subparsers()[command])


def test_the_lock_schema_is_capc_schema_lock(capsys: pytest.CaptureFixture[str]) -> None:
    """``capc schema lock`` prints it; the old ``lock --schema`` still does, alone."""
    assert main(["schema", "lock"]) == 0
    offered = json.loads(capsys.readouterr().out)
    assert main(["lock", "--schema"]) == 0
    assert json.loads(capsys.readouterr().out) == offered
    assert main(["lock", "--schema", "--check"]) == 2
    assert "use capc schema lock" in capsys.readouterr().err
    assert main(["diff", str(SEED_MODELS), str(SEED_MODELS), "--metadata", "x"]) == 2
    assert "--metadata does not apply to 'capc diff'" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "note"),
    [
        (["models", "--search", "zzzz"], "capc: note: no model matches --search 'zzzz'"),
        (["models", "--search", "claude", "--supports", "logprobs", "seed"],
         "no model matches --search 'claude' and --supports logprobs seed"),
        (["audit", "--model", "zzz/*", *EXAMPLE],
         "capc: note: no stage/model pair matches --model 'zzz/*' (the stages list "),
    ],
)  # fmt: skip
def test_a_filter_that_matches_nothing_says_so(
    argv: list[str], note: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*argv, "--metadata", str(SEED_MODELS)]) == 0
    assert note in capsys.readouterr().err


def test_audit_without_stages_errors_like_lock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["lock"]) == 2
    lock_err = capsys.readouterr().err
    assert main(["audit"]) == 2
    assert capsys.readouterr().err == lock_err == (
        "capc: error: no stages.yaml here; give --stages PATH\n")
    assert main(["audit", "--stage", "nope", *EXAMPLE]) == 2
    assert "unknown stage 'nope'" in capsys.readouterr().err


def test_output_creates_missing_folders(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lock = tmp_path / "a" / "b" / "capc.lock.json"
    assert main(["lock", "--metadata", str(SEED_MODELS), "--output", str(lock), *EXAMPLE]) == 0
    assert json.loads(lock.read_text(encoding="utf-8"))["format"]
    page = tmp_path / "c" / "d" / "diff.html"
    assert main(["diff", str(lock), str(lock), "--html", str(page)]) == 0
    assert page.is_file() and f"capc: note: wrote {page}" in capsys.readouterr().err


def test_cache_info_lists_the_compile_cache(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["compile", "extract_invoice", "openai/gpt-4o-mini", "--metadata", str(SEED_MODELS)]
    assert main([*argv, *EXAMPLE]) == 0
    capsys.readouterr()
    assert main(["cache", "info", "--json"]) == 0
    [entry] = json.loads(capsys.readouterr().out)["compiled"]
    assert (entry["stage"], entry["model"]) == ("extract_invoice", "openai/gpt-4o-mini")
    assert entry["bytes"] > 0 and Path(entry["path"]).is_file()
    assert main(["cache", "info"]) == 0
    out = capsys.readouterr().out
    assert "compile cache: " in out and "(1 entries" in out
    assert "extract_invoice / openai/gpt-4o-mini" in out
    assert main(["cache", "clear"]) == 0
    capsys.readouterr()
    assert main(["cache", "info", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["compiled"] == []

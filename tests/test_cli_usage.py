"""Usage errors name the program once and the command's own help (issue 21, round 2)."""

from __future__ import annotations

import pytest

from compiler.cli.main import main
from tests.conftest import SEED_MODELS


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (["compile", "s", "m", "--bogus"],
         "capc: error: unrecognized arguments: --bogus (see 'capc compile --help')"),
        (["diff", str(SEED_MODELS), str(SEED_MODELS), "--metadata", "z"],
         "capc: error: --metadata does not apply to 'capc diff' (see 'capc diff --help')"),
        (["models", "--meta", "x"],  # no abbreviation of --metadata
         "capc: error: unrecognized arguments: --meta x (see 'capc models --help')"),
        (["compile", "s", "m", "--cov", "full"],
         "capc: error: unrecognized arguments: --cov full (see 'capc compile --help')"),
    ],
)  # fmt: skip
def test_a_usage_error_is_one_line_naming_the_commands_help(
    argv: list[str], line: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    assert capsys.readouterr().err == line + "\n"


def test_the_schema_argument_is_named_kind(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema", "nope"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("capc: error: argument kind: invalid choice: 'nope'")
    assert err.endswith("(see 'capc schema --help')\n")

"""``capc check`` names every models.yaml glob that matches nothing (issue 21).

A glob whose pattern matches no published model and no model declared whole would have its
rules silently apply to nothing; each is a problem with ``file:line``, and a misspelt vendor
gets the closest ``vendor/*`` globs.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from compiler.cli.main import main
from tests.conftest import SEED_MODELS

WHOLE = "  acme/box:\n    supported_parameters: [max_tokens]\n"

CASES = [
    # (glob, matches something, message part)
    ("antropic/*", False, "did you mean 'anthropic/*'"),
    ("openai/gpt-9*", False, "matches no model in the metadata"),
    ("zz[0-9]/?", False, "fix the pattern or remove the entry"),
    ("anthropic/*", True, None),
    ("*", True, None),
    ("openai/gpt-4o-mini*", True, None),
    ("acme/*", True, None),  # matches only a model declared whole in the same file
]  # fmt: skip


@pytest.mark.parametrize(("glob", "matches", "message"), CASES)
def test_check_names_a_glob_that_matches_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], glob: str, matches: bool,
    message: str | None,
) -> None:  # fmt: skip
    """Exit 2 with the file, the line of the glob and a suggestion; exit 0 when it matches."""
    models = tmp_path / "models.yaml"
    models.write_text(f"models:\n{WHOLE}  {json.dumps(glob)}:\n    notes: n\n")
    code = main(["check", "--json", "--models", str(models), "--metadata", str(SEED_MODELS)])
    document = json.loads(capsys.readouterr().out)
    if matches:
        assert code == 0 and document["ok"] is True and document["problems"] == []
        return
    assert code == 2
    [problem] = document["problems"]
    assert (problem["file"], problem["line"]) == (str(models), 4)
    assert repr(glob) in problem["message"]
    assert message is not None and message in problem["message"]


def test_every_glob_is_named_not_only_the_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two bad globs, two problems, in file order."""
    models = tmp_path / "models.yaml"
    models.write_text('models:\n  "antropic/*": {notes: a}\n  "gogle/*": {notes: b}\n')
    assert main(["check", "--models", str(models), "--metadata", str(SEED_MODELS)]) == 2
    err = capsys.readouterr().err
    assert err.index("'antropic/*'") < err.index("'gogle/*'")
    assert "did you mean 'google/*'" in err

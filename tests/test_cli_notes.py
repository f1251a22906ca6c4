"""One format for every message on stderr (issue 21): ``capc: error: ...``, ``capc:
warning: ...`` or ``capc: note: ...``, each printed by one helper of
:mod:`compiler.cli.common`. The package is searched for any other way to stderr, and a
sample of commands is run to see the lines."""

from __future__ import annotations

import ast
import re
import shutil
import warnings
from pathlib import Path

import pytest

from compiler.cli.main import main
from tests.conftest import ROOT, SEED_MODELS, FakeOpenRouter

#: The only modules that may name ``sys.stderr``: the helpers, the terminal's (colour,
#: the spinner), and the contract-import fence that sends what a contract module prints
#: to stderr instead of stdout.
STDERR_OWNERS = {"compiler/cli/common.py", "compiler/cli/terminal.py",
                 "compiler/schema/contract.py",
                 "compiler/cli/interrupt.py",  # the one line of a Ctrl-C, before common loads
                 "compiler/cli/main.py"}  # a closed stderr's stand-in: it writes nothing

LINE = re.compile(r"^capc: (error|warning|note): \S")


def _stderr_uses(path: Path) -> list[int]:
    """Lines of ``path`` that name ``sys.stderr`` or ``sys.__stderr__``, or call
    ``logging.basicConfig`` (which would print records in its own format)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        names = ("stderr", "__stderr__", "basicConfig")
        if isinstance(node, ast.Attribute) and node.attr in names:
            found.append(node.lineno)
    return found


def test_no_module_writes_to_stderr_but_the_helpers() -> None:
    """Every other module prints its notes, warnings and errors through the helpers."""
    offenders = {}
    for package in ("compiler", "registry"):
        for path in sorted((ROOT / package).rglob("*.py")):
            relative = path.relative_to(ROOT).as_posix()
            if relative not in STDERR_OWNERS and (lines := _stderr_uses(path)):
                offenders[relative] = lines
    assert offenders == {}


def _lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if line]


def test_notes_warnings_and_errors_have_one_format(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    openrouter_server: FakeOpenRouter,
) -> None:
    """A sample: a fallback logged by the registry, a page written, a policy warning,
    a refresh that failed, an error; every stderr line has the one format."""
    example = ["--models", str(ROOT / "models.yaml"), "--stages", str(ROOT / "stages.yaml")]
    # a metadata fallback (logged by registry.sources at WARNING) during show
    monkeypatch.setenv("CAPC_OFFLINE", "0")
    monkeypatch.setenv("CAPC_MAX_ATTEMPTS", "1")
    monkeypatch.setenv("CAPC_BASE_URL", openrouter_server.base_url)  # answers 404
    assert main(["show", "openai/gpt-4o-mini", *example]) == 0
    err = capsys.readouterr().err
    assert len(_lines(err)) == 1, err
    assert err.startswith("capc: note: ") and "bundled seed" in err
    # refresh that fails: one error line (after the note of what it kept)
    assert main(["refresh"]) == 1
    [kept, error] = _lines(capsys.readouterr().err)
    assert kept.startswith("capc: note: models: kept ")
    assert error.startswith("capc: error: refresh failed: ")
    monkeypatch.setenv("CAPC_OFFLINE", "1")
    # a page written: a note
    page = tmp_path / "deep" / "er" / "audit.html"
    assert main(["audit", "--metadata", str(SEED_MODELS), "--html", str(page), *example]) == 0
    [wrote] = _lines(capsys.readouterr().err)
    assert wrote.startswith(f"capc: note: wrote {page} (") and page.is_file()
    # a stage policy's warn: warnings
    shutil.copytree(ROOT / "contracts", tmp_path / "contracts")
    text = (ROOT / "stages.yaml").read_text(encoding="utf-8")
    (tmp_path / "stages.yaml").write_text(
        text.replace("    output: schema\n", "    output: schema\n    policy:\n      '*': warn\n",
                     1), encoding="utf-8")  # fmt: skip
    argv = ["compile", "classify_ticket", "anthropic/claude-sonnet-4.5", "--json", "--models",
            str(ROOT / "models.yaml"), "--stages", str(tmp_path / "stages.yaml")]  # fmt: skip
    with warnings.catch_warnings():  # the suite makes warnings errors; capc shows them
        warnings.simplefilter("always")
        assert main(argv) == 0
    lines = _lines(capsys.readouterr().err)
    assert lines and all(line.startswith("capc: warning: ") for line in lines)
    # an error
    assert main(["show", "nope/nope", *example]) == 2
    for line in _lines(capsys.readouterr().err):
        assert LINE.match(line), line

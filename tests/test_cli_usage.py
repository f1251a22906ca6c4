"""Usage errors name the program once and the command's own help (issue 21, round 2)."""

from __future__ import annotations

from pathlib import Path

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
        # an unknown word before or instead of the command (issue 21, follow-ups)
    (["--bogus"], "capc: error: unrecognized arguments: --bogus (see 'capc --help')"),
    (["--bogus", "compile", "s", "m"],
     "capc: error: unrecognized arguments: --bogus (see 'capc --help')"),
    (["--versoin"], "capc: error: unrecognized arguments: --versoin (did you mean "
     "'--version'?) (see 'capc --help')"),
    (["--json", "models"], "capc: error: unrecognized arguments: --json (an option of a "
     "command goes after it: capc COMMAND --json) (see 'capc --help')"),
    (["comple", "s", "m"], "capc: error: argument COMMAND: invalid choice: 'comple' (did "
     "you mean 'compile'?); choose from compile, explain, routes, reply, show, check, "
     "schema, lock, audit, diff, refresh, models, cache (see 'capc --help')"),
    (["zzz"], "capc: error: argument COMMAND: invalid choice: 'zzz'; choose from compile, "
     "explain, routes, reply, show, check, schema, lock, audit, diff, refresh, models, "
     "cache (see 'capc --help')"),
    (["compile", "--bogus"],
     "capc: error: unrecognized arguments: --bogus (see 'capc compile --help')"),
    (["lock", "--bogus=1", "--output"],
     "capc: error: unrecognized arguments: --bogus=1 (see 'capc lock --help')"),
    (["compile", "s"], "capc: error: the following arguments are required: MODEL (see "
     "'capc compile --help')"),
    ([], "capc: error: the following arguments are required: COMMAND (see 'capc --help')"),
    (["lock", "--output", ""], "capc: error: argument --output: is empty: give a file "
     "path, or - for stdout (see 'capc lock --help')"),
    (["lock", "--output", "newdir/"], "capc: error: argument --output: 'newdir/' names a "
     "folder: give a file in it, such as newdir/capc.lock.json (see 'capc lock --help')"),
    (["audit", "--html", "pages/"], "capc: error: argument --html: 'pages/' names a "
     "folder: give a file in it, such as pages/audit.html (see 'capc audit --help')"),
    (["--", "compile"], "capc: error: argument COMMAND: invalid choice: '--' (the command "
     "comes first: capc COMMAND [-- ARGS]); choose from compile, explain, routes, reply, "
     "show, check, schema, lock, audit, diff, refresh, models, cache (see 'capc --help')"),
    (["--"], "capc: error: the following arguments are required: COMMAND (see 'capc --help')"),
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


def _snake(name: str) -> str:
    name = name.removesuffix("Error")
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in name).lstrip("_")


def test_the_documented_error_kinds_are_the_codes() -> None:
    """docs/quickstart.md lists every ``error.kind``: each error class's, and each kind
    the CLI names itself (``kind="..."`` and ``"kind": "..."`` in compiler/cli/)."""
    import importlib
    import pkgutil
    import re

    import compiler
    import registry
    from compiler.errors import CompilerError
    from registry.errors import RegistryError
    from tests.conftest import ROOT

    for package in (compiler, registry):  # every error class, wherever it is defined
        for found in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            if not found.name.endswith("__main__"):
                importlib.import_module(found.name)

    def classes(base: type) -> list[type]:
        return [base, *(c for sub in base.__subclasses__() for c in classes(sub))]

    text = (ROOT / "docs" / "quickstart.md").read_text(encoding="utf-8")
    listed = text.split("`kind` is one of these", 1)[1].split("\n\n", 2)[1]
    documented = set(re.findall(r"`([a-z_A-Z]+)`", listed))
    from_classes = {_snake(c.__name__) for c in classes(RegistryError) + classes(CompilerError)}
    cli = set()
    for path in (ROOT / "compiler" / "cli").glob("*.py"):
        source = path.read_text(encoding="utf-8")
        cli |= set(re.findall(r'kind="([a-z_]+)"', source))
        cli |= set(re.findall(r'"kind": "([a-z_]+)"', source))
    cli |= {"input", "failed"}  # CliError's kind by exit code
    assert from_classes - documented == set()
    assert cli - documented == set()
    assert "provider_KIND" in documented  # reply: f"provider_{exc.kind}"


def test_reply_names_a_missing_file_like_the_others(
    tmp_path: object, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.conftest import ROOT

    argv = ["reply", "extract_invoice", "openai/gpt-4o-mini", "/nonexistent/r.json",
            "--models", str(ROOT / "models.yaml"), "--stages", str(ROOT / "stages.yaml")]
    assert main(argv) == 2
    assert capsys.readouterr().err == "capc: error: /nonexistent/r.json: no such file\n"


@pytest.mark.parametrize("command", ["compile", "explain"])
def test_each_note_prints_once(
    command: str, tmp_path: object, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """The seed fallback note: once, not once per attempt's report (nor again as a
    ``capc: note:`` line)."""
    from tests.conftest import ROOT

    monkeypatch.setenv("CAPC_OFFLINE", "1")
    monkeypatch.setenv("CAPC_CACHE_DIR", str(tmp_path))
    argv = [command, "extract_invoice", "openai/gpt-4o-mini",
            "--models", str(ROOT / "models.yaml"), "--stages", str(ROOT / "stages.yaml")]
    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert "attempt 2 of" in out + err  # a plan of several attempts
    assert (out + err).count("no cached copy of") == 1


def test_check_json_reports_both_broken_files_and_bad_metadata_as_problems(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    (tmp_path / "models.yaml").write_text("models:\n  x: [\n", encoding="utf-8")
    (tmp_path / "stages.yaml").write_text("stages:\n  s: {bogus_key: 1}\n", encoding="utf-8")
    files = ["--models", str(tmp_path / "models.yaml"), "--stages", str(tmp_path / "stages.yaml")]
    assert main(["check", "--json", *files]) == 2
    problems = json.loads(capsys.readouterr().out)["problems"]
    assert [Path(p["file"]).name for p in problems] == ["models.yaml", "stages.yaml"]
    from tests.conftest import ROOT

    (tmp_path / "meta.json").write_text("{not json", encoding="utf-8")
    assert main(["check", "--json", "--metadata", str(tmp_path / "meta.json"), "--models",
                 str(ROOT / "models.yaml"), "--stages", str(ROOT / "stages.yaml")]) == 2
    document = json.loads(capsys.readouterr().out)
    assert document["ok"] is False and "error" not in document
    [problem] = document["problems"]
    assert "invalid JSON" in problem["message"] and problem["key"] is None


METADATA_KEYS = {"source", "origin", "fetched_at", "stale", "note", "text"}


@pytest.mark.parametrize("argv", [
    ["compile", "extract_invoice", "openai/gpt-4o-mini"],
    ["explain", "extract_invoice", "openai/gpt-4o-mini"],
    ["show", "openai/gpt-4o-mini"],
    ["audit", "--stage", "extract_invoice"],
    ["routes", "extract_invoice", "openai/gpt-4o-mini"],
    ["models", "--search", "gpt-4o-mini"],
], ids=lambda argv: argv[0])  # fmt: skip
def test_every_json_output_has_one_metadata_object(
    argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """One shape everywhere: {source, origin, fetched_at, stale, note, text} (compile's
    report keeps its one-line ``metadata`` too: the lock and output hashes use it)."""
    import json

    from tests.conftest import ROOT

    monkeypatch.setenv("CAPC_OFFLINE", "1")
    monkeypatch.setenv("CAPC_CACHE_DIR", str(tmp_path))
    files = ["--models", str(ROOT / "models.yaml")]
    if argv[0] != "models":
        files += ["--stages", str(ROOT / "stages.yaml")]
    assert main([*argv, *files, "--json"]) == 0
    metadata = json.loads(capsys.readouterr().out)["metadata"]
    assert set(metadata) == METADATA_KEYS
    assert metadata["origin"] == "seed" and metadata["text"].startswith("bundled seed")

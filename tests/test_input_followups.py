"""Follow-ups of issues 21 and 22, by class: contract import errors with file:line, ``-``
as standard input for every input file, unknown top-level words named, one bounded
reader."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from compiler.cli.main import main
from registry.boundedread import InputTooLarge, read_at_most
from tests.conftest import ROOT, SEED_MODELS

CAPC = [sys.executable, "-m", "compiler"]
MODEL = "import pydantic\n\n\nclass X(pydantic.BaseModel):\n    a: int\n"


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith("CAPC_")}
    return {**env, "CAPC_OFFLINE": "1", "CAPC_CACHE_DIR": str(tmp_path / "cache"),
            "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}


# --- b) a contract that does not import: reference, file:line, type and message -------

IMPORT_ERRORS = [
    # (file body, how it is named, the line's tail after "cannot be imported: ")
    ("import pydantic\nclass X(pydantic.BaseModel)\n    a: int\n", "file",
     "{mod}.py:2: SyntaxError: expected ':'"),
    ("import capc_no_such_dependency_q\n" + MODEL, "module",
     "{mod}.py:1: ModuleNotFoundError: No module named 'capc_no_such_dependency_q'"),
    ("x = 1\n\n\ndef f():\n    raise ValueError('boom\\nsecond line')\n\n\nf()\n", "file",
     "{mod}.py:5: ValueError: boom second line"),
    ("from os import capc_nothing_here\n", "module",
     "{mod}.py:1: ImportError: cannot import name 'capc_nothing_here' from 'os'"),
    (MODEL + "X.model_rebuild(force=1, _types_namespace=3)\n", "file",
     "{mod}.py:6: "),  # raised inside pydantic: the contract's own line is named
]  # fmt: skip


@pytest.mark.parametrize(("body", "how", "tail"), IMPORT_ERRORS)
@pytest.mark.parametrize("command", ["compile", "lock"])
def test_a_contract_import_error_is_one_line_with_its_file_and_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    body: str, how: str, tail: str, command: str,
) -> None:  # fmt: skip
    mod = f"capc_breaks_{command}_{IMPORT_ERRORS.index((body, how, tail))}"
    (tmp_path / f"{mod}.py").write_text(body, encoding="utf-8")
    ref = f"{mod}.py:X" if how == "file" else f"{mod}:X"
    stages = tmp_path / "stages.yaml"
    stages.write_text(f"stages:\n  s:\n    contract: {ref}\n    output_tokens: 100\n"
                      "    models: [openai/gpt-4o-mini]\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    argv = (["compile", "s", "openai/gpt-4o-mini"] if command == "compile"
            else ["lock", "--output", str(tmp_path / "lock.json")])
    assert main([*argv, "--metadata", str(SEED_MODELS), "--stages", str(stages)]) == 2
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("capc: error:")]
    assert len(lines) == 1 and "Traceback" not in err
    head = f"capc: error: contract {ref!r} cannot be imported: {tail.format(mod=mod)}"
    assert lines[0].startswith(head), lines[0]


def test_a_contract_module_that_is_not_found_names_no_file(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from compiler.errors import ContractError
    from compiler.schema.contract import load_contract

    with pytest.raises(ContractError) as caught:
        load_contract("capc_not_a_module_zz:X", base_dir=ROOT)
    assert str(caught.value) == ("contract 'capc_not_a_module_zz:X' cannot be imported: "
                                 "ModuleNotFoundError: No module named 'capc_not_a_module_zz'")


# --- c) "-" is standard input for every input file ------------------------------------

STAGES = (ROOT / "stages.yaml").read_text(encoding="utf-8").replace(
    "contracts/examples.py", str(ROOT / "contracts" / "examples.py"))
STDIN_CASES = [
    # (argv with one "-", what stdin holds, exit code, a text stdout or stderr holds)
    (["compile", "classify_ticket", "openai/gpt-4o-mini", "--stages", "-",
      "--metadata", str(SEED_MODELS)], STAGES, 0, '"model": "openai/gpt-4o-mini"'),
    (["compile", "classify_ticket", "openai/gpt-4o-mini", "--stages", "{stages}",
      "--metadata", "-"], SEED_MODELS.read_text(encoding="utf-8"), 0, '"model"'),
    (["compile", "classify_ticket", "openai/gpt-4o-mini", "--stages", "{stages}",
      "--models", "-", "--metadata", str(SEED_MODELS)],
     (ROOT / "models.yaml").read_text(encoding="utf-8"), 0, "stdin:"),
    (["check", "--stages", "-", "--models", str(ROOT / "models.yaml"),
      "--metadata", str(SEED_MODELS)], STAGES, 0, "ok:"),
    (["diff", "-", str(SEED_MODELS), "--stages", "{stages}"],
     SEED_MODELS.read_text(encoding="utf-8"), 0, "no setting changed"),
    (["compile", "classify_ticket", "openai/gpt-4o-mini", "--stages", "-",
      "--metadata", "-"], STAGES, 2,
     "capc: error: --metadata and --stages are each '-': standard input can be read once"),
    (["compile", "classify_ticket", "openai/gpt-4o-mini", "--stages", "-",
      "--messages", "-"], STAGES, 2, "--stages and --messages are each '-'"),
]  # fmt: skip


@pytest.mark.parametrize(("argv", "stdin", "code", "shows"), STDIN_CASES)
def test_a_dash_is_standard_input_for_every_input_file(
    tmp_path: Path, argv: list[str], stdin: str, code: int, shows: str
) -> None:
    stages = tmp_path / "stages.yaml"
    stages.write_text(STAGES, encoding="utf-8")
    words = [word.format(stages=stages) for word in argv]
    proc = subprocess.run([*CAPC, *words], input=stdin, capture_output=True, text=True,
                          env=_env(tmp_path), cwd=tmp_path, check=False, timeout=120)
    assert proc.returncode == code, proc.stderr
    assert shows in proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr


CLOSED_OR_EMPTY = [
    # (argv with one "-", stdin closed (None) or what it holds, the one error line's start)
    (["compile", "extract_invoice", "openai/gpt-4o-mini", "--messages", "-"], None,
     "capc: error: stdin: cannot read --messages: standard input is closed"),
    (["reply", "classify_ticket", "openai/gpt-4o-mini", "-"], None,
     "capc: error: stdin: cannot read FILE: standard input is closed"),
    (["compile", "classify_ticket", "openai/gpt-4o-mini", "--stages", "-"], None,
     "capc: error: stdin: cannot read --stages: standard input is closed"),
    (["compile", "classify_ticket", "openai/gpt-4o-mini", "--metadata", "-"], None,
     "capc: error: stdin: cannot read --metadata: standard input is closed"),
    (["diff", "-", str(SEED_MODELS)], None,
     "capc: error: stdin: cannot read OLD: standard input is closed"),
    # one name for stdin in every message, whichever reader took it
    (["diff", "-", str(SEED_MODELS)], "", "capc: error: neither a models list (stdin: "),
    (["compile", "classify_ticket", "openai/gpt-4o-mini", "--stages", "-"], "",
     "capc: error: stdin: file is empty"),
    (["compile", "classify_ticket", "openai/gpt-4o-mini", "--metadata", "-"], "",
     "capc: error: stdin: invalid JSON"),
    (["compile", "classify_ticket", "openai/gpt-4o-mini", "--messages", "-"], "",
     "capc: error: stdin:1:1: messages are not valid JSON"),
    (["reply", "classify_ticket", "openai/gpt-4o-mini", "-"], "",
     "capc: error: stdin: neither a JSON response"),
]  # fmt: skip


@pytest.mark.parametrize(("argv", "stdin", "line"), CLOSED_OR_EMPTY)
def test_a_closed_or_empty_stdin_is_one_line_naming_stdin(
    tmp_path: Path, argv: list[str], stdin: str | None, line: str
) -> None:
    proc = subprocess.run(
        [*CAPC, *argv], input=stdin, capture_output=True, text=True, env=_env(tmp_path),
        cwd=ROOT, check=False, timeout=120,
        preexec_fn=(lambda: os.close(0)) if stdin is None else None,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert lines[-1].startswith(line), proc.stderr
    assert "Traceback" not in proc.stderr and "/dev/stdin" not in proc.stderr
    assert "capc-diff-" not in proc.stderr


# --- d) unknown top-level options and commands ----------------------------------------

def test_an_unknown_word_with_json_is_a_usage_object(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--bogus", "check", "--json"]) == 2
    out = json.loads(capsys.readouterr().out)
    assert out["error"]["kind"] == "usage" and "--bogus" in out["error"]["message"]


# --- e) one bounded reader ------------------------------------------------------------

def _fifo_of(tmp_path: Path, data: bytes) -> Path:
    path = tmp_path / "big.bin"
    path.write_bytes(data)
    return path


READS = [
    # (what the input is, limit, bytes returned or None for InputTooLarge)
    (b"", 0, b""),
    (b"abc", 3, b"abc"),
    (b"abcd", 3, None),
    (b"x" * 10_000, 9_999, None),
]  # fmt: skip


@pytest.mark.parametrize(("data", "limit", "expected"), READS)
@pytest.mark.parametrize("how", ["file", "stdin", "text-stdin"])
def test_read_at_most_never_reads_past_the_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, data: bytes, limit: int,
    expected: bytes | None, how: str,
) -> None:  # fmt: skip
    spec: str | Path = _fifo_of(tmp_path, data)
    if how != "file":
        stream = io.BytesIO(data)
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(stream) if how == "stdin"
                            else io.StringIO(data.decode()))  # fmt: skip
        spec = "-"
    if expected is None:
        with pytest.raises(InputTooLarge) as caught:
            read_at_most(spec, limit)
        assert caught.value.limit == limit
        assert str(caught.value) == f"larger than the {limit:,}-byte limit"
    else:
        assert read_at_most(spec, limit) == expected


def test_dev_zero_ends_at_the_limit() -> None:
    if not Path("/dev/zero").exists():
        pytest.skip("no /dev/zero")
    with pytest.raises(InputTooLarge):
        read_at_most("/dev/zero", 1000)


@pytest.mark.parametrize(
    ("reader", "message"),
    [
        ("metadata", "larger than the 10-byte limit for a metadata file; is it the right file?"),
        ("yaml", "the file is larger than the 10-byte limit for a declaration file; is it the "
         "right file?"),
        ("messages", "messages larger than the 10-byte limit; is it the right file?"),
        ("schema", "has more than the 10 bytes a tool schema may have"),
    ],
)  # fmt: skip
def test_every_reader_words_the_limit_in_its_own_terms(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, reader: str, message: str
) -> None:
    """The four readers share read_at_most and keep the messages they had."""
    from compiler.cli import inputs
    from compiler.tools import schema_file
    from registry.declarations import yamlsource
    from registry.metadata import parse

    big = tmp_path / "big.json"
    big.write_text('{"stages": {}, "x": "' + "y" * 40 + '"}', encoding="utf-8")
    with pytest.raises(Exception) as caught:
        if reader == "metadata":
            parse.read_bounded(big, source=str(big), limit=10)
        elif reader == "yaml":
            monkeypatch.setattr(yamlsource, "MAX_BYTES", 10)
            yamlsource.load_yaml(big, "stages")
        elif reader == "messages":
            inputs.read_input_text(str(big), 10, "messages")
        else:
            monkeypatch.setattr(schema_file, "MAX_SCHEMA_FILE_BYTES", 10)
            schema_file.load_schema_file("t", str(big), tmp_path)
    assert message in str(caught.value)
    assert not isinstance(caught.value, InputTooLarge)  # each reader's own error class


# --- a closed stderr or stdout: nothing mixed into the data ------------------------------

CLOSED_STDERR = [
    # (argv, exit code, whether stdout is one JSON document)
    (["compile", "extract_invoice", "openai/gpt-4o-mini"], 0, True),  # the report: stderr
    (["compile", "nope", "openai/gpt-4o-mini", "--json"], 2, True),  # the error line too
    (["models", "--json"], 0, True),
    (["audit", "--json"], 0, True),
]  # fmt: skip


@pytest.mark.parametrize(("argv", "code", "is_json"), CLOSED_STDERR)
def test_a_closed_stderr_drops_messages_instead_of_writing_them_to_stdout(
    tmp_path: Path, argv: list[str], code: int, is_json: bool
) -> None:
    """With fd 2 closed, Python's ``sys.stderr`` is None and ``print(file=None)`` writes
    to stdout: messages must be dropped, stdout left as the data alone."""
    proc = subprocess.run(
        [*CAPC, *argv], capture_output=False, stdout=subprocess.PIPE, text=True,
        env=_env(tmp_path), cwd=ROOT, check=False, timeout=120,
        preexec_fn=lambda: os.close(2),
    )  # fmt: skip
    assert proc.returncode == code
    assert "capc:" not in proc.stdout and "Traceback" not in proc.stdout
    if is_json:
        json.loads(proc.stdout)


def test_a_closed_stdout_never_lends_its_number_to_an_input_file(tmp_path: Path) -> None:
    """With fd 1 closed, the next file opened would get number 1, and the contract
    import's fd-1 guard would swap it away (the page then recorded the metadata's hash as
    null): /dev/null holds fd 1 instead."""
    page = tmp_path / "p.html"
    for seed in ("0", "1", "3"):
        proc = subprocess.run(
            [*CAPC, "audit", "--metadata", str(SEED_MODELS), "--html", str(page)],
            capture_output=False, stderr=subprocess.PIPE, text=True, cwd=ROOT,
            env={**_env(tmp_path), "PYTHONHASHSEED": seed}, check=False, timeout=120,
            preexec_fn=lambda: os.close(1),
        )  # fmt: skip
        assert "cannot write standard output: it is closed" in proc.stderr, proc.stderr
        assert '"sha256":null' not in page.read_text(encoding="utf-8").replace(" ", "")


@pytest.mark.parametrize("option", ["--models", "--stages"])
def test_check_reads_a_declaration_on_stdin_once(tmp_path: Path, option: str) -> None:
    """check parses each declaration file again to list every file's problems; stdin
    cannot be read twice (the second read was empty: a false 'file is empty' problem)."""
    proc = subprocess.run(
        [*CAPC, "check", option, "-", "--json"], input="garbage", capture_output=True,
        text=True, env=_env(tmp_path), cwd=ROOT, check=False, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    problems = json.loads(proc.stdout)["problems"]
    assert len(problems) == 1 and problems[0]["file"] == "stdin", problems
    assert "root is a string" in problems[0]["message"]

"""CLI behaviour found by trying to break it: pipes, encodings, typos, missing files."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from compiler.cli.main import main
from tests.conftest import ROOT

EXAMPLE = ["--models", str(ROOT / "models.yaml"), "--stages", str(ROOT / "stages.yaml")]


def test_closed_pipe_gives_no_traceback() -> None:
    """Output piped into a reader that stops early (| head) ends quietly, without a traceback."""
    proc = subprocess.run(
        f"{sys.executable} -m compiler schema models | head -1",
        shell=True,
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    assert proc.stdout.strip() == "{"
    assert "Traceback" not in proc.stderr and "BrokenPipe" not in proc.stderr


def test_messages_not_utf8_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A messages file that is not UTF-8 is one error line and exit 2."""
    bad = tmp_path / "m.bin"
    bad.write_bytes(b"\xff\xfe\x00[")
    code = main(
        ["compile", "classify_ticket", "openai/gpt-4o-mini", *EXAMPLE, "--messages", str(bad)]
    )
    assert code == 2
    assert "not UTF-8" in capsys.readouterr().err


def test_policy_key_typo_is_an_error_with_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A misspelt policy kind is refused by compile and check, naming the line and the fix."""
    shutil.copytree(ROOT / "contracts", tmp_path / "contracts")
    text = (
        (ROOT / "stages.yaml")
        .read_text()
        .replace(
            "    output: schema\n",
            "    output: schema\n    policy:\n      param.droped: refuse\n",
            1,
        )
    )
    (tmp_path / "stages.yaml").write_text(text)
    line = text.splitlines().index("      param.droped: refuse") + 1
    args = ["--models", str(ROOT / "models.yaml"), "--stages", str(tmp_path / "stages.yaml")]
    assert main(["compile", "classify_ticket", "openai/gpt-5.1", *args]) == 2
    err = capsys.readouterr().err
    assert f"stages.yaml:{line}:" in err and "'param.dropped'" in err
    assert main(["check", *args]) == 2
    assert "'param.dropped'" in capsys.readouterr().err


def test_partially_declared_model_is_not_known(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A models.yaml entry without supported_parameters does not make an absent model known."""
    (tmp_path / "models.yaml").write_text("models:\n  my-org/private-llm:\n    notes: x\n")
    (tmp_path / "stages.yaml").write_text(
        "stages:\n  s:\n    output_tokens: 10\n    models: [my-org/private-llm]\n"
    )
    args = ["--models", str(tmp_path / "models.yaml"), "--stages", str(tmp_path / "stages.yaml")]
    assert main(["check", *args]) == 2
    assert "my-org/private-llm" in capsys.readouterr().err
    assert main(["compile", "s", "my-org/private-llm", *args]) == 2
    assert "supported_parameters" in capsys.readouterr().err


def test_warn_policy_prints_one_prefixed_line(tmp_path: Path) -> None:
    """policy warn prints 'capc: warning: ...' lines, not Python's warning format."""
    shutil.copytree(ROOT / "contracts", tmp_path / "contracts")
    text = (
        (ROOT / "stages.yaml")
        .read_text()
        .replace("    output: schema\n", "    output: schema\n    policy:\n      '*': warn\n", 1)
    )
    (tmp_path / "stages.yaml").write_text(text)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "compiler",
            "compile",
            "classify_ticket",
            "anthropic/claude-sonnet-4.5",
            "--models",
            str(ROOT / "models.yaml"),
            "--stages",
            str(tmp_path / "stages.yaml"),
            "--metadata",
            str(ROOT / "registry" / "data" / "seed-models-2026-08-19.json"),
            "--json",  # the text report would go to stderr too
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0
    lines = proc.stderr.strip().splitlines()
    assert lines and all(line.startswith("capc: warning: ") for line in lines)


def test_no_stages_file_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Compiling where no stages.yaml exists says so instead of 'unknown stage'."""
    monkeypatch.chdir(tmp_path)
    assert main(["compile", "extract_invoice", "openai/gpt-4o-mini"]) == 2
    assert "no stages.yaml" in capsys.readouterr().err
    assert main(["check"]) == 2

"""The capc command line: output shapes, exit codes, errors without tracebacks."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from compiler.cli.main import main
from tests.conftest import OPENROUTER, ROOT

EXAMPLE = ["--models", str(ROOT / "models.yaml"), "--stages", str(ROOT / "stages.yaml")]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """Run capc in-process and return (exit code, stdout, stderr)."""
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_compile_json_has_request_and_adjustments(capsys: pytest.CaptureFixture[str]) -> None:
    """--json prints one object with the body under request and a list of adjustments."""
    code, out, err = run(
        capsys, "compile", "extract_invoice", "anthropic/claude-sonnet-4.5", *EXAMPLE, "--json"
    )
    assert code == 0, err
    payload = json.loads(out)
    assert payload["request"]["model"] == "anthropic/claude-sonnet-4.5"
    assert payload["request"]["response_format"]["type"] == "json_schema"
    assert payload["adjustments"], "the example stage needs adjustments on this model"
    for adjustment in payload["adjustments"]:
        assert {"kind", "path", "requested", "applied", "reason", "evidence"} <= set(adjustment)
    assert "bundled seed" in payload["report"]["metadata"]


def test_compile_text_prints_body_then_report(capsys: pytest.CaptureFixture[str]) -> None:
    """The default output is the body as JSON on stdout (so ``> body.json`` is valid JSON),
    then a readable report naming the metadata on stderr."""
    code, out, report = run(capsys, "compile", "classify_ticket", "openai/gpt-4o-mini", *EXAMPLE)
    assert code == 0
    assert json.loads(out)["model"] == "openai/gpt-4o-mini"
    assert "metadata: bundled seed (as of 2026-08-19)" in report
    assert "output enforcement: schema" in report


def test_unknown_model_exits_2_with_suggestions(capsys: pytest.CaptureFixture[str]) -> None:
    """An unknown model id exits 2 with one stderr line naming close matches."""
    code, out, err = run(capsys, "compile", "extract_invoice", "openai/gpt-4o-mni", *EXAMPLE)
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1
    assert "openai/gpt-4o-mini" in err


def test_unknown_stage_exits_2_with_suggestions(capsys: pytest.CaptureFixture[str]) -> None:
    """An unknown stage exits 2 with one stderr line naming the closest stage."""
    code, _, err = run(capsys, "compile", "extract_invoce", "openai/gpt-4o-mini", *EXAMPLE)
    assert code == 2
    assert err.count("\n") == 1
    assert "extract_invoice" in err


def test_messages_from_stdin(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """--messages - reads the caller's messages from stdin and puts them after the instructions."""
    import io

    messages = [{"role": "user", "content": "Invoice INV-1 ..."}]
    monkeypatch.setattr(sys, "stdin", io.StringIO(json.dumps(messages)))
    code, out, _ = run(
        capsys,
        "compile",
        "extract_invoice",
        "openai/gpt-4o-mini",
        *EXAMPLE,
        "--messages",
        "-",
        "--json",
    )
    assert code == 0
    sent = json.loads(out)["request"]["messages"]
    assert sent[0]["role"] == "system" and sent[1:] == messages


def test_bad_messages_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Messages that are not JSON give exit 2 and a message with the line and column."""
    bad = tmp_path / "m.json"
    bad.write_text('[{"role": "user",}]')
    code, _, err = run(
        capsys, "compile", "extract_invoice", "openai/gpt-4o-mini", *EXAMPLE, "--messages", str(bad)
    )
    assert code == 2
    assert f"{bad}:1:" in err


def test_metadata_snapshot_is_used(shared_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--metadata compiles against a shared snapshot and the report names it with its date."""
    code, out, _ = run(
        capsys,
        "compile",
        "deep_analysis",
        "openai/gpt-5.1",
        *EXAMPLE,
        "--metadata",
        str(shared_dir / "models-2026-08-19.json"),
        "--json",
    )
    assert code == 0
    assert "2026-08-19" in json.loads(out)["report"]["metadata"]


def test_console_script_help_and_error_without_traceback(tmp_path: Path) -> None:
    """The installed entry point answers --help and reports a bad YAML file without a traceback."""
    ok = subprocess.run(
        [sys.executable, "-m", "compiler", "--help"], capture_output=True, text=True, check=False
    )
    assert ok.returncode == 0 and "compile" in ok.stdout
    broken = tmp_path / "stages.yaml"
    broken.write_text("stages:\n  s:\n    reasonin: low\n")
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "compiler",
            "compile",
            "s",
            "openai/gpt-4o-mini",
            "--stages",
            str(broken),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert res.returncode == 2
    assert "Traceback" not in res.stderr
    assert f"{broken}:3" in res.stderr and "reasoning" in res.stderr


@pytest.mark.skipif(not OPENROUTER.is_dir(), reason="../shared absent")
def test_text_report_lists_evidence(capsys: pytest.CaptureFixture[str]) -> None:
    """The text report shows each adjustment with its evidence in brackets."""
    code, _, err = run(capsys, "compile", "draft_reply", "anthropic/claude-sonnet-4.5", *EXAMPLE)
    assert code == 0
    assert "param.fixed" in err and "param.refused_while_reasoning" in err
    assert "[models.yaml:" in err


def test_explain_prints_only_the_report(capsys: pytest.CaptureFixture[str]) -> None:
    """capc explain prints the adjustment table (no body); --json gives the report object."""
    code, out, _ = run(capsys, "explain", "draft_reply", "anthropic/claude-sonnet-4.5", *EXAMPLE)
    assert code == 0
    assert out.startswith("stage draft_reply / model anthropic/claude-sonnet-4.5")
    assert "param.refused_while_reasoning" in out and '"messages"' not in out
    code, out, _ = run(capsys, "explain", "draft_reply", "anthropic/claude-sonnet-4.5", *EXAMPLE,
                       "--json")
    assert code == 0
    assert {a["kind"] for a in json.loads(out)["adjustments"]} >= {"param.fixed"}


def test_metadata_fallback_note_reaches_the_report(tmp_path: Path) -> None:
    """When the catalog carries a note (e.g. a fetch fell back), the report repeats it."""
    import dataclasses

    from compiler import compile_request
    from registry.resolve.resolver import Registry

    registry = Registry.load(models=ROOT / "models.yaml", stages=ROOT / "stages.yaml")
    registry.catalog = dataclasses.replace(registry.catalog, note="fetch failed; using the seed")
    report = compile_request("classify_ticket", "openai/gpt-4o-mini", registry=registry).report
    assert report.notes == ("fetch failed; using the seed",)
    assert "note: fetch failed; using the seed" in report.to_text()

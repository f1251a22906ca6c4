"""Bad input never reaches the output: each class of reproduction from issue 21, one table.

Non-finite numbers, impossible limits, contradictory stage budgets, oversized or endless
inputs, bytes that are not UTF-8 and duplicate model ids are refused where they are read
(``file:line`` for YAML, line and column or index for JSON), never passed on into a
body, a ``--json`` document or a lock.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from compiler.cli.main import main
from registry.declarations.files import load_models_file, load_stages_file
from registry.errors import DeclarationError, MetadataError
from registry.metadata.catalog import load_catalog
from tests.conftest import ROOT, SEED_MODELS

EXAMPLE = ["--models", str(ROOT / "models.yaml"), "--stages", str(ROOT / "stages.yaml")]

YAML_CASES = [
    # (file kind, text, line, message part)
    ("stages", "stages:\n  s:\n    sampling: {temperature: .nan}\n", 3, "'.nan' is not a finite"),
    ("stages", "stages:\n  s:\n    sampling:\n      top_p: .inf\n", 4, "'.inf' is not a finite"),
    ("models", "models:\n  a/b:\n    sampling:\n      fixed: {temperature: -.inf}\n", 4,
     "not a finite number"),
    ("models", "models:\n  a/b:\n    sampling:\n      ranges:\n        top_p: {max: .NaN}\n", 5,
     "not a finite number"),
    ("stages", "stages:\n  s:\n    output_tokens: 500\n    max_tokens: 100\n", 4,
     "max_tokens (100) is below output_tokens (500)"),
    ("stages", "stages:\n  s:\n    instructions: 'a {schema} b {schema}'\n", 3,
     "'{schema}' more than once"),
]  # fmt: skip


@pytest.mark.parametrize(("kind", "text", "line", "message"), YAML_CASES)
def test_yaml_values_that_cannot_be_sent_are_refused_with_the_line(
    tmp_path: Path, kind: str, text: str, line: int, message: str
) -> None:
    """The load fails naming the file, the line and what to write instead."""
    path = tmp_path / f"{kind}.yaml"
    path.write_text(text, encoding="utf-8")
    loader = load_stages_file if kind == "stages" else load_models_file
    with pytest.raises(DeclarationError) as caught:
        loader(path)
    assert message in str(caught.value)
    assert str(caught.value).startswith(f"{path}:{line}:")


def _seed() -> dict[str, object]:
    data: dict[str, object] = json.loads(SEED_MODELS.read_text(encoding="utf-8"))
    return data


def _nan(data: dict) -> None:
    data["data"][0]["default_parameters"] = {"temperature": float("nan")}


def _duplicate(data: dict) -> None:
    data["data"].append(data["data"][3])


METADATA_CASES = [
    (_nan, "not finite (NaN or Infinity) at line 1 column"),
    (_duplicate, "is listed twice (data[3] and data[52])"),
]


@pytest.mark.parametrize(("spoil", "message"), METADATA_CASES)
def test_metadata_that_parses_but_is_unfit_is_refused(
    tmp_path: Path, spoil: object, message: str
) -> None:
    """A file is an error; a fetched payload is rejected by the integrity guard."""
    from registry.sources.cache import RejectedPayload, check_payload

    data = _seed()
    spoil(data)  # type: ignore[operator]
    raw = json.dumps(data).encode()
    path = tmp_path / "models.json"
    path.write_bytes(raw)
    with pytest.raises(MetadataError, match=re.escape(message)):
        load_catalog(path)
    with pytest.raises(RejectedPayload, match=r"not finite|listed twice"):
        check_payload("models", raw, source="http://x/models")


def test_a_cached_copy_with_a_duplicate_id_is_not_served(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A copy stored before the duplicate check existed is ignored, never read with
    one of the two entries guessed right (the first used to win silently)."""
    from datetime import UTC, datetime

    from registry.sources.cache_entry import CacheEntry
    from registry.sources.fallback import parsed_entry

    data = _seed()
    _duplicate(data)
    raw = json.dumps(data).encode()
    entry = CacheEntry("https://x/models", "models", datetime.now(UTC), 53, raw)
    with caplog.at_level("WARNING", logger="registry.sources"):
        assert parsed_entry(entry) is None
    assert "listed twice (data[3] and data[52])" in caplog.text


@pytest.mark.parametrize("value", [-5, 0])
def test_a_limit_that_is_not_positive_is_unknown(
    tmp_path: Path, value: int, capsys: pytest.CaptureFixture[str]
) -> None:
    """top_provider.max_completion_tokens <= 0 never becomes the body's max_tokens."""
    data = _seed()
    models = data["data"]
    assert isinstance(models, list)
    target = next(m for m in models if m["id"] == "openai/gpt-4o-mini")
    target["top_provider"]["max_completion_tokens"] = value
    target["context_length"] = value
    path = tmp_path / "models.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    argv = ["compile", "extract_invoice", "openai/gpt-4o-mini", *EXAMPLE]
    assert main([*argv, "--metadata", str(path), "--json", "--no-cache"]) == 0
    body = json.loads(capsys.readouterr().out)["request"]
    assert body.get("max_tokens", 1) > 0


MESSAGES_CASES = [
    (b'[{"role": "user", "content": "h\xc3\x28i"}]', "not UTF-8 text (byte 31)"),
    (b'[{"role": "user", "content": "hi", "n": NaN}]', "NaN is not a finite number"),
    (b'[{"role": "user", "content": "hi", "n": -Infinity}]', "-Infinity is not a finite"),
    (b'[{"role": "user", "content": "hi", "n": 1e999}]', "1e999 does not fit a finite"),
]


@pytest.mark.parametrize(("raw", "message"), MESSAGES_CASES)
@pytest.mark.parametrize("via", ["file", "stdin"])
def test_messages_that_cannot_be_echoed_are_refused(
    tmp_path: Path, raw: bytes, message: str, via: str
) -> None:
    """From a file or stdin (whatever the locale), exit 2 naming the byte or the value."""
    path = tmp_path / "m.json"
    path.write_bytes(raw)
    spec = str(path) if via == "file" else "-"
    proc = subprocess.run(
        [sys.executable, "-m", "compiler", "compile", "extract_invoice", "openai/gpt-4o-mini",
         *EXAMPLE, "--messages", spec, "--no-cache"],
        input=raw, capture_output=True, check=False, env={"CAPC_OFFLINE": "1", "LC_ALL": "C"},
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr.decode()
    assert proc.stdout == b"" and b"Traceback" not in proc.stderr


def test_endless_inputs_end_with_a_clear_error(capsys: pytest.CaptureFixture[str]) -> None:
    """/dev/zero as messages, metadata, models.yaml: a size-limit error, not a hang."""
    compile_ = ["compile", "extract_invoice", "openai/gpt-4o-mini", "--no-cache"]
    for argv, message in [
        ([*compile_, *EXAMPLE, "--messages", "/dev/zero"], "messages larger than the"),
        ([*compile_, *EXAMPLE, "--metadata", "/dev/zero"], "limit for a metadata file"),
        ([*compile_, "--models", "/dev/zero", "--stages", str(ROOT / "stages.yaml")],
         "limit for a declaration file"),
    ]:  # fmt: skip
        assert main(argv) == 2
        assert message in capsys.readouterr().err


def test_a_huge_declaration_file_fails_fast_and_says_why(tmp_path: Path) -> None:
    """Many nodes and no alias: the message says the file is too big, not "aliases"."""
    path = tmp_path / "models.yaml"
    path.write_text("models:\n" + "".join(f"  v/m{i}: {{notes: n}}\n" for i in range(60_000)))
    with pytest.raises(DeclarationError, match="more than 100,000 YAML nodes") as caught:
        load_models_file(path)
    assert "alias" not in str(caught.value)


def test_every_file_option_reads_a_pipe() -> None:
    """Process substitution works for --models, --stages, --metadata and --messages."""
    script = (
        f"{sys.executable} -m compiler compile extract_invoice openai/gpt-4o-mini"
        f" --models <(cat {ROOT / 'models.yaml'}) --stages {ROOT / 'stages.yaml'}"
        f" --metadata <(cat {SEED_MODELS}) --messages <(echo '[]') --json"
    )
    proc = subprocess.run(
        ["bash", "-c", script], capture_output=True, text=True, check=False, cwd=ROOT
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["request"]["model"] == "openai/gpt-4o-mini"

"""capc lock: a deterministic, atomic lock of every stage x model, checked against its schema."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from compiler.artifacts.lock import LockFileError, build_lock, dump_lock, read_lock, write_lock
from compiler.artifacts.lock_schema import LOCK_SCHEMA_ID, lock_json_schema
from compiler.cli.main import main
from compiler.request import compile_request
from registry.resolve.resolver import Registry
from tests.conftest import ROOT

#: Appended to models.yaml by the edit test: one declaration, one changed setting.
TEMPERATURE_OFF = """
  "openai/gpt-4o-mini":
    sampling:
      unsupported: [temperature]
"""


def copy_example(target: Path) -> tuple[Path, Path]:
    """Copy models.yaml, stages.yaml and contracts/ of the example into ``target``."""
    shutil.copytree(ROOT / "contracts", target / "contracts")
    for name in ("models.yaml", "stages.yaml"):
        shutil.copy(ROOT / name, target / name)
    return target / "models.yaml", target / "stages.yaml"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """Run capc in-process and return (exit code, stdout, stderr)."""
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_lock_check_edit_check_diff(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Lock, --check passes; edit models.yaml, --check fails; diff shows exactly that setting."""
    models, stages = copy_example(tmp_path)
    config = ["--models", str(models), "--stages", str(stages)]
    code, out, err = run(capsys, "lock", *config)
    assert code == 0, err
    lock = tmp_path / "capc.lock.json"
    assert out == "" and f"capc: note: wrote {lock}: 14 stage/model pair(s), 0 failed" in err
    assert run(capsys, "lock", "--check", *config)[0] == 0

    old = tmp_path / "old.lock.json"
    shutil.copy(lock, old)
    with models.open("a", encoding="utf-8") as handle:
        handle.write(TEMPERATURE_OFF)
    code, out, err = run(capsys, "lock", "--check", *config)
    assert code == 1
    # three stages, each in both attempts of gpt-4o-mini's route plan (the seed's endpoints)
    assert "is out of date: 6 setting(s) changed" in err
    assert lock.read_text(encoding="utf-8") == old.read_text(encoding="utf-8"), "check writes"

    assert run(capsys, "lock", *config)[0] == 0
    code, out, err = run(capsys, "diff", str(old), str(lock), "--json")
    assert code == 1, err
    changes = json.loads(out)["changes"]
    assert {(c["stage"], c["model"], c["path"]) for c in changes} == {
        (stage, "openai/gpt-4o-mini", path)
        for stage in ("extract_invoice", "classify_ticket", "draft_reply")
        for path in ("temperature", "attempt 2.temperature")
    }
    for change in changes:
        assert change["new_present"] is False and change["old"] is not None
        [why] = change["explanations"]
        assert (why["change"], why["kind"]) == ("now", "param.dropped")
        assert why["evidence"].startswith("models.yaml:")
        assert "sampling.unsupported" in why["evidence"]

    code, out, _ = run(capsys, "diff", str(old), str(lock))
    assert code == 1
    assert "  temperature: 0.2 -> (absent)\n    now param.dropped:" in out
    assert run(capsys, "diff", str(lock), str(lock))[0] == 0


def test_lock_is_deterministic_and_sorted(tmp_path: Path) -> None:
    """Two builds give the same text: sorted keys, a final newline, no clock readings."""
    registry = Registry.load(models=ROOT / "models.yaml", stages=ROOT / "stages.yaml")
    first = dump_lock(build_lock(registry))
    again = Registry.load(models=ROOT / "models.yaml", stages=ROOT / "stages.yaml")
    assert dump_lock(build_lock(again)) == first
    assert first.endswith("}\n")
    document = json.loads(first)
    assert list(document["stages"]) == sorted(document["stages"])
    assert document["$schema"] == LOCK_SCHEMA_ID
    assert document["generator"]["name"] == "capability-compiler"
    assert re.search(r"\d{2}:\d{2}:\d{2}", first) is None, "no time of day in the lock"


def test_lock_entry_rebuilds_the_compiled_body() -> None:
    """request + messages [instructions, *caller's] is exactly what compile_request sends."""
    registry = Registry.load(models=ROOT / "models.yaml", stages=ROOT / "stages.yaml")
    document = json.loads(dump_lock(build_lock(registry)))
    caller = [{"role": "user", "content": "Invoice INV-7, total 12.50 EUR"}]
    for stage, models in document["stages"].items():
        for model, entry in models.items():
            assert entry["status"] == "ok"
            shown = [] if entry["instructions"] is None else [entry["instructions"]]
            body = {**entry["request"], "messages": [*shown, *caller]}
            assert body == compile_request(stage, model, caller, registry=registry).body
            assert entry["report"]["rung"] == ("none" if stage == "draft_reply" else "schema")
            assert entry["metadata"]["source"] == "bundled seed"


def test_lock_matches_its_published_schema(capsys: pytest.CaptureFixture[str]) -> None:
    """The lock validates against lock_json_schema(), which equals the docs copy and --schema."""
    schema = lock_json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    registry = Registry.load(models=ROOT / "models.yaml", stages=ROOT / "stages.yaml")
    jsonschema.Draft202012Validator(schema).validate(json.loads(dump_lock(build_lock(registry))))
    published = ROOT / "docs" / "schema" / "lock.schema.json"
    assert json.loads(published.read_text(encoding="utf-8")) == schema
    code, out, _ = run(capsys, "lock", "--schema")
    assert code == 0 and json.loads(out) == schema
    assert schema["properties"]["$schema"]["const"] == LOCK_SCHEMA_ID


REFUSING_STAGES = """
stages:
  strict_sampling:
    reasoning: low
    output_tokens: 100
    sampling: {temperature: 0.3}
    policy: {param.dropped: refuse}
    models: [openai/gpt-5.1, openai/gpt-4o-mini]
  huge_prompt:
    output_tokens: 100
    estimated_prompt_tokens: 50000000
    models: [openai/gpt-4o-mini]
  unknown_model:
    output_tokens: 100
    models: [example/not-a-model]
"""


def test_refused_compiles_are_error_entries(tmp_path: Path) -> None:
    """AdjustmentRefused, PromptTooLongError and unknown models become error entries."""
    stages = tmp_path / "stages.yaml"
    stages.write_text(REFUSING_STAGES, encoding="utf-8")
    registry = Registry.load(models=ROOT / "models.yaml", stages=stages)
    document = json.loads(dump_lock(build_lock(registry)))
    jsonschema.Draft202012Validator(lock_json_schema()).validate(document)
    refused = document["stages"]["strict_sampling"]["openai/gpt-5.1"]
    assert refused["status"] == "error" and refused["request"] is None
    assert refused["error"]["type"] == "AdjustmentRefused"
    assert refused["error"]["kinds"] == ["param.dropped"]
    assert refused["report"]["adjustments"], "a refused compile keeps its report"
    assert document["stages"]["strict_sampling"]["openai/gpt-4o-mini"]["status"] == "ok"
    too_long = document["stages"]["huge_prompt"]["openai/gpt-4o-mini"]
    assert too_long["error"]["type"] == "PromptTooLongError" and too_long["report"] is None
    unknown = document["stages"]["unknown_model"]["example/not-a-model"]
    assert unknown["error"]["type"] == "UnknownModelError"


def test_write_is_atomic_and_keeps_the_mode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failed replace leaves the old lock and no temporary file; the file mode is kept."""
    target = tmp_path / "capc.lock.json"
    write_lock('{"old": true}\n', target)
    assert oct(target.stat().st_mode & 0o777) == oct(0o644)
    os.chmod(target, 0o600)
    write_lock('{"new": true}\n', target)
    assert target.stat().st_mode & 0o777 == 0o600

    def broken(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken)
    with pytest.raises(OSError):
        write_lock('{"newer": true}\n', target)
    assert target.read_text(encoding="utf-8") == '{"new": true}\n'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["capc.lock.json"]


def test_check_without_a_lock_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--check exits 1 when no lock exists, and names the file."""
    models, stages = copy_example(tmp_path)
    code, _, err = run(capsys, "lock", "--check", "--models", str(models), "--stages", str(stages))
    assert code == 1
    assert "capc.lock.json does not exist" in err


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "not valid JSON"),
        ('{"$schema": "urn:capability-compiler:lock:1", "format": 2}', "format"),
        ("[]", "not a capability-compiler lock"),
    ],
)
def test_read_lock_rejects_other_files(tmp_path: Path, text: str, message: str) -> None:
    """read_lock names what is wrong with a file that is not a lock."""
    path = tmp_path / "x.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(LockFileError, match=message):
        read_lock(path)


def test_compile_reads_messages_from_real_stdin() -> None:
    """capc compile STAGE MODEL --json --messages - reads a JSON message list piped to stdin."""
    messages = [{"role": "user", "content": "Ticket 42: I was charged twice."}]
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "compiler",
            "compile",
            "classify_ticket",
            "openai/gpt-4o-mini",
            "--json",
            "--messages",
            "-",
        ],
        input=json.dumps(messages),
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    payload: dict[str, Any] = json.loads(result.stdout)
    sent = payload["request"]["messages"]
    assert sent[0]["role"] == "system" and sent[1:] == messages


def test_docs_jq_example_builds_the_body(tmp_path: Path) -> None:
    """The jq example in docs/lock-and-audit.md builds the same body as compile_request."""
    if shutil.which("jq") is None:
        pytest.skip("jq is not installed")
    page = (ROOT / "docs" / "lock-and-audit.md").read_text(encoding="utf-8")
    match = re.search(r"<!-- tested: jq -->\n```sh\n(.*?)```", page, re.DOTALL)
    assert match, "docs/lock-and-audit.md lost its tested jq example"
    registry = Registry.load(models=ROOT / "models.yaml", stages=ROOT / "stages.yaml")
    (tmp_path / "capc.lock.json").write_text(dump_lock(build_lock(registry)), encoding="utf-8")
    messages = [{"role": "user", "content": "Invoice INV-9 from ACME, 3 items"}]
    (tmp_path / "messages.json").write_text(json.dumps(messages), encoding="utf-8")
    subprocess.run(["bash", "-euo", "pipefail", "-c", match.group(1)], cwd=tmp_path, check=True)
    body = json.loads((tmp_path / "body.json").read_text(encoding="utf-8"))
    expected = compile_request("extract_invoice", "openai/gpt-4o-mini", messages, registry=registry)
    assert body == expected.body

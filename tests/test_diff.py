"""capc diff: per stage and model, each setting that changed, with reason and evidence."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from compiler.artifacts.diff import ABSENT, diff_locks, render_changes
from compiler.cli.main import main
from tests.conftest import ROOT

STAGES = """
stages:
  label:
    contract: contracts/examples.py:TicketLabel
    output_tokens: 100
    sampling: {temperature: 0.3, top_k: 20}
    models: [example/chat]
"""


def snapshot(path: Path, parameters: list[str]) -> Path:
    """Write a one-model OpenRouter models list whose model lists ``parameters``."""
    model = {
        "id": "example/chat",
        "context_length": 32000,
        "pricing": {"prompt": "0.000001", "completion": "0.000002"},
        "top_provider": {"max_completion_tokens": 4096},
        "supported_parameters": parameters,
    }
    path.write_text(json.dumps({"data": [model]}), encoding="utf-8")
    return path


@pytest.fixture
def config(tmp_path: Path) -> list[str]:
    """A stages.yaml with one stage for example/chat, and the example contracts."""
    (tmp_path / "contracts").mkdir()
    source = (ROOT / "contracts" / "examples.py").read_text(encoding="utf-8")
    (tmp_path / "contracts" / "examples.py").write_text(source, encoding="utf-8")
    (tmp_path / "stages.yaml").write_text(STAGES, encoding="utf-8")
    (tmp_path / "models.yaml").write_text("models: {}\n", encoding="utf-8")
    return ["--stages", str(tmp_path / "stages.yaml"), "--models", str(tmp_path / "models.yaml")]


def diff_json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any]]:
    """Run capc diff --json and return the exit code and the parsed output."""
    code = main(["diff", *argv, "--json"])
    out, err = capsys.readouterr()
    assert code in (0, 1), err
    return code, json.loads(out)


def test_snapshots_temperature_now_dropped(
    tmp_path: Path, config: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """A parameter the new metadata no longer lists is 'now param.dropped' with that evidence."""
    full = ["max_tokens", "temperature", "top_k", "response_format", "structured_outputs"]
    old = snapshot(tmp_path / "models-2026-01-01.json", full)
    new = snapshot(tmp_path / "models-2026-02-01.json", [p for p in full if p != "temperature"])
    code, payload = diff_json(capsys, str(old), str(new), *config)
    assert code == 1
    [change] = payload["changes"]
    assert (change["stage"], change["model"], change["path"]) == (
        "label",
        "example/chat",
        "temperature",
    )
    assert (change["old"], change["new_present"]) == (0.3, False)
    [why] = change["explanations"]
    assert (why["change"], why["kind"]) == ("now", "param.dropped")
    assert why["evidence"] == (
        "metadata supported_parameters (models-2026-02-01.json, as of 2026-02-01)"
    )
    assert payload["old"] == "models-2026-01-01.json (file, as of 2026-01-01)"


def test_snapshots_rung_downgrade_is_explained(
    tmp_path: Path, config: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """Losing structured_outputs changes the rung and response_format, each explained."""
    full = ["max_tokens", "temperature", "top_k", "response_format", "structured_outputs"]
    old = snapshot(tmp_path / "models-2026-01-01.json", full)
    new = snapshot(tmp_path / "models-2026-02-01.json", full[:-1])
    code, payload = diff_json(capsys, str(old), str(new), *config)
    assert code == 1
    changes = {c["path"]: c for c in payload["changes"]}
    assert (changes["rung"]["old"], changes["rung"]["new"]) == ("schema", "json")
    assert (changes["response_format.type"]["old"], changes["response_format.type"]["new"]) == (
        "json_schema",
        "json_object",
    )
    assert changes["response_format.json_schema.schema"]["new_present"] is False
    for path in ("rung", "response_format.type"):
        kinds = {e["kind"] for e in changes[path]["explanations"]}
        assert "output.downgraded" in kinds
    assert "instructions" in changes, "the schema shown changed with the dialect"


def test_same_snapshot_twice_exits_0(
    tmp_path: Path, config: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """Nothing changed: exit 0 and an empty change list."""
    old = snapshot(tmp_path / "models-2026-01-01.json", ["max_tokens", "temperature"])
    code, payload = diff_json(capsys, str(old), str(old), *config)
    assert (code, payload["changed"], payload["changes"]) == (0, False, [])


def test_model_added_removed_and_now_failing() -> None:
    """Pairs that appear, disappear or start failing are changes of the pair itself."""
    ok = {"status": "ok", "request": {"model": "m", "max_tokens": 10}, "report": {"rung": "none"}}
    failing = {"status": "error", "error": {"type": "PromptTooLongError", "message": "too long"}}
    old = {"stages": {"s": {"a": ok, "b": ok, "c": ok}}}
    new = {"stages": {"s": {"b": ok, "c": failing, "d": ok}}}
    changes = {(c.model, c.path): (c.old, c.new) for c in diff_locks(old, new)}
    assert changes == {
        ("a", ""): ("ok", ABSENT),
        ("c", ""): ("ok", "error: PromptTooLongError: too long"),
        ("d", ""): (ABSENT, "ok"),
    }
    text = render_changes(diff_locks(old, new), old_label="x", new_label="y", pairs=4)
    assert "  pair: ok -> (not compiled)" in text
    assert "3 change(s) in 3 of 4 stage/model pair(s)" in text


def test_nested_paths_and_no_longer_explanations() -> None:
    """Bodies compare by dotted path; an adjustment only in the old report is 'no longer'."""
    clamp = {
        "kind": "tokens.clamped",
        "path": "max_tokens",
        "requested": 900,
        "applied": 500,
        "reason": "900 tokens exceed the model's max_completion_tokens",
        "evidence": {"text": "metadata top_provider.max_completion_tokens (old.json)"},
    }
    old_body = {"max_tokens": 500, "provider": {"require_parameters": True, "order": ["a"]}}
    new_body = {"max_tokens": 900, "provider": {"require_parameters": True, "order": ["b"]}}

    def lock(body: dict[str, Any], adjustments: list[Any]) -> dict[str, Any]:
        entry = {
            "status": "ok",
            "request": body,
            "report": {"rung": "none", "adjustments": adjustments},
        }
        return {"stages": {"s": {"m": entry}}}

    changes = diff_locks(lock(old_body, [clamp]), lock(new_body, []))
    assert [(c.path, c.old, c.new) for c in changes] == [
        ("max_tokens", 500, 900),
        ("provider.order", ["a"], ["b"]),
    ]
    [why] = changes[0].explanations
    assert why.to_text().startswith("no longer tokens.clamped: 900 tokens exceed")
    assert changes[1].explanations == ()


def test_mixed_inputs_and_bad_files_exit_2(
    tmp_path: Path, config: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """A lock against a models list, a non-JSON file, or --metadata are input errors (exit 2)."""
    old = snapshot(tmp_path / "models-2026-01-01.json", ["max_tokens"])
    lock = tmp_path / "capc.lock.json"
    assert main(["lock", "--metadata", str(old), "--output", str(lock), *config]) == 0
    capsys.readouterr()
    for argv in (
        [str(lock), str(old)],
        [str(tmp_path / "stages.yaml"), str(old)],
        [str(old), str(old), "--metadata", str(old)],
    ):
        assert main(["diff", *argv, *config]) == 2
        out, err = capsys.readouterr()
        assert out == "" and err.count("\n") == 1 and err.startswith("capc: error: ")


def test_example_stages_between_real_snapshots(
    shared_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """2026-05-01 -> 2026-08-19: gpt-5.1's effort is remapped; deepseek is no longer clamped,
    so its reasoning, turned off to keep the answer whole, is back on."""
    monkeypatch.chdir(ROOT)
    old = "../shared/data/openrouter/models-2026-05-01.json"
    new = "../shared/data/openrouter/models-2026-08-19.json"
    code, payload = diff_json(capsys, old, new)
    assert code == 1
    found = {(c["stage"], c["model"], c["path"]): c for c in payload["changes"]}
    assert set(found) == {  # the loop's timeouts follow the reasoning sent
        ("deep_analysis", "deepseek/deepseek-chat-v3.1", "loop.stream_idle_seconds"),
        ("deep_analysis", "deepseek/deepseek-chat-v3.1", "loop.timeout_seconds"),
        ("draft_reply", "openai/gpt-5.1", "loop.timeout_seconds"),
        ("deep_analysis", "deepseek/deepseek-chat-v3.1", "max_tokens"),
        ("deep_analysis", "deepseek/deepseek-chat-v3.1", "reasoning.effort"),
        ("draft_reply", "openai/gpt-5.1", "max_tokens"),
        ("draft_reply", "openai/gpt-5.1", "reasoning.effort"),
    }
    effort = found[("draft_reply", "openai/gpt-5.1", "reasoning.effort")]
    assert (effort["old"], effort["new"]) == ("minimal", "low")
    assert effort["explanations"][0]["kind"] == "reasoning.effort_mapped"
    assert "models-2026-08-19.json" in effort["explanations"][0]["evidence"]
    clamp = found[("deep_analysis", "deepseek/deepseek-chat-v3.1", "max_tokens")]
    assert clamp["explanations"][0]["change"] == "no longer"

    # docs/lock-and-audit.md shows this very output, produced by the command it shows.
    page = (ROOT / "docs" / "lock-and-audit.md").read_text(encoding="utf-8")
    shown = re.search(
        r"<!-- real diff -->\n```console\n\$ (capc diff [^\n]+)\n(.*?)```", page, re.DOTALL
    )
    assert shown, "docs/lock-and-audit.md lost its real diff"
    argv = shown.group(1).split()[1:]
    assert argv == ["diff", old, new]
    assert main(argv) == 1
    assert capsys.readouterr().out == shown.group(2)

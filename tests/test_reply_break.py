"""Cases a break test of the reply loop found, one table row each (issue 17, follow-up).

Responses and error bodies are recorded by hand in OpenRouter's documented shapes in
tests/fixtures/replies/break.json (no network): refusals, content filters and provider
errors are outcomes of their own, never repaired; errors are classified from the numeric
code first, then structured fields; ``metadata.raw`` only tells structured-output-
unsupported apart; the repair bound counts across downgrades; ``capc reply --attempt``
is 0-based like the API.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from compiler.compiled import CompiledRequest
from compiler.errors import (
    ProviderError,
    RepairsExhaustedError,
    ReplyBlockedError,
    ReplyValidationError,
)
from compiler.reply.classify import classify_error
from compiler.request import compile_request
from registry.resolve.resolver import Registry
from tests.conftest import ROOT

FIXTURES = ROOT / "tests" / "fixtures" / "replies"
BREAK = json.loads((FIXTURES / "break.json").read_text(encoding="utf-8"))
MESSAGES = [{"role": "user", "content": "Ticket: I was charged twice."}]
STRUCTURED = {"error": {"code": 400, "message": "Provider returned error", "metadata": {
    "raw": "json_schema response format is not supported by this model",
    "provider_name": "Together"}}}


@pytest.fixture
def snapshot(shared_dir: Path) -> Registry:
    return Registry.load(metadata=shared_dir / "models-2026-08-19.json",
                         models=ROOT / "models.yaml", stages=ROOT / "stages.yaml")


def compiled(registry: Registry, model: str = "openai/gpt-4o-mini") -> CompiledRequest:
    return compile_request("classify_ticket", model, MESSAGES, registry=registry)


def invalid(req: CompiledRequest) -> tuple[dict[str, Any], ReplyValidationError]:
    bad = json.loads((FIXTURES / "plain.json").read_text(encoding="utf-8"))
    bad["choices"][0]["message"]["content"] = '{"category": "billing"}'
    with pytest.raises(ReplyValidationError) as info:
        req.parse_response(bad)
    return bad, info.value


# --------------------------------------------- 1. refused / filtered / provider error


@pytest.mark.parametrize("row", BREAK["responses"], ids=[r["case"] for r in BREAK["responses"]])
def test_no_answer_is_an_outcome_not_a_validation_failure(
    row: dict[str, Any], snapshot: Registry
) -> None:
    req = compiled(snapshot)
    expected = ProviderError if row["outcome"] == "provider_error" else ReplyBlockedError
    with pytest.raises((ProviderError, ReplyBlockedError, ReplyValidationError)) as info:
        req.parse_response(row["response"])
    exc = info.value
    assert type(exc) is expected and not isinstance(exc, ReplyValidationError)
    if isinstance(exc, ReplyBlockedError):
        assert exc.reason == row["outcome"] and row["outcome"] in str(exc)
        assert "no repair turn" in str(exc) and "can't" not in str(exc)  # refusal kept out
        assert exc.refusal is None or "help with that" in exc.refusal
    else:
        assert exc.kind == row["kind"] and exc.kind != "timeout"
    with pytest.raises(TypeError, match="only invalid output is repaired"):
        req.repair(MESSAGES, exc)  # type: ignore[arg-type]


def test_capc_reply_names_the_outcome(
    tmp_path: Path, shared_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from compiler.cli.main import main

    rows = {r["case"]: r["response"] for r in BREAK["responses"]}
    for case, code, outcome in (("refusal field", 1, "refused"),
                                ("content_filter with no reply", 1, "filtered"),
                                ("finish_reason error, no error object", 2, None)):
        (tmp_path / "r.json").write_text(json.dumps(rows[case]), encoding="utf-8")
        argv = ["reply", "classify_ticket", "openai/gpt-4o-mini", str(tmp_path / "r.json"),
                "--json", "--metadata", str(shared_dir / "models-2026-08-19.json"),
                "--stages", str(ROOT / "stages.yaml"), "--models", str(ROOT / "models.yaml")]
        assert main(argv) == code, case
        out, err = capsys.readouterr()
        if outcome is None:
            assert "finish_reason error" in err and "Traceback" not in err
        else:
            assert json.loads(out)["outcome"] == outcome


# ------------------------------------------------------------- 2. error classification


@pytest.mark.parametrize("row", BREAK["errors"], ids=[r["case"] for r in BREAK["errors"]])
def test_error_classification(row: dict[str, Any], snapshot: Registry) -> None:
    found = classify_error(row["status"], row["body"])
    assert found.kind == row["kind"]
    assert found.status is None or isinstance(found.status, int)
    verdict = compiled(snapshot).after_error(row["status"], row["body"])
    assert verdict.kind == row["kind"]
    assert (verdict.retry is not None) is (row["kind"] == "structured_output_unsupported")
    shown = json.dumps([found.to_dict(), verdict.to_dict()])
    assert "SECRET-PROMPT-TEXT" not in shown and "maximum context" not in shown  # no raw


# -------------------------------------------------- 4. the repair bound across downgrades


def test_a_downgrade_keeps_the_repair_count(snapshot: Registry) -> None:
    req = compiled(snapshot)
    assert (req.rung, req.retries) == ("schema", 1)
    bad, error = invalid(req)
    repaired = req.repair(MESSAGES, error, response=bad)
    down = repaired.after_error(400, STRUCTURED).retry
    assert down is not None and down.rung == "tool"
    assert down.repairs == 1 and down.repair_turns == repaired.repair_turns
    assert down.body["messages"][1:] == [*MESSAGES, *repaired.repair_turns]
    with pytest.raises(RepairsExhaustedError):
        down.repair(MESSAGES, error)
    again = down.after_error(400, STRUCTURED).retry  # twice down: still counted
    assert again is not None and again.rung == "json" and again.repairs == 1


def test_a_downgrade_from_the_tool_rung_rewrites_the_repair_turns(snapshot: Registry) -> None:
    req = compiled(snapshot, "qwen/qwen3.7-flash")
    assert req.rung == "tool"
    name = req.body["tool_choice"]["function"]["name"]
    bad = json.loads((FIXTURES / "tool.json").read_text(encoding="utf-8"))
    bad["choices"][0]["message"]["tool_calls"][0]["function"].update(
        name=name, arguments='{"category": "bug"}')
    with pytest.raises(ReplyValidationError) as info:
        req.parse_response(bad)
    repaired = req.repair(MESSAGES, info.value, response=bad)
    down = repaired.after_error(400, STRUCTURED).retry
    assert down is not None and down.rung == "json" and down.repairs == 1
    assistant, fix = down.body["messages"][-2:]
    assert assistant == {"role": "assistant", "content": '{"category": "bug"}'}
    assert fix["role"] == "user" and "$.urgent" in fix["content"]
    assert "tools" not in down.body and all(m["role"] != "tool" for m in down.body["messages"])


def test_retries_zero_disables_repair(snapshot: Registry) -> None:
    from dataclasses import replace

    req = compiled(snapshot)
    _, error = invalid(req)
    with pytest.raises(RepairsExhaustedError):
        replace(req, retries=0).repair(MESSAGES, error)


# ---------------------------------------------------------------- 5. --attempt is 0-based


def _reply(tmp_path: Path, provider: str, attempt: str | None) -> list[str]:
    data = json.loads((FIXTURES / "plain.json").read_text(encoding="utf-8"))
    data["provider"] = provider
    (tmp_path / "r.json").write_text(json.dumps(data), encoding="utf-8")
    argv = ["reply", "classify_ticket", "openai/gpt-4o-mini", str(tmp_path / "r.json"),
            "--json", "--stages", str(ROOT / "stages.yaml"), "--models", str(ROOT / "models.yaml")]
    return argv + ([] if attempt is None else ["--attempt", attempt])


@pytest.mark.parametrize(("provider", "attempt", "code", "index", "note"), [
    ("Azure", None, 0, 0, None),                 # default: the first attempt
    ("Azure", "0", 0, 0, None),
    ("OpenAI", "1", 0, 1, None),                 # 0-based, as parse_response(attempt=1)
    ("OpenAI", "2", 0, 1, "old 1-based form"),   # only the old form can mean 2: the last
    ("Azure", "1", 2, None, "ambiguous"),        # served by attempt 0, which 1-based 1 meant
    ("OpenAI", "3", 2, None, "numbered 0 to 1"),
])
def test_capc_reply_attempt_is_zero_based(
    provider: str, attempt: str | None, code: int, index: int | None, note: str | None,
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    """The bundled seed splits gpt-4o-mini in two attempts: Azure (0), then OpenAI (1)."""
    from compiler.cli.main import main

    assert main(_reply(tmp_path, provider, attempt)) == code
    out, err = capsys.readouterr()
    if index is not None:
        got = json.loads(out)
        assert (got["attempt"], got["endpoint_check"]) == (index, "ok")
    assert (note or "") in err and "Traceback" not in err

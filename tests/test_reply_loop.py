"""The reply loop: whole responses, usage and cost, the repair turn, error classes,
timeouts. Fixtures in tests/fixtures/replies/ are hand-written in OpenRouter's shapes;
costs are exact Decimal equalities against hand-computed figures from the shared
2026-08-19 snapshot's prices."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from compiler.compiled import CompiledRequest
from compiler.errors import (
    ProviderError,
    RepairsExhaustedError,
    ReplyTruncatedError,
    ReplyValidationError,
)
from compiler.pricing.usage import Usage
from compiler.reply.classify import ERROR_CLASSES, classify_error
from compiler.reply.repair import REPAIR_TEMPLATE
from compiler.reply.response import load_response_text
from compiler.request import compile_request
from registry.resolve.resolver import Registry
from tests.conftest import ROOT

FIXTURES = ROOT / "tests" / "fixtures" / "replies"
MESSAGES = [{"role": "user", "content": "Ticket: I was charged twice."}]


def fixture(name: str) -> Any:
    return json.loads((FIXTURES / name).read_text(encoding="utf-8"))


@pytest.fixture
def snapshot(shared_dir: Path) -> Registry:
    """The example declarations over the shared 2026-08-19 models list (no endpoint data)."""
    return Registry.load(metadata=shared_dir / "models-2026-08-19.json",
                         models=ROOT / "models.yaml", stages=ROOT / "stages.yaml")


def compiled(registry: Registry, model: str, stage: str = "classify_ticket") -> CompiledRequest:
    return compile_request(stage, model, MESSAGES, registry=registry)


# ------------------------------------------------------------------ whole responses, costs


def test_plain_reply_with_cache_read_and_reported_cost(snapshot: Registry) -> None:
    req = compiled(snapshot, "openai/gpt-4o-mini")
    got = req.parse_response(fixture("plain.json"))
    assert got.output.category == "billing" and got.finish_reason == "stop"
    assert got.usage == Usage(input_tokens=1000, cache_read_tokens=200, output_tokens=50,
                              reasoning_tokens=0, audio_tokens=0,
                              reported_cost=Decimal("0.000165"))
    # 800 x 0.00000015 + 200 x 0.000000075 + 50 x 0.0000006
    assert got.cost.usd == Decimal("0.000165") and got.cost.difference == Decimal(0)
    assert got.cost.source == "models-2026-08-19.json (file, as of 2026-08-19)"
    assert got.cost.date == "2026-08-19"
    assert got.endpoint_check == "unchecked"  # a --metadata file and no endpoint data


def test_fenced_reply_and_reasoning_at_its_own_rate(snapshot: Registry) -> None:
    req = compiled(snapshot, "perplexity/sonar-deep-research")
    assert req.rung == "prompt"
    got = req.parse_response(fixture("fenced.json"))
    assert got.output.urgent is True
    # 500 x 0.000002 + (3200 - 3000) x 0.000008 + 3000 x 0.000003 (internal_reasoning)
    assert got.cost.usd == Decimal("0.0116")
    assert {line.item: line.price_key for line in got.cost.lines}["reasoning"] == (
        "internal_reasoning")


def test_tool_rung_reads_the_forced_call_with_tier_prices(snapshot: Registry) -> None:
    req = compiled(snapshot, "qwen/qwen3.7-flash")
    assert req.rung == "tool"
    response = fixture("tool.json")
    name = req.body["tool_choice"]["function"]["name"]
    response["choices"][0]["message"]["tool_calls"][0]["function"]["name"] = name
    got = req.parse_response(response)
    assert got.output.category == "billing" and got.tool_calls == ()
    # 40000 prompt tokens > 32000: tier prices. 30000 x 0.0000001 + 10000 x 0.00000002
    # + 100 x 0.0000004
    assert got.cost.usd == Decimal("0.00324")
    assert got.usage.reasoning_tokens is None  # not reported: None, never 0


def test_stream_chunks_and_sse_dump_equal_the_whole_response(snapshot: Registry) -> None:
    req = compiled(snapshot, "openai/gpt-4o-mini")
    whole = req.parse_response(fixture("plain.json"))
    chunks = req.parse_response(fixture("stream.json"))
    dump = req.parse_response(load_response_text(
        (FIXTURES / "stream.sse").read_text(encoding="utf-8")))
    assert chunks.output == dump.output == whole.output
    assert chunks.cost.usd == dump.cost.usd == Decimal("0.000165")
    assert chunks.usage.reasoning_tokens is None


def test_cache_writes_priced_and_the_difference_reported(snapshot: Registry) -> None:
    req = compiled(snapshot, "anthropic/claude-sonnet-4.5")
    got = req.parse_response(fixture("cache_write.json"))
    # 500 x 0.000003 + 3000 x 0.0000003 + 1500 x 0.00000375 + 400 x 0.000015
    assert got.cost.usd == Decimal("0.014025")
    assert got.cost.reported_usd == Decimal("0.014")
    assert got.cost.difference == Decimal("-0.000025")
    assert any("0.014 USD" in n for n in got.cost.notes)
    # a one-hour cache (cache_control.ttl 1h) is priced at input_cache_write_1h
    hour = compile_request("classify_ticket", "anthropic/claude-sonnet-4.5", [{
        "role": "user", "content": [{"type": "text", "text": "x",
                                     "cache_control": {"type": "ephemeral", "ttl": "1h"}}]}],
        registry=snapshot)
    # 500 x 0.000003 + 3000 x 0.0000003 + 1500 x 0.000006 + 400 x 0.000015
    assert hour.parse_response(fixture("cache_write.json")).cost.usd == Decimal("0.0174")


def test_length_with_reasoning_that_used_every_token(snapshot: Registry) -> None:
    req = compiled(snapshot, "perplexity/sonar-deep-research")
    with pytest.raises(ReplyTruncatedError) as info:
        req.parse_response(fixture("length.json"))
    assert info.value.reasoning_tokens == 4000 and not info.value.answered
    limit = req.body["max_tokens"]
    assert f"reasoning used 4000 of max_tokens {limit} tokens" in str(info.value)
    assert not isinstance(info.value, ReplyValidationError)  # never a repair
    # 600 x 0.000002 + 4000 x 0.000003
    assert info.value.cost.usd == Decimal("0.0132")


def test_endpoint_checked_against_the_attempt_sent() -> None:
    """The bundled seed splits gpt-4o-mini in two attempts (Azure, then OpenAI)."""
    registry = Registry.load(models=ROOT / "models.yaml", stages=ROOT / "stages.yaml")
    req = compiled(registry, "openai/gpt-4o-mini")
    assert len(req.plan) == 2 and req.attempts[0].endpoints == ("openai",)
    response = fixture("plain.json")  # provider "OpenAI"
    first = req.parse_response(response)
    assert first.endpoint_check == "mismatch"
    assert "plan[1] (attempt=1)" in (first.endpoint_note or "")
    second = req.parse_response(response, attempt=1)
    assert (second.endpoint_check, second.endpoint, second.attempt) == ("ok", "openai", 1)
    assert "endpoints of openai/gpt-4o-mini" in second.cost.source


def test_a_streamed_error_is_a_provider_error_not_a_validation_failure(
    snapshot: Registry,
) -> None:
    req = compiled(snapshot, "openai/gpt-4o-mini")
    chunks = [*fixture("stream.json")[:1], {"error": {"code": 502, "message": "upstream died"},
                                            "choices": [{"index": 0, "delta": {},
                                                         "finish_reason": "error"}]}]
    with pytest.raises(ProviderError) as info:
        req.parse_response(chunks)
    assert info.value.kind == "server"


# ------------------------------------------------------------------------ the repair turn


def test_repair_turn_is_value_free_and_bounded(snapshot: Registry) -> None:
    marker = "ZQX-MARKER-7731"
    req = compiled(snapshot, "openai/gpt-4o-mini")
    bad = fixture("plain.json")
    bad["choices"][0]["message"]["content"] = json.dumps(
        {"category": marker, "urgent": marker, "confidence": 7, marker: marker})
    with pytest.raises(ReplyValidationError) as info:
        req.parse_response(bad)
    error = info.value
    shown = [str(error), repr(error), json.dumps(error.to_dict()), repr(error.usage),
             json.dumps(error.cost.to_dict())]
    assert all(marker not in text for text in shown)
    assert {p for p, _ in error.errors} >= {"$.category", "$.urgent", "$.confidence"}
    # Without the response, the whole request holds no value from the reply.
    clean = req.repair(MESSAGES, error)
    assert marker not in json.dumps(clean.body)
    assert clean.body["messages"][:-1] == req.body["messages"]
    assert {k: v for k, v in clean.body.items() if k != "messages"} == {
        k: v for k, v in req.body.items() if k != "messages"}
    # With it, the reply goes back as the assistant turn; the repair message stays clean.
    again = req.repair(MESSAGES, error, response=bad)
    assistant, fix = again.body["messages"][-2:]
    assert assistant["role"] == "assistant" and fix["role"] == "user"
    assert marker not in fix["content"]
    assert fix["content"].startswith(REPAIR_TEMPLATE.split("{problems}")[0])
    assert again.repairs == 1 and again.attempts == ()
    with pytest.raises(RepairsExhaustedError):  # output.retries defaults to 1
        again.repair(MESSAGES, error)


def test_repair_at_the_tool_rung_answers_the_call(snapshot: Registry) -> None:
    req = compiled(snapshot, "qwen/qwen3.7-flash")
    name = req.body["tool_choice"]["function"]["name"]
    bad = fixture("tool.json")
    call = bad["choices"][0]["message"]["tool_calls"][0]["function"]
    call.update(name=name, arguments='{"category": "bug"}')
    with pytest.raises(ReplyValidationError) as info:
        req.parse_response(bad)
    assistant, tool = req.repair(MESSAGES, info.value, response=bad).body["messages"][-2:]
    assert assistant["tool_calls"][0]["id"] == tool["tool_call_id"] == "call_1"
    assert tool["role"] == "tool" and "$.urgent" in tool["content"]


# -------------------------------------------------------------- error classes, downgrade


ERRORS = fixture("errors.json")


@pytest.mark.parametrize("case", ERRORS, ids=[f"{c['status']}-{c['kind']}-{i}"
                                              for i, c in enumerate(ERRORS)])
def test_error_table(case: dict[str, Any]) -> None:
    found = classify_error(case["status"], case["body"])
    assert found.kind == case["kind"]
    assert "SECRET-PROMPT-TEXT" not in json.dumps(found.to_dict())


def test_the_table_covers_every_class() -> None:
    assert len(ERRORS) >= 12 and {c["kind"] for c in ERRORS} == set(ERROR_CLASSES)


def test_downgrade_only_for_structured_output_unsupported(snapshot: Registry) -> None:
    req = compiled(snapshot, "openai/gpt-4o-mini")
    assert req.rung == "schema"
    for case in ERRORS:
        verdict = req.after_error(case["status"], case["body"])
        assert verdict.kind == case["kind"]
        if case["kind"] == "structured_output_unsupported":
            assert verdict.retry is not None and verdict.retry.rung == "tool"
            kinds = [a.kind for a in verdict.retry.report.adjustments]
            assert "output.downgraded_after_error" in kinds
        else:
            assert verdict.retry is None, case
    tool = req.after_error(*(ERRORS[0]["status"], ERRORS[0]["body"])).retry
    assert tool is not None
    json_rung = tool.after_error(ERRORS[0]["status"], ERRORS[0]["body"]).retry
    assert json_rung is not None and json_rung.rung == "json"
    assert json_rung.body["messages"][1:] == MESSAGES  # the caller's messages carry over


def test_no_downgrade_unless_policy_auto(snapshot: Registry) -> None:
    from dataclasses import replace

    from compiler.intent import Intent

    decl = snapshot.stage("classify_ticket")
    intent = replace(Intent.from_stage("classify_ticket", decl, base_dir=ROOT),
                     output_policy="required")
    req = compile_request(intent, "openai/gpt-4o-mini", MESSAGES, registry=snapshot)
    assert req.after_error(ERRORS[0]["status"], ERRORS[0]["body"]).retry is None


def test_no_endpoint_names_the_next_attempt() -> None:
    registry = Registry.load(models=ROOT / "models.yaml", stages=ROOT / "stages.yaml")
    req = compiled(registry, "openai/gpt-4o-mini")
    verdict = req.after_error(404, {"error": {"code": 404, "message": "No endpoints found"}})
    assert verdict.retry is None and verdict.next_attempt is req.attempts[0]


# ------------------------------------------------------------------------------ timeouts


def test_timeouts_are_derived_and_reach_the_sdk(snapshot: Registry) -> None:
    req = compiled(snapshot, "openai/gpt-5.1", "deep_analysis")
    assert req.body["reasoning"] == {"effort": "high"}
    # idle 180 s for high; total = 180 + ceil(max_tokens / 20)
    assert req.stream_idle_seconds == 180.0
    assert req.timeout_seconds == 180.0 + -(-req.body["max_tokens"] // 20)
    kwargs = req.to_openai_kwargs()
    assert kwargs["timeout"].read == req.timeout_seconds
    assert req.to_openai_kwargs(stream=True)["timeout"].read == 180.0


def test_declared_timeouts_win(tmp_path: Path, shared_dir: Path) -> None:
    stages = (ROOT / "stages.yaml").read_text(encoding="utf-8").replace(
        "    output: schema\n    models:\n      - openai/gpt-4o-mini\n",
        "    timeout_seconds: 45\n    stream_idle_seconds: 9.5\n"
        "    output: {ceiling: schema, retries: 0}\n    models:\n      - openai/gpt-4o-mini\n", 1)
    stages = stages.replace("contracts/", str(ROOT / "contracts") + "/")
    (tmp_path / "stages.yaml").write_text(stages, encoding="utf-8")
    registry = Registry.load(metadata=shared_dir / "models-2026-08-19.json",
                             models=ROOT / "models.yaml", stages=tmp_path / "stages.yaml")
    req = compiled(registry, "openai/gpt-4o-mini")
    assert (req.timeout_seconds, req.stream_idle_seconds, req.retries) == (45.0, 9.5, 0)


# ------------------------------------------------------------------ end to end, the CLI


def test_end_to_end_with_the_openai_sdk(snapshot: Registry, openrouter_server: Any) -> None:
    """compile -> send with openai -> invalid reply -> repair -> valid reply -> parse."""
    import openai

    from tests.conftest import Reply

    bad, good = fixture("plain.json"), fixture("plain.json")
    bad["choices"][0]["message"]["content"] = '{"category": "billing", "urgent": "maybe"}'
    openrouter_server.script("/api/v1/chat/completions", Reply(bad), Reply(good))
    client = openai.OpenAI(base_url=openrouter_server.base_url, api_key="test", max_retries=0)
    req = compiled(snapshot, "openai/gpt-4o-mini")
    usage, outputs, sent = Usage(responses=0), [], req
    for _ in range(1 + req.retries):
        raw = client.chat.completions.create(**sent.to_openai_kwargs()).model_dump()
        try:
            parsed = sent.parse_response(raw)
        except ReplyValidationError as exc:
            usage += exc.usage
            sent = sent.repair(MESSAGES, exc, response=raw)
            continue
        usage += parsed.usage
        outputs.append(parsed.output)
        break
    assert openrouter_server.hits("/api/v1/chat/completions") == 2
    assert len(outputs) == 1 and outputs[0].category == "billing"
    first, second = openrouter_server.bodies
    assert first == req.body and second == sent.body
    assert "$.urgent" in second["messages"][-1]["content"]
    assert (usage.input_tokens, usage.output_tokens, usage.responses) == (2000, 100, 2)
    assert usage.reported_cost == Decimal("0.00033")


def test_audit_prices_reasoning_at_its_own_rate(
    shared_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """sonar-deep-research on deep_analysis: 24192 = 16000 answer + 8192 reasoning tokens;
    the 8192 at internal_reasoning (0.000003), not completion (0.000008)."""
    from compiler.cli.main import main

    stages = (ROOT / "stages.yaml").read_text(encoding="utf-8").replace(
        "contracts/", str(ROOT / "contracts") + "/").replace(
        "      - deepseek/deepseek-chat-v3.1\n",
        "      - deepseek/deepseek-chat-v3.1\n      - perplexity/sonar-deep-research\n", 1)
    (tmp_path / "stages.yaml").write_text(stages, encoding="utf-8")
    argv = ["audit", "--stage", "deep_analysis", "--model", "perplexity/*", "--json",
            "--metadata", str(shared_dir / "models-2026-08-19.json"),
            "--stages", str(tmp_path / "stages.yaml"), "--models", str(ROOT / "models.yaml")]
    assert main(argv) == 0
    (row,) = json.loads(capsys.readouterr().out)["rows"]
    cost = row["cost"]
    assert (row["max_tokens"], cost["reasoning_tokens"], cost["reasoning_price"]) == (
        24192, 8192, "0.000003")
    # 530 x 0.000002 + 16000 x 0.000008 + 8192 x 0.000003 (was 0.194596 with all 24192
    # tokens at the completion rate)
    assert Decimal(cost["usd"]) == Decimal("0.153636")


@pytest.mark.parametrize(("name", "code"), [("plain.json", 0), ("stream.sse", 0),
                                             ("length.json", 1), ("error.json", 2)])
def test_capc_reply_exit_codes(
    name: str, code: int, shared_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from compiler.cli.main import main

    argv = ["reply", "classify_ticket", "openai/gpt-4o-mini", str(FIXTURES / name), "--json",
            "--metadata", str(shared_dir / "models-2026-08-19.json"),
            "--stages", str(ROOT / "stages.yaml"), "--models", str(ROOT / "models.yaml")]
    assert main(argv) == code
    out, err = capsys.readouterr()
    if code == 2:  # a provider error: one object on stdout (--json), the message on stderr
        assert err.startswith("capc: error:") and "Traceback" not in err
        shown = json.loads(out)
        assert shown["outcome"] == "error" and shown["valid"] is False
        assert shown["kind"] and "status" in shown
        assert shown["ok"] is False and shown["error"]["kind"] == "provider_rate_limit"
    else:
        assert json.loads(out)["valid"] is (code == 0)


def test_capc_reply_prints_no_value_of_an_invalid_reply(
    tmp_path: Path, shared_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from compiler.cli.main import main

    bad = fixture("plain.json")
    bad["choices"][0]["message"]["content"] = '{"category": "MARKER-5521", "urgent": 1}'
    (tmp_path / "bad.json").write_text(json.dumps(bad), encoding="utf-8")
    for extra in ([], ["--json"]):
        argv = ["reply", "classify_ticket", "openai/gpt-4o-mini", str(tmp_path / "bad.json"),
                *extra, "--metadata", str(shared_dir / "models-2026-08-19.json"),
                "--stages", str(ROOT / "stages.yaml"), "--models", str(ROOT / "models.yaml")]
        assert main(argv) == 1
        out, err = capsys.readouterr()
        assert "MARKER-5521" not in out + err and "$.category" in out


def test_a_call_to_an_undeclared_function_is_not_an_answer() -> None:
    """No content and a call to a function the request does not declare: invalid."""
    from pydantic import BaseModel

    from compiler import Intent, OutputContract, ReplyValidationError, compile_request

    class Label(BaseModel):
        """A label."""

        name: str

    req = compile_request(Intent(stage="t", contract=OutputContract.from_type(Label),
                                 output_tokens=100), "openai/gpt-4o-mini")
    response = {"choices": [{"finish_reason": "tool_calls", "message": {
        "role": "assistant", "content": None, "tool_calls": [{
            "id": "c1", "type": "function",
            "function": {"name": "respond", "arguments": "{}"}}]}}]}
    with pytest.raises(ReplyValidationError, match="does not declare: respond"):
        req.parse_response(response)

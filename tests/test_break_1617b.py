"""Cases the second break test of the reply loop (#17) and tools (#16) found, a table row
each: provider errors every reader agrees on, structured-output downgrades only when the
clause is about the feature, bounded error parsing, the pre-send check, tool schema files
that are not regular files, a self-recursive tool's description, tool-call arguments."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from compiler.errors import ConversationError, ProviderError, ToolError
from compiler.reply.classify import classify_error
from compiler.reply.response import assemble, load_response_text
from compiler.request import compile_request
from compiler.schema.dialects import DIALECTS
from compiler.tools.calls import parse_tool_calls
from compiler.tools.conversation import check_conversation
from compiler.tools.projection import project_tools
from compiler.tools.tool import Tool
from registry.resolve.resolver import Registry
from tests.conftest import ROOT

MESSAGES = [{"role": "user", "content": "Ticket: I was charged twice."}]
VALID = '{"category": "billing", "urgent": false, "confidence": 0.5}'


def _response(**choice: Any) -> dict[str, Any]:
    message = {"role": "assistant", "content": VALID}
    return {"id": "r", "object": "chat.completion", "created": 0, "model": "openai/gpt-4o-mini",
            "choices": [{"index": 0, "message": message, "finish_reason": "stop", **choice}]}


@pytest.fixture
def snapshot(shared_dir: Path) -> Registry:
    return Registry.load(metadata=shared_dir / "models-2026-08-19.json",
                         models=ROOT / "models.yaml", stages=ROOT / "stages.yaml")


# ------------------------------------------------- 1. one rule for errors in a response

ERRORS_IN_RESPONSES = [
    ("string error, no choices", {"error": "boom"}),
    ("string error beside a valid answer", {**_response(), "error": "boom"}),
    ("empty error object", {**_response(), "error": {}}),
    ("choice-level error, finish_reason stop",
     _response(error={"code": 502, "message": "upstream failed"})),
    ("stream chunk with a string error", [
        {"choices": [{"index": 0, "delta": {"content": VALID}}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}], "error": "boom"}]),
]


@pytest.mark.parametrize(("case", "response"), ERRORS_IN_RESPONSES,
                         ids=[c for c, _ in ERRORS_IN_RESPONSES])
def test_any_non_null_error_is_a_provider_error(
    case: str, response: Any, snapshot: Registry
) -> None:
    req = compile_request("classify_ticket", "openai/gpt-4o-mini", MESSAGES, registry=snapshot)
    assert assemble(response).error is not None
    with pytest.raises(ProviderError):
        req.parse_response(response)


def test_null_error_and_text_parts_are_an_answer(snapshot: Registry) -> None:
    req = compile_request("classify_ticket", "openai/gpt-4o-mini", MESSAGES, registry=snapshot)
    response = {**_response(), "error": None}
    parts = [{"type": "text", "text": VALID[:9]}, {"type": "text", "text": VALID[9:]}]
    response["choices"][0]["message"]["content"] = parts
    assert req.parse_response(response).output.category == "billing"


@pytest.mark.parametrize(("response", "code", "outcome"), [
    ({"error": "boom"}, 2, "error"),
    ({"error": {"code": 429, "message": "Rate limit exceeded"}}, 2, "error"),
])
def test_capc_reply_on_a_provider_error(
    response: Any, code: int, outcome: str, tmp_path: Path, shared_dir: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from compiler.cli.main import main

    for as_json in (False, True):
        (tmp_path / "r.json").write_text(json.dumps(response), encoding="utf-8")
        argv = ["reply", "classify_ticket", "openai/gpt-4o-mini", str(tmp_path / "r.json"),
                "--metadata", str(shared_dir / "models-2026-08-19.json"),
                "--stages", str(ROOT / "stages.yaml"), "--models", str(ROOT / "models.yaml")]
        assert main(argv + (["--json"] if as_json else [])) == code
        out, err = capsys.readouterr()
        assert err.startswith("capc: error:") and "Traceback" not in err
        if as_json:
            shown = json.loads(out)
            assert shown["outcome"] == outcome and shown["kind"] and "status" in shown
        else:
            assert out == ""


def test_a_byte_order_mark_is_accepted() -> None:
    assert load_response_text("\ufeff" + json.dumps(_response()))["id"] == "r"


# ------------------------------ 2./3. structured-output downgrades and bounded parsing


def _provider(raw: str) -> dict[str, Any]:
    return {"error": {"code": 400, "message": "Provider returned error",
                      "metadata": {"raw": raw, "provider_name": "X"}}}


NOT_STRUCTURED = [
    "response_format is fine, but logprobs is not supported",
    "The model accepts response_format, but seed is not supported",
    "Input contains \u201cresponse_format is not supported\u201d text",
    "Input contains \u00abresponse_format is not supported\u00bb text",
    "messages[0].content: response_format is not supported",
    "Input validation failed for messages[1].content: json_schema is not supported",
    "response_format is set; temperature is not supported",
    "[" * 100_000,
    '{"a":' * 50_000,
]
STRUCTURED = [
    "json_schema response format is not supported by this model",
    '{"error":{"message":"This response_format type is unavailable now"}}',
    "'response_format' is not supported with this model",
    "Structured outputs are not supported for this model",
    "This model does not support response_format. Retry without it",
    "text.format: json_schema is not supported",
]


@pytest.mark.parametrize("raw", NOT_STRUCTURED, ids=[r[:40] for r in NOT_STRUCTURED])
def test_no_downgrade_for_another_subject(raw: str, snapshot: Registry) -> None:
    req = compile_request("classify_ticket", "openai/gpt-4o-mini", MESSAGES, registry=snapshot)
    verdict = req.after_error(400, _provider(raw))
    assert verdict.kind == "invalid_request" and verdict.retry is None


@pytest.mark.parametrize("raw", STRUCTURED, ids=[r[:40] for r in STRUCTURED])
def test_the_feature_as_subject_still_downgrades(raw: str) -> None:
    assert classify_error(400, _provider(raw)).kind == "structured_output_unsupported"


@pytest.mark.parametrize("body", ["[" * 100_000, '{"a":' * 50_000, b"[" * 100_000])
def test_a_deeply_nested_body_is_a_verdict(body: Any) -> None:
    assert classify_error(400, body).kind == "invalid_request"
    assert classify_error(None, body).kind == "timeout"


# ---------------------------------------------------------------- 4./5. pre-send check

PRE_SEND = [
    ("user content []", [{"role": "user", "content": []}], "content"),
    ("system content []", [{"role": "system", "content": []}], "content"),
    ("tool call without type", [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "function": {"name": "f", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "x"}], "tool_call"),
    ("tool call with an empty name", [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "x"}], "tool_call"),
]


@pytest.mark.parametrize(("case", "messages", "rule"), PRE_SEND, ids=[c for c, *_ in PRE_SEND])
def test_pre_send_refuses(case: str, messages: list[Any], rule: str) -> None:
    with pytest.raises(ConversationError) as info:
        check_conversation(messages)
    assert info.value.rule == rule


def test_pre_send_accepts_an_empty_string_and_calls_with_empty_content() -> None:
    check_conversation([{"role": "user", "content": ""}])
    check_conversation([
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [], "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "x"}])


# -------------------------------------------------- 6. tool schema files: regular only


@pytest.mark.parametrize("kind", ["device", "fifo", "directory"])
def test_a_schema_file_that_is_not_regular_is_refused(kind: str, tmp_path: Path) -> None:
    target = tmp_path / "s.json"
    if kind == "device":
        if not Path("/dev/zero").exists():
            pytest.skip("no /dev/zero")
        target.symlink_to("/dev/zero")
    elif kind == "fifo":
        if not hasattr(os, "mkfifo"):
            pytest.skip("no FIFOs here")
        os.mkfifo(target)
    else:
        target.mkdir()
    with pytest.raises(ToolError, match=str(target)):
        Tool.from_file("q", "s.json", base_dir=tmp_path)


def test_capc_check_refuses_a_fifo_schema(
    tmp_path: Path, shared_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from compiler.cli.main import main

    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs here")
    os.mkfifo(tmp_path / "f.json")
    (tmp_path / "stages.yaml").write_text(
        "stages:\n  s:\n    output_tokens: 100\n    tools:\n      - name: q\n"
        "        input_schema: f.json\n", encoding="utf-8")
    for command in ("check", "compile"):
        argv = [command, "--stages", str(tmp_path / "stages.yaml"),
                "--models", str(ROOT / "models.yaml"),
                "--metadata", str(shared_dir / "models-2026-08-19.json")]
        argv += ["s", "openai/gpt-4o-mini"] if command == "compile" else []
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert "f.json" in err and "FIFO" in err and "Traceback" not in err


# ---------------------------------------------- 7. a self-recursive tool's description


class Node(BaseModel):
    """A node of an outline."""

    title: str
    children: list[Node] = []


def test_a_recursive_tool_sends_its_description_once() -> None:
    tool = Tool.from_model(Node)
    sent = json.dumps(tool.function(tool.schema, strict=False))
    assert sent.count("A node of an outline.") == 1
    assert tool.description == "A node of an outline."
    plain = Tool.from_schema("x", {"$ref": "#/$defs/A", "$defs": {"A": {
        "type": "object", "description": "d", "properties": {"a": {"type": "integer"}}}}})
    assert "$defs" not in plain.schema and plain.description == "d"


# ------------------------------------------------------------ 8. tool-call arguments


class Query(BaseModel):
    q: str


@pytest.mark.parametrize("tool", [Tool.from_model(Query),
                                  Tool.from_schema("Query", Query.model_json_schema())])
@pytest.mark.parametrize(("arguments", "path", "says"), [
    ({"q": "aaa"}, "$", "arguments is not a JSON string"),
    ('{"q":"aaa","q":"ZZ"}', "$.q", "written twice"),
    ('{"q":"aaa","zz-secret":1,"zz-secret":2}', "$[*]", "written twice"),
])
def test_tool_call_arguments(tool: Tool, arguments: Any, path: str, says: str) -> None:
    (item,) = project_tools([tool], DIALECTS["openai-strict"])
    message = {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "Query", "arguments": arguments}}]}
    (call,) = parse_tool_calls(message, (item,))
    assert not call.ok and call.arguments is None
    assert call.errors[0][0] == path and says in call.errors[0][1]
    shown = repr(call.errors)
    assert "aaa" not in shown and "ZZ" not in shown and "zz-secret" not in shown


# ------------------------------------------------------------------------- smaller ones


def test_a_one_character_refusal_is_singular() -> None:
    from compiler.errors import ReplyBlockedError

    one = ReplyBlockedError(reason="refused", finish_reason="stop", refusal="x")
    assert "1 character," in str(one)
    assert "2 characters," in str(ReplyBlockedError(reason="refused", finish_reason="stop",
                                                     refusal="xy"))


def test_a_tool_schema_file_change_is_not_called_a_contract_module() -> None:
    from compiler.artifacts.lock_inputs import input_changes

    lines = input_changes({"contracts": {"schemas/q.json": "a"}},
                          {"contracts": {"schemas/q.json": "b", "contracts/x.py": "c"}})
    assert any(line.startswith("tool schema file schemas/q.json") for line in lines)
    assert any(line.startswith("contract module contracts/x.py") for line in lines)


def _check(tmp_path: Path, shared_dir: Path, stages: str,
           capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    from compiler.cli.main import main

    (tmp_path / "stages.yaml").write_text(stages, encoding="utf-8")
    code = main(["check", "--stages", str(tmp_path / "stages.yaml"),
                 "--models", str(ROOT / "models.yaml"),
                 "--metadata", str(shared_dir / "models-2026-08-19.json")])
    return code, capsys.readouterr().err


def test_a_duplicate_tool_name_names_the_tool_at_the_second_entry(
    tmp_path: Path, shared_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, err = _check(tmp_path, shared_dir, (
        "stages:\n  s:\n    output_tokens: 100\n    tools:\n      - name: q\n"
        "        properties: {a: {type: integer}}\n      - name: q\n"
        "        properties: {a: {type: integer}}\n"), capsys)
    assert code == 2 and ":7:" in err and "tools[1].name" in err and "'q'" in err


def test_a_module_schema_in_the_stages_folder_gets_a_hint(
    tmp_path: Path, shared_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "capc_tools_1617b").mkdir()
    (tmp_path / "capc_tools_1617b" / "__init__.py").write_text("BIG = {}\n", encoding="utf-8")
    code, err = _check(tmp_path, shared_dir, (
        "stages:\n  s:\n    output_tokens: 100\n    tools:\n      - name: q\n"
        "        input_schema: capc_tools_1617b:BIG\n"), capsys)
    assert code == 2 and "not on the import path" in err and "PYTHONPATH" in err


def test_capc_check_reports_a_recursive_tool_a_dialect_refuses(
    tmp_path: Path, shared_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "tree_1617b.py").write_text(
        "from __future__ import annotations\nfrom pydantic import BaseModel\n\n\n"
        "class Node(BaseModel):\n    title: str\n    children: list[Node] = []\n",
        encoding="utf-8")
    code, err = _check(tmp_path, shared_dir, (
        "stages:\n  s:\n    output_tokens: 100\n    models:\n"
        "      - google/gemini-2.5-pro\n      - openai/gpt-4o-mini\n    tools:\n"
        "      - model: tree_1617b.py:Node\n"), capsys)
    assert code == 2 and "recursive" in err and "google/gemini-2.5-pro" in err
    assert "openai/gpt-4o-mini" not in err


def test_a_mapping_as_an_intent_tool_is_a_tool_error() -> None:
    from compiler.intent import Intent

    with pytest.raises(ToolError, match=r"tools\[0\] is a dict, not a Tool"):
        Intent(stage="s", tools=({"name": "x"},))  # type: ignore[arg-type]


def test_a_marker_on_a_dropped_part_is_reported(snapshot: Registry) -> None:
    messages = [{"role": "user", "content": [
        {"type": "text", "text": "hi"},
        {"type": "image_url", "image_url": {"url": "https://example.com/a.png"},
         "cache_control": {"type": "ephemeral"}}]}]
    req = compile_request("classify_ticket", "deepseek/deepseek-chat-v3.1", messages,
                          registry=snapshot)
    rows = {(a.kind, a.path) for a in req.report.adjustments}
    assert ("messages.part_dropped", "messages[0].content[1]") in rows
    assert ("messages.breakpoint_dropped", "messages[0].content[1].cache_control") in rows


@pytest.mark.parametrize("raw", [
    "\u201c" + "a " * 10_000, '"' + "a " * 10_000, "\u201c" * 100_000 + "x y",
    json.dumps({"error": {"message": "a" * 2_000_000}}), "[]" * 200_000,
])
def test_hostile_upstream_text_gives_a_verdict(raw: str) -> None:
    """Unclosed quotes, huge strings and long bracket runs: a verdict, never an error
    (the scans are linear; no timing is asserted)."""
    assert classify_error(400, _provider(raw)).kind == "invalid_request"

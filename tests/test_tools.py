"""Caller tools: projection per dialect, tool_choice per endpoint, tool calls, the
pre-send check, cache breakpoints and media parts (docs/tools.md)."""

from __future__ import annotations

import base64
import json
import struct
import zlib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field

from compiler.errors import ConversationError, ToolError
from compiler.intent import Intent
from compiler.request import compile_request
from compiler.schema.dialects import DIALECTS
from compiler.tools.conversation import check_conversation
from compiler.tools.media import media_tokens
from compiler.tools.projection import project_tools
from compiler.tools.tool import Tool
from registry.declarations.files import load_models_file
from registry.metadata.catalog import Catalog, load_endpoints
from registry.metadata.shapes import ModelInfo
from registry.resolve.resolver import Registry

# -- MCP-style tool schemas, written by hand after public MCP servers' tools ---------------

FETCH = {  # a fetch tool: formats, exclusiveMinimum, a default
    "type": "object",
    "properties": {
        "url": {"type": "string", "format": "uri", "description": "URL to fetch"},
        "max_length": {"type": "integer", "exclusiveMinimum": 0, "default": 5000},
        "raw": {"type": "boolean", "default": False},
    },
    "required": ["url"],
    "additionalProperties": False,
    "$schema": "https://json-schema.org/draft/2020-12/schema",
}
EDIT = {  # a file-edit tool: nested objects in an array, $ref
    "type": "object",
    "properties": {
        "path": {"type": "string"},
        "edits": {"type": "array", "items": {"$ref": "#/$defs/Edit"}},
    },
    "required": ["path", "edits"],
    "additionalProperties": False,
    "$defs": {"Edit": {"type": "object", "properties": {
        "oldText": {"type": "string"}, "newText": {"type": "string"}},
        "required": ["oldText", "newText"], "additionalProperties": False}},
}
QUERY = {  # a database tool: enum, open object of parameters
    "type": "object",
    "properties": {
        "sql": {"type": "string"},
        "mode": {"type": "string", "enum": ["read", "write"]},
        "params": {"type": "object", "additionalProperties": True},
    },
    "required": ["sql"],
}
TREE = {  # a knowledge-graph tool: recursion
    "type": "object",
    "properties": {"root": {"$ref": "#/$defs/Node"}},
    "required": ["root"],
    "$defs": {"Node": {"type": "object", "properties": {
        "name": {"type": "string"},
        "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}},
        "required": ["name"]}},
}

#: (tool schema, dialect) -> "blocked" or the schema.* kinds expected (at least).
TABLE: list[tuple[str, dict[str, Any], str, Any]] = [
    ("fetch", FETCH, "openai-strict", {"schema.format_dropped", "schema.default_stripped",
                                       "schema.made_required_nullable"}),
    ("fetch", FETCH, "anthropic", {"schema.keyword_dropped", "schema.default_stripped"}),
    ("fetch", FETCH, "gemini", {"schema.keyword_dropped", "schema.format_dropped"}),
    ("edit", EDIT, "openai-strict", set()),
    ("edit", EDIT, "anthropic", set()),
    ("edit", EDIT, "gemini", {"schema.refs_inlined"}),
    ("query", QUERY, "openai-strict", "blocked"),
    ("query", QUERY, "anthropic", "blocked"),
    ("query", QUERY, "gemini", "blocked"),
    ("query", QUERY, "json", set()),
    ("tree", TREE, "openai-strict", {"schema.closed_object"}),
    ("tree", TREE, "anthropic", "blocked"),
    ("tree", TREE, "gemini", "blocked"),
]


@pytest.mark.parametrize(("name", "schema", "dialect", "expected"), TABLE,
                         ids=[f"{n}-{d}" for n, _, d, _ in TABLE])
def test_tool_schema_per_dialect(name: str, schema: dict[str, Any], dialect: str,
                                 expected: Any) -> None:
    """Each hand-written MCP tool schema is blocked, or projected with these changes."""
    (item,) = project_tools([Tool.from_schema(name, schema)], DIALECTS[dialect])
    if expected == "blocked":
        assert item.projection.blockers
        return
    assert not item.projection.blockers, item.projection.blockers
    assert expected <= {c.kind for c in item.projection.changes}
    assert item.sha256 == item.projection.sha256


def test_normalisation_refuses_bad_tools() -> None:
    """Bad names, invalid schemas and external references are ToolErrors."""
    with pytest.raises(ToolError, match="name"):
        Tool.from_schema("has space", {"type": "object"})
    with pytest.raises(ToolError, match="2020-12"):
        Tool.from_schema("t", {"type": "object", "properties": {"a": {"type": 5}}})
    with pytest.raises(ToolError, match="external"):
        Tool.from_schema("t", {"type": "object", "properties": {
            "a": {"$ref": "https://example.com/a.json"}}})
    with pytest.raises(ToolError, match="unique"):
        Intent(stage="s", tools=(Tool.from_schema("t", {"type": "object"}),
                                 Tool.from_schema("t", {"type": "object"})))


# -- tool calls -----------------------------------------------------------------------------

class Args(BaseModel):
    """Look a word up."""

    word: str = Field(max_length=10)
    limit: int = Field(ge=1)


def _call(name: str, arguments: str) -> dict[str, Any]:
    return {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": name, "arguments": arguments}}]}


@pytest.mark.parametrize("tool", [Tool.from_model(Args),
                                  Tool.from_schema("Args", Args.model_json_schema())])
def test_invalid_arguments_never_show_values(tool: Tool) -> None:
    """A planted marker in invalid arguments appears nowhere in the errors."""
    (item,) = project_tools([tool], DIALECTS["openai-strict"])
    from compiler.tools.calls import parse_tool_calls

    marker = "ZQX" + "marker" * 3
    bad = json.dumps({"word": marker, "limit": marker, marker: marker})
    (call,) = parse_tool_calls(_call("Args", bad), (item,))
    assert not call.ok and call.raw_arguments == bad and call.arguments is None
    assert marker not in repr(call.errors) and marker not in str(call.errors)
    assert all(path.startswith("$") for path, _ in call.errors)
    (good,) = parse_tool_calls(_call("Args", '{"word": "hi", "limit": 2}'), (item,))
    assert good.ok
    (broken,) = parse_tool_calls(_call("Args", "{not json"), (item,))
    assert not broken.ok and broken.raw_arguments == "{not json"


# -- tool_choice per endpoint (real endpoint data) ---------------------------------------

def _registry(tmp_path: Path, endpoints_file: Path, models_yaml: str = "models: {}\n"
              ) -> tuple[Registry, str]:
    lists = load_endpoints(endpoints_file)
    (model_id,) = lists
    raw = json.loads(endpoints_file.read_text())["data"]
    params = sorted({p for e in raw["endpoints"] for p in e["supported_parameters"]})
    info = ModelInfo.model_validate({"id": model_id, "context_length": 1_000_000,
                                     "supported_parameters": params,
                                     "architecture": raw["architecture"]})
    catalog = Catalog(models={model_id: info}, source="endpoints file",
                      fetched_at="2026-10-02", origin="file")
    (tmp_path / "models.yaml").write_text(models_yaml)
    return Registry(catalog=catalog, models_file=load_models_file(tmp_path / "models.yaml"),
                    endpoint_lists=lists), model_id


def test_required_is_mapped_for_fable(tmp_path: Path, shared_dir: Path) -> None:
    """supports_tool_choice.required is false on every fable endpoint: never sent."""
    registry, model = _registry(
        tmp_path, shared_dir / "endpoints-anthropic-claude-fable-5.1-2026-10-02.json")
    intent = Intent(stage="s", tools=(Tool.from_model(Args),), tool_choice="required")
    req = compile_request(intent, model, [{"role": "user", "content": "hi"}],
                          registry=registry)
    for attempt in req.plan:
        assert attempt.body.get("tool_choice") != "required"
        assert attempt.report.by_kind("tools.choice_mapped")
        assert "You must call one of the tools" in attempt.body["messages"][0]["content"]
        assert [t["function"]["name"] for t in attempt.body["tools"]] == ["Args"]
    assert {r.endpoint for r in req.routes if r.attempt is not None} >= {"anthropic", "azure"}


# -- the pre-send check (hypothesis against a reference rule set) ------------------------

def _reference_ok(messages: list[dict[str, Any]]) -> bool:
    """The rules written plainly: each call answered once, right after its turn."""
    used: set[str] = set()
    i = 0
    while i < len(messages):
        m = messages[i]
        if m["role"] == "tool":
            return False  # a result not directly after an assistant turn's calls
        i += 1
        if m["role"] == "assistant" and "tool_calls" in m:
            ids = [c["id"] for c in m["tool_calls"]]
            if set(ids) & used or len(set(ids)) != len(ids):
                return False
            used |= set(ids)
            answers = []
            while i < len(messages) and messages[i]["role"] == "tool":
                answers.append(messages[i]["tool_call_id"])
                i += 1
            if sorted(answers) != sorted(ids):
                return False
    return True


_IDS = st.sampled_from(["a", "b", "c"])
_MESSAGE = st.one_of(
    st.builds(lambda: {"role": "user", "content": "q"}),
    st.builds(lambda: {"role": "assistant", "content": "r"}),
    st.lists(_IDS, min_size=1, max_size=3).map(lambda ids: {
        "role": "assistant", "content": None, "tool_calls": [
            {"id": i, "type": "function", "function": {"name": "f", "arguments": "{}"}}
            for i in ids]}),
    _IDS.map(lambda i: {"role": "tool", "tool_call_id": i, "content": "ok"}),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_MESSAGE, max_size=8))
def test_pre_send_check_matches_reference(messages: list[dict[str, Any]]) -> None:
    """Every violation is found and no valid conversation is rejected."""
    try:
        check_conversation(messages)
        accepted = True
    except ConversationError:
        accepted = False
    assert accepted == _reference_ok(messages)


def test_conversation_error_names_index_and_rule() -> None:
    """A bad role is refused at its index, with the rule's slug, before compiling."""
    with pytest.raises(ConversationError) as info:
        compile_request(Intent(stage="s"), "openai/gpt-4o-mini",
                        [{"role": "user", "content": "hi"}, {"role": "robot", "content": "x"}])
    assert (info.value.index, info.value.rule) == (1, "role")


# -- cache breakpoints and media ---------------------------------------------------------

def test_six_markers_to_a_four_marker_model_keep_the_first_four() -> None:
    """anthropic/* declares prompt_cache.max_breakpoints 4 in the example models.yaml."""
    registry = Registry.load(models=Path(__file__).resolve().parents[1] / "models.yaml")
    part = {"type": "text", "text": "x", "cache_control": {"type": "ephemeral"}}
    messages = [{"role": "user", "content": [dict(part) for _ in range(3)]},
                {"role": "assistant", "content": "ok"},
                {"role": "user", "content": [dict(part) for _ in range(3)]}]
    req = compile_request(Intent(stage="s"), "anthropic/claude-sonnet-4.5", messages,
                          registry=registry, coverage="first")
    dropped = req.report.by_kind("messages.breakpoint_dropped")
    assert [a.path for a in dropped] == ["messages[2].content[1].cache_control",
                                         "messages[2].content[2].cache_control"]
    sent = req.body["messages"]
    assert sum("cache_control" in p for m in sent if isinstance(m["content"], list)
               for p in m["content"]) == 4
    assert all("cache_control" in p for p in messages[2]["content"])  # caller's untouched


def _png(width: int, height: int, size: int) -> str:
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    chunk = b"IHDR" + ihdr
    data = (b"\x89PNG\r\n\x1a\n" + struct.pack(">I", len(ihdr)) + chunk
            + struct.pack(">I", zlib.crc32(chunk)))
    data += b"\0" * (size - len(data))
    return "data:image/png;base64," + base64.b64encode(data).decode()


def test_image_estimate_follows_the_per_image_rule() -> None:
    """A 300 KB PNG is estimated by its pixel size, not its ~400k base64 characters."""
    url = _png(1000, 800, 300_000)
    part = {"type": "image_url", "image_url": {"url": url}}
    assert media_tokens(part, "anthropic") == -(-1000 * 800 // 750)  # 1067
    assert media_tokens(part, "openai") == 85 + 170 * 4  # 768 x 614 -> 2 x 2 tiles
    assert media_tokens(part, "gemini") == 258 * 2 * 2
    registry = Registry.load(models=Path(__file__).resolve().parents[1] / "models.yaml")
    req = compile_request(Intent(stage="s"), "anthropic/claude-sonnet-4.5",
                          [{"role": "user", "content": [part]}], registry=registry,
                          coverage="first")
    assert req.body["max_tokens"] > 0  # not refused as too long


def test_image_to_a_text_only_model_is_dropped_or_refused() -> None:
    """Dropped and reported by default; refused under policy messages.part_dropped."""
    from compiler.errors import AdjustmentRefused

    registry = Registry.load()
    text_only = next(m for m in registry.catalog.models.values()
                     if m.architecture and m.architecture.input_modalities == ("text",))
    part = {"type": "image_url", "image_url": {"url": _png(10, 10, 100)}}
    messages = [{"role": "user", "content": [{"type": "text", "text": "what?"}, part]}]
    req = compile_request(Intent(stage="s"), text_only.id, messages, registry=registry,
                          coverage="first")
    assert req.report.by_kind("messages.part_dropped")
    assert req.body["messages"][-1]["content"] == [{"type": "text", "text": "what?"}]
    with pytest.raises(AdjustmentRefused):
        compile_request(Intent(stage="s", policy={"messages.part_dropped": "refuse"}),
                        text_only.id, messages, registry=registry, coverage="first")


def test_the_media_token_rule_is_declared_not_derived_from_the_id() -> None:
    """models.yaml's media.token_rule picks the rule; an undeclared model uses openai's."""
    from compiler.tools.media import vendor_rule

    root = Path(__file__).resolve().parents[1]
    declared = Registry.load(models=root / "models.yaml")
    assert vendor_rule(declared.resolve("anthropic/claude-sonnet-4.5").tree) == "anthropic"
    assert vendor_rule(declared.resolve("google/gemini-2.5-pro").tree) == "gemini"
    assert vendor_rule(Registry.load().resolve("anthropic/claude-sonnet-4.5").tree) == "openai"

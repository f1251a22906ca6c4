"""Tools and the conversation, the gaps a break test found (issue 16): tools in the
prompt estimate, tool modules in the compile cache, self-recursive tool models,
image-only messages, located stages.yaml errors, tool_choice checks, JSON-file input
schemas (duplicate keys refused), the description sent once, the public names."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

import compiler
from compiler.cli.main import main
from compiler.errors import PromptTooLongError, ToolError
from compiler.intent import Intent
from compiler.passes.budget import estimate_prompt_tokens, tools_tokens
from compiler.request import compile_request
from compiler.schema.dialects import DIALECTS
from compiler.tools.calls import ToolCall, parse_tool_calls
from compiler.tools.projection import project_tools
from compiler.tools.tool import Tool
from registry.errors import DeclarationError
from registry.resolve.resolver import Registry
from tests.conftest import ROOT

SEED = ROOT / "registry" / "data" / "seed-models-2026-08-19.json"
USER = [{"role": "user", "content": "hi"}]


class Node(BaseModel):
    """A tree node."""

    name: str
    children: list[Node] = []


class Search(BaseModel):
    """Search the web."""

    query: str


def _declared() -> Registry:
    return Registry.load(models=ROOT / "models.yaml")


# -- 1. the tool definitions count in the prompt estimate ------------------------------

def _big_tool(chars: int) -> Tool:
    return Tool.from_schema("lookup", {"type": "object", "properties": {
        "q": {"type": "string", "description": "x" * chars}}, "required": ["q"]},
        description="Look something up.")


def test_tools_are_counted_in_the_prompt_estimate() -> None:
    """max_tokens (filled from the context) shrinks by exactly the tools' estimate."""
    registry = Registry.load()
    model = "openai/gpt-4o-mini"
    context = registry.resolve(model).context_length
    assert context is not None
    plain = compile_request(Intent(stage="s"), model, USER, registry=registry,
                            coverage="first")
    tool = _big_tool(30_000)
    with_tools = compile_request(Intent(stage="s", tools=(tool,)), model, USER,
                                 registry=registry, coverage="first")
    sent = with_tools.body["tools"]
    assert tools_tokens(sent) >= 10_000  # 30k characters of description
    fill = {a.kind: a for a in with_tools.report.adjustments}
    assert "tokens.filled" in fill or "tokens.clamped" in fill
    limit = [a.applied for a in plain.report.adjustments if a.path == "max_tokens"]
    limit_tools = [a.applied for a in with_tools.report.adjustments if a.path == "max_tokens"]
    prompt = estimate_prompt_tokens(USER)
    expected = min(context - prompt - tools_tokens(sent), limit[0])
    assert limit_tools[0] == expected


def test_a_prompt_near_the_limit_plus_large_tools_is_refused() -> None:
    """Messages that fit alone do not fit with 10k tokens of tools, memo or not."""
    registry = Registry.load()
    model = "openai/gpt-4o-mini"
    context = registry.resolve(model).context_length
    assert context is not None
    tool = _big_tool(30_000)
    intent = Intent(stage="s", tools=(tool,), output_tokens=100)
    compile_request(intent, model, USER, registry=registry, coverage="first")  # memoised
    near = [{"role": "user", "content": "y" * ((context - 2_000) * 3)}]
    assert estimate_prompt_tokens(near) < context
    compile_request(Intent(stage="s", output_tokens=100), model, near, registry=registry,
                    coverage="first")  # fits without the tool
    with pytest.raises(PromptTooLongError):
        compile_request(intent, model, near, registry=registry, coverage="first")


# -- 2. the compile cache tracks a tool's modules --------------------------------------

TOOL_MODULE = '''
from pydantic import BaseModel


class Lookup(BaseModel):
    """{doc}"""

    word: str
'''


def test_editing_a_tool_model_invalidates_the_compile_cache(tmp_path: Path) -> None:
    """capc compile, edit the tool's pydantic model, compile again: the new body."""
    (tmp_path / "tools_mod.py").write_text(TOOL_MODULE.replace("{doc}", "First wording."))
    (tmp_path / "schema.json").write_text('{"type": "object", "description": "One."}')
    (tmp_path / "stages.yaml").write_text(textwrap.dedent("""\
        stages:
          s:
            output_tokens: 100
            tools:
              - model: tools_mod.py:Lookup
              - name: other
                input_schema: schema.json
        """))
    argv = ["compile", "s", "openai/gpt-4o-mini", "--json", "--stages",
            str(tmp_path / "stages.yaml"), "--metadata", str(SEED)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}

    def descriptions() -> list[str]:
        out = subprocess.run([sys.executable, "-m", "compiler", *argv], capture_output=True,
                             text=True, env=env, cwd=tmp_path, check=True).stdout
        return [t["function"]["description"] for t in json.loads(out)["request"]["tools"]]

    assert descriptions() == ["First wording.", "One."]
    for path, old, new in ((tmp_path / "tools_mod.py", "First wording.", "Second wording!"),
                           (tmp_path / "schema.json", "One.", "Two!")):
        stat = path.stat()
        path.write_text(path.read_text().replace(old, new))
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
        assert new in descriptions()[0 if path.suffix == ".py" else 1]


def test_stage_files_lists_the_tool_sources(tmp_path: Path) -> None:
    """The cache's dependencies: the contract's, each tool model's and schema files."""
    from compiler.artifacts.compile_cache import stage_files

    (tmp_path / "a.py").write_text("import b\nfrom pydantic import BaseModel\n"
                                   "class A(BaseModel):\n    x: int\n")
    (tmp_path / "b.py").write_text("")
    (tmp_path / "s.json").write_text("{}")
    (tmp_path / "stages.yaml").write_text(
        "stages:\n  s:\n    tools:\n      - model: a.py:A\n"
        "      - {name: j, input_schema: s.json}\n")
    registry = Registry.load(stages=tmp_path / "stages.yaml")
    found = stage_files(registry.stage("s"), tmp_path)
    assert {p.name for p in found} == {"a.py", "b.py", "s.json"}
    from compiler.artifacts.lock_inputs import describe_inputs  # the lock's inputs too

    assert set(describe_inputs(registry)["contracts"]) == {"a.py", "b.py", "s.json"}


# -- 3. a self-recursive pydantic model is a tool ----------------------------------------

def test_a_self_recursive_model_is_a_tool() -> None:
    """The root $ref is inlined, $defs kept for the recursion; arguments validate."""
    tool = Tool.from_model(Node)
    assert tool.schema["type"] == "object" and "$ref" not in tool.schema
    assert tool.schema["$defs"]["Node"]["properties"]["children"]["items"] == {
        "$ref": "#/$defs/Node"}
    (item,) = project_tools([tool], DIALECTS["openai-strict"])
    assert item.enforceable
    (call,) = parse_tool_calls({"tool_calls": [{"id": "c", "type": "function", "function": {
        "name": "Node", "arguments": json.dumps(
            {"name": "a", "children": [{"name": "b", "children": None}]})}}]}, (item,))
    assert call.ok and isinstance(call.arguments, Node)
    assert call.arguments.children[0].name == "b"


@pytest.mark.parametrize(("model", "strict"), [("openai/gpt-4o-mini", True),
                                               ("anthropic/claude-sonnet-4.5", False)])
def test_recursive_tool_per_dialect(model: str, strict: bool) -> None:
    """Strict where the dialect enforces recursion, sent without strict otherwise."""
    req = compile_request(Intent(stage="s", tools=(Tool.from_model(Node),)), model, USER,
                          registry=_declared(), coverage="first")
    (entry,) = req.body["tools"]
    assert entry["function"].get("strict", False) is strict
    assert entry["function"]["parameters"]["type"] == "object"
    assert "$defs" in entry["function"]["parameters"]


def test_recursive_tool_is_refused_where_the_dialect_has_no_ref() -> None:
    """Gemini's dialect has no $ref: refused, naming the tool and the reference."""
    with pytest.raises(ToolError, match=r"tool 'Node'.*recursive.*gemini"):
        compile_request(Intent(stage="s", tools=(Tool.from_model(Node),)),
                        "google/gemini-2.5-pro", USER, registry=_declared(), coverage="first")


def test_a_lock_records_the_refusal_per_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """capc lock: the gemini pair records the ToolError, the openai pair compiles."""
    (tmp_path / "tree.py").write_text(
        "from __future__ import annotations\nfrom pydantic import BaseModel\n\n\n"
        "class Node(BaseModel):\n    name: str\n    children: list[Node] = []\n")
    (tmp_path / "stages.yaml").write_text(
        "stages:\n  t:\n    output_tokens: 100\n"
        "    models: [openai/gpt-4o-mini, google/gemini-2.5-pro]\n"
        "    tools:\n      - model: tree.py:Node\n")
    out = tmp_path / "capc.lock.json"
    assert main(["lock", "--stages", str(tmp_path / "stages.yaml"), "--models",
                 str(ROOT / "models.yaml"), "--output", str(out)]) == 0
    capsys.readouterr()
    text = out.read_text()
    assert '"ToolError"' in text and "tree.py" in text


def test_a_root_ref_in_a_json_schema_is_inlined() -> None:
    """A hand-written schema with a root $ref is a tool too; a conflict is refused."""
    schema = {"$ref": "#/$defs/Q", "$defs": {"Q": {"type": "object", "properties": {
        "q": {"type": "string"}}}}}
    assert Tool.from_schema("q", schema).schema["properties"] == {"q": {"type": "string"}}
    clash = {**schema, "properties": {"r": {"type": "string"}}}
    with pytest.raises(ToolError, match="'properties' is set both beside it"):
        Tool.from_schema("q", clash)


# -- 4. an image-only user message keeps its parts ---------------------------------------

IMAGE = {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}


@pytest.mark.parametrize("coverage", ["full", "first"])
def test_an_image_only_message_keeps_its_parts(coverage: str) -> None:
    """To a vision model the image is sent as given, in every attempt, memo or not."""
    registry = Registry.load(models=ROOT / "models.yaml", stages=ROOT / "stages.yaml")
    messages = [{"role": "user", "content": [IMAGE]}]
    for _ in range(2):
        req = compile_request("draft_reply", "openai/gpt-4o-mini", messages,
                              registry=registry, coverage=coverage)
        for attempt in req.plan:
            assert attempt.body["messages"][-1]["content"] == [IMAGE]
        compile_request("draft_reply", "openai/gpt-4o-mini", USER, registry=registry,
                        coverage=coverage)


def test_an_image_only_message_to_a_text_model_is_never_empty() -> None:
    """Every part removed: one text part says what was removed, never content: []."""
    registry = Registry.load()
    text_only = next(m for m in registry.catalog.models.values()
                     if m.architecture and m.architecture.input_modalities == ("text",))
    req = compile_request(Intent(stage="s"), text_only.id,
                          [{"role": "user", "content": [IMAGE, IMAGE]}], registry=registry,
                          coverage="first")
    (part,) = req.body["messages"][-1]["content"]
    assert part == {"type": "text", "text": "[2 images removed: this model reads only text "
                                            "input]"}
    dropped = req.report.by_kind("messages.part_dropped")
    assert len(dropped) == 2 and "stands in" in dropped[0].reason


# -- 5. tool declaration errors are located, exit 2 -------------------------------------

BAD_STAGES = """\
stages:
  bad_name:
    tools:
      - name: "has space"
        properties: {a: {type: integer}}
  bad_schema:
    tools:
      - name: t
        input_schema:
          type: object
          properties:
            a: {type: 12}
  bad_choice:
    tools:
      - {name: t, properties: {a: {type: integer}}}
    tool_choice: {function: u}
  bad_file:
    tools:
      - {name: t, input_schema: missing.json}
"""


@pytest.mark.parametrize(("stage", "line", "key"), [
    ("bad_name", 4, "stages.bad_name.tools[0].name"),
    ("bad_schema", 12, "stages.bad_schema.tools[0].input_schema.properties.a.type"),
    ("bad_choice", 16, "stages.bad_choice.tool_choice.function"),
    ("bad_file", 19, "stages.bad_file.tools[0].input_schema"),
])
def test_tool_declaration_errors_name_file_line_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], stage: str, line: int, key: str
) -> None:
    """capc compile exits 2 with stages.yaml:LINE:COL: KEY: ...; the API raises the same."""
    stages = tmp_path / "stages.yaml"
    stages.write_text(BAD_STAGES)
    code = main(["compile", stage, "openai/gpt-4o-mini", "--stages", str(stages),
                 "--metadata", str(SEED), "--no-cache"])
    err = capsys.readouterr().err
    assert code == 2
    assert f"stages.yaml:{line}:" in err and f": {key}: " in err, err
    assert "Traceback" not in err
    registry = Registry.load(stages=stages)
    with pytest.raises(DeclarationError) as caught:
        compile_request(stage, "openai/gpt-4o-mini", USER, registry=registry)
    assert caught.value.line == line and caught.value.key_path == key
    assert isinstance(caught.value.__cause__, ToolError)


def test_capc_check_lists_every_tool_problem(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """capc check reports each stage's tool problem at its key, exit 2."""
    (tmp_path / "stages.yaml").write_text(BAD_STAGES)
    code = main(["check", "--stages", str(tmp_path / "stages.yaml"), "--metadata", str(SEED)])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("capc: error: ") == 4 and "stages.bad_file.tools[0].input_schema" in err


# -- 6. a malformed tool_choice is refused ------------------------------------------------

@pytest.mark.parametrize(("choice", "match"), [
    ("always", r"'always' is not one of auto, none, required.*\('a', 'b'\)"),
    ({"function": "a"}, r"malformed.*\('a', 'b'\)"),
    ({"type": "function", "function": {"name": "c"}}, r"'c'.*not one of.*\('a', 'b'\)"),
    ({"type": "tool", "function": {"name": "a"}}, "malformed"),
    (3, "malformed"),
])
def test_a_malformed_tool_choice_is_refused(choice: Any, match: str) -> None:
    """Unknown strings, malformed mappings and undeclared names: ToolError naming the tools."""
    tools = (Tool.from_schema("a", {"type": "object"}), Tool.from_schema("b", {"type": "object"}))
    with pytest.raises(ToolError, match=match):
        Intent(stage="s", tools=tools, tool_choice=choice)
    assert Intent(stage="s", tools=tools, tool_choice={
        "type": "function", "function": {"name": "b"}}).tool_choice is not None


def test_tool_choice_needs_tools() -> None:
    """tool_choice without tools is refused."""
    with pytest.raises(ToolError, match="needs tools"):
        Intent(stage="s", tool_choice="required")


# -- 7, 8. an input_schema in a JSON file; duplicate keys --------------------------------

def _file_stage(tmp_path: Path, text: str, spec: str = "schemas/q.json") -> Registry:
    (tmp_path / "schemas").mkdir(exist_ok=True)
    (tmp_path / "schemas" / "q.json").write_text(text)
    (tmp_path / "stages.yaml").write_text(
        f"stages:\n  s:\n    tools:\n      - name: q\n        input_schema: {spec}\n")
    return Registry.load(stages=tmp_path / "stages.yaml")


def test_an_input_schema_file_relative_to_stages_yaml(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The path starts at the stages.yaml directory, whatever the working directory."""
    registry = _file_stage(tmp_path, json.dumps(
        {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}))
    monkeypatch.chdir(ROOT)
    req = compile_request("s", "openai/gpt-4o-mini", USER, registry=registry)
    assert req.body["tools"][0]["function"]["parameters"]["properties"] == {
        "q": {"type": "string"}}
    assert Tool.from_file("q", tmp_path / "schemas" / "q.json").name == "q"


@pytest.mark.parametrize(("text", "match"), [
    ('{"type": "object",\n  "properties": {"q": }}', r"q\.json:2:\d+: tool 'q'.*not valid JSON"),
    ('{"type": "object", "properties": {"q": {"type": "string", "type": "integer"}}}',
     r"duplicate key 'type' in the object at /properties/q"),
    ('{"type": "object", "type": "object"}', r"duplicate key 'type' in the object at /;"),
    ("[1, 2]", "the root must be a JSON object"),
])
def test_schema_file_errors_are_named(tmp_path: Path, text: str, match: str) -> None:
    """Invalid JSON (file:line:column), duplicate keys, a non-object root."""
    registry = _file_stage(tmp_path, text)
    with pytest.raises(DeclarationError, match=match) as caught:
        compile_request("s", "openai/gpt-4o-mini", USER, registry=registry)
    assert caught.value.key_path == "stages.s.tools[0].input_schema"


def test_a_missing_schema_file_is_named(tmp_path: Path) -> None:
    """A missing file names its resolved path."""
    registry = _file_stage(tmp_path, "{}", spec="schemas/nope.json")
    with pytest.raises(DeclarationError, match=r"nope\.json' cannot be read"):
        compile_request("s", "openai/gpt-4o-mini", USER, registry=registry)


def test_a_duplicate_key_in_an_inline_schema_is_refused(tmp_path: Path) -> None:
    """Inline (YAML, flow or block) duplicates are refused by the loader, naming the key."""
    stages = tmp_path / "stages.yaml"
    stages.write_text('stages:\n  s:\n    tools:\n      - name: q\n        input_schema: '
                      '{"type": "object", "properties": {"a": {}, "a": {"type": "string"}}}\n')
    with pytest.raises(DeclarationError, match="duplicate key 'a'"):
        Registry.load(stages=stages)


# -- 9. the description is sent once -----------------------------------------------------

def test_the_description_is_sent_once() -> None:
    """A model's docstring is function.description only; an explicit other text stays."""
    req = compile_request(Intent(stage="s", tools=(Tool.from_model(Search),)),
                          "openai/gpt-4o-mini", USER, registry=_declared(), coverage="first")
    function = req.body["tools"][0]["function"]
    assert function["description"] == "Search the web."
    assert "description" not in function["parameters"]
    assert json.dumps(req.body["tools"]).count("Search the web.") == 1
    moved = Tool.from_schema("f", {"type": "object", "description": "Does f."})
    assert moved.description == "Does f." and "description" not in moved.schema
    kept = Tool.from_model(Search, description="Other words.")
    assert kept.description == "Other words."
    assert kept.schema["description"] == "Search the web."


# -- 10. the public names ----------------------------------------------------------------

def test_tool_names_are_public() -> None:
    """compiler.Tool and compiler.ToolCall are the classes the tools modules define."""
    assert compiler.Tool is Tool and compiler.ToolCall is ToolCall
    assert compiler.ToolError is ToolError
    assert {"Tool", "ToolCall", "ToolError", "ConversationError"} <= set(compiler.__all__)


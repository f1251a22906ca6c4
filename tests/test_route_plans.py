"""Route plans, table-driven: each exclusion reason, each repair of endpoint data, the pin,
the single-body (``coverage: first``) fidelity, and ``capc routes``.

Every scenario is one published model with hand-written ``/endpoints`` data.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from compiler import Intent, NoEndpointError, OutputContract, compile_request
from compiler.cli.main import main
from registry.declarations.files import load_models_file
from registry.metadata.catalog import Catalog
from registry.metadata.shapes import EndpointList, ModelInfo
from registry.resolve.resolver import Registry
from registry.resolve.routing import EXCLUSION_REASONS
from tests.conftest import ROOT

MODEL = "acme/model-1"
ALL = ["max_tokens", "temperature", "top_p", "top_k", "seed", "stop", "reasoning",
       "include_reasoning", "response_format", "structured_outputs", "tools", "tool_choice"]
NO_STRICT = [p for p in ALL if p != "structured_outputs"]
FIXTURE = ROOT / "tests" / "fixtures" / "fidelity"


class Item(BaseModel):
    """A small contract."""

    label: str


def scenario(
    tmp_path: Path,
    endpoints: list[dict[str, Any]] | None,
    *,
    models_yaml: str = "models: {}\n",
    published: dict[str, Any] | None = None,
    **intent: Any,
) -> tuple[Registry, Intent]:
    """A one-model registry with the given endpoints, and an intent."""
    data = {"id": MODEL, "context_length": 100000, "supported_parameters": ALL,
            "top_provider": {"max_completion_tokens": 8000},
            "pricing": {"prompt": "0.000001", "completion": "0.000002"}, **(published or {})}
    catalog = Catalog(models={MODEL: ModelInfo.model_validate(data)}, source="plans.json",
                      fetched_at="2026-05-18", origin="file")
    (tmp_path / "models.yaml").write_text(models_yaml)
    lists = {} if endpoints is None else {
        MODEL: EndpointList.model_validate({"id": MODEL, "endpoints": endpoints})}
    registry = Registry(catalog=catalog, models_file=load_models_file(tmp_path / "models.yaml"),
                        endpoint_lists=lists)
    contract = intent.pop("contract", None)
    intent.setdefault("output_tokens", 500)
    return registry, Intent(stage="t", contract=None if contract is None
                            else OutputContract.from_type(contract), **intent)


def ep(tag: str | None, params: list[str] | None = None, **extra: Any) -> dict[str, Any]:
    """One endpoint record in OpenRouter's shape."""
    record: dict[str, Any] = {"provider_name": (tag or "Acme").split("/")[0].title(),
                              "supported_parameters": ALL if params is None else params,
                              "status": 0, **extra}
    if tag is not None:
        record["tag"] = tag
    return record


#: reason -> (endpoints, intent keywords); endpoint "x" must be excluded for the reason.
EXCLUSIONS: dict[str, tuple[list[dict[str, Any]], dict[str, Any]]] = {
    "allowed_providers": ([ep("a"), ep("b"), ep("x")], {"provider": {"only": ["a", "b"]}}),
    "ignored_providers": ([ep("a"), ep("x")], {"provider": {"ignore": ["x"]}}),
    "quantization": ([ep("a", quantization="fp8"), ep("x", quantization="bf16")],
                     {"provider": {"quantizations": ["fp8"]}}),
    "max_price": ([ep("a", pricing={"prompt": "0.0000005", "completion": "0.000001"}),
                   ep("x", pricing={"prompt": "0.000002", "completion": "0.000001"})],
                  {"provider": {"max_price": {"prompt": 1}}}),
    "status": ([ep("a"), ep("x", status=-2)], {}),
    "context_length": ([ep("a"), ep("x", context_length=4000)],
                       {"estimated_prompt_tokens": 5000}),
    "max_prompt_tokens": ([ep("a"), ep("x", max_prompt_tokens=1000)],
                          {"estimated_prompt_tokens": 5000}),
    "policy": ([ep("a"), ep("x", NO_STRICT)],
               {"contract": Item, "policy": {"output.downgraded": "refuse"}}),
    "require_parameters": ([ep("a"), ep("x", [p for p in ALL if p != "top_k"])],
                           {"sampling": (("top_k", 40),), "coverage": "first"}),
    "structured_outputs": ([ep("a"), ep("x", NO_STRICT)],
                           {"contract": Item, "coverage": "first"}),
    "tool_choice": ([ep("a", NO_STRICT, supports_tool_choice={"function": True}),
                     ep("x", NO_STRICT, supports_tool_choice={"function": False})],
                    {"contract": Item, "coverage": "first",
                     "published": {"supported_parameters": NO_STRICT}}),
    "max_completion_tokens": ([ep("a"), ep("x", max_completion_tokens=100)],
                              {"coverage": "first"}),
}


def test_every_exclusion_reason_has_a_row() -> None:
    """The table covers exactly the documented vocabulary."""
    assert set(EXCLUSIONS) == set(EXCLUSION_REASONS)


@pytest.mark.parametrize("reason", sorted(EXCLUSIONS))
def test_exclusion_reason(reason: str, tmp_path: Path) -> None:
    """Endpoint x is excluded with the reason; every other endpoint is in an attempt."""
    endpoints, keywords = EXCLUSIONS[reason]
    registry, intent = scenario(tmp_path, endpoints, **keywords)
    req = compile_request(intent, MODEL, registry=registry)
    rows = {r.endpoint: r for r in req.routes}
    assert rows["x"].excluded_by == reason and rows["x"].attempt is None
    assert rows["x"].detail
    assert all(r.attempt is not None for name, r in rows.items() if name != "x")
    for attempt in req.plan:
        assert "x" not in (attempt.body.get("provider") or {}).get("only", ())


def test_full_coverage_gives_the_weaker_endpoint_its_own_attempt(tmp_path: Path) -> None:
    """Strict json_schema where accepted; the endpoint without structured outputs gets
    the strongest form it accepts, in a second attempt that says why."""
    registry, intent = scenario(tmp_path, [ep("a"), ep("b", NO_STRICT)], contract=Item)
    req = compile_request(intent, MODEL, registry=registry)
    assert req.rung == "schema" and req.endpoints == ("a",)
    assert req.body["provider"] == {"require_parameters": True, "only": ["a"],
                                    "allow_fallbacks": False}
    [second] = req.attempts
    assert second.endpoints == ("b",) and second.rung == "tool"
    assert second.body["provider"]["only"] == ["b"]
    [why] = second.report.by_kind("route.attempt_differs")
    assert why.requested == "schema" and why.applied == "tool"
    assert [r.attempt for r in req.routes] == [0, 1]


def test_one_attempt_for_identical_endpoints_keeps_the_stage_routing(tmp_path: Path) -> None:
    """When every endpoint takes the same body, the body is the plain one (no provider.only)."""
    registry, intent = scenario(tmp_path, [ep("a"), ep("b")], contract=Item)
    req = compile_request(intent, MODEL, registry=registry)
    assert not req.attempts and req.endpoints == ("a", "b")
    assert req.body["provider"] == {"require_parameters": True}
    assert not req.report.by_kind("route.attempt")


def test_max_tokens_fits_each_endpoint(tmp_path: Path) -> None:
    """An endpoint that returns fewer tokens gets its own, smaller, attempt."""
    registry, intent = scenario(tmp_path, [ep("a"), ep("b", max_completion_tokens=300)])
    req = compile_request(intent, MODEL, registry=registry)
    by_endpoint = {a.endpoints: a.body["max_tokens"] for a in req.plan}
    assert by_endpoint == {("a",): 500, ("b",): 300}


def test_a_base_slug_attempt_ignores_the_tiers_it_would_also_select(tmp_path: Path) -> None:
    """``only: [deepinfra]`` also selects ``deepinfra/turbo``: it is ignored in that attempt."""
    registry, intent = scenario(tmp_path, [ep("deepinfra"), ep("deepinfra/turbo", NO_STRICT)],
                                contract=Item)
    req = compile_request(intent, MODEL, registry=registry)
    assert req.body["provider"]["only"] == ["deepinfra"]
    assert req.body["provider"]["ignore"] == ["deepinfra/turbo"]
    assert req.attempts[0].body["provider"]["only"] == ["deepinfra/turbo"]


def test_a_pin_to_a_base_slug_keeps_it_and_plans_with_the_intersection(tmp_path: Path) -> None:
    """A pin keeps the caller's slug; the capabilities are what all matched endpoints take."""
    registry, intent = scenario(
        tmp_path, [ep("deepinfra/fp8"), ep("deepinfra/turbo", NO_STRICT), ep("other")],
        contract=Item, provider={"only": ["deepinfra"], "allow_fallbacks": False})
    req = compile_request(intent, MODEL, registry=registry)
    assert not req.attempts
    assert req.body["provider"]["only"] == ["deepinfra"]
    assert req.rung == "tool"  # deepinfra/turbo cannot take strict json_schema
    rows = {r.endpoint: r for r in req.routes}
    assert rows["other"].excluded_by == "allowed_providers"


def test_duplicate_tags_are_one_ambiguous_endpoint(tmp_path: Path) -> None:
    """Two endpoints with one tag: one row, the intersection, reported."""
    registry, intent = scenario(tmp_path, [ep("a"), ep("a", NO_STRICT)], contract=Item)
    req = compile_request(intent, MODEL, registry=registry)
    [row] = req.routes
    assert row.merged == 2 and row.rung == "tool"
    assert req.report.by_kind("route.tag_ambiguous")


def test_tagless_data_derives_slugs_and_reports_writing_them(tmp_path: Path) -> None:
    """Without ``tag`` the slug is derived from the name, accepted, and reported when sent."""
    endpoints = [ep(None, provider_name="Google AI Studio"),
                 ep(None, NO_STRICT, provider_name="Google Vertex")]
    registry, intent = scenario(tmp_path, endpoints, contract=Item)
    req = compile_request(intent, MODEL, registry=registry)
    assert req.body["provider"]["only"] == ["google-ai-studio"]
    assert req.report.by_kind("route.slug_derived")
    for slug in ("google-vertex", "Google Vertex"):
        pinned = Intent(stage="t", contract=intent.contract, output_tokens=500,
                        provider={"only": [slug], "allow_fallbacks": False})
        single = compile_request(pinned, MODEL, registry=registry)
        assert single.body["provider"]["only"] == [slug] and single.rung == "tool"


def test_missing_supported_parameters_inherit_the_models_list(tmp_path: Path) -> None:
    """An endpoint that publishes no list is not "supports nothing"."""
    registry, intent = scenario(tmp_path, [{"tag": "a"}], contract=Item,
                                sampling=(("temperature", 0.2),))
    req = compile_request(intent, MODEL, registry=registry)
    assert req.rung == "schema" and req.body["temperature"] == 0.2
    assert req.routes[0].assumed_parameters
    assert req.report.by_kind("route.parameters_assumed")


def test_every_endpoint_degraded_keeps_them(tmp_path: Path) -> None:
    """Excluding every degraded endpoint would leave none: they are kept, reported."""
    registry, intent = scenario(tmp_path, [ep("a", status=-5), ep("b", status=-2)])
    req = compile_request(intent, MODEL, registry=registry)
    assert {r.attempt for r in req.routes} == {0}
    assert req.report.by_kind("route.degraded_kept")


@pytest.mark.parametrize("with_endpoints", [True, False])
def test_a_body_max_price_rules_out_is_refused(tmp_path: Path, with_endpoints: bool) -> None:
    """OpenRouter would answer 404: the compile is refused, naming the price (per million)."""
    endpoints = [ep("a", pricing={"prompt": "0.000003", "completion": "0.000002"})]
    registry, intent = scenario(tmp_path, endpoints if with_endpoints else None,
                                provider={"max_price": {"prompt": 2}},
                                published={"pricing": {"prompt": "0.000003",
                                                       "completion": "0.000002"}})
    with pytest.raises(NoEndpointError, match="max_price") as caught:
        compile_request(intent, MODEL, registry=registry)
    if with_endpoints:
        assert [r.excluded_by for r in caught.value.routes] == ["max_price"]
        assert "3 USD per million tokens" in caught.value.routes[0].detail


def test_an_override_below_a_published_limit_is_a_clamp_naming_both(tmp_path: Path) -> None:
    """models.yaml lowers 4000 to 300: the body uses 300, the report names both figures."""
    yaml = "models:\n  acme/*:\n    limits: {max_completion_tokens: 300}\n"
    registry, intent = scenario(tmp_path, [ep("a", max_completion_tokens=4000)],
                                models_yaml=yaml)
    req = compile_request(intent, MODEL, registry=registry)
    assert req.body["max_tokens"] == 300
    [lowered] = req.report.by_kind("limits.lowered")
    assert (lowered.requested, lowered.applied) == (4000, 300)
    assert "4000" in lowered.reason and "300" in lowered.reason


def test_an_override_above_a_published_limit_is_capped(tmp_path: Path) -> None:
    """An endpoint cannot return more than it publishes, whatever models.yaml says."""
    yaml = "models:\n  acme/*:\n    limits: {max_completion_tokens: 9000}\n"
    registry, intent = scenario(tmp_path, [ep("a", max_completion_tokens=400)],
                                models_yaml=yaml)
    req = compile_request(intent, MODEL, registry=registry)
    assert req.body["max_tokens"] == 400
    [capped] = req.report.by_kind("limits.capped")
    assert (capped.requested, capped.applied) == (9000, 400)


def test_no_endpoint_data_says_so_once(tmp_path: Path) -> None:
    """Model-level figures, one note; coverage first adds no note (earlier behaviour)."""
    registry, intent = scenario(tmp_path, None)
    req = compile_request(intent, MODEL, registry=registry)
    assert [n for n in req.report.notes if "no endpoint data" in n] != []
    assert not req.routes and not req.attempts
    first = compile_request(intent, MODEL, registry=registry, coverage="first")
    assert not [n for n in first.report.notes if "no endpoint data" in n]


def test_a_replayed_plan_carries_the_new_messages_in_every_attempt(tmp_path: Path) -> None:
    """The memo replays every attempt with the caller's new messages."""
    registry, intent = scenario(tmp_path, [ep("a"), ep("b", NO_STRICT)], contract=Item)
    compile_request(intent, MODEL, [{"role": "user", "content": "one"}], registry=registry)
    again = compile_request(intent, MODEL, [{"role": "user", "content": "two"}],
                            registry=registry)
    for attempt in again.plan:
        assert attempt.body["messages"][-1] == {"role": "user", "content": "two"}


def test_coverage_first_reproduces_the_lock_made_before_route_plans(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Byte for byte: the fixture is the lock of the example stages made at commit 7db782c
    (format 1); a fresh lock without format 2's additions (``inputs``, ``client``,
    ``contracts``, ``schemas``, each entry's ``reply``; the reports' shared ``evidence``
    and ``schema_adjustments`` tables resolved) is that file exactly, but for the
    note on how the metadata was obtained that run (offline), which a lock no longer
    records (it depends on the network, not on the inputs)."""
    from compiler.artifacts.lock import dump_lock
    from compiler.artifacts.lock_compact import expand_reports

    args = ["lock", "--coverage", "first", "--output", "-",
            "--stages", str(FIXTURE / "stages.yaml"), "--models", str(FIXTURE / "models.yaml")]
    assert main(args) == 0
    document = expand_reports(json.loads(capsys.readouterr().out))
    for key in ("inputs", "client", "contracts", "schemas"):
        del document[key]
    document.update({"$schema": "urn:capability-compiler:lock:1", "format": 1})
    for entries in document["stages"].values():
        for entry in entries.values():
            del entry["reply"], entry["loop"]
    fixture = json.loads((FIXTURE / "capc.lock.json").read_text(encoding="utf-8"))
    for entries in fixture["stages"].values():
        for entry in entries.values():
            notes = entry["report"]["notes"]
            notes[:] = [n for n in notes if not n.startswith("offline (CAPC_OFFLINE)")]
    assert dump_lock(document) == dump_lock(fixture)


def test_capc_routes_prints_one_line_per_endpoint(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``capc routes`` with an endpoints file: every endpoint, its attempt or reason."""
    bundle = {"fetched_at": "2026-05-18", "note": "test", "endpoints": {
        "openai/gpt-4o-mini": {"data": {"id": "openai/gpt-4o-mini", "endpoints": [
            ep("openai", ["max_tokens", "response_format", "structured_outputs",
                          "temperature"]),
            ep("azure", ["max_tokens", "response_format", "temperature"]),
            ep("other", ["max_tokens"], status=-2)]}}}}
    path = tmp_path / "endpoints.json"
    path.write_text(json.dumps(bundle))
    stages = str(ROOT / "stages.yaml")
    assert main(["routes", "extract_invoice", "openai/gpt-4o-mini", "--endpoints", str(path),
                 "--stages", stages]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:4] == ["endpoint", "attempt", "rung", "max_tokens"]
    cells = {line.split()[0]: line.split() for line in lines[1:]}
    assert cells["openai"][1:3] == ["1", "schema"]
    assert cells["azure"][1:3] == ["2", "json"]
    assert cells["other"][1] == "-" and "status:" in cells["other"]
    assert main(["routes", "extract_invoice", "openai/gpt-4o-mini", "--endpoints", str(path),
                 "--stages", stages, "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert [r["attempt"] for r in payload["routes"]] == [0, 1, None]
    assert payload["attempts"][0]["endpoints"] == ["azure"]


def test_silent_metadata_is_a_stated_assumption(tmp_path: Path) -> None:
    """No supported_parameters / no context_length published: each assumption is a note."""
    registry, intent = scenario(tmp_path, None, published={"supported_parameters": None,
                                                           "context_length": None})
    notes = compile_request(intent, MODEL, registry=registry).report.notes
    assert any("publishes no supported_parameters" in n for n in notes)
    assert any("no context_length is known" in n for n in notes)


@pytest.mark.parametrize("routing", [{"ignore": ["groq"]}, {"order": ["groq", "a"]}])
def test_a_provider_the_model_lacks_in_ignore_or_order_is_a_note(
    tmp_path: Path, routing: dict[str, Any]
) -> None:
    """A shared "never use groq" routing must not break models groq does not serve."""
    registry, intent = scenario(tmp_path, [ep("a"), ep("b")], provider=routing)
    for coverage in ("full", "first"):
        req = compile_request(intent, MODEL, registry=registry, coverage=coverage)
        assert req.body["max_tokens"] == 500
    notes = compile_request(intent, MODEL, registry=registry).report.notes
    assert any("'groq' matches no endpoint" in n for n in notes)


@pytest.mark.parametrize("coverage", ["full", "first"])
@pytest.mark.parametrize("routing", [{"ignore": ["a", "b"]}, {"quantizations": ["fp4"]}])
def test_routing_that_leaves_no_endpoint_is_refused_with_the_table(
    tmp_path: Path, routing: dict[str, Any], coverage: str
) -> None:
    """NoEndpointError (exit 1), every endpoint with its reason; never a bare body."""
    registry, intent = scenario(tmp_path, [ep("a", quantization="fp8"),
                                           ep("b", quantization="bf16")], provider=routing)
    with pytest.raises(NoEndpointError) as caught:
        compile_request(intent, MODEL, registry=registry, coverage=coverage)
    reasons = {r.excluded_by for r in caught.value.routes}
    assert reasons and reasons <= {"ignored_providers", "quantization"}
    assert len(caught.value.routes) == 2


def test_a_misspelt_only_slug_is_an_input_error_with_a_suggestion(tmp_path: Path) -> None:
    """``only: [deepinfar]`` is a typo: RoutingError naming the closest slug."""
    from registry.errors import RoutingError

    registry, intent = scenario(tmp_path, [ep("deepinfra"), ep("b")],
                                provider={"only": ["deepinfar"], "allow_fallbacks": False})
    with pytest.raises(RoutingError, match="deepinfra"):
        compile_request(intent, MODEL, registry=registry)


def test_an_empty_endpoint_list_is_no_endpoint(tmp_path: Path) -> None:
    """The data lists the model with no endpoint: OpenRouter would answer 404."""
    registry, intent = scenario(tmp_path, [])
    with pytest.raises(NoEndpointError, match="no endpoint serving"):
        compile_request(intent, MODEL, registry=registry)


def test_impossible_endpoint_limits_read_as_unknown(tmp_path: Path) -> None:
    """A negative or zero published limit is not a limit (never ``max_tokens: -5``)."""
    registry, intent = scenario(tmp_path, [ep("a", max_completion_tokens=-5,
                                              context_length=0)])
    assert compile_request(intent, MODEL, registry=registry).body["max_tokens"] == 500


def test_a_want_dropped_before_a_downgrade_is_restored(tmp_path: Path) -> None:
    """Reasoning dropped while trying the forced tool comes back once the downgrade
    alone serves the body (an endpoint that lists reasoning but forbids forcing)."""
    params = ["max_tokens", "reasoning", "response_format", "tools", "tool_choice"]
    registry, intent = scenario(
        tmp_path, [ep("a", params, supports_tool_choice={"function": False})],
        contract=Item, reasoning="low", published={"supported_parameters": params})
    req = compile_request(intent, MODEL, registry=registry)
    assert req.rung == "json" and "reasoning" in req.body
    assert not req.report.by_kind("routing.param_dropped")


def test_later_attempts_say_what_differs(tmp_path: Path) -> None:
    """route.attempt_differs names the rung and the body values that differ."""
    registry, intent = scenario(tmp_path, [ep("a"), ep("b", max_completion_tokens=300)])
    [why] = compile_request(intent, MODEL, registry=registry).attempts[0].report.by_kind(
        "route.attempt_differs")
    assert "max_tokens 500 -> 300" in why.reason


def test_diff_lists_changes_in_later_attempts_and_routes() -> None:
    """A changed later attempt or route row is a change, not "nothing changed"."""
    from compiler.artifacts.diff import diff_locks

    old = {"stages": {"s": {"m": {"status": "ok", "request": {"max_tokens": 5},
                                  "report": {"rung": "none", "adjustments": []},
                                  "attempts": [{"request": {"max_tokens": 4},
                                                "report": {"rung": "none"}}],
                                  "routes": [{"endpoint": "a", "attempt": 0},
                                             {"endpoint": "b", "attempt": 1}]}}}}
    new = json.loads(json.dumps(old))
    new["stages"]["s"]["m"]["attempts"][0]["request"]["max_tokens"] = 3
    new["stages"]["s"]["m"]["routes"][1] = {"endpoint": "b", "attempt": None,
                                            "excluded_by": "status"}
    paths = {c.path: (c.old, c.new) for c in diff_locks(old, new)}
    assert paths == {"attempt 2.max_tokens": (4, 3),
                     "routes.b": ("attempt 2", "excluded: status")}


def test_a_real_slug_pinned_on_tagless_data_is_compiled_not_refused(tmp_path: Path) -> None:
    """2025 data has no tags: ``google-vertex`` for the name ``Google`` cannot be checked;
    the compile uses the model-level figures and says so, instead of refusing the slug."""
    registry, intent = scenario(tmp_path, [ep(None, provider_name="Google"),
                                           ep(None, provider_name="Google AI Studio")],
                                provider={"only": ["google-vertex"], "allow_fallbacks": False})
    for coverage in ("full", "first"):
        req = compile_request(intent, MODEL, registry=registry, coverage=coverage)
        assert req.body["provider"]["only"] == ["google-vertex"] and not req.routes
    notes = compile_request(intent, MODEL, registry=registry).report.notes
    assert any("has no tags" in n for n in notes)


def test_mandatory_reasoning_takes_its_lowest_setting_or_the_compile_is_refused(
    tmp_path: Path,
) -> None:
    """Reasoning that cannot be turned off: the lowest budget, or a refusal when even that
    does not fit below max_tokens (never a body the provider rejects)."""
    from compiler import AdjustmentRefused

    yaml = ("models:\n  acme/*:\n    reasoning: {style: budget, can_disable: false, "
            "budget_min: 128, budget_max: 32000, effort_budgets: {high: 8000}}\n")
    registry, intent = scenario(tmp_path, None, models_yaml=yaml, reasoning="high",
                                output_tokens=500, max_tokens=500)
    req = compile_request(intent, MODEL, registry=registry)
    assert req.body["reasoning"] == {"max_tokens": 128} and req.body["max_tokens"] == 500
    assert req.report.by_kind("tokens.answer_short")
    registry, intent = scenario(tmp_path, None, models_yaml=yaml.replace("128", "1024"),
                                reasoning="high", output_tokens=500, max_tokens=500)
    with pytest.raises(AdjustmentRefused, match="cannot be turned off"):
        compile_request(intent, MODEL, registry=registry)


def test_a_refusal_names_the_path_and_the_reason(tmp_path: Path) -> None:
    """Under output policy required, the error itself says what and where, not just a kind."""
    from compiler import AdjustmentRefused

    registry, intent = scenario(tmp_path, [ep("a", NO_STRICT)], contract=Item,
                                output_policy="required")
    with pytest.raises(AdjustmentRefused) as caught:
        compile_request(intent, MODEL, registry=registry)
    assert "output.downgraded at response_format: nearest supported" in str(caught.value)


def test_an_effort_without_a_declared_reserve_is_a_stated_assumption(tmp_path: Path) -> None:
    """No reasoning.effort_budgets for the effort: a note, not a silent zero reserve."""
    registry, intent = scenario(tmp_path, None, reasoning="high")
    notes = compile_request(intent, MODEL, registry=registry).report.notes
    assert any("no reasoning reserve is declared for effort high" in n for n in notes)


def test_an_attempt_that_keeps_the_caller_tools_comes_first(tmp_path: Path) -> None:
    """A body that drops the stage's tools never outranks one that sends them."""
    from compiler.tools.tool import Tool

    tool = Tool.from_properties("lookup", {"word": {"type": "string"}},
                                description="Look a word up.")
    registry, intent = scenario(tmp_path, [ep("a", [p for p in ALL if p != "tools"]),
                                           ep("b")], contract=Item, tools=(tool,))
    req = compile_request(intent, MODEL, registry=registry)
    assert [bool(a.body.get("tools")) for a in req.plan] == [True, False]


def test_a_recursive_tool_schema_is_not_sent_to_a_dialect_without_refs(tmp_path: Path) -> None:
    """gemini takes no $ref: a recursive tool cannot be sent in any form, so the compile
    is refused naming the tool and the pointer, never sent with $ref/$defs (a provider
    400) nor silently without the tool (a tool_choice could still name it)."""
    from compiler.errors import ToolError
    from compiler.tools.tool import Tool

    node = {"type": "object", "properties": {"name": {"type": "string"}, "kids": {
        "type": "array", "items": {"$ref": "#/$defs/Node"}}}, "required": ["name"]}
    tool = Tool.from_schema("tree", {"type": "object", "properties": {"tree": {
        "$ref": "#/$defs/Node"}}, "$defs": {"Node": node}})
    yaml = "models:\n  acme/*:\n    structured_output: {dialect: gemini}\n"
    registry, intent = scenario(tmp_path, None, models_yaml=yaml, tools=(tool,))
    with pytest.raises(ToolError, match=r"tool 'tree'.*recursive \(/properties/tree/\$ref"):
        compile_request(intent, MODEL, registry=registry)


def test_a_lock_with_caller_tools_validates_against_the_published_schema(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The report's tool hashes are part of the lock format (valid, and diffable)."""
    import jsonschema

    stages = tmp_path / "stages.yaml"
    stages.write_text(
        "stages:\n  look:\n    output_tokens: 300\n    models: [openai/gpt-4o-mini]\n"
        "    tools:\n      - name: get_weather\n        description: Weather.\n"
        "        input_schema:\n          type: object\n"
        "          properties: {city: {type: string}}\n          required: [city]\n")
    out = tmp_path / "capc.lock.json"
    assert main(["lock", "--stages", str(stages), "--output", str(out)]) == 0
    document = json.loads(out.read_text())
    schema = json.loads((ROOT / "docs" / "schema" / "lock.schema.json").read_text())
    jsonschema.validate(document, schema)
    assert document["stages"]["look"]["openai/gpt-4o-mini"]["report"]["tools"]
    assert main(["diff", str(out), str(out)]) == 0
    capsys.readouterr()


def test_tool_call_arguments_count_in_the_prompt_estimate(tmp_path: Path) -> None:
    """A 600,000-character tool call in the conversation does not fit a 100,000 context."""
    from compiler import PromptTooLongError

    registry, intent = scenario(tmp_path, None)
    call = {"id": "c1", "type": "function",
            "function": {"name": "f", "arguments": json.dumps({"x": "y" * 600_000})}}
    messages = [{"role": "user", "content": "go"},
                {"role": "assistant", "content": None, "tool_calls": [call]},
                {"role": "tool", "tool_call_id": "c1", "content": "ok"}]
    with pytest.raises(PromptTooLongError):
        compile_request(intent, MODEL, messages, registry=registry)


def test_a_replayed_compile_keeps_every_field_of_the_first(tmp_path: Path) -> None:
    """The memo replay differs from a fresh compile only in the messages: timeouts,
    retries, tools, prices and the plan all carry over."""
    import dataclasses

    registry, intent = scenario(tmp_path, [ep("a"), ep("b", NO_STRICT), ep("c", ["max_tokens"])],
                                contract=Item)
    first = compile_request(intent, MODEL, [{"role": "user", "content": "one"}],
                            registry=registry)
    again = compile_request(intent, MODEL, [{"role": "user", "content": "one"}],
                            registry=registry)
    assert again is not first
    for f in dataclasses.fields(first):
        if f.name not in ("origin",):
            assert getattr(again, f.name) == getattr(first, f.name), f.name
    assert again.origin is not None or first.origin is None


def test_every_attempt_can_reach_the_ones_after_it(tmp_path: Path) -> None:
    """plan[1].attempts holds plan[2:], so a runtime can follow the plan from any attempt."""
    registry, intent = scenario(tmp_path, [ep("a"), ep("b", NO_STRICT), ep("c", ["max_tokens"])],
                                contract=Item)
    plan = compile_request(intent, MODEL, registry=registry).plan
    assert len(plan) == 3
    assert plan[1].plan == plan[1:] and plan[2].attempts == ()


def test_the_lock_records_the_reply_loop_settings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Timeouts and repair turns travel with the request, for runtimes in any language."""
    stages = tmp_path / "stages.yaml"
    stages.write_text("stages:\n  s:\n    output_tokens: 300\n    timeout_seconds: 12\n"
                      "    stream_idle_seconds: 5\n    models: [openai/gpt-4o-mini]\n")
    assert main(["lock", "--stages", str(stages), "--output", "-"]) == 0
    entry = json.loads(capsys.readouterr().out)["stages"]["s"]["openai/gpt-4o-mini"]
    assert entry["loop"] == {"timeout_seconds": 12, "stream_idle_seconds": 5, "retries": 1}

"""Every fault case of ../shared/cases/faults.yaml, compiled through the real pipeline.

Each case (and each of its variants) is translated by :mod:`tests.fault_cases`: its
``capabilities`` become metadata and endpoint lists, its ``overrides`` a models.yaml,
its ``intent`` an Intent and its ``output_model`` a contract from its own snippet.
Every expectation of the case is one test (``C17:request.must_include``,
``C03/only_top_p_given:adjustments``, ...). An expectation that needs behaviour #15 has
not built yet is marked ``xfail(strict=True)`` in :data:`XFAIL`, so it fails the moment
the behaviour lands, and the mark must go.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from compiler import AdjustmentRefused, CompiledRequest, compile_request
from compiler.errors import CompilerError, ReplyValidationError
from compiler.schema.instructions import extract_shown_schema
from tests.fault_cases import (
    FAULTS,
    INPUT_KEYS,
    PRELUDE,
    build,
    check_known,
    header_prelude,
    key_paths,
    known_pattern,
    load_case,
    load_cases,
    models_entry,
    normalise,
    slug,
    unknown_paths,
)

pytestmark = pytest.mark.skipif(not FAULTS.is_file(), reason="../shared/cases absent")

#: Expectations that need behaviour of #15 not built yet: check id -> what is missing.
XFAIL: dict[str, str] = {}

#: What a case's ``expected`` may hold; anything else fails loudly.
EXPECTED_KEYS = {
    "outcome", "behaviour", "request", "adjustments", "invariants", "expected_schema",
    "schema_shown_equals_enforced", "schema_equivalences", "schema_notes",
    "tie_break_assumption", "alternatives", "error_mentions",
}
#: Free text read by people only (the checks below encode what it says).
INFORMATIVE = {"behaviour", "tie_break_assumption", "schema_equivalences", "schema_notes"}
#: ``schema_notes`` / ``schema_equivalences`` text -> keywords the schema comparison ignores.
SCHEMA_TEXTS: dict[str, frozenset[str]] = {
    "website may keep minLength/maxLength only if the dialect lists them; compare ignoring "
    "those": frozenset({"minLength", "maxLength"}),
    "type: [string, 'null'] is accepted as equal to anyOf [string, null]": frozenset(),
}
#: Adjustments that every compile may carry, never what a case's "no adjustment" means.
BOOKKEEPING = {"routing.require_parameters"}
#: A case's adjustment ``action`` -> the kinds of ours that do it.
ACTIONS: dict[str, set[str]] = {
    # C05 accepts "drop (or pin to 1)": pinning is param.fixed.
    "dropped": {"param.dropped", "param.mutually_exclusive", "param.fixed", "reasoning.dropped"},
    "mapped": {"reasoning.effort_mapped"},
    "raised": {"reasoning.cannot_disable"},
    "clamped": {"reasoning.budget_clamped", "tokens.clamped"},
    # route plans: the strict group is attempt 1 (route.attempt); coverage first:
    # routing.restricted.
    "restricted": {"route.attempt", "routing.restricted"},
    "made_required_nullable": {"schema.made_required_nullable"},
    "wrapped_root_union": {"schema.root_wrapped"},
    "inlined_refs": {"schema.refs_inlined"},
    "removed": {"schema.format_dropped", "schema.keyword_dropped"},
}

Check = Callable[[dict[str, Any], Path], None]


# ----------------------------------------------------------------------------- helpers

MISSING = object()


def dotted(body: Any, path: str) -> Any:
    """The value at a dotted path of the body, or :data:`MISSING`."""
    node = body
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            return MISSING
        node = node[part]
    return node


def strict_claims(body: dict[str, Any]) -> list[str]:
    """Paths in a body that claim provider enforcement (``strict: true``)."""
    claims = []
    if dotted(body, "response_format.json_schema.strict") is True:
        claims.append("response_format.json_schema.strict")
    for i, tool in enumerate(body.get("tools") or []):
        if tool.get("function", {}).get("strict") is True:
            claims.append(f"tools[{i}].function.strict")
    return claims


def sent_schema(req: CompiledRequest) -> Any:
    """The schema the provider sees: enforced at rungs schema/tool, else the shown one."""
    schema = req.enforced_schema if req.rung in ("schema", "tool") else req.shown_schema
    assert schema is not None, "no schema in the request"
    return json.loads(json.dumps(schema))


def instruction_text(req: CompiledRequest) -> str:
    """The instruction message's text."""
    assert req.instructions is not None, "no instruction message"
    return req.instructions["content"]


def schema_pointers(schema: Mapping[str, Any], field: str) -> set[str]:
    """JSON Pointers (both spellings: through $defs and as written) of a case's schema field.

    ``schema.organizations[].roles`` -> ``/properties/organizations/items/properties/roles``
    and ``/$defs/Affiliation/properties/roles``; a last segment that is no property is a
    keyword (``schema.email.format`` -> ``/properties/email/format``).
    """
    parts = field.split(".")
    assert parts[0] == "schema", field
    written, resolved, node = "", "", schema
    for part in parts[1:]:
        items = part.endswith("[]")
        name = part.removesuffix("[]")
        if "$ref" in node:
            resolved = node["$ref"].removeprefix("#")
            node = schema["$defs"][resolved.rsplit("/", 1)[-1]]
        if name in node.get("properties", {}):
            written += f"/properties/{name}"
            resolved += f"/properties/{name}"
            node = node["properties"][name]
        else:
            written += f"/{name}"
            resolved += f"/{name}"
            node = {}
        if items:
            written += "/items"
            resolved += "/items"
            node = node.get("items", {})
    return {written, resolved}


def matches(adj: Any, field: str, schema: Mapping[str, Any] | None) -> bool:
    """Whether one of our adjustments is about a case's ``field``."""
    if field == "schema" or field.startswith("schema."):
        if not adj.path.startswith("schema:"):
            return False
        pointer = adj.path.removeprefix("schema:").rstrip("/")
        if field == "schema":
            return True
        assert schema is not None
        return any(pointer == p or pointer.startswith(p + "/")
                   for p in schema_pointers(schema, field))
    return bool(adj.path == field or adj.path.startswith(field + "."))


# ----------------------------------------------------------------------------- invariants


def _body_keys(req: CompiledRequest) -> set[str]:
    return set(req.body) - {"model", "messages", "provider"}


def _inv_listed(case: dict[str, Any], req: CompiledRequest) -> None:
    listed = set(case["input"]["capabilities"]["supported_parameters"])
    assert _body_keys(req) <= listed, _body_keys(req) - listed


def _inv_only_endpoint_serves(case: dict[str, Any], req: CompiledRequest) -> None:
    assert req.body["provider"]["require_parameters"] is True
    only = set(req.body["provider"]["only"])
    allowed = [e for e in case["input"]["capabilities"]["endpoints"]
               if e["provider"] in only or slug(e["provider"]) in only]
    assert any(_body_keys(req) <= set(e["supported_parameters"]) for e in allowed)


def _inv_no_root_union(case: dict[str, Any], req: CompiledRequest) -> None:
    schema = sent_schema(req)
    assert schema["type"] == "object" and not {"anyOf", "oneOf"} & set(schema)


def _inv_no_keyword(*words: str) -> Callable[[dict[str, Any], CompiledRequest], None]:
    def check(case: dict[str, Any], req: CompiledRequest) -> None:
        text = json.dumps(sent_schema(req))
        assert not [w for w in words if f'"{w}"' in text], text

    return check


def _inv_parse_union(case: dict[str, Any], req: CompiledRequest) -> None:
    assert req.projection is not None and req.projection.wrapped_root
    wrap = req.projection.wrapped_root
    done = req.parse_reply(json.dumps({wrap: {"status": "success", "answer": "42"}}))
    not_done = req.parse_reply(json.dumps({wrap: {"status": "error", "reason": "offline"}}))
    assert (type(done).__name__, type(not_done).__name__) == ("Done", "NotDone")


def _inv_json_and_schema_shown(case: dict[str, Any], req: CompiledRequest) -> None:
    assert req.projection is not None
    assert any("JSON" in m["content"] and req.projection.schema_json in m["content"]
               for m in req.body["messages"])


def _inv_shown_is_validation_schema(case: dict[str, Any], req: CompiledRequest) -> None:
    assert req.projection is not None
    assert extract_shown_schema(instruction_text(req)) == json.loads(req.projection.schema_json)


def _inv_reasoning_budget_within(lo: int, hi: int, below: int | None = None) -> Callable[
        [dict[str, Any], CompiledRequest], None]:
    def check(case: dict[str, Any], req: CompiledRequest) -> None:
        budget = dotted(req.body, "reasoning.max_tokens")
        if budget is not MISSING:
            assert lo <= budget <= hi
            if below is not None:
                assert budget < below
        else:
            assert below is None, "reasoning.max_tokens not sent"

    return check


def _inv_budget_below_max_tokens(case: dict[str, Any], req: CompiledRequest) -> None:
    assert req.body["reasoning"]["max_tokens"] < req.body["max_tokens"]


#: Every invariant text of faults.yaml -> its check; an unknown text fails loudly.
INVARIANTS: dict[str, Callable[[dict[str, Any], CompiledRequest], None]] = {
    "every top-level sampling/limit key in the body appears in supported_parameters":
        _inv_listed,
    "if reasoning.max_tokens is sent it is within [128, 32768]":
        _inv_reasoning_budget_within(128, 32768),
    "reasoning.max_tokens < max_tokens": _inv_budget_below_max_tokens,
    "1024 <= reasoning.max_tokens < 4000": _inv_reasoning_budget_within(1024, 3999, 4000),
    "max_tokens + 7884 <= 131072": lambda c, r: None if r.body["max_tokens"] + 7884 <= 131072
    else pytest.fail(f"max_tokens {r.body['max_tokens']}"),
    "max_tokens > 0": lambda c, r: None if r.body["max_tokens"] > 0 else pytest.fail("0"),
    "max_tokens <= 4096": lambda c, r: None if 0 < r.body["max_tokens"] <= 4096
    else pytest.fail(f"max_tokens {r.body['max_tokens']}"),
    "with provider.require_parameters true, at least one endpoint allowed by provider.only "
    "lists every key in the body": _inv_only_endpoint_serves,
    "root schema has type object and no root anyOf/oneOf": _inv_no_root_union,
    "no 'discriminator' or 'oneOf' keyword anywhere in the sent schema":
        _inv_no_keyword("discriminator", "oneOf"),
    "parsing a reply yields a Done or NotDone instance, not the wrapper": _inv_parse_union,
    'no "$ref" or "$defs" anywhere in the sent schema': _inv_no_keyword("$ref", "$defs"),
    "a message contains the word JSON and the JSON text of the validation schema":
        _inv_json_and_schema_shown,
    "the schema text in the messages equals the schema used for client-side validation":
        _inv_shown_is_validation_schema,
}


# ----------------------------------------------------------------------------- the checks


def expectations(case: dict[str, Any], variant: dict[str, Any] | None) -> dict[str, Any]:
    """A case's ``expected`` block, or a variant's ``expected_*`` fields in the same shape."""
    if variant is None:
        expected: dict[str, Any] = case["expected"]
        return expected
    out: dict[str, Any] = {"outcome": variant.get("expected_outcome", "compile")}
    request = {k: variant[f"expected_{k}"] for k in ("must_include", "must_not_include")
               if f"expected_{k}" in variant}
    if request:
        out["request"] = request
    for key in ("adjustments", "alternatives", "error_mentions"):
        if f"expected_{key}" in variant:
            out[key] = variant[f"expected_{key}"]
    return out


def compiled(case: dict[str, Any], variant: dict[str, Any] | None, tmp_path: Path,
             **changes: Any) -> CompiledRequest:
    """Compile a case (or variant) that is expected to compile."""
    registry, intent = build(case, tmp_path, variant, **changes)
    return compile_request(intent, case["input"]["model_id"], registry=registry)


def checks_of(case: dict[str, Any], variant: dict[str, Any] | None) -> Iterator[
        tuple[str, Callable[[Path], None]]]:
    """Every expectation of a case (or variant) as (name, check)."""
    exp = expectations(case, variant)
    unknown = set(exp) - EXPECTED_KEYS
    assert not unknown, f"fault case {case['id']}: unknown expected field(s) {sorted(unknown)}"

    def req_of(tmp_path: Path, **changes: Any) -> CompiledRequest:
        return compiled(case, variant, tmp_path, **changes)

    outcome = exp.get("outcome", "compile")
    if outcome == "refuse":
        def refuse(tmp_path: Path) -> None:
            with pytest.raises(CompilerError) as info:
                req_of(tmp_path)
            for word in exp.get("error_mentions", ()):
                assert word in str(info.value)
        yield "outcome.refuse", refuse
        return
    if outcome == "one_of":
        for alternative in exp["alternatives"]:
            yield f"outcome.{alternative}", ALTERNATIVES[alternative](case, variant)
        return
    assert outcome == "compile", f"fault case {case['id']}: outcome {outcome!r}"
    yield "outcome.compile", lambda tmp_path: None if req_of(tmp_path).body else pytest.fail()

    for key, want in (exp.get("request") or {}).items():
        assert key in REQUEST_CHECKS, f"fault case {case['id']}: expected.request.{key}"
        yield f"request.{key}", (
            lambda tmp_path, key=key, want=want: REQUEST_CHECKS[key](case, req_of(tmp_path), want))

    if "adjustments" in exp:
        if not exp["adjustments"]:
            def none(tmp_path: Path) -> None:
                extra = [a.kind for a in req_of(tmp_path).report.adjustments
                         if a.kind not in BOOKKEEPING]
                assert extra == []
            yield "adjustments", none
        for i, adj in enumerate(exp["adjustments"]):
            yield f"adjustments[{i}]", (
                lambda tmp_path, adj=adj: check_adjustment(case, req_of(tmp_path), adj))

    for i, text in enumerate(exp.get("invariants", ())):
        assert text in INVARIANTS, f"fault case {case['id']}: unknown invariant {text!r}"
        yield f"invariants[{i}]", (
            lambda tmp_path, text=text: INVARIANTS[text](case, req_of(tmp_path)))

    if "expected_schema" in exp:
        ignore = frozenset().union(*(
            SCHEMA_TEXTS[exp[k]] for k in ("schema_notes", "schema_equivalences") if k in exp))

        def schema(tmp_path: Path) -> None:
            got = normalise(sent_schema(req_of(tmp_path)), ignore=ignore)
            assert got == normalise(exp["expected_schema"], ignore=ignore)
        yield "expected_schema", schema

    if exp.get("schema_shown_equals_enforced"):
        def shown(tmp_path: Path) -> None:
            req = req_of(tmp_path)
            assert req.rung in ("schema", "tool")
            assert extract_shown_schema(instruction_text(req)) == req.enforced_schema
            assert req.shown_schema == req.enforced_schema
        yield "schema_shown_equals_enforced", shown


def check_adjustment(case: dict[str, Any], req: CompiledRequest, adj: dict[str, Any]) -> None:
    """One expected adjustment: its field and action must match one of ours."""
    assert adj["action"] in ACTIONS, f"fault case {case['id']}: action {adj['action']!r}"
    kinds = ACTIONS[adj["action"]]
    raw = req.contract.schema if req.contract is not None else None
    found = [a for a in req.report.adjustments
             if a.kind in kinds and matches(a, adj["field"], raw)]
    assert found, (adj, [(a.kind, a.path) for a in req.report.adjustments])


def _must_include(case: dict[str, Any], req: CompiledRequest, want: dict[str, Any]) -> None:
    for path, value in want.items():
        assert dotted(req.body, path) == value, path


def _must_not_include(case: dict[str, Any], req: CompiledRequest, want: list[str]) -> None:
    for path in want:
        assert dotted(req.body, path) is MISSING, path


def _must_include_keys(case: dict[str, Any], req: CompiledRequest, want: list[str]) -> None:
    for path in want:
        assert dotted(req.body, path) is not MISSING, path


def _must_not_include_values(case: dict[str, Any], req: CompiledRequest,
                             want: dict[str, list[Any]]) -> None:
    for path, bad in want.items():
        assert dotted(req.body, path) not in bad, path


def _acceptable_temperature(case: dict[str, Any], req: CompiledRequest, want: list[Any]) -> None:
    value = dotted(req.body, "temperature")
    assert ("absent" if value is MISSING else value) in want


def _routing_must_exclude(case: dict[str, Any], req: CompiledRequest, want: list[str]) -> None:
    """No attempt that can reach an excluded endpoint claims strict enforcement.

    Route plans keep every endpoint that can serve the model, so the excluded endpoint
    appears in a later attempt; what the case forbids is a strict body reaching it.
    """
    excluded = {slug(name) for name in want}
    assert excluded.isdisjoint(req.endpoints), req.endpoints  # attempt 1 is strict
    for attempt in req.plan:
        reaches = set(attempt.endpoints) if attempt.endpoints else excluded
        if reaches & excluded:
            assert strict_claims(attempt.body) == [], (attempt.endpoints, attempt.rung)


REQUEST_CHECKS: dict[str, Callable[[dict[str, Any], CompiledRequest, Any], None]] = {
    "must_include": _must_include,
    "must_not_include": _must_not_include,
    "must_include_keys": _must_include_keys,
    "must_not_include_values": _must_not_include_values,
    "acceptable_temperature": _acceptable_temperature,
    "routing_must_exclude": _routing_must_exclude,
}


def _downgrade_to_json(case: dict[str, Any], variant: dict[str, Any] | None) -> Callable[
        [Path], None]:
    def check(tmp_path: Path) -> None:
        req = compiled(case, variant, tmp_path)
        assert req.rung in ("tool", "json"), req.rung
        assert dotted(req.body, "response_format.type") != "json_schema"
        assert req.report.by_kind("output.downgraded")
        assert strict_claims(req.body) == [], (req.endpoints, strict_claims(req.body))
    return check


def _refuse_if_required(case: dict[str, Any], variant: dict[str, Any] | None) -> Callable[
        [Path], None]:
    def check(tmp_path: Path) -> None:
        with pytest.raises(AdjustmentRefused):
            compiled(case, variant, tmp_path, output_policy="required")
    return check


#: ``one_of`` alternatives: under policy ``auto`` the first, under ``required`` the second.
ALTERNATIVES = {
    "downgrade_to_json_with_report": _downgrade_to_json,
    "refuse_if_strict_required": _refuse_if_required,
}


def all_checks() -> list[Any]:
    """One pytest param per expectation of every case and variant."""
    if not FAULTS.is_file():
        return []
    params = []
    for case in load_cases():
        for variant in [None, *case["input"].get("variants", ())]:
            prefix = case["id"] + ("" if variant is None else f"/{variant['name']}")
            for name, check in checks_of(case, variant):
                check_id = f"{prefix}:{name}"
                marks = ([pytest.mark.xfail(strict=True, reason=XFAIL[check_id])]
                         if check_id in XFAIL else [])
                params.append(pytest.param(check, id=check_id, marks=marks))
    return params


@pytest.mark.parametrize("check", all_checks())
def test_fault_case(check: Callable[[Path], None], tmp_path: Path) -> None:
    """One expectation of one fault case, run from the case as written."""
    check(tmp_path)


# ----------------------------------------------------------------------------- the harness


def test_every_case_runs_and_every_xfail_names_a_check() -> None:
    """Every case has checks; every XFAIL entry is a real check id (no stale marks)."""
    ids = {p.id for p in all_checks()}
    assert {i.split(":")[0].split("/")[0] for i in ids} == {c["id"] for c in load_cases()}
    assert set(XFAIL) <= ids
    assert all(reason.startswith("#15: ") for reason in XFAIL.values())


def test_every_input_key_path_is_known() -> None:
    """Every key path under ``input`` in faults.yaml maps onto our configuration."""
    for case in load_cases():
        check_known(case)
    used = {known_pattern(p) for c in load_cases() for p in key_paths(c["input"])}
    assert used <= set(INPUT_KEYS)


def test_an_unknown_input_field_fails_loudly() -> None:
    """A field the translator does not know is an assertion naming the case and the path."""
    case = json.loads(json.dumps(load_case("C05"), default=str))
    case["input"]["overrides"]["when_reasoning_enabled"]["temperature"]["range"] = [0, 1]
    case["input"]["capabilities"]["top_provider"]["is_moderated"] = True
    assert unknown_paths(case) == [
        "capabilities.top_provider.is_moderated",
        "overrides.when_reasoning_enabled.temperature.range",
    ]
    with pytest.raises(AssertionError, match=r"fault case C05: .*"
                       r"input\.overrides\.when_reasoning_enabled\.temperature\.range"):
        check_known(case)


def test_translator_maps_fields_the_file_may_use(tmp_path: Path) -> None:
    """Fields #15 names that the current file does not use map as documented."""
    case = json.loads(json.dumps(load_case("C17"), default=str))
    case["input"]["overrides"] = {
        "max_completion_tokens": 3000,
        "sampling": {"temperature": {"fixed": 1}, "top_p": "unsupported"},
        "when_reasoning_enabled": {"tool_choice_forced": False},
    }
    del case["input"]["capabilities"]["endpoints"][1]["supported_parameters"]
    case["input"]["intent"]["sampling"] = {"temperature": 0.2, "top_p": 0.5}
    check_known(case)
    assert models_entry(case) == {
        "sampling": {"fixed": {"temperature": 1}, "unsupported": ["top_p"]},
        "structured_output": {"forced_tool_with_reasoning": False},
        "limits": {"max_completion_tokens": 3000},
    }
    req = compiled(case, None, tmp_path)
    assert req.body["max_tokens"] == 3000 and req.body["temperature"] == 1
    assert "top_p" not in req.body
    assert any(a.kind == "route.parameters_assumed" for p in req.plan for a in p.report.adjustments)


def test_the_snippet_prelude_is_the_files_header() -> None:
    """The imports given to every snippet are those the file's header says snippets assume."""
    stated = header_prelude()
    for line in PRELUDE.strip().splitlines():
        assert line in stated


def test_snippets_run_without_the_future_flag() -> None:
    """A snippet's annotations are evaluated as written (not as strings of this module)."""
    from tests.fault_cases import snippet_namespace

    namespace, target = snippet_namespace(load_case("C20"))
    assert target == "Outcome"
    assert not isinstance(namespace["Done"].__annotations__["status"], str)


# ----------------------------------------------------------------------------- beyond the file
# Details the cases leave informative (evidence, reply parsing), checked on the same inputs.


def test_c01_drop_cites_supported_parameters(tmp_path: Path) -> None:
    """C01: the temperature drop names supported_parameters as its evidence."""
    [adj] = compiled(load_case("C01"), None, tmp_path).report.by_kind("param.dropped")
    assert (adj.path, adj.requested, adj.applied) == ("temperature", 0.0, None)
    assert adj.evidence is not None and "supported_parameters" in adj.evidence.field


def test_c03_exclusion_cites_models_yaml(tmp_path: Path) -> None:
    """C03: the mutually exclusive drop comes from the models.yaml the override became."""
    [adj] = compiled(load_case("C03"), None, tmp_path).report.by_kind("param.mutually_exclusive")
    assert (adj.path, adj.requested, adj.applied) == ("top_p", 0.9, None)
    assert adj.evidence is not None and adj.evidence.layer == "models.yaml"


def test_c11_budget_clamp_reports_the_request(tmp_path: Path) -> None:
    """C11: the clamp records the 48000-token budget asked for."""
    clamped = compiled(load_case("C11"), None, tmp_path).report.by_kind("reasoning.budget_clamped")
    assert clamped and clamped[-1].requested == 48000


def test_c15_drop_cites_the_endpoint(tmp_path: Path) -> None:
    """C15: the temperature drop is decided by the pinned endpoint's list."""
    [adj] = compiled(load_case("C15"), None, tmp_path).report.by_kind("param.dropped")
    assert adj.path == "temperature"
    assert adj.evidence is not None and adj.evidence.layer == "endpoints"


def test_c17_single_body_restricts_routing(tmp_path: Path) -> None:
    """C17 with coverage first: one strict body, routing restricted to anthropic."""
    req = compiled(load_case("C17"), None, tmp_path, coverage="first")
    assert req.attempts == () and req.rung == "schema"
    [adj] = req.report.by_kind("routing.restricted")
    assert adj.applied == ["anthropic"]


def test_c17_weaker_endpoints_get_a_later_attempt(tmp_path: Path) -> None:
    """C17: the endpoint without structured_outputs is served by a later, weaker attempt."""
    req = compiled(load_case("C17"), None, tmp_path)
    assert req.endpoints == ("anthropic",)
    assert [a.endpoints for a in req.attempts] == [("google-vertex",)]
    assert all(a.rung != "schema" for a in req.attempts)


def test_c18_null_replies_map_back_to_defaults(tmp_path: Path) -> None:
    """C18: null for an optional field parses back to the pydantic default."""
    req = compiled(load_case("C18"), None, tmp_path)
    reply = {"organizations": [{"name": "Acme", "roles": None, "division": None}]}
    profile = req.parse_reply(json.dumps(reply))
    assert req.contract is not None
    assert profile == req.contract.target(organizations=[{"name": "Acme"}])


def test_c24_reply_still_validates_dropped_formats(tmp_path: Path) -> None:
    """C24: formats dropped from the schema are still enforced on the reply by pydantic."""
    req = compiled(load_case("C24"), None, tmp_path)
    reply = {"email": "a@example.com", "website": "https://example.com", "born": "2000-01-31",
             "updated_at": "2024-05-01T10:00:00Z"}
    assert str(req.parse_reply(json.dumps(reply)).born) == "2000-01-31"
    assert "email" in sent_schema(req)["properties"]["email"]["description"]  # restated
    with pytest.raises(ReplyValidationError, match=r"\$\.email"):
        req.parse_reply(json.dumps({**reply, "email": "not-an-email"}))


def test_c26_reply_parses(tmp_path: Path) -> None:
    """C26: a JSON-mode reply parses with the contract."""
    req = compiled(load_case("C26"), None, tmp_path)
    assert req.parse_reply('{"steps": ["a", "b"]}').steps == ["a", "b"]


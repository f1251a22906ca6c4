"""Route plans hold on every endpoint of every model of one real day (2026-05-18 data).

``models-2026-05-18.json`` and ``endpoints-all-2026-05-18.json`` come from one fetch, so
every model's real endpoints are known. For each example stage and model, unpinned, the
test works out from the body alone which endpoints OpenRouter may send each attempt to
(slug rules of https://openrouter.ai/docs/guides/routing/provider-selection, written
here independently of the compiler's own matcher) and checks each of them against its
published figures. Then the same pinned to each endpoint in turn. One process, one
registry; ``bench/run.py`` times the same sweep.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from compiler import CompiledRequest, Intent, compile_request
from compiler.errors import NoEndpointError, PromptTooLongError
from compiler.passes.budget import prompt_tokens
from compiler.schema.checks import check_dialect
from compiler.schema.dialects import get_dialect
from compiler.schema.instructions import extract_shown_schema
from registry.resolve.resolver import Registry
from tests.conftest import OPENROUTER, ROOT

MODELS = OPENROUTER / "models-2026-05-18.json"
ENDPOINTS = OPENROUTER / "endpoints-all-2026-05-18.json"
pytestmark = pytest.mark.skipif(not ENDPOINTS.is_file(), reason="../shared data absent")
MESSAGES = [{"role": "user", "content": "Please work on the attached text."}]
#: Reasons that would mean "left out for a missing feature" (single-body mode only).
FEATURE_REASONS = {"require_parameters", "structured_outputs", "tool_choice",
                   "max_completion_tokens"}


def selects(slug: str, tag: str) -> bool:
    """OpenRouter's rule: a full slug selects its endpoint, a base slug all of its provider's."""
    slug, tag = slug.lower(), tag.lower()
    return slug == tag or ("/" not in slug and tag.startswith(slug + "/"))


def routed(provider: Mapping[str, Any], endpoints: Sequence[Any]) -> list[Any]:
    """The published endpoints a body's ``provider`` object lets OpenRouter use."""
    only = provider.get("only") or []
    ignore = provider.get("ignore") or []
    return [e for e in endpoints
            if (not only or any(selects(s, e.tag) for s in only))
            and not any(selects(s, e.tag) for s in ignore)]


def problems(attempt: CompiledRequest, endpoint: Any, prompt: int) -> list[str]:
    """Why ``endpoint`` could not serve ``attempt``'s body whole (empty: it can)."""
    body = attempt.body
    params = {k: v for k, v in body.items() if k not in ("model", "messages", "provider")}
    needed = set(params)
    fmt = params.get("response_format")
    if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
        needed.add("structured_outputs")
    if any(t["function"].get("strict") is True for t in params.get("tools") or ()):
        needed.add("structured_outputs")  # strict only with evidence
    found = []
    missing = needed - set(endpoint.supported_parameters)
    if missing:
        found.append(f"lists no {sorted(missing)}")
    forced = isinstance(params.get("tool_choice"), dict)
    if forced and (endpoint.supports_tool_choice or {}).get("function") is False:
        found.append("cannot force a function")
    length = params.get("max_tokens", params.get("max_completion_tokens"))
    if length is not None and endpoint.max_completion_tokens and \
            length > endpoint.max_completion_tokens:
        found.append(f"max_tokens {length} > {endpoint.max_completion_tokens}")
    if endpoint.context_length and prompt + (length or 0) > endpoint.context_length:
        found.append(f"prompt {prompt} + {length} > context {endpoint.context_length}")
    if endpoint.max_prompt_tokens and prompt > endpoint.max_prompt_tokens:
        found.append(f"prompt {prompt} > max_prompt_tokens {endpoint.max_prompt_tokens}")
    return found


def schema_problems(attempt: CompiledRequest, dialect: str) -> list[str]:
    """A schema the provider sees must suit the model's dialect, equal the one shown,
    and be claimed as enforced only when strict."""
    body = attempt.body
    fmt = body.get("response_format") or {}
    if fmt.get("type") == "json_schema":
        sent, strict = fmt["json_schema"]["schema"], fmt["json_schema"].get("strict") is True
    elif body.get("tools"):
        function = body["tools"][0]["function"]
        sent, strict = function["parameters"], function.get("strict") is True
    else:
        return [] if attempt.report.enforced_sha256 is None else ["enforced without schema"]
    found = [f"{dialect}: {p}" for p in check_dialect(sent, get_dialect(dialect))]
    assert attempt.instructions is not None
    if extract_shown_schema(attempt.instructions["content"]) != sent:
        found.append("the schema shown differs from the one sent")
    if (attempt.report.enforced_sha256 is not None) != strict:
        found.append(f"enforced_sha256 {attempt.report.enforced_sha256} but strict {strict}")
    return found


def _prompt(attempt: CompiledRequest, intent: Intent) -> int:
    text = None if attempt.instructions is None else attempt.instructions["content"]
    return prompt_tokens(text, MESSAGES, intent.estimated_prompt_tokens)


def _fields(intent: Intent) -> dict[str, object]:
    """Return an Intent's fields as a dict (slots dataclass)."""
    return {f: getattr(intent, f) for f in intent.__dataclass_fields__}


def test_every_attempt_fits_every_endpoint_it_can_reach() -> None:
    """Unpinned, full coverage: each attempt fits every endpoint its routing reaches (strict
    only where all of them list structured_outputs), every schema sent suits the model's
    dialect and equals the one shown, every endpoint is in exactly one attempt or
    excluded with a reason, never for a feature."""
    registry = Registry.load(metadata=MODELS, endpoints=ENDPOINTS, models=ROOT / "models.yaml",
                             stages=ROOT / "stages.yaml")
    violations: list[str] = []
    plans = endpoints_seen = multi = schemas = 0
    for name in registry.stage_names():
        intent = Intent.from_stage(name, registry.stage(name), base_dir=registry.stage_dir())
        for model_id in registry.catalog.ids():
            listed = registry.endpoints(model_id)
            endpoints = [] if listed is None else list(listed.endpoints)
            if not endpoints:
                continue
            try:
                req = compile_request(intent, model_id, MESSAGES, registry=registry)
            except (PromptTooLongError, NoEndpointError):
                continue
            plans += 1
            multi += len(req.plan) > 1
            claimed: dict[int, int] = {}
            dialect = registry.resolve(model_id).dialect
            for number, attempt in enumerate(req.plan):
                schemas += attempt.rung in ("schema", "tool")
                for problem in schema_problems(attempt, dialect):
                    violations.append(f"{name} {model_id} attempt {number}: {problem}")
                reach = routed(attempt.body.get("provider") or {}, endpoints)
                if not reach:
                    violations.append(f"{name} {model_id} attempt {number}: reaches nothing")
                for endpoint in reach:
                    for problem in problems(attempt, endpoint, _prompt(attempt, intent)):
                        violations.append(f"{name} {model_id} {endpoint.tag}: {problem}")
                    if id(endpoint) in claimed:
                        violations.append(f"{name} {model_id} {endpoint.tag}: in attempts "
                                          f"{claimed[id(endpoint)]} and {number}")
                    claimed[id(endpoint)] = number
            excluded = {r.endpoint: r.excluded_by for r in req.routes if r.excluded_by}
            for endpoint in endpoints:
                endpoints_seen += 1
                if id(endpoint) not in claimed and endpoint.tag not in excluded:
                    violations.append(f"{name} {model_id} {endpoint.tag}: in no attempt, "
                                      "with no excluded_by")
            for tag, reason in excluded.items():
                if reason in FEATURE_REASONS:
                    violations.append(f"{name} {model_id} {tag}: excluded for {reason}")
    assert violations == []
    assert plans > 300 * 4
    assert endpoints_seen > 900 * 4
    assert multi > 100  # the sweep reaches plans of several attempts, not only the easy case
    assert schemas > 1000  # and the schema and tool rungs


def test_pinned_to_each_endpoint_the_single_attempt_fits_it() -> None:
    """Pinned to one endpoint (only + no fallbacks), one attempt that fits that endpoint."""
    registry = Registry.load(metadata=MODELS, endpoints=ENDPOINTS, models=ROOT / "models.yaml",
                             stages=ROOT / "stages.yaml")
    violations: list[str] = []
    pinned = 0
    for name in registry.stage_names():
        base = Intent.from_stage(name, registry.stage(name), base_dir=registry.stage_dir())
        for model_id in registry.catalog.ids():
            listed = registry.endpoints(model_id)
            for endpoint in [] if listed is None else listed.endpoints:
                tag = endpoint.tag
                assert tag is not None
                intent = Intent(**{**_fields(base), "provider": {"only": [tag],
                                                                 "allow_fallbacks": False}})
                try:
                    req = compile_request(intent, model_id, MESSAGES, registry=registry)
                except (PromptTooLongError, NoEndpointError):
                    continue
                pinned += 1
                assert not req.attempts and req.body["provider"]["only"] == [tag]
                for reached in routed(req.body["provider"], listed.endpoints):
                    for problem in problems(req, reached, _prompt(req, intent)):
                        violations.append(f"{name} {model_id} {tag}: {problem}")
    assert violations == []
    assert pinned > 900 * 4

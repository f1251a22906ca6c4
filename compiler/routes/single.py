"""One body for one resolved model: the passes in order, then render.

The passes (``docs/concepts.md``): output enforcement and schema projection ->
reasoning -> token budget -> sampling -> endpoint fit -> render. Precedence when two
wants conflict: hard limits > output enforcement > reasoning > sampling.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from compiler.compiled import CompiledRequest
from compiler.errors import AdjustmentRefused
from compiler.intent import Intent
from compiler.passes.budget import apply_budget
from compiler.passes.draft import Draft
from compiler.passes.enforcement import apply_enforcement
from compiler.passes.reasoning import apply_reasoning
from compiler.passes.routing import apply_endpoints
from compiler.passes.sampling import apply_sampling
from compiler.passes.tools import apply_messages, apply_tools
from compiler.report import AdjustmentReport
from registry.resolve.capabilities import ResolvedModel
from registry.resolve.resolver import Registry

__all__ = ["Single", "compile_single"]

_BODY_ORDER = ("response_format", "tools", "tool_choice", "parallel_tool_calls", "reasoning",
               "max_tokens", "max_completion_tokens")


@dataclass(frozen=True, slots=True)
class Single:
    """One compiled body and what a replay with other messages needs.

    Attributes:
        compiled: the request (no attempts, no routes).
        instructions_text: the instruction message's text, or ``None``.
        prompt_ceiling: the largest prompt estimate in tokens for which the same
            body results, or ``None`` when the prompt size decided it.
        prompt_tokens: the prompt estimate used, in tokens.
    """

    compiled: CompiledRequest
    instructions_text: str | None
    prompt_ceiling: int | None
    prompt_tokens: int


def compile_single(
    registry: Registry,
    intent: Intent,
    resolved: ResolvedModel,
    messages: Sequence[Mapping[str, Any]],
    notes: tuple[str, ...] = (),
) -> Single:
    """Run every pass for ``resolved`` and render the body; ``notes`` go last in the
    report of the body (not in that of a refusal).

    Raises:
        ProjectionError: the contract cannot be projected.
        PromptTooLongError: the prompt estimate does not fit (``limit`` names which).
        AdjustmentRefused: no valid body exists (mandatory reasoning whose smallest
            budget does not fit below ``max_tokens``).
    """
    draft = Draft(intent=intent, model=resolved, messages=[dict(m) for m in messages])
    if resolved.alias_target is not None:
        draft.adjust("model.alias", "model", resolved.id, resolved.alias_target,
                     f"{resolved.id} is an alias of {resolved.alias_target} (published "
                     "alias_target): the declarations matching the target apply; the body "
                     "keeps the alias, which OpenRouter resolves",
                     resolved.source_of("alias_target"))
    apply_messages(draft)
    apply_enforcement(draft)
    apply_tools(draft)
    apply_reasoning(draft)
    apply_budget(draft)
    apply_sampling(draft)
    apply_endpoints(draft)
    body = _render(draft)
    own = tuple(n for n in (registry.catalog.note, *_assumptions(resolved), *draft.notes) if n)
    report = AdjustmentReport(
        stage=intent.stage,
        model=resolved.id,
        metadata=registry.catalog.describe()
        if not resolved.declared_only
        else "declared in models.yaml (absent from metadata)",
        rung=draft.rung,
        adjustments=tuple(draft.adjustments),
        shown_sha256=draft.shown_sha256,
        enforced_sha256=draft.enforced_sha256 if draft.rung in ("schema", "tool") else None,
        notes=own if draft.impossible is not None or not notes else (*own, *notes),
        tool_hashes=tuple((t.tool.name, t.sha256) for t in draft.tools),
    )
    if draft.impossible is not None:
        raise AdjustmentRefused(
            f"{resolved.id} cannot serve stage {intent.stage!r}: {draft.impossible}",
            report=report, kinds=["tokens.answer_short"])
    instructions = (
        None if draft.instructions is None else {"role": "system", "content": draft.instructions}
    )
    compiled = CompiledRequest(
        body=body,
        report=report,
        instructions=instructions,
        contract=intent.contract,
        projection=draft.projection,
        tools=draft.tools,
    )
    return Single(compiled, draft.instructions, draft.prompt_ceiling, draft.prompt_tokens)


def _assumptions(model: ResolvedModel) -> list[str]:
    """One note per value assumed because the metadata is silent or out of range."""
    notes = list(model.metadata_notes)
    source = model.source_of("supported_parameters")
    if source is not None and source.layer == "default":
        notes.append(f"the metadata publishes no supported_parameters for {model.id}: only "
                     "max_tokens is assumed (built-in default); declare the list in "
                     "models.yaml")
    if model.context_length is None:
        notes.append(f"no context_length is known for {model.id}: max_tokens is not "
                     "checked against the prompt")
    return notes


def _render(draft: Draft) -> dict[str, Any]:
    messages = list(draft.messages)
    if draft.instructions is not None:
        messages.insert(0, {"role": "system", "content": draft.instructions})
    body: dict[str, Any] = {"model": draft.model.id, "messages": messages}
    for key in _BODY_ORDER:
        if key in draft.params:
            body[key] = draft.params[key]
    for key, value in draft.params.items():
        body.setdefault(key, value)
    provider = {**draft.model.provider, **draft.provider_patch}
    relies = [k for k in body if k not in ("model", "messages")]
    if relies and provider.get("require_parameters") is not True:
        draft.adjust(
            "routing.require_parameters",
            "provider.require_parameters",
            provider.get("require_parameters"),
            True,
            "the body relies on optional parameters ("
            + ", ".join(relies)
            + "); OpenRouter must route only to endpoints that support them all",
            draft.model.source_of("provider.require_parameters"),
        )
        provider["require_parameters"] = True
    if provider:
        body["provider"] = provider
    return body

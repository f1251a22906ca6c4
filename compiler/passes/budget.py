"""Token budget: ``max_tokens = output_tokens + reasoning budget``, within the model's limits.

Reasoning tokens count as output tokens, so the reasoning budget is added on top of
the answer budget (https://openrouter.ai/docs/guides/best-practices/reasoning-tokens).
The total is clamped to the model's ``max_completion_tokens`` and to
``context_length`` minus the estimated prompt
(https://openrouter.ai/docs/api_reference/parameters: "The maximum value is the
context length minus the prompt length"). When clamped, the reasoning budget shrinks
first, staying at or above its minimum and strictly below ``max_tokens``; with an
answer budget, the answer floor (:mod:`compiler.passes.answer`) is kept clear of
reasoning: the budget shrinks, the effort is lowered, or reasoning is turned off.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Iterable, Mapping
from typing import Any

from compiler.errors import PromptTooLongError
from compiler.passes.answer import fit_answer
from compiler.passes.draft import Draft
from compiler.schema.frozen_json import FrozenDict
from compiler.tools.media import media_tokens, vendor_rule

__all__ = [
    "CHARS_PER_TOKEN", "apply_budget", "estimate_prompt_tokens", "prompt_tokens", "tools_tokens",
]

#: The estimator's characters per token. Three is deliberately below the usual ~4 of
#: English prose so that JSON schemas and code are not underestimated.
CHARS_PER_TOKEN = 3
#: Tokens added per message for role and framing.
TOKENS_PER_MESSAGE = 4


def _content_size(content: Any, rule: str) -> tuple[int, int]:
    """``(characters of text, tokens of media parts)`` of one message's content."""
    if isinstance(content, str):
        return len(content), 0
    if isinstance(content, list):
        total, media = 0, 0
        for part in content:
            tokens = media_tokens(part, rule) if isinstance(part, Mapping) else None
            if tokens is not None:
                media += tokens
            elif isinstance(part, Mapping) and isinstance(part.get("text"), str):
                total += len(part["text"])
            else:
                total += len(json.dumps(part, default=str))
        return total, media
    return (0 if content is None else len(json.dumps(content, default=str))), 0


def estimate_prompt_tokens(messages: Iterable[Mapping[str, Any]], rule: str = "openai") -> int:
    """Estimate the prompt size in tokens: ``ceil(characters / 3) + 4`` per message (the
    content, and an assistant turn's ``tool_calls`` as JSON), plus each image, file or
    audio part by the vendor ``rule``
    (:func:`compiler.tools.media.media_tokens`), never by its base64 length.

    Args:
        messages: chat messages; ``content`` may be a string or a list of parts.
        rule: ``openai``, ``anthropic`` or ``gemini`` (:func:`compiler.tools.media.
            vendor_rule` of the model).

    >>> estimate_prompt_tokens([{"role": "user", "content": "x" * 30}])
    14
    """
    total = 0
    for message in messages:
        chars, media = _content_size(message.get("content"), rule)
        calls = message.get("tool_calls")
        if calls:  # an assistant turn's tool calls are prompt text too (their arguments)
            chars += len(json.dumps(calls, default=str))
        total += math.ceil(chars / CHARS_PER_TOKEN) + media
        total += TOKENS_PER_MESSAGE
    return total


def tools_tokens(tools: Iterable[Mapping[str, Any]] | None) -> int:
    """Estimate the tool definitions of a body (its ``tools`` list) in tokens:
    ``ceil(characters / 3)`` of each function's ``name``, ``description`` and
    ``parameters`` as compact JSON (the provider puts them in the prompt, in its own
    rendering; the output tool of rung ``tool`` counts too).

    >>> tools_tokens([{"type": "function", "function": {"name": "f", "parameters": {}}}])
    10
    """
    chars = 0
    for entry in tools or ():
        function = entry.get("function") if isinstance(entry, Mapping) else None
        shown: Any = entry if not isinstance(function, Mapping) else {
            key: function[key] for key in ("name", "description", "parameters") if key in function}
        parameters = shown.get("parameters") if type(shown) is dict else None
        if type(parameters) is FrozenDict:  # a projected schema, shared: sized once
            shown["parameters"] = 0  # one character in place of the schema's text
            chars += len(_compact(shown)) - 1 + _frozen_length(parameters)
        else:
            chars += len(_compact(shown))
    return math.ceil(chars / CHARS_PER_TOKEN)


#: ``json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)``, with
#: one encoder made once (``json.dumps`` makes one per call for these options)
_compact = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, default=str).encode


#: characters of the compact JSON of read-only schemas, by identity (each kept alive
#: beside its figure, so an id is not reused while it is here); bounded
_LENGTHS: dict[int, tuple[FrozenDict, int]] = {}


def _frozen_length(value: FrozenDict) -> int:
    found = _LENGTHS.get(id(value))
    if found is None or found[0] is not value:
        if len(_LENGTHS) >= 256:
            _LENGTHS.clear()
        found = _LENGTHS[id(value)] = (value, len(_compact(value)))
    return found[1]


def prompt_tokens(
    instructions: str | None, messages: Iterable[Mapping[str, Any]], declared: int | None,
    rule: str = "openai", tools: Iterable[Mapping[str, Any]] | None = None,
) -> int:
    """Estimate a request's prompt in tokens: the instruction message plus the caller's
    messages, or the stage's ``estimated_prompt_tokens`` plus the instructions when larger;
    plus the body's tool definitions (:func:`tools_tokens`).
    """
    shown = [] if instructions is None else [{"content": instructions}]
    fixed = tools_tokens(tools)
    estimate = estimate_prompt_tokens([*shown, *messages], rule) + fixed
    if declared is not None:
        estimate = max(estimate, declared + estimate_prompt_tokens(shown) + fixed)
    return estimate


def _prompt_tokens(draft: Draft) -> int:
    return prompt_tokens(draft.instructions, draft.messages, draft.intent.estimated_prompt_tokens,
                         vendor_rule(draft.model.tree), draft.params.get("tools"))


def apply_budget(draft: Draft) -> None:
    """Set the length limit and fit the reasoning budget under it.

    Raises:
        PromptTooLongError: the estimated prompt alone reaches ``context_length``.
    """
    model = draft.model
    out = draft.intent.output_tokens
    prompt = _prompt_tokens(draft)
    draft.prompt_tokens = prompt
    context = model.context_length
    if context is not None and prompt >= context:
        raise PromptTooLongError(
            f"the prompt (about {prompt} tokens) does not fit in the context of "
            f"{model.id} ({context} tokens); shorten it or choose a model with a longer context",
            prompt_tokens=prompt,
            context_length=context,
        )
    if model.max_prompt_tokens is not None and prompt > model.max_prompt_tokens:
        raise PromptTooLongError(
            f"the prompt (about {prompt} tokens) exceeds the max_prompt_tokens of "
            f"{model.id}'s endpoints ({model.max_prompt_tokens} tokens); shorten it",
            prompt_tokens=prompt,
            context_length=model.max_prompt_tokens,
            limit="max_prompt_tokens",
        )
    _report_limit_changes(draft)
    limits: list[tuple[int, str, str]] = []
    if model.max_completion_tokens is not None:
        limits.append(
            (
                model.max_completion_tokens,
                "limits.max_completion_tokens",
                "the model's max_completion_tokens",
            )
        )
    if context is not None:
        limits.append(
            (
                context - prompt,
                "limits.context_length",
                f"context_length {context} minus about {prompt} prompt tokens",
            )
        )
    cap = draft.intent.max_tokens
    if cap is not None:
        limits.append((cap, "", "the stage's max_tokens cap"))
    limit, limit_path, limit_text = min(limits) if limits else (None, "", "")
    budget = draft.reasoning_budget
    if out is None:
        if limit is None:
            return
        total = limit
        ceiling = model.max_completion_tokens
        if ceiling is not None and ceiling > limit:
            draft.adjust(
                "tokens.clamped",
                "max_tokens",
                ceiling,
                limit,
                f"the model's maximum {ceiling} exceeds {limit_text}",
                model.source_of(limit_path),
            )
        else:
            draft.adjust(
                "tokens.filled",
                "max_tokens",
                None,
                total,
                f"the stage sets no output_tokens; using the most allowed ({limit_text})",
                model.source_of(limit_path),
            )
    else:
        total = out + budget
        if limit is not None and total > limit:
            draft.adjust(
                "tokens.clamped",
                "max_tokens",
                total,
                limit,
                f"{total} tokens (answer {out} + reasoning {budget}) exceed {limit_text}",
                model.source_of(limit_path),
            )
            total = limit
    if out is not None:
        # The result holds for every prompt that leaves the context limit unbinding.
        others = [lim for lim, path, _ in limits if path != "limits.context_length"]
        unclamped = min([out + budget, *others])
        if context is None:
            draft.prompt_ceiling = sys.maxsize
        elif unclamped <= context - prompt:
            draft.prompt_ceiling = context - unclamped
        if draft.prompt_ceiling is not None and model.max_prompt_tokens is not None:
            draft.prompt_ceiling = min(draft.prompt_ceiling, model.max_prompt_tokens)
    reasoning = draft.params.get("reasoning")
    if out is not None:
        fit_answer(draft, total)
    elif isinstance(reasoning, dict) and "max_tokens" in reasoning:
        _fit_reasoning_budget(draft, reasoning, total, out)
    _set_length(draft, total)


def _report_limit_changes(draft: Draft) -> None:
    """Report each declared limit that differs from the endpoints' published one."""
    for change in draft.model.limit_changes:
        where = "" if change.source is None else f" ({change.source.source})"
        if change.declared < change.published:
            draft.adjust(
                "limits.lowered",
                change.path,
                change.published,
                change.declared,
                f"a declaration{where} lowers the endpoints' published {change.published} "
                f"tokens to {change.declared}",
                change.source,
            )
        else:
            draft.adjust(
                "limits.capped",
                change.path,
                change.declared,
                change.published,
                f"the declared {change.declared} tokens{where} exceed the "
                f"{change.published} the endpoints publish; an endpoint cannot return more",
                draft.model.source_of(change.path),
            )


def _fit_reasoning_budget(
    draft: Draft, reasoning: dict[str, Any], total: int, out: int | None
) -> None:
    caps = draft.model.reasoning
    budget = int(reasoning["max_tokens"])
    floor = caps.budget_min or 1
    if out is not None:
        if budget <= total - out:
            return
        target = max(total - out, floor)
    else:
        if budget < total:
            return
        target = max(total // 2, floor)
    if target < total:
        reasoning["max_tokens"] = target
        draft.reasoning_budget = target
        draft.adjust(
            "reasoning.budget_clamped",
            "reasoning.max_tokens",
            budget,
            target,
            f"the reasoning budget must stay below max_tokens {total}",
            draft.model.source_of("reasoning.budget_min"),
        )
        return
    del draft.params["reasoning"]
    draft.reasoning_on = not caps.can_disable
    draft.reasoning_budget = 0
    draft.adjust(
        "reasoning.dropped",
        "reasoning",
        reasoning,
        None,
        f"the minimum reasoning budget {floor} does not fit below max_tokens {total}",
        draft.model.source_of("reasoning.budget_min"),
    )


def _set_length(draft: Draft, total: int) -> None:
    model = draft.model
    for key in ("max_tokens", "max_completion_tokens"):
        if model.supports(key):
            draft.params[key] = total
            return
    if draft.intent.output_tokens is not None:
        draft.adjust(
            "tokens.no_length_param",
            "max_tokens",
            total,
            None,
            "the model lists neither max_tokens nor max_completion_tokens, "
            "so no length limit can be sent",
            model.parameter_evidence("max_tokens"),
        )

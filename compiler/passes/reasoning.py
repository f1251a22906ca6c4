"""Reasoning: map the requested effort to what the model accepts.

Rules (https://openrouter.ai/docs/guides/best-practices/reasoning-tokens):

* reasoning is sent only when ``supported_parameters`` lists ``reasoning``;
* an effort the model does not accept maps to the nearest accepted one by rank
  (``none < minimal < low < medium < high < xhigh < max``); a tie goes to the level
  nearer ``medium``;
* ``none`` on a model that cannot disable reasoning becomes its lowest effort;
* budget-style models get an explicit ``reasoning.max_tokens`` (never an effort that
  OpenRouter would turn into a share of ``max_tokens``), within ``[budget_min, budget_max]``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from compiler.passes.draft import Draft
from registry.resolve.capabilities import EFFORT_RANK

__all__ = ["DEFAULT_EFFORT_BUDGETS", "apply_reasoning", "nearest_effort"]

#: Reasoning budget in tokens per effort for budget-style models whose models.yaml
#: entry declares no ``effort_budgets``. Effort-style models reserve nothing unless
#: models.yaml declares ``reasoning.effort_budgets`` (see docs/configuration.md).
DEFAULT_EFFORT_BUDGETS: Mapping[str, int] = {
    "minimal": 1024,
    "low": 2048,
    "medium": 8192,
    "high": 16384,
    "xhigh": 24576,
    "max": 32768,
}

_MEDIUM = EFFORT_RANK["medium"]


def nearest_effort(requested: str, accepted: Sequence[str]) -> str:
    """Return the accepted effort nearest ``requested`` by rank; ties go toward ``medium``.

    Args:
        requested: an effort of OpenRouter's vocabulary.
        accepted: the efforts the model accepts (non-empty).

    >>> nearest_effort("minimal", ["none", "low", "medium", "high"])
    'low'
    >>> nearest_effort("max", ["low", "high"])
    'high'
    """
    want = EFFORT_RANK[requested]
    return min(
        accepted,
        key=lambda e: (abs(EFFORT_RANK[e] - want), abs(EFFORT_RANK[e] - _MEDIUM), EFFORT_RANK[e]),
    )


def _budget_for(draft: Draft, effort: str) -> int:
    caps = draft.model.reasoning
    budget = caps.effort_budgets.get(effort, DEFAULT_EFFORT_BUDGETS.get(effort, 0))
    low, high = caps.budget_min, caps.budget_max
    clamped = budget
    if high is not None and clamped > high:
        clamped = high
    if low is not None and clamped < low:
        clamped = low
    if clamped != budget:
        draft.adjust(
            "reasoning.budget_clamped",
            "reasoning.max_tokens",
            budget,
            clamped,
            f"the model accepts reasoning budgets in [{low}, {high}] tokens",
            draft.model.source_of(
                "reasoning.budget_min" if clamped == low else "reasoning.budget_max"
            ),
        )
    return clamped


def apply_reasoning(draft: Draft) -> None:
    """Set ``reasoning`` in the draft and the tokens to reserve for it."""
    requested = draft.intent.reasoning
    model = draft.model
    caps = model.reasoning
    if requested is None:
        # Leave the model's own default; a model that cannot disable reasoning still
        # reasons, so the token budget keeps room for it.
        draft.reasoning_on = caps.supported and not caps.can_disable
        if draft.reasoning_on and caps.style == "budget":
            draft.reasoning_budget = caps.budget_min or 0
        return
    if not caps.supported:
        if requested != "none":
            draft.adjust(
                "reasoning.unsupported",
                "reasoning",
                requested,
                None,
                "the model does not list reasoning, so no reasoning setting is sent",
                model.parameter_evidence("reasoning"),
            )
        return
    accepted = [e for e in (caps.efforts or ()) if e != "none"]
    if requested == "none":
        if caps.can_disable:
            if caps.style == "effort" and (caps.efforts is None or "none" in caps.efforts):
                draft.params["reasoning"] = {"effort": "none"}
            else:
                draft.params["reasoning"] = {"enabled": False}
            return
        lowest = accepted[0] if accepted else "minimal"
        applied: Any = lowest
        minimum_budget = None
        if caps.style == "budget":
            # The nearest setting to "off" is the smallest budget the model accepts.
            minimum_budget = caps.budget_min or _budget_for(draft, lowest)
            applied = f"minimum budget {minimum_budget} tokens"
        draft.adjust(
            "reasoning.cannot_disable",
            "reasoning",
            "none",
            applied,
            "reasoning is mandatory for this model; its lowest setting is used instead",
            model.source_of("reasoning.can_disable"),
        )
        draft.reasoning_on = True
        if minimum_budget is not None:
            draft.params["reasoning"] = {"max_tokens": minimum_budget}
            draft.reasoning_budget = minimum_budget
            return
        effort = lowest
    else:
        effort = requested
        if accepted and effort not in accepted:
            effort = nearest_effort(requested, accepted)
            draft.adjust(
                "reasoning.effort_mapped",
                "reasoning.effort",
                requested,
                effort,
                f"{requested} is not an accepted effort ({', '.join(accepted)}); "
                "nearest by rank, ties toward medium",
                model.source_of("reasoning.efforts"),
            )
    draft.reasoning_on = True
    if caps.style == "budget":
        budget = _budget_for(draft, effort)
        draft.params["reasoning"] = {"max_tokens": budget}
        draft.reasoning_budget = budget
    elif caps.style == "toggle":
        draft.params["reasoning"] = {"enabled": True}
        draft.reasoning_budget = caps.effort_budgets.get(effort, 0)
        if effort != caps.default_effort:
            draft.adjust(
                "reasoning.effort_ignored",
                "reasoning.effort",
                effort,
                None,
                "the model only switches reasoning on or off; the effort level is not sent",
                model.source_of("reasoning.style"),
            )
    else:
        draft.params["reasoning"] = {"effort": effort}
        draft.reasoning_budget = caps.effort_budgets.get(effort, 0)

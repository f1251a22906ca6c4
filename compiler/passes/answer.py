"""The answer floor: reasoning never takes the tokens the stage's answer needs.

Reasoning tokens count against ``max_tokens``
(https://openrouter.ai/docs/guides/best-practices/reasoning-tokens), so a reasoning
reserve that does not fit beside the answer leaves an empty reply with
``finish_reason: length``. When ``max_tokens`` (after the cap and the context) cannot
hold the answer floor (``min_output_tokens``, else ``output_tokens``) plus the reserve:

1. a budget-style model's ``reasoning.max_tokens`` shrinks to the room left, if that is
   still at least its ``budget_min``;
2. an effort is lowered one level at a time to the highest whose reserve
   (``reasoning.effort_budgets``) fits;
3. otherwise reasoning is turned off; a model whose reasoning is mandatory keeps its
   lowest setting, and ``tokens.answer_short`` says the answer may get less than the
   floor (refused under ``output.policy: required``).

When ``max_tokens`` itself is below the floor, that is ``tokens.clamped``, plus
``tokens.answer_short`` when the stage declared ``min_output_tokens``.
"""

from __future__ import annotations

from typing import Any

from compiler.passes.draft import Draft
from registry.resolve.capabilities import EFFORT_RANK

__all__ = ["fit_answer"]


def _off(draft: Draft) -> dict[str, Any]:
    caps = draft.model.reasoning
    if caps.style == "effort" and (caps.efforts is None or "none" in caps.efforts):
        return {"effort": "none"}
    return {"enabled": False}


def _short(draft: Draft, total: int, floor: int, reserve: int) -> None:
    draft.adjust(
        "tokens.answer_short",
        "max_tokens",
        floor,
        max(total - reserve, 0),
        f"max_tokens {total} cannot hold the answer floor {floor} beside the "
        f"{reserve}-token reasoning the model cannot turn off",
        draft.model.source_of("reasoning.can_disable"),
    )


def _lower_effort(draft: Draft, reasoning: dict[str, Any], room: int) -> bool:
    """Lower ``reasoning.effort`` to the highest level whose reserve fits in ``room``."""
    caps = draft.model.reasoning
    current = str(reasoning["effort"])
    levels = [e for e in (caps.efforts or tuple(EFFORT_RANK)) if e != "none"]
    lower = [e for e in levels if EFFORT_RANK.get(e, 0) < EFFORT_RANK.get(current, 0)]
    for effort in sorted(lower, key=lambda e: EFFORT_RANK.get(e, 0), reverse=True):
        reserve = caps.effort_budgets.get(effort, 0)
        if reserve <= room:
            reasoning["effort"] = effort
            draft.reasoning_budget = reserve
            draft.adjust(
                "reasoning.effort_lowered",
                "reasoning.effort",
                current,
                effort,
                f"the {caps.effort_budgets.get(current, 0)}-token reserve of {current} does "
                f"not fit beside the answer in {room + draft.answer_floor} tokens; "
                f"{effort} reserves {reserve}",
                draft.model.source_of("reasoning.effort_budgets"),
            )
            return True
    return False


def fit_answer(draft: Draft, total: int) -> None:
    """Keep ``total - reasoning reserve >= answer floor`` (see the module docstring).

    Args:
        draft: the draft, with ``reasoning`` and ``reasoning_budget`` set.
        total: the ``max_tokens`` that will be sent, in tokens.
    """
    out = draft.intent.output_tokens
    if out is None:
        return
    floor = min(draft.intent.min_output_tokens or out, out)
    draft.answer_floor = floor
    if floor > total:
        if draft.intent.min_output_tokens is not None:
            draft.adjust("tokens.answer_short", "max_tokens", floor, total,
                         f"max_tokens {total} (the cap or the context) is below the answer "
                         f"floor {floor}", None)
        floor = total  # the clamp below output_tokens is reported as tokens.clamped
        draft.answer_floor = floor
    reasoning = draft.params.get("reasoning")
    if not isinstance(reasoning, dict) or not draft.reasoning_on:
        return
    effort = reasoning.get("effort")
    caps = draft.model.reasoning
    if isinstance(effort, str) and effort != "none" and effort not in caps.effort_budgets:
        draft.notes.append(
            f"no reasoning reserve is declared for effort {effort} of {draft.model.id} "
            "(reasoning.effort_budgets in models.yaml): reasoning may take part of "
            "max_tokens that the answer floor does not account for")
    reserve = draft.reasoning_budget
    room = total - floor
    if reserve <= room:
        return
    budget_min = caps.budget_min or 1
    if "max_tokens" in reasoning:
        if room >= budget_min and room < total:
            draft.adjust("reasoning.budget_clamped", "reasoning.max_tokens",
                         reasoning["max_tokens"], room,
                         f"the reasoning budget must leave the answer floor {floor} "
                         f"within max_tokens {total}",
                         draft.model.source_of("reasoning.budget_min"))
            reasoning["max_tokens"] = room
            draft.reasoning_budget = room
            return
    elif "effort" in reasoning and _lower_effort(draft, reasoning, room):
        return
    if caps.can_disable:
        # a budget-style model thinks only when asked; others need an explicit "off"
        replaced = None if "max_tokens" in reasoning else _off(draft)
        if replaced is None:
            del draft.params["reasoning"]
        else:
            draft.params["reasoning"] = replaced
        draft.reasoning_on = False
        draft.reasoning_budget = 0
        why = (f"max_tokens {total} is below the answer budget {out}, so no reasoning "
               "reserve fits beside the answer" if floor == total else
               f"no reasoning setting leaves the answer floor {floor} within max_tokens "
               f"{total}")
        draft.adjust("reasoning.dropped", "reasoning", reasoning, replaced,
                     f"{why}; reasoning is turned off",
                     draft.model.source_of("reasoning.effort_budgets"))
        return
    _lowest(draft, reasoning, total, floor)


def _lowest(draft: Draft, reasoning: dict[str, Any], total: int, floor: int) -> None:
    """Reasoning is mandatory: use its lowest setting, and say the answer may be short.

    A budget-style minimum at or above ``max_tokens`` makes a body the provider rejects
    (the budget must stay below ``max_tokens``), so the draft is marked impossible and
    the compile is refused.
    """
    caps = draft.model.reasoning
    before = dict(reasoning)
    if "max_tokens" in reasoning:
        lowest = caps.budget_min or 1
        reasoning["max_tokens"] = lowest
        draft.reasoning_budget = lowest
        if lowest >= total:
            draft.impossible = (f"the smallest reasoning budget {lowest} of this model "
                                f"(reasoning cannot be turned off) does not fit below "
                                f"max_tokens {total}")
    elif "effort" in reasoning:
        levels = [e for e in (caps.efforts or tuple(EFFORT_RANK)) if e != "none"]
        lowest_effort = min(levels, key=lambda e: EFFORT_RANK.get(e, 0))
        reasoning["effort"] = lowest_effort
        draft.reasoning_budget = caps.effort_budgets.get(lowest_effort, 0)
    if reasoning != before:
        draft.adjust("reasoning.effort_lowered", "reasoning", before, dict(reasoning),
                     "reasoning cannot be turned off; its lowest setting leaves the answer "
                     "the most room", draft.model.source_of("reasoning.can_disable"))
    if draft.reasoning_budget > total - floor:
        _short(draft, total, floor, draft.reasoning_budget)

"""Sampling: send only what the model lists, within its value rules.

A parameter the intent did not set is never added. Rules, in order, for each
parameter the stage set (declaration order):

1. not in ``supported_parameters`` (after models.yaml ``sampling.unsupported`` /
   ``supported``) -> dropped (``param.dropped``);
2. refused while reasoning is on -> dropped (``param.refused_while_reasoning``);
3. a fixed value (always, or while reasoning) -> replaced (``param.fixed``);
4. outside its range -> clamped (``param.clamped``); OpenRouter's documented ranges
   (https://openrouter.ai/docs/api_reference/parameters) are the defaults;
5. of a mutually exclusive group, the one the stage set first is kept, the others
   dropped (``param.mutually_exclusive``).
"""

from __future__ import annotations

from typing import Any

from compiler.passes.draft import Draft

__all__ = ["apply_sampling"]


def _clamp(value: Any, bounds: tuple[float | None, float | None]) -> Any:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return value
    low, high = bounds
    if low is not None and value < low:
        return type(value)(low) if isinstance(value, int) else float(low)
    if high is not None and value > high:
        return type(value)(high) if isinstance(value, int) else float(high)
    return value


def apply_sampling(draft: Draft) -> None:
    """Add the stage's sampling parameters that the model accepts, adjusted to its rules."""
    model = draft.model
    rules = model.sampling
    kept: dict[str, Any] = {}
    for name, value in draft.intent.sampling:
        if not model.supports(name):
            draft.adjust(
                "param.dropped",
                name,
                value,
                None,
                f"{model.id} does not list {name} in supported_parameters",
                model.parameter_evidence(name),
            )
            continue
        if draft.reasoning_on and name in rules.unsupported_while_reasoning:
            draft.adjust(
                "param.refused_while_reasoning",
                name,
                value,
                None,
                f"{model.id} refuses {name} while reasoning is on",
                model.source_of("sampling.while_reasoning.unsupported"),
            )
            continue
        fixed_path = None
        if draft.reasoning_on and name in rules.fixed_while_reasoning:
            fixed, fixed_path = rules.fixed_while_reasoning[name], "sampling.while_reasoning.fixed"
        elif name in rules.fixed:
            fixed, fixed_path = rules.fixed[name], "sampling.fixed"
        if fixed_path is not None:
            if fixed != value:
                draft.adjust(
                    "param.fixed",
                    name,
                    value,
                    fixed,
                    f"{model.id} accepts only {name}={fixed}"
                    + (" while reasoning" if "while" in fixed_path else ""),
                    model.source_of(f"{fixed_path}.{name}"),
                )
            kept[name] = fixed
            continue
        bounds = rules.ranges.get(name)
        applied = value if bounds is None else _clamp(value, bounds)
        if applied != value:
            draft.adjust(
                "param.clamped",
                name,
                value,
                applied,
                f"{name} must lie in [{bounds[0] if bounds else None}, "
                f"{bounds[1] if bounds else None}]",
                model.source_of(f"sampling.ranges.{name}"),
            )
        kept[name] = applied
    for group in rules.mutually_exclusive:
        present = [name for name, _ in draft.intent.sampling if name in group and name in kept]
        for loser in present[1:]:
            draft.adjust(
                "param.mutually_exclusive",
                loser,
                kept.pop(loser),
                None,
                f"{loser} cannot be sent together with {present[0]} "
                "(kept the one the stage set first)",
                model.source_of("sampling.mutually_exclusive"),
            )
    draft.params.update(kept)

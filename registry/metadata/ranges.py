"""Limits and prices that cannot be true: read as unknown, and kept so they are reported.

Resolution reads three limits of a ``/models`` entry (``context_length``,
``top_provider.context_length``, ``top_provider.max_completion_tokens``, in tokens) and
two prices (``pricing.prompt``, ``pricing.completion``, USD per token). A limit that is
not a positive number (``-5``, ``0``) or a number that is not finite (``1e999``, which
JSON parsers read as infinity) says nothing true about the model, and neither does a
negative price (OpenRouter's ``"-1"``, "variable", on router models) or a non-finite
one. :func:`screen` turns each such value into ``null`` (unknown) before validation and
records what was published under :data:`OUT_OF_RANGE`; :func:`range_notes` words one
note per value, naming the model and the field, for reports, ``capc show`` and ``capc
check``. A price of ``0`` is a real price (free) and stays.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from typing import Any

__all__ = [
    "ENDPOINT_LIMIT_FIELDS",
    "ENDPOINT_PRICE_FIELDS",
    "LIMIT_FIELDS",
    "OUT_OF_RANGE",
    "PRICE_FIELDS",
    "endpoint_notes",
    "range_notes",
    "screen",
    "screen_endpoint",
]

OUT_OF_RANGE = "out_of_range"
"""Key of the published text of each value :func:`screen` read as unknown, by field."""

#: The limits resolution reads, in tokens: must be positive and finite.
LIMIT_FIELDS: tuple[str, ...] = (
    "context_length",
    "top_provider.context_length",
    "top_provider.max_completion_tokens",
)
#: The prices resolution reads, in USD per token: must be finite and not negative.
PRICE_FIELDS: tuple[str, ...] = ("pricing.prompt", "pricing.completion")
#: The same for one ``/endpoints`` record (``request`` is USD per request, ``image``
#: USD per image).
ENDPOINT_LIMIT_FIELDS: tuple[str, ...] = (
    "context_length", "max_completion_tokens", "max_prompt_tokens")
ENDPOINT_PRICE_FIELDS: tuple[str, ...] = (
    "pricing.prompt", "pricing.completion", "pricing.request", "pricing.image")


def _bad_limit(value: object) -> bool:
    if type(value) is int:
        return value <= 0
    if type(value) is float:
        return not math.isfinite(value) or value <= 0
    return False  # absent, null, or a wrong type (the validator names it)


def _bad_price(value: object) -> bool:
    if type(value) is str:
        if "-" not in value and value.strip().isascii() and not value.strip()[:1].isalpha():
            return False  # the usual "0.000001": fast path
        try:
            number = Decimal(value.strip())
        except InvalidOperation:
            return False  # not a number: the validator names it
        return not number.is_finite() or number.is_signed()
    if type(value) is float:
        return not math.isfinite(value) or math.copysign(1.0, value) < 0
    if type(value) is int:
        return value < 0
    return False


def _shown(value: object) -> str:
    if type(value) is float and not math.isfinite(value):
        return "not a number" if math.isnan(value) else "infinite (a number such as 1e999)"
    return json.dumps(value)


def screen(data: Any, limits: tuple[str, ...] = LIMIT_FIELDS,
           prices: tuple[str, ...] = PRICE_FIELDS) -> Any:
    """Return a raw ``/models`` entry with every out-of-range limit or price set to
    ``None``, and what was published under :data:`OUT_OF_RANGE` (``{field: text}``,
    merged with one already there). Anything else is returned as it is; the input is
    never changed (changed mappings are copies)."""
    if type(data) is not dict:
        return data
    found: dict[str, str] = {}
    fixed = data
    for fields, bad in ((limits, _bad_limit), (prices, _bad_price)):
        for dotted in fields:
            outer, _, inner = dotted.rpartition(".")
            holder = fixed.get(outer) if outer else fixed
            if type(holder) is not dict or not bad(holder.get(inner)):
                continue
            found[dotted] = _shown(holder[inner])
            if fixed is data:
                fixed = dict(data)
            holder = fixed[outer] = dict(holder) if outer else fixed
            holder[inner] = None
    if not found:
        return data
    earlier = fixed.get(OUT_OF_RANGE)
    fixed[OUT_OF_RANGE] = {**(earlier if isinstance(earlier, dict) else {}), **found}
    return fixed


def screen_endpoint(data: Any) -> Any:
    """:func:`screen` for one raw ``/endpoints`` record (:data:`ENDPOINT_LIMIT_FIELDS`,
    :data:`ENDPOINT_PRICE_FIELDS`)."""
    return screen(data, ENDPOINT_LIMIT_FIELDS, ENDPOINT_PRICE_FIELDS)


def _notes(who: str, found: Mapping[str, str], fields: tuple[str, ...]) -> list[str]:
    notes = []
    for dotted in fields:
        text = found.get(dotted)
        if text is not None:
            rule = ('not a finite price of 0 or more ("-1" marks a variable price)'
                    if dotted.startswith("pricing.") else "not a positive token count")
            notes.append(f"{who}: {dotted} is {text}, {rule}; read as unknown")
    return notes


def range_notes(model_id: str, core: Mapping[str, Any]) -> list[str]:
    """One note per limit or price of ``model_id`` read as unknown (see :func:`screen`),
    in field order: ``metadata of openai/gpt-4o-mini: top_provider.max_completion_tokens
    is -5, not a positive token count; read as unknown``."""
    return _notes(f"metadata of {model_id}", core.get(OUT_OF_RANGE) or {},
                  (*LIMIT_FIELDS, *PRICE_FIELDS))


def endpoint_notes(model_id: str, label: str, found: Mapping[str, str]) -> list[str]:
    """The same for the endpoint ``label`` of ``model_id``: ``endpoint deepinfra/fp8 of
    openai/gpt-oss-120b: max_completion_tokens is 0, not a positive token count; read
    as unknown``."""
    return _notes(f"endpoint {label} of {model_id}", found,
                  (*ENDPOINT_LIMIT_FIELDS, *ENDPOINT_PRICE_FIELDS))

"""Limits and prices that cannot be true: read as unknown, and kept so they are reported.

Resolution reads three limits of a ``/models`` entry (``context_length``,
``top_provider.context_length``, ``top_provider.max_completion_tokens``, in tokens) and
two prices (``pricing.prompt``, ``pricing.completion``, USD per token). A limit that is
not a whole number of tokens from 1 to :data:`LIMIT_CEILING` (``-5``, ``"-5"``, ``0``,
``true``, ``"NaN"``, ``1e999``, which JSON parsers read as infinity, a 400-digit number)
says nothing true about the model, and neither does a negative price (OpenRouter's
``"-1"``, "variable", on router models), a non-finite one or one above
:data:`PRICE_CEILINGS` (``"1e999"``, a 5000-digit number), nor a value that is no number
at all (``""``, ``"0x10"``, ``"many"``, an array, an object). One such value never fails
the list: it is unknown, and reported (any other malformed field is
:mod:`registry.metadata.malformed`'s). :func:`screen` turns each such value into ``null``
(unknown) before validation and records what was published under :data:`OUT_OF_RANGE`;
:func:`range_notes` words one note per value, naming the model and the field, for
reports, ``capc show`` and ``capc check``. A price of ``0`` is a real price (free) and
stays.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

__all__ = [
    "ENDPOINT_LIMIT_FIELDS",
    "ENDPOINT_PRICE_FIELDS",
    "LIMIT_CEILING",
    "LIMIT_FIELDS",
    "OUT_OF_RANGE",
    "PRICE_CEILINGS",
    "PRICE_FIELDS",
    "endpoint_notes",
    "json_kind",
    "range_notes",
    "screen",
    "screen_endpoint",
    "shown",
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


LIMIT_CEILING = 2**31
"""The largest limit read as true, in tokens (2^31 = 2,147,483,648; the largest
published on 2026-08-19 is 10,000,000): a larger one is out of range."""

PRICE_CEILINGS: Mapping[str, Decimal] = {
    "pricing.prompt": Decimal(1), "pricing.completion": Decimal(1),
    "pricing.request": Decimal(100), "pricing.image": Decimal(100)}
"""The largest price read as true, by field: 1 USD per token (the largest published,
2026-08-19, is 0.36 USD per prompt token of a transcription model), 100 USD per request
or per image (largest published: 0.035 and 0.21675). A larger one is out of range."""

_DIGITS = frozenset("0123456789")
#: A number as text, as OpenRouter publishes one (ASCII only; no white space, no ``_``).
#: ``"NaN"`` and ``"Infinity"`` are numbers too, only not finite ones.
_NUMBER_TEXT = re.compile(
    r"-?(?:[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?|(?i:s?nan|inf|infinity))", re.ASCII)

_JSON_TYPE_NAMES: Mapping[type, str] = {
    dict: "an object", list: "an array", str: "a string", bytes: "bytes", int: "a number",
    float: "a number", bool: "a boolean", type(None): "null"}  # fmt: skip


def json_kind(value: object) -> str:
    """The JSON type of ``value`` for messages: ``"an object"``, ``"a string"``, ...

    >>> json_kind([1]), json_kind("x"), json_kind(None)
    ('an array', 'a string', 'null')
    """
    return _JSON_TYPE_NAMES.get(type(value), type(value).__name__)


def shown(value: object) -> str:
    """``value`` as JSON, shortened past 40 characters (``"abc... (5,000 characters)"``)."""
    try:
        text = json.dumps(value)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 40 else f"{text[:24]}... ({len(text):,} characters)"


def _bad_limit(value: object) -> bool:
    """A limit is a whole number of tokens from 1 to :data:`LIMIT_CEILING`: an ``int``, an
    integral finite ``float`` (``5.0``), or a string of ASCII digits and nothing else, as
    OpenRouter would write one (``" 5 "``, ``"1_000"``, ``"１６"``, ``"1e5"`` are noted,
    never read as numbers). ``true``, ``"-5"``, ``"NaN"``, ``"1e999"``, ``1.5``, a
    400-digit number, a string that is no number (``""``, ``"0x10"``), a list and an
    object are out of range. ``None`` (unknown) is fine."""
    if value is None:
        return False
    if type(value) is str:
        if value and len(value) <= 12 and _DIGITS.issuperset(value):
            value = int(value)
        else:
            return True
    if type(value) is int:
        return not 0 < value <= LIMIT_CEILING
    if type(value) is float:
        return not (math.isfinite(value) and value.is_integer()
                    and 0 < value <= LIMIT_CEILING)
    return True  # bool, or any other scalar


def _bad_price(value: object, ceiling: Decimal) -> bool:
    """A price string is an ASCII decimal as OpenRouter writes one (``"0.000001"``,
    ``"0"``, ``"-1"``; an exponent allowed): white space, ``_`` and other digits
    (``" 0.1 "``, ``"0_1"``, ``"０.1"``) are noted, as for a limit."""
    if type(value) is str:
        if value[:2] == "0." and 2 < len(value) <= 40 and _DIGITS.issuperset(value[2:]):
            return False  # the usual "0.000001": below every ceiling, fast path
        if _not_a_number(value):
            return True  # no number as published ("", "0x10", " 0.1 ")
        number = Decimal(value)
    elif type(value) is float:
        if not math.isfinite(value) or math.copysign(1.0, value) < 0:
            return True
        number = Decimal(value)
    elif type(value) is int:
        number = Decimal(value)
    else:
        return value is not None  # a boolean, an array, an object
    return not number.is_finite() or number.is_signed() or number > ceiling


def _shown(value: object) -> str:
    if type(value) is float and not math.isfinite(value):
        return "not a number" if math.isnan(value) else "infinite (a number such as 1e999)"
    text = shown(value)
    if type(value) in (list, dict) or (type(value) is str and _not_a_number(value)):
        return f"{json_kind(value)} {text}"  # no number at all: its JSON type named
    return text


def _not_a_number(text: str) -> bool:
    """Whether ``text`` is not a number as published: ASCII ``-?digits[.digits][e±digits]``
    only (Python's ``Decimal`` would also take white space, ``_`` and other scripts'
    digits)."""
    return _NUMBER_TEXT.fullmatch(text) is None


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
    for fields, is_price in ((limits, False), (prices, True)):
        for dotted in fields:
            outer, _, inner = dotted.rpartition(".")
            holder = fixed.get(outer) if outer else fixed
            if type(holder) is not dict:
                continue
            value = holder.get(inner)
            if not (_bad_price(value, PRICE_CEILINGS.get(dotted, Decimal(1))) if is_price
                    else _bad_limit(value)):
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
            ceiling = PRICE_CEILINGS.get(dotted, Decimal(1))
            unit = "per token" if ceiling == 1 else f"per {dotted.split('.')[1]}"
            rule = (f'not a price from 0 to {ceiling} USD {unit} ("-1" marks a variable '
                    'price)' if dotted.startswith("pricing.")
                    else f"not a token count from 1 to {LIMIT_CEILING:,}")
            notes.append(f"{who}: {dotted} is {text}, {rule}; read as unknown")
    for dotted, text in found.items():  # another field, malformed (mend)
        if dotted not in fields:
            notes.append(f"{who}: {dotted} is {text}; read as unknown")
    return notes


def range_notes(model_id: str, core: Mapping[str, Any]) -> list[str]:
    """One note per limit or price of ``model_id`` read as unknown (see :func:`screen`),
    in field order, then one per other malformed field
    (:func:`registry.metadata.malformed.mend`): ``metadata of openai/gpt-4o-mini:
    top_provider.max_completion_tokens is -5, not a positive token count; read as
    unknown``."""
    return _notes(f"metadata of {model_id}", core.get(OUT_OF_RANGE) or {},
                  (*LIMIT_FIELDS, *PRICE_FIELDS))


def endpoint_notes(model_id: str, label: str, found: Mapping[str, str]) -> list[str]:
    """The same for the endpoint ``label`` of ``model_id``: ``endpoint deepinfra/fp8 of
    openai/gpt-oss-120b: max_completion_tokens is 0, not a positive token count; read
    as unknown``."""
    return _notes(f"endpoint {label} of {model_id}", found,
                  (*ENDPOINT_LIMIT_FIELDS, *ENDPOINT_PRICE_FIELDS))

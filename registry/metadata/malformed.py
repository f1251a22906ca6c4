"""A malformed value in one model of a models list costs that field, never the list.

The rule is the one :mod:`registry.metadata.ranges` applies to limits and prices out of
range, widened to every field: a value of the wrong type or shape in one model (an
``alias_target`` given as a string where an object is published, ``top_provider:
"big"``, ``architecture.input_modalities: "text"``, a ``description`` that is a number)
is read as unknown (the field is dropped, as if it were not published) and recorded,
with its JSON value class, under the model's ``out_of_range`` so that
:func:`registry.metadata.ranges.range_notes` words a note naming the model id, the key
and the value class. Limits and prices that are no number at all (``""``, ``"0x10"``)
are screened before validation by :func:`registry.metadata.ranges.screen`, with the same
note.

A body that is mostly garbage is not a models list a few bad entries spoil:
:func:`mend` gives up (returns ``None``) when more than :data:`MAX_MALFORMED_SHARE` of
the models listed, and more than one, have a malformed value, and then the whole body
is refused as before; the cache's integrity guard also counts the limits and prices
that are no number (:func:`mostly_malformed`), so it keeps its good copy. An element
that is not an object or has no string ``id`` still fails the list: it names no model.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic_core import ErrorDetails

from registry.metadata.ranges import OUT_OF_RANGE, json_kind, shown

__all__ = ["MAX_MALFORMED_SHARE", "mend", "mostly_malformed"]

MAX_MALFORMED_SHARE = 0.5
"""The largest share of a list's models that may have a malformed value (one half):
past it, and with more than one such model, the whole body is refused."""

#: What a pydantic error type says the field should have been.
_EXPECTED: Mapping[str, str] = {
    "dict_type": "an object", "model_type": "an object", "model_attributes_type": "an object",
    "list_type": "an array", "tuple_type": "an array", "set_type": "an array",
    "frozen_set_type": "an array", "iterable_type": "an array", "string_type": "a string",
    "int_type": "a whole number", "int_parsing": "a whole number",
    "int_from_float": "a whole number", "float_type": "a number", "float_parsing": "a number",
    "decimal_type": "a number", "decimal_parsing": "a number", "bool_type": "a boolean",
    "bool_parsing": "a boolean", "finite_number": "a finite number"}  # fmt: skip


def _field(item: Mapping[str, Any], loc: Sequence[int | str]) -> tuple[str, ...]:
    """The object keys of ``loc`` (one model's error path) down to the first step that is
    no key of an object: the field to drop (``("supported_parameters",)`` for an error in
    its third element)."""
    keys: list[str] = []
    node: Any = item
    for step in loc:
        if not isinstance(step, str) or not isinstance(node, dict) or step not in node:
            break
        keys.append(step)
        node = node[step]
    return tuple(keys)


def _without(item: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    """A copy of ``item`` without the field at ``keys`` (the objects on the way copied)."""
    fixed = dict(item)
    if len(keys) == 1:
        fixed.pop(keys[0], None)
    else:
        fixed[keys[0]] = _without(dict(item[keys[0]]), keys[1:])
    return fixed


def mend(items: Sequence[object], errors: Sequence[ErrorDetails]) -> dict[int, object] | None:
    """Each model a validation of the list ``items`` found malformed, without its
    malformed fields and with them recorded under ``out_of_range`` (``{"alias_target":
    'a string "anthropic/x", not an object'}``).

    Args:
        items: the list's elements (objects with a string ``id``: checked before).
        errors: the errors of validating them as a list, located ``(index, key, ...)``.

    Returns:
        ``{index: mended element}``, or ``None`` when an error names no field of an
        object (it cannot be mended) or more than :data:`MAX_MALFORMED_SHARE` of the
        models, and more than one, are malformed.
    """
    fields: dict[int, dict[tuple[str, ...], str]] = {}
    for error in errors:
        index, *rest = error["loc"]
        item = items[index] if isinstance(index, int) else None
        keys = _field(item, rest) if isinstance(item, dict) else ()
        if not isinstance(index, int) or not keys or keys == ("id",):
            return None
        value: Any = item
        for key in keys:
            value = value[key]
        expected = _EXPECTED.get(error["type"])
        text = f"{json_kind(value)} {shown(value)}" + (f", not {expected}" if expected else
                                                         f" ({error['msg']})")
        fields.setdefault(index, {}).setdefault(keys, text)
    if len(fields) > 1 and len(fields) > MAX_MALFORMED_SHARE * len(items):
        return None
    mended: dict[int, object] = {}
    for index, found in fields.items():
        item = items[index]
        assert isinstance(item, dict)
        item = dict(item)
        for keys in found:
            if any(keys[:n] in found for n in range(1, len(keys))):
                continue  # an outer field is dropped already
            item = _without(item, keys)
        earlier = item.get(OUT_OF_RANGE)
        item[OUT_OF_RANGE] = {**(earlier if isinstance(earlier, dict) else {}),
                              **{".".join(keys): text for keys, text in found.items()}}
        mended[index] = item
    return mended


#: How a recorded value that is no number at all starts (its JSON type, see ``shown``).
_MALFORMED_TEXT = ("a string ", "an array ", "an object ", "a number ", "a boolean ", "null ")


def mostly_malformed(models: Sequence[Any]) -> str | None:
    """Why a parsed list is mostly garbage, or ``None``: more than
    :data:`MAX_MALFORMED_SHARE` of ``models`` (:class:`~registry.metadata.shapes.ModelInfo`
    objects), and more than one, had a malformed value (mended, or a limit or price that
    is no number)."""
    bad = [m for m in models if any(text.startswith(_MALFORMED_TEXT)
                                    for text in (m.out_of_range or {}).values())]
    if len(bad) <= 1 or len(bad) <= MAX_MALFORMED_SHARE * len(models):
        return None
    field, text = next((k, v) for k, v in bad[0].out_of_range.items()
                       if v.startswith(_MALFORMED_TEXT))
    return (f"{len(bad)} of {len(models)} models have malformed values (the first, "
            f"{bad[0].id!r}: {field} is {text}): more than {MAX_MALFORMED_SHARE:.0%}, so this "
            "is not a models list a few bad entries spoil")

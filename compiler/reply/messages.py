"""Reply error messages built from safe parts only, never from the reply or a validator.

A pydantic error carries the input, a message and a context (``ctx``). The message may
quote the input (a custom validator's text, a UUID parser naming the character it
stopped at), and a custom validator may raise under a built-in error type with its own
text and context. So :func:`safe_message` ignores the message and the input: it
composes the text from the error type (pydantic's fixed wording for that type) and the
constraint values in ``ctx`` that the contract's schema itself holds (``min_length`` 3
is kept only when some ``minLength``, ``minItems`` or ``minProperties`` of the schema
is 3; the allowed values of a ``Literal`` or ``Enum`` only when they are exactly an
``enum`` or ``const`` of the schema, up to 100 values). Anything else is left out. A
type pydantic raises itself (pydantic-core's ``ErrorType``, and pydantic's own custom
types such as ``ip_v4_address``) gets a fixed wording; any other type is a validator's
(its name, which a validator may build from the value, is not repeated). ``json_invalid``
never repeats its detail: the reply's own JSON is parsed by the caller, which reports
the parser's message; a validator raising it is reporting its own text.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any, get_args

from pydantic_core import PydanticKnownError
from pydantic_core.core_schema import ErrorType

from compiler.schema.walk import walk_schema

__all__ = ["Constraints", "constraints_of", "safe_message"]

#: ctx key -> the schema keywords whose values it may repeat.
_NUMERIC: dict[str, tuple[str, ...]] = {
    "gt": ("exclusiveMinimum",), "ge": ("minimum",),
    "lt": ("exclusiveMaximum",), "le": ("maximum",),
    "multiple_of": ("multipleOf",),
    "min_length": ("minLength", "minItems", "minProperties"),
    "max_length": ("maxLength", "maxItems", "maxProperties"),
}
_KEYWORDS = frozenset(k for keys in _NUMERIC.values() for k in keys) | {"pattern"}

#: Built-in types whose pydantic wording needs only the numbers above (checked).
_TEMPLATED = {
    "greater_than": ("gt",), "greater_than_equal": ("ge",), "less_than": ("lt",),
    "less_than_equal": ("le",), "multiple_of": ("multiple_of",),
    "string_too_short": ("min_length",), "string_too_long": ("max_length",),
    "bytes_too_short": ("min_length",), "bytes_too_long": ("max_length",),
}

#: The wording when a type's context cannot be shown (own text, no placeholder).
_PLAIN = {
    "greater_than": "Input should be greater than the contract's bound",
    "greater_than_equal": "Input should be greater than or equal to the contract's bound",
    "less_than": "Input should be less than the contract's bound",
    "less_than_equal": "Input should be less than or equal to the contract's bound",
    "multiple_of": "Input should be a multiple of the contract's step",
    "string_too_short": "String is shorter than the contract allows",
    "string_too_long": "String is longer than the contract allows",
    "bytes_too_short": "Data is shorter than the contract allows",
    "bytes_too_long": "Data is longer than the contract allows",
    "too_short": "Input has fewer items than the contract allows",
    "too_long": "Input has more items than the contract allows",
    "string_pattern_mismatch": "String should match the contract's pattern",
    "enum": "Input should be one of the values the contract lists",
    "literal_error": "Input should be one of the values the contract lists",
    "json_invalid": "Invalid JSON",
    "model_type": "Input should be an object",
    "dataclass_type": "Input should be an object",
    "dataclass_exact_type": "Input should be an object",
    "named_tuple_type": "Input should be an array or an object",
    "mapping_type": "Input should be a valid mapping",
    "union_tag_invalid": "Input tag does not match any of the expected tags",
    "union_tag_not_found": "Unable to extract the tag of the union (its field is missing)",
    "uuid_parsing": "Input should be a valid UUID",
    "uuid_version": "UUID version should be the one the contract asks for",
    "date_parsing": "Input should be a valid date",
    "date_from_datetime_parsing": "Input should be a valid date",
    "datetime_parsing": "Input should be a valid datetime",
    "datetime_from_date_parsing": "Input should be a valid datetime",
    "datetime_object_invalid": "Input should be a valid datetime",
    "time_parsing": "Input should be in a valid time format",
    "time_delta_parsing": "Input should be a valid duration",
    "timezone_offset": "Timezone offset should be the one the contract asks for",
    "url_parsing": "Input should be a valid URL",
    "url_syntax_violation": "Input should be a valid URL (strict syntax)",
    "url_too_long": "URL is longer than the contract allows",
    "url_scheme": "URL scheme should be one the contract allows",
    "decimal_max_digits": "Decimal input has more digits than the contract allows",
    "decimal_max_places": "Decimal input has more decimal places than the contract allows",
    "decimal_whole_digits": "Decimal input has more digits before the point than allowed",
    "bytes_invalid_encoding": "Input should be valid data in the expected encoding",
}

#: Error types pydantic itself raises as custom errors (its networks, paths, colours,
#: card numbers ...): not in pydantic-core's ErrorType, yet no validator of the contract.
_PYDANTIC_OWN = {
    "ip_any_address": "Input should be a valid IPv4 or IPv6 address",
    "ip_v4_address": "Input should be a valid IPv4 address",
    "ip_v6_address": "Input should be a valid IPv6 address",
    "ip_any_network": "Input should be a valid IPv4 or IPv6 network",
    "ip_v4_network": "Input should be a valid IPv4 network",
    "ip_v6_network": "Input should be a valid IPv6 network",
    "ip_any_interface": "Input should be a valid IPv4 or IPv6 interface",
    "ip_v4_interface": "Input should be a valid IPv4 interface",
    "ip_v6_interface": "Input should be a valid IPv6 interface",
    "path_type": "Input should be a path to the kind of entry the contract asks for",
    "path_not_file": "Input should be a path to a file",
    "path_not_directory": "Input should be a path to a directory",
    "path_not_socket": "Input should be a path to a socket",
    "path_exists": "Input should be a path that does not exist yet",
    "parent_does_not_exist": "Input should be a path whose parent directory exists",
    "color_error": "Input should be a valid colour",
    "payment_card_number_digits": "Input should be a card number of digits only",
    "payment_card_number_luhn": "Input should be a card number with a valid check digit",
    "base64_decode": "Input should be valid base64",
    "byte_size": "Input should be a byte size",
    "byte_size_unit": "Input should be a byte size with a known unit",
    "zoneinfo_str": "Input should be a valid time zone name",
    "import_error": "Input should be an importable name",
    "pattern_regex": "Input should be a valid regular expression",
    "pattern_type": "Input should be a valid pattern",
    "pattern_str_type": "Input should be a string pattern",
    "pattern_bytes_type": "Input should be a bytes pattern",
}

#: Error types whose message is a validator's own text (which may quote the value).
_FREE_TEXT = {"value_error": "Value error", "assertion_error": "Assertion failed"}
_WITHHELD = "(a validator of the contract; its message is withheld)"
_BUILT_IN = frozenset(get_args(ErrorType))
_MAX_LISTED = 100  # a longer enum is not repeated in a message
_KINDS = frozenset({"List", "Tuple", "Set", "Frozenset", "Dictionary", "Generator", "Value"})


class Constraints:
    """The constraint values one contract's schema holds, by keyword (see module doc)."""

    def __init__(self, schema: Mapping[str, Any]) -> None:
        self.values: dict[str, set[Any]] = {}
        self.expected: set[str] = set()  # enum and const values as pydantic lists them
        for _, node in walk_schema(schema):
            for keyword in _KEYWORDS.intersection(node):
                value = node[keyword]
                if isinstance(value, int | float | str) and not isinstance(value, bool):
                    self.values.setdefault(keyword, set()).add(value)
            allowed = node.get("enum")
            if "const" in node:
                allowed = [node["const"]]
            if isinstance(allowed, list | tuple) and 0 < len(allowed) <= _MAX_LISTED and all(
                    isinstance(v, str | int | float | bool) for v in allowed):
                shown = [repr(v) for v in allowed]
                self.expected.add(shown[0] if len(shown) == 1 else
                                  f"{', '.join(shown[:-1])} or {shown[-1]}")

    def number(self, ctx_key: str, value: Any) -> bool:
        """Whether ``value`` (ctx ``ctx_key``) is a number the schema has for that bound."""
        if isinstance(value, bool) or not isinstance(value, int | float | Decimal):
            return False
        return any(value in self.values.get(k, ()) for k in _NUMERIC.get(ctx_key, ()))


_CACHE: dict[str, Constraints] = {}


def constraints_of(sha256: str, schema: Mapping[str, Any]) -> Constraints:
    """The :class:`Constraints` of a contract's schema, built once per schema hash."""
    found = _CACHE.get(sha256)
    if found is None:
        found = _CACHE[sha256] = Constraints(schema)
    return found


def safe_message(err: Mapping[str, Any], constraints: Constraints) -> str:
    """The message of one pydantic error, composed from safe parts only.

    Args:
        err: one entry of ``ValidationError.errors()``.
        constraints: the contract's constraint values (:func:`constraints_of`).

    Returns:
        pydantic's fixed wording for the type, with the bound when the schema holds
        it (``"Input should be greater than or equal to 10"``); a plain sentence when
        the context cannot be vouched for (``"Input should be a valid UUID"``); for a
        validator's own error, its kind and ``(a validator of the contract; its message
        is withheld)``. Never the input, a fragment of it, or a validator's text.

    >>> err = {"type": "string_too_short", "msg": "bad SECRET", "ctx": {"min_length": 99}}
    >>> safe_message(err, Constraints({"minLength": 3}))
    'String is shorter than the contract allows'
    """
    kind = str(err.get("type", ""))
    raw_ctx = err.get("ctx")
    ctx: Mapping[str, Any] = raw_ctx if isinstance(raw_ctx, Mapping) else {}
    if kind in _PYDANTIC_OWN:
        return _PYDANTIC_OWN[kind]
    if kind in _FREE_TEXT or kind not in _BUILT_IN:  # a custom type's name may hold data
        return f"{_FREE_TEXT.get(kind, 'Failed a custom check')} {_WITHHELD}"
    keys = _TEMPLATED.get(kind)
    if keys is not None and all(constraints.number(k, ctx.get(k)) for k in keys):
        return PydanticKnownError(kind, {k: ctx[k] for k in keys}).message()  # type: ignore[arg-type]
    if kind in ("too_short", "too_long"):
        key = "min_length" if kind == "too_short" else "max_length"
        if constraints.number(key, ctx.get(key)):
            what = ctx.get("field_type") if ctx.get("field_type") in _KINDS else "Input"
            bound = int(ctx[key])
            word = "at least" if kind == "too_short" else "at most"
            return f"{what} should have {word} {bound} item{'' if bound == 1 else 's'}"
    if kind == "string_pattern_mismatch" and ctx.get("pattern") in constraints.values.get(
            "pattern", ()):
        return PydanticKnownError(kind, {"pattern": ctx["pattern"]}).message()  # type: ignore[arg-type]
    if kind in ("literal_error", "enum") and ctx.get("expected") in constraints.expected:
        return PydanticKnownError(kind, {"expected": ctx["expected"]}).message()  # type: ignore[arg-type]
    if kind in _PLAIN:
        return _PLAIN[kind]
    try:  # a type whose wording needs no context: pydantic's fixed sentence
        return PydanticKnownError(kind).message()  # type: ignore[arg-type]
    except TypeError:  # it needs a context after all
        return f"Input failed the contract's {kind} check"

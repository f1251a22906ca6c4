"""Schema dialects as data.

A :class:`Dialect` says what a provider's structured-output mode accepts: which
JSON Schema keywords and string formats, whether every property must be
required, whether every object must be closed, whether ``$ref`` and recursion
are allowed, what the root may be, and size limits. The projection
(:mod:`compiler.schema.projection`) reads these flags; nothing in code is specific to
a vendor. Each built-in dialect cites the vendor page its facts come from;
limits move, so treat the numbers as dated data (read 2026).

What dropping a keyword means is data too. :data:`VOCABULARY` lists the JSON Schema
keywords (draft 2020-12, plus draft-07 ``definitions``/``dependencies`` and OpenAPI's
``discriminator``); for each one a dialect lacks, :attr:`Dialect.blocking_keywords` says
whether removing it is a *blocker* (the projection cannot be enforced) or, when absent,
*harmless* (restated in the description and checked on the reply by the host). Which
keywords a vendor lacks is the vendor's fact (the sources above, collected in
``shared/reference/structured-output-rules.md``: OpenAI lists ``allOf``, ``not``,
``dependentRequired``, ``dependentSchemas`` and ``if/then/else`` as unsupported;
Anthropic has no numeric, string-length or most array constraints and no recursion;
Gemini's OpenAPI subset has no ``additionalProperties``, ``$ref`` or combinators but
``anyOf``). Whether dropping one is harmless is our rule, the same for every built-in
dialect (:data:`BLOCKING_KEYWORDS`): a bound on one value (length, range, pattern, format,
item or property counts) only widens what the schema admits, the model still reads it,
and the host rejects the rare reply that breaks it; a keyword that decides which keys
an object may hold, which schema an item or branch gets, or which shapes are excluded
changes what the provider can send in a way the description cannot carry (an open
object closed by a dialect that cannot say ``additionalProperties`` can only be ``{}``).

:func:`compiler.schema.checks.check_dialect` verifies a (projected) schema against a
dialect; the projection runs it on every result it builds.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from compiler.errors import ProjectionError
from registry.errors import closest

__all__ = [
    "BLOCKING_KEYWORDS", "DIALECTS", "FALSE_IS_HARMLESS", "VOCABULARY", "Dialect", "get_dialect",
]

VOCABULARY = frozenset({
    # core
    "$schema", "$id", "$ref", "$anchor", "$dynamicRef", "$dynamicAnchor", "$vocabulary",
    "$comment", "$defs",
    # applicators
    "prefixItems", "items", "contains", "additionalProperties", "properties",
    "patternProperties", "dependentSchemas", "propertyNames", "if", "then", "else", "allOf",
    "anyOf", "oneOf", "not",
    # unevaluated
    "unevaluatedItems", "unevaluatedProperties",
    # validation
    "type", "const", "enum", "multipleOf", "maximum", "exclusiveMaximum", "minimum",
    "exclusiveMinimum", "maxLength", "minLength", "pattern", "maxItems", "minItems",
    "uniqueItems", "maxContains", "minContains", "maxProperties", "minProperties", "required",
    "dependentRequired",
    # format, content, meta-data
    "format", "contentEncoding", "contentMediaType", "contentSchema", "title", "description",
    "default", "deprecated", "readOnly", "writeOnly", "examples",
    # older drafts and OpenAPI
    "definitions", "dependencies", "discriminator",
})
"""The JSON Schema keywords the dialect table classifies (any other key is an annotation)."""

BLOCKING_KEYWORDS = frozenset({
    # which keys an object may hold
    "additionalProperties", "unevaluatedProperties", "patternProperties", "propertyNames",
    "dependentSchemas", "dependentRequired", "dependencies", "required", "properties",
    # which schema an item gets
    "prefixItems", "items", "unevaluatedItems", "contains", "minContains", "maxContains",
    # which branch or shape applies, or is excluded
    "if", "then", "else", "not", "allOf", "anyOf", "oneOf", "type", "enum", "const",
    # references: inlined where the dialect has none; what cannot be inlined (recursion)
    # blocks, and so does what moves resolution ($defs and definitions only hold schemas
    # that references use, so dropping them is harmless)
    "$ref", "$id", "$anchor", "$dynamicRef", "$dynamicAnchor",
})
"""Keywords whose removal blocks enforcement where a dialect lacks them (the rule of every
built-in dialect, :attr:`Dialect.blocking_keywords`; see the module docstring).
``oneOf``, ``const``, one-entry ``allOf`` and ``$ref`` are rewritten first where the
dialect says so (``anyOf``, ``enum``, merged, inlined); only what is left is dropped."""

FALSE_IS_HARMLESS = frozenset({"additionalProperties", "unevaluatedProperties"})
"""Blocking keywords whose value ``false`` may still be dropped: an object without the
keyword can hold only its declared properties, which is what ``false`` says."""


@dataclass(frozen=True)
class Dialect:
    """What one structured-output mode accepts (pure data; see the module docstring).

    Raises:
        ValueError: on construction, when the flags contradict each other (for
            example ``closed_objects`` without ``additionalProperties`` in ``keywords``).
    """

    # Short identifier used in YAML (``structured_output.dialect``) and in reports.
    name: str
    # URL of the provider document the flags below were read from.
    source: str
    # Every property must be listed in ``required``; an optional one becomes required + nullable.
    all_required: bool
    # Every object gets ``additionalProperties: false``; an open dict then cannot be enforced.
    closed_objects: bool
    # Local ``$defs``/``$ref`` are kept; otherwise every non-recursive reference is inlined.
    supports_ref: bool
    # A reference cycle (a model that contains itself) is accepted.
    supports_recursion: bool
    # The root schema must be ``type: object``; anything else is wrapped in one property.
    root_must_be_object: bool
    # The root may carry ``anyOf``/``oneOf``; if not, such a root is wrapped too.
    root_anyof_allowed: bool
    # JSON Schema keywords kept; every other keyword is removed: restated in the
    # description, or a blocker (``blocking_keywords``). ``None`` keeps every keyword.
    keywords: frozenset[str] | None
    # Values of ``format`` kept; ``None`` keeps any format.
    string_formats: frozenset[str] | None
    # Values of ``minItems`` kept (Anthropic: 0 and 1 only); ``None`` keeps any value.
    min_items_values: frozenset[int] | None
    # Most object properties in the whole schema (count); ``None`` = no limit.
    max_properties: int | None
    # Most levels of nested objects (the root object is level 1); ``None`` = no limit.
    max_depth: int | None
    # Most ``enum`` values across the whole schema (count); ``None`` = no limit.
    max_enum_values: int | None
    # Most characters in property names, definition names, enum and const values together.
    max_total_chars: int | None
    # ``oneOf`` is rewritten to ``anyOf`` (and ``discriminator`` is dropped if not a keyword).
    oneof_as_anyof: bool
    # A ``$ref`` may carry sibling keywords (``description``, ``title`` ...); if not, such a
    # reference is inlined where it is used (the definition stays for pure references).
    ref_siblings: bool = True
    # Every schema must say what it accepts (``type``, ``enum``, ``const``, ``anyOf`` or
    # ``$ref``) and every array its ``items``; a schema accepting any value is a blocker.
    typed_schemas: bool = False
    # Keywords whose removal, where the dialect lacks them, is a blocker (a ``false``
    # value of the keywords in FALSE_IS_HARMLESS excepted); every other keyword it lacks
    # is harmless: dropped, restated in the description and checked on the reply.
    blocking_keywords: frozenset[str] = BLOCKING_KEYWORDS

    @property
    def harmless_drops(self) -> frozenset[str]:
        """The keywords of :data:`VOCABULARY` this dialect lacks and drops harmlessly."""
        if self.keywords is None:
            return frozenset()
        return VOCABULARY - self.keywords - self.blocking_keywords

    @property
    def blocking_drops(self) -> frozenset[str]:
        """The keywords of :data:`VOCABULARY` this dialect lacks whose removal blocks."""
        if self.keywords is None:
            return frozenset()
        return (VOCABULARY & self.blocking_keywords) - self.keywords

    @property
    def open_objects(self) -> bool:
        """Whether an object may stay open (keep ``additionalProperties`` other than false)."""
        return not self.closed_objects and (
            self.keywords is None or "additionalProperties" in self.keywords
        )

    def drop_blocks(self, keyword: str, value: object) -> bool:
        """Return whether removing ``keyword`` (with ``value``) blocks enforcement.

        >>> d = DIALECTS["gemini"]
        >>> d.drop_blocks("maxLength", 3), d.drop_blocks("additionalProperties", True)
        (False, True)
        >>> d.drop_blocks("additionalProperties", False)
        False
        """
        if keyword not in self.blocking_keywords or self.keywords is None:
            return False
        return not (keyword in FALSE_IS_HARMLESS and value is False)

    def __post_init__(self) -> None:
        problems = []
        if self.supports_recursion and not self.supports_ref:
            problems.append("supports_recursion needs supports_ref")
        if self.keywords is not None:
            kw = self.keywords
            if self.supports_ref != ({"$ref", "$defs"} <= kw):
                problems.append("supports_ref must match '$ref' and '$defs' in keywords")
            if self.closed_objects and "additionalProperties" not in kw:
                problems.append("closed_objects needs 'additionalProperties' in keywords")
            if self.all_required and not {"required", "anyOf"} <= kw:
                problems.append("all_required needs 'required' and 'anyOf' in keywords")
            if self.oneof_as_anyof and "anyOf" not in kw:
                problems.append("oneof_as_anyof needs 'anyOf' in keywords")
            if not {"type", "properties", "items"} <= kw:
                problems.append("keywords must include 'type', 'properties' and 'items'")
        if not self.blocking_keywords <= VOCABULARY:
            problems.append("blocking_keywords must name keywords of VOCABULARY: "
                            + ", ".join(sorted(self.blocking_keywords - VOCABULARY)))
        if problems:
            raise ValueError(f"dialect {self.name!r} is inconsistent: " + "; ".join(problems))


_OPENAI_FORMATS = frozenset({
    "date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid",
})

DIALECTS: Mapping[str, Dialect] = MappingProxyType({
    d.name: d
    for d in (
        Dialect(
            name="openai-strict",
            source="https://platform.openai.com/docs/guides/structured-outputs",
            all_required=True,
            closed_objects=True,
            supports_ref=True,
            supports_recursion=True,
            root_must_be_object=True,
            root_anyof_allowed=False,
            keywords=frozenset({
                "type", "properties", "required", "additionalProperties", "items", "enum",
                "const", "anyOf", "$ref", "$defs", "description", "title", "pattern", "format",
                "multipleOf", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum",
                "minItems", "maxItems",
            }),
            string_formats=_OPENAI_FORMATS,
            min_items_values=None,
            max_properties=5000,
            max_depth=10,
            max_enum_values=1000,
            max_total_chars=120_000,
            oneof_as_anyof=True,
            # The API refuses keywords beside $ref ("$ref cannot have keywords ..."); the
            # openai SDK's to_strict_json_schema inlines such references for that reason.
            ref_siblings=False,
            # The supported types are string, number, boolean, integer, object, array,
            # enum and anyOf: a schema naming none of them (pydantic's Any) is not one.
            typed_schemas=True,
            blocking_keywords=BLOCKING_KEYWORDS,
        ),
        Dialect(
            name="anthropic",
            source="https://platform.claude.com/docs/en/build-with-claude/structured-outputs",
            all_required=False,
            closed_objects=True,
            supports_ref=True,
            supports_recursion=False,
            # Not stated for JSON outputs; tool input schemas are objects, so we require one.
            root_must_be_object=True,
            root_anyof_allowed=False,
            keywords=frozenset({
                "type", "properties", "required", "additionalProperties", "items", "enum",
                "const", "anyOf", "allOf", "$ref", "$defs", "description", "title", "format",
                "minItems",
            }),
            string_formats=_OPENAI_FORMATS | {"uri"},
            min_items_values=frozenset({0, 1}),
            max_properties=None,
            max_depth=None,
            max_enum_values=None,
            max_total_chars=None,
            oneof_as_anyof=True,
            ref_siblings=True,
            typed_schemas=False,
            blocking_keywords=BLOCKING_KEYWORDS,
        ),
        Dialect(
            name="gemini",
            source="https://ai.google.dev/gemini-api/docs/structured-output",
            all_required=False,
            # The OpenAPI-style responseSchema rejects additionalProperties, so an object
            # can hold only its declared properties: dropping 'false' is harmless, an open
            # object (a dict, extra="allow", an object declaring no properties) is a
            # blocker. pydantic still rejects or ignores extra keys on the reply as the
            # contract says.
            closed_objects=False,
            supports_ref=False,
            supports_recursion=False,
            root_must_be_object=True,
            root_anyof_allowed=False,
            keywords=frozenset({
                "type", "properties", "required", "items", "enum", "description", "title",
                "format", "minItems", "maxItems", "anyOf",
            }),
            # "enum" is the OpenAPI string format for enumerations.
            string_formats=frozenset({"date-time", "enum"}),
            min_items_values=None,
            max_properties=None,
            max_depth=None,
            max_enum_values=None,
            max_total_chars=None,
            oneof_as_anyof=True,
            ref_siblings=True,
            typed_schemas=False,
            blocking_keywords=BLOCKING_KEYWORDS,
        ),
        Dialect(
            name="json",
            source="https://openrouter.ai/docs/features/structured-outputs",
            all_required=False,
            closed_objects=False,
            supports_ref=True,
            supports_recursion=True,
            root_must_be_object=False,
            root_anyof_allowed=True,
            keywords=None,
            string_formats=None,
            min_items_values=None,
            max_properties=None,
            max_depth=None,
            max_enum_values=None,
            max_total_chars=None,
            oneof_as_anyof=False,
            ref_siblings=True,
            typed_schemas=False,
            blocking_keywords=BLOCKING_KEYWORDS,
        ),
    )
})
"""The built-in dialects by name (read-only); derive variants with ``dataclasses.replace``."""


def get_dialect(name: str) -> Dialect:
    """Return the built-in dialect called ``name``.

    Args:
        name: a key of :data:`DIALECTS`, e.g. ``"openai-strict"``.

    Returns:
        The dialect.

    Raises:
        ProjectionError: no such dialect (the message lists close matches).

    >>> get_dialect("gemini").supports_ref
    False
    """
    try:
        return DIALECTS[name]
    except KeyError:
        hint = closest(name, DIALECTS)
        known = ", ".join(sorted(DIALECTS))
        did_you_mean = f"; did you mean {' or '.join(repr(h) for h in hint)}?" if hint else ""
        raise ProjectionError(
            f"unknown schema dialect {name!r}{did_you_mean} (known: {known})"
        ) from None

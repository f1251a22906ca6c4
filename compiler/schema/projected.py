"""What a projection produces: the projected schema, every change made, the blockers.

A :class:`Projection` is returned by :func:`compiler.schema.projection.project` and read by
the enforcement pass, the shown instructions and reply parsing. Each rewrite is a
:class:`SchemaChange` with a stable ``kind``:

=============================== ===========================================================
``schema.made_required_nullable`` an optional property made required (and nullable if it
                                  did not accept null already)
``schema.closed_object``          ``additionalProperties: false`` added to an object
``schema.keyword_dropped``        a keyword (or a ``minItems`` value) the dialect lacks and
                                  drops harmlessly; restated in the description
``schema.format_dropped``         a ``format`` the dialect lacks; restated in the description
``schema.default_stripped``       a ``default`` removed (defaults are annotations)
``schema.refs_inlined``           a local ``$ref`` replaced by its target, at the use site
``schema.root_wrapped``           a non-object (or union) root wrapped in ``{"result": ...}``
``schema.oneof_to_anyof``         ``oneOf`` rewritten to ``anyOf``
``schema.discriminator_dropped``  the OpenAPI ``discriminator`` hint removed
``schema.const_to_enum``          ``const`` rewritten to a one-value ``enum``
``schema.allof_merged``           a one-entry ``allOf`` merged into its parent
=============================== ===========================================================

Pointers in changes are RFC 6901 JSON Pointers into the *contract's* schema (for
an inlined definition, the pointer of the use site). What the projection cannot
make enforceable is listed in :attr:`Projection.blockers`: the projected schema
is then for display only (the compiler must choose a weaker rung or refuse).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["WRAP_PROPERTY", "Projection", "SchemaChange"]

WRAP_PROPERTY = "result"
"""Name of the one property a wrapped (non-object) root is placed under."""


@dataclass(frozen=True)
class SchemaChange:
    """One rewrite the projection made to the contract's schema.

    Attributes:
        kind: stable dotted slug (catalogued in the module docstring).
        pointer: RFC 6901 JSON Pointer into the contract's schema; ``""`` is the root.
        requested: what the contract had there (``None`` when it had nothing).
        applied: what the projected schema has instead (``None`` = removed).
        reason: one sentence naming the dialect and what happens to the reply.
    """

    kind: str
    pointer: str
    requested: Any = field(hash=False)
    applied: Any = field(hash=False)
    reason: str


@dataclass(frozen=True, eq=False)
class Projection:
    """A contract's schema projected into one dialect.

    Projections compare by identity: :func:`project` returns the same object for
    the same contract schema and dialect.

    Attributes:
        dialect: the dialect's name.
        schema: the projected schema, deep-frozen (``copy.deepcopy`` for a mutable copy).
        schema_json: the one canonical text of ``schema``: ``json.dumps(schema,
            indent=2, ensure_ascii=False)``, keys in the order produced. Show and send this.
        sha256: hex SHA-256 of ``schema`` in compact sorted form (see
            :func:`compiler.schema.frozen_json.canonical_sha256`), so it matches a hash of the
            parsed ``response_format`` schema.
        changes: every rewrite, in schema order.
        wrapped_root: the property a non-object root was wrapped in (``"result"``),
            or ``None``; :func:`compiler.reply.parse.parse_reply` unwraps it.
        nullable_added: paths *in the projected schema* (tuples of keys, e.g.
            ``("$defs", "Item", "properties", "note")`` or ``("properties", "a",
            "items", "properties", "b")``) of the properties made nullable because
            they were optional; a null there means "absent" when a reply is parsed.
        blockers: why strict enforcement is impossible in this dialect, one
            ``"<JSON Pointer>: <why>"`` string each (pointer into the contract's schema,
            ``/`` for the root): an open object where the dialect closes every object
            or has no ``additionalProperties``, a keyword the dialect table marks a
            blocker (:attr:`~compiler.schema.dialects.Dialect.blocking_keywords`), a
            schema accepting any value where every schema must be typed; recursion
            names the reference instead (``#/$defs/Node: ...``) and a size limit the
            whole schema (``the schema ...``). Empty = enforceable.
    """

    dialect: str
    schema: Mapping[str, Any] = field(repr=False)
    schema_json: str = field(repr=False)
    sha256: str
    changes: tuple[SchemaChange, ...]
    wrapped_root: str | None
    nullable_added: frozenset[tuple[str, ...]]
    blockers: tuple[str, ...]

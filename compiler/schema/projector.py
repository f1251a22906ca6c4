"""The rewriting behind :func:`compiler.schema.projection.project`: one walk of a contract's
JSON Schema that produces the dialect's subset and records every change.

Each rewrite is recorded as a :class:`~compiler.schema.projected.SchemaChange` (the kinds are
catalogued in :mod:`compiler.schema.projection`); the result is checked against the JSON Schema
meta-schema and the dialect's own rules (:func:`compiler.schema.checks.verify_projected`)
before it is returned, so a rewrite step that failed is a :class:`ProjectionError`, never
a schema the provider would reject. Use :func:`compiler.schema.projection.project`, which caches.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from compiler.errors import ProjectionError
from compiler.schema.budgets import DEFAULT_BUDGET, BudgetCounter, ProjectionBudget, source_problems
from compiler.schema.checks import (
    is_object_schema,
    limit_violations,
    recursive_refs,
    untyped_schemas,
    verify_projected,
)
from compiler.schema.dialects import Dialect
from compiler.schema.frozen_json import (
    FrozenDict,
    FrozenList,
    canonical_sha256,
    freeze_json,
    indent_json,
)
from compiler.schema.projected import WRAP_PROPERTY, Projection, SchemaChange
from compiler.schema.rewrites import (
    NULL_SCHEMA,
    ONLY_REMOVED,
    accepts_null,
    is_pure_union,
    merge_ref_siblings,
    nullable,
)
from compiler.schema.walk import LocalRefs, escape_pointer, schema_slot

__all__ = ["Projector"]

_MISSING = object()


class Projector:
    """One projection run: walks the contract schema once, collecting changes.

    Args:
        source: the contract's JSON Schema (read, never modified).
        dialect: the target dialect.
        budget: how large the projection may grow (:mod:`compiler.schema.budgets`).

    Raises:
        ProjectionError: from the constructor for an external or unresolvable
            ``$ref`` (or ``$dynamicRef``), a ``$defs`` alias cycle or a schema over the
            budget's nodes; while projecting, at the first overrun of the budget;
            from :meth:`run` as :func:`compiler.schema.projection.project` says.
    """

    def __init__(self, source: Mapping[str, Any], dialect: Dialect,
                 budget: ProjectionBudget = DEFAULT_BUDGET) -> None:
        for problem in source_problems(source, budget):
            raise ProjectionError(problem)
        self.counter = BudgetCounter(budget)
        self.source = source
        self.dialect = dialect
        self.refs = LocalRefs(source)
        self.recursive = recursive_refs(source, self.refs)
        self.changes: list[SchemaChange] = []
        self.nullable: set[tuple[str, ...]] = set()
        self.blocked: list[str] = []  # open objects and blocking drops, in schema order
        self.defs_wanted: list[str] = []
        self.shared: dict[tuple[str, str], FrozenList] = {}  # nullable()'s anyOf lists

    # ----------------------------------------------------------------- driver

    def run(self) -> Projection:
        """Project the schema once (raises as :func:`compiler.schema.projection.project` says)."""
        d = self.dialect
        wrap = self._needs_wrap()
        body_path: tuple[str, ...] = ("properties", WRAP_PROPERTY) if wrap else ()
        body = self._build(self.source, "", body_path, root=True,
                           inline_ref=d.root_must_be_object and not wrap)
        defs = self._definitions()
        if wrap:
            schema: dict[str, Any] = {
                "type": "object",
                "properties": FrozenDict({WRAP_PROPERTY: self._freeze(body)}),
                "required": FrozenList([WRAP_PROPERTY]),
            }
            if d.closed_objects:
                schema["additionalProperties"] = False
            self._change("schema.root_wrapped", "", None, WRAP_PROPERTY,
                         f"{d.name} requires an object root without anyOf; the value is wrapped "
                         f"in property {WRAP_PROPERTY!r} and unwrapped when the reply is parsed")
        else:
            schema = body  # the root of a pydantic schema is always an object
        if defs:
            schema["$defs"] = FrozenDict(defs)
        frozen = FrozenDict(schema)  # each node below was frozen as it was built
        del schema, body
        blockers = self._blockers(frozen)
        verify_projected(frozen, d, blockers)
        return Projection(
            dialect=d.name,
            schema=frozen,
            schema_json=indent_json(frozen),
            sha256=canonical_sha256(frozen),
            changes=tuple(self.changes),
            wrapped_root=WRAP_PROPERTY if wrap else None,
            nullable_added=frozenset(self.nullable),
            blockers=tuple(blockers),
        )

    def _needs_wrap(self) -> bool:
        d = self.dialect
        target: Any = self.source
        for _ in range(32):  # follow a chain of root aliases
            ref = target.get("$ref") if isinstance(target, Mapping) else None
            if not isinstance(ref, str):
                break
            target = self.refs.lookup(ref)
        if not isinstance(target, Mapping):
            return d.root_must_be_object
        union = "anyOf" in target or "oneOf" in target
        return (d.root_must_be_object and target.get("type") != "object") or (
            not d.root_anyof_allowed and union
        )

    def _definitions(self) -> dict[str, Any]:
        raw = self.source.get("$defs", {})
        done: dict[str, Any] = {}
        index = 0
        while index < len(self.defs_wanted):  # projecting a definition may want more
            name = self.defs_wanted[index]
            index += 1
            done[name] = self._node(raw[name], "/$defs/" + escape_pointer(name), ("$defs", name))
        return {name: done[name] for name in raw if name in done}

    def _blockers(self, schema: Mapping[str, Any]) -> list[str]:
        d = self.dialect
        blockers = list(self.blocked)
        refs = LocalRefs(schema)
        if not d.supports_recursion:
            blockers.extend(
                f"{ref}: the schema is recursive and {d.name} does not support recursion"
                for ref in sorted(recursive_refs(schema, refs))
            )
        if d.typed_schemas:
            blockers.extend(
                f"{problem}; {d.name} can enforce only schemas that name what they accept"
                for problem in untyped_schemas(schema)
            )
        blockers.extend(limit_violations(schema, d, refs))
        return blockers

    def _change(self, kind: str, pointer: str, requested: Any, applied: Any, reason: str) -> None:
        self.changes.append(
            SchemaChange(kind, pointer, freeze_json(requested), freeze_json(applied), reason)
        )

    def _keeps(self, keyword: str) -> bool:
        return self.dialect.keywords is None or keyword in self.dialect.keywords

    # ----------------------------------------------------------------- one node

    def _node(self, node: Any, ptr: str, path: tuple[str, ...]) -> Any:
        """Project one schema node below the root, read-only (:meth:`_build`, frozen)."""
        return self._freeze(self._build(node, ptr, path))

    @staticmethod
    def _freeze(built: Any) -> Any:  # a node from _build: its values are read-only already
        return FrozenDict(built) if type(built) is dict else built

    def _build(self, node: Any, ptr: str, path: tuple[str, ...], *, root: bool = False,
               inline_ref: bool = False) -> Any:
        """Project one schema node (``ptr`` points into the contract, ``path`` into the output)
        to a boolean, or a plain ``dict`` of read-only values that its caller freezes."""
        if isinstance(node, bool):
            return node
        if not isinstance(node, Mapping):
            raise ProjectionError(f"{ptr or '/'}: a schema must be an object or a boolean")
        self.counter.node(ptr, len(path))
        d = self.dialect
        ref = node.get("$ref")
        if isinstance(ref, str):
            beside = not d.ref_siblings and any(  # kept, or restated in the description
                key not in ("$ref", "default") and (self._keeps(key) or key not in ONLY_REMOVED)
                for key in node
            )
            if inline_ref or beside or (not d.supports_ref and ref not in self.recursive):
                why = ("the root must be an object schema" if inline_ref
                       else f"{d.name} does not allow keywords beside $ref" if beside
                       else f"{d.name} does not support $ref")
                self._change("schema.refs_inlined", ptr, ref, None,
                             f"{why}; the definition is inlined here")
                merged = merge_ref_siblings(node, self.refs.lookup(ref), ptr)
                return self._build(merged, ptr, path, root=root)
            self._want_definition(ref, ptr)
        all_of = node.get("allOf")
        if isinstance(all_of, list) and len(all_of) == 1 and not self._keeps("allOf"):
            self._change("schema.allof_merged", ptr + "/allOf", "allOf", None,
                         f"{d.name} does not support allOf; its one entry is merged in")
            rest = {key: value for key, value in node.items() if key != "allOf"}
            return self._build(merge_ref_siblings(rest, all_of[0], ptr), ptr, path, root=root)

        out: dict[str, Any] = {}
        dropped: list[tuple[str, Any]] = []
        for key, value in node.items():
            at = f"{ptr}/{escape_pointer(key)}"
            self.counter.size(at, key, value)
            if key == "$ref":
                out[key] = value
            elif root and key in ("$defs", "definitions"):
                continue  # projected on demand by _definitions
            elif key == "default":
                self._change("schema.default_stripped", at, value, None,
                             "defaults are annotations, never sent; an absent field gets the "
                             "contract's default when the reply is parsed")
            elif key == "oneOf" and d.oneof_as_anyof:
                if "anyOf" in node:
                    raise ProjectionError(f"{ptr or '/'}: cannot rewrite oneOf to anyOf "
                                          "next to an existing anyOf")
                out["anyOf"] = self._sub(key, value, at, (*path, "anyOf"))
                self._change("schema.oneof_to_anyof", at, "oneOf", "anyOf",
                             f"{d.name} does not support oneOf; anyOf is used and the contract "
                             "still checks the reply")
            elif key == "discriminator" and not self._keeps(key):
                self._change("schema.discriminator_dropped", at, value, None,
                             f"{d.name} does not support 'discriminator'; each branch's own "
                             "constant tag still tells them apart")
            elif key == "const" and not self._keeps(key) and self._keeps("enum"):
                out["enum"] = FrozenList([freeze_json(value)])
                self._change("schema.const_to_enum", at, {"const": value}, {"enum": [value]},
                             f"{d.name} does not support 'const'; a one-value enum says the same")
            elif (refusal := self._refusal(key, value)) is not None:
                kind, why = refusal
                if d.drop_blocks(key, value):  # a blocker, not a change; restated for display
                    dropped.append((key, value))
                    self.blocked.append(f"{at}: {why}; {self._drop_harm(key, value, node)}")
                    continue
                if key in ONLY_REMOVED:
                    why += "; not a constraint, so it is only removed"
                else:
                    dropped.append((key, value))
                    why += "; restated in the description and still checked on the reply"
                self._change(kind, at, value, None, why)
            elif key == "properties" and isinstance(value, Mapping):
                out[key] = FrozenDict(self._properties(node, value, ptr, path))
            else:
                out[key] = self._sub(key, value, at, (*path, key))
        if dropped and self._keeps("description"):
            note = "Constraints: " + "; ".join(
                f"{key} {json.dumps(value, ensure_ascii=False, sort_keys=True)}"
                for key, value in dropped
            ) + "."
            previous = out.get("description")
            out["description"] = f"{previous}\n{note}" if previous else note
        if is_object_schema(out):
            self._require_all(out)
        if is_object_schema(out) or ("type" not in node and (
            "additionalProperties" in node or "patternProperties" in node
        )):
            self._close(node, out, ptr)
        return out

    def _drop_harm(self, key: str, value: Any, node: Mapping[str, Any]) -> str:
        """Say why removing ``key`` blocks enforcement (the dialect table marks it a blocker)."""
        if key in ("additionalProperties", "patternProperties", "unevaluatedProperties"):
            what = ("no undeclared keys" if "properties" in node
                    else "no keys at all, so only {} could be sent")
            return (f"the contract admits undeclared keys there, and without it the object "
                    f"admits {what}")
        return "dropping it changes what the schema admits (a blocker in the dialect table)"

    def _sub(self, key: str, value: Any, at: str, path: tuple[str, ...]) -> Any:
        slot = schema_slot(key, value)
        if slot == "one":
            return self._node(value, at, path)
        if slot == "list":
            return FrozenList([self._node(item, f"{at}/{i}", (*path, str(i)))
                               for i, item in enumerate(value)])
        if slot == "map":
            return FrozenDict({name: self._node(item, f"{at}/{escape_pointer(name)}",
                                                (*path, name)) for name, item in value.items()})
        return freeze_json(value)

    def _refusal(self, key: str, value: Any) -> tuple[str, str] | None:
        d = self.dialect
        if key == "format":
            if not self._keeps(key):
                return "schema.format_dropped", f"{d.name} does not support 'format'"
            if d.string_formats is not None and value not in d.string_formats:
                return "schema.format_dropped", f"{d.name} does not support format {value!r}"
            return None
        if not self._keeps(key):
            return "schema.keyword_dropped", f"{d.name} does not support {key!r}"
        if key == "minItems" and d.min_items_values is not None and (
            value not in d.min_items_values
        ):
            allowed = sorted(d.min_items_values)
            return "schema.keyword_dropped", f"{d.name} accepts minItems only as {allowed}"
        return None

    def _want_definition(self, ref: str, ptr: str) -> None:
        prefix, _, segment = ref.partition("#/$defs/")
        name = segment.replace("~1", "/").replace("~0", "~")
        if prefix or "/" in segment or name not in self.source.get("$defs", {}):
            raise ProjectionError(
                f"{ptr or '/'}: cannot keep $ref {ref!r}; only '#/$defs/<name>' references "
                "are kept (others must be non-recursive so they can be inlined)"
            )
        if name not in self.defs_wanted:
            self.defs_wanted.append(name)

    # ----------------------------------------------------------------- objects

    def _properties(self, node: Mapping[str, Any], props: Mapping[str, Any], ptr: str,
                    path: tuple[str, ...]) -> dict[str, Any]:
        d = self.dialect
        listed = node.get("required", ())
        required = set(listed) if isinstance(listed, list | tuple) else listed  # O(1) lookups
        out: dict[str, Any] = {}
        why = (f"{d.name} requires every property to be required; the optional field is "
               "sent as required")  # each reason made once, not once per property
        same, new = (f"{why}; it already accepts null, so a null reply stays null",
                     f"{why} and nullable; a null reply means absent, so the contract's "
                     "default applies")
        for name, sub in props.items():
            at = f"{ptr}/properties/{escape_pointer(name)}"
            here = (*path, "properties", name)
            if not d.all_required or name in required:
                out[name] = self._node(sub, at, here)
                continue
            if accepts_null(sub, self.refs.lookup):
                out[name] = self._node(sub, at, here)
                self._change("schema.made_required_nullable", at, "optional",
                             "required (already nullable)", same)
                continue
            self.nullable.add(here)
            if isinstance(sub, Mapping) and is_pure_union(sub, d):
                projected = self._build(sub, at, here)  # append the null branch: paths stay put
                projected["anyOf"] = FrozenList([*projected["anyOf"], NULL_SCHEMA])
                out[name] = FrozenDict(projected)
            else:
                out[name] = nullable(self._build(sub, at, (*here, "anyOf", "0")), self.shared)
            self._change("schema.made_required_nullable", at, "optional", "required, nullable", new)
        return out

    def _require_all(self, out: dict[str, Any]) -> None:
        props = out.get("properties")
        if not self.dialect.all_required or not isinstance(props, Mapping):
            return
        before = list(out.get("required", []))
        required = [*props, *(name for name in before if name not in props)]
        if "required" in out:
            out["required"] = FrozenList(required)
            return
        rebuilt: dict[str, Any] = {}
        for key, value in out.items():
            rebuilt[key] = value
            if key == "properties":
                rebuilt["required"] = FrozenList(required)
        out.clear()
        out.update(rebuilt)

    def _close(self, node: Mapping[str, Any], out: dict[str, Any], ptr: str) -> None:
        """Close an object the dialect cannot leave open, or name it as a blocker."""
        d = self.dialect
        if d.open_objects:
            return
        kept = self._keeps("additionalProperties")
        extra = (out if kept else node).get("additionalProperties", _MISSING)
        patterned = "patternProperties" in node
        if extra is False:
            return
        if extra is _MISSING and "properties" in out and not patterned:
            if d.closed_objects:
                out["additionalProperties"] = False
                self._change("schema.closed_object", ptr, None, False,
                             f"{d.name} requires 'additionalProperties: false' on every object; "
                             "keys the contract does not declare cannot appear")
            return
        if (extra is not _MISSING and not kept) or (patterned and not self._keeps(
                "patternProperties")):
            return  # the dropped keyword is a blocker at its own pointer already
        shown = "absent" if extra is _MISSING else json.dumps(extra, sort_keys=True)
        rule = (f"{d.name} requires 'additionalProperties: false' on every object"
                if d.closed_objects else
                f"{d.name} has no 'additionalProperties', so the object could hold only its "
                "declared properties")
        self.blocked.append(
            f"{ptr or '/'}: an open object (additionalProperties {shown}) cannot be enforced; "
            + rule
        )

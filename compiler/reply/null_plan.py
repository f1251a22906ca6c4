"""Which nulls in a reply the projection introduced, so :func:`compiler.reply.parse.parse_reply`
can turn them back into absent fields.

A dialect that requires every property makes each optional one nullable
(``schema.made_required_nullable``); a ``null`` there in a reply means *absent*, so the
contract's default applies. :func:`null_plan` walks the projected schema once per
projection and records, per schema node, the properties to strip; :func:`undo_nulls`
applies that plan to a parsed reply. Unions whose branches could disagree are resolved
per value by validating it against each branch (jsonschema), first match wins.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable, Mapping
from typing import Any

from compiler.schema.projected import Projection
from compiler.schema.walk import LocalRefs

__all__ = ["NullPlan", "null_plan", "undo_nulls"]


class NullPlan:
    """What to undo at one schema node: nulls to drop, and where to look further.

    ``alts`` are the node's ``$ref`` target, its ``allOf`` entries and, when they
    cannot disagree, its ``anyOf``/``oneOf`` branches: a reply value may match any
    of them, so their views are merged (a property is stripped only if no branch
    declares it without stripping). When two or more non-null branches of a union
    exist and one has something to undo, merging could keep a null that the branch
    the value belongs to added (or strip one another branch declares), so the
    branches go to ``choices`` instead: ``(validator, plan)`` pairs tried in order
    against the value as sent, the first branch it satisfies applies, and a last
    ``(None, merged plan)`` entry keeps the merged view for a value matching none.
    """

    __slots__ = ("alts", "branches", "choices", "declared", "items", "live", "props", "strip",
                 "views")

    def __init__(self) -> None:
        self.strip: frozenset[str] = frozenset()
        self.declared: frozenset[str] = frozenset()
        self.props: dict[str, NullPlan] = {}
        self.items: NullPlan | None = None
        self.alts: tuple[NullPlan, ...] = ()
        self.branches: tuple[tuple[Any, NullPlan], ...] = ()
        self.choices: tuple[tuple[Any, NullPlan], ...] = ()
        self.live = False
        self.views: _View | None = None

    def children(self) -> Iterable[NullPlan]:
        yield from self.props.values()
        if self.items is not None:
            yield self.items
        yield from self.alts
        yield from (plan for _, plan in self.choices)

    def view(self) -> _View:
        """Return ``(keys to strip, plans per key, plan for array items, unions to choose in)``,
        merged over ``alts``."""
        if self.views is None:
            flat: list[NullPlan] = []
            stack, seen = [self], set()
            while stack:
                plan = stack.pop()
                if id(plan) not in seen:
                    seen.add(id(plan))
                    flat.append(plan)
                    stack.extend(plan.alts)
            stripped = frozenset().union(*(p.strip for p in flat))
            kept = frozenset().union(*(p.declared - p.strip for p in flat))
            per_key: dict[str, list[NullPlan]] = {}
            items: list[NullPlan] = []
            for plan in flat:
                for key, sub in plan.props.items():
                    if sub.live:
                        per_key.setdefault(key, []).append(sub)
                if plan.items is not None and plan.items.live:
                    items.append(plan.items)
            self.views = (
                stripped - kept,
                {key: _union(subs) for key, subs in per_key.items()},
                _union(items) if items else None,
                tuple(plan.choices for plan in flat if plan.choices),
            )
        return self.views


_Choices = tuple[tuple[Any, NullPlan], ...]
_View = tuple[frozenset[str], dict[str, NullPlan], NullPlan | None, tuple[_Choices, ...]]


def _union(plans: list[NullPlan]) -> NullPlan:
    if len(plans) == 1:
        return plans[0]
    merged = NullPlan()
    merged.alts = tuple(plans)
    merged.live = True
    return merged


def _choose(value: Any, choices: tuple[tuple[Any, NullPlan], ...]) -> NullPlan:
    """Return the plan of the first union branch ``value`` satisfies (the merged one if none)."""
    for validator, plan in choices:
        if validator is None or validator.is_valid(value):
            return plan
    return choices[-1][1]


def undo_nulls(value: Any, plan: NullPlan) -> None:
    """Delete, in place, the nulls ``plan`` says the projection added (hot path: kept lean).

    Args:
        value: a parsed reply (dicts and lists as JSON decodes them); changed in place.
        plan: from :func:`null_plan` for the projection the reply answered.
    """
    strip, props, items, unions = plan.views or plan.view()
    chosen = [_choose(value, choices) for choices in unions] if unions else ()
    if type(value) is dict:
        for key in strip:
            if key in value and value[key] is None:
                del value[key]
        for key, sub in props.items():
            child = value.get(key)
            if type(child) is dict or type(child) is list:
                undo_nulls(child, sub)
    elif type(value) is list and items is not None:
        for item in value:
            if type(item) is dict or type(item) is list:
                undo_nulls(item, items)
    for branch in chosen:  # branches were chosen on the value as sent, before any strip
        undo_nulls(value, branch)


_PLANS: weakref.WeakKeyDictionary[Projection, NullPlan | None] = weakref.WeakKeyDictionary()


def null_plan(projection: Projection) -> NullPlan | None:
    """Return the plan of nulls to undo in replies to ``projection`` (built once per
    projection, kept while the projection lives), or ``None`` when it made no property
    nullable."""
    try:
        return _PLANS[projection]
    except KeyError:
        pass
    plan = _PlanBuilder(projection).build() if projection.nullable_added else None
    _PLANS[projection] = plan
    return plan


_NULL_SCHEMA = {"type": "null"}


class _PlanBuilder:
    """Walk the projected schema once, marking the properties listed in ``nullable_added``."""

    def __init__(self, projection: Projection) -> None:
        self.schema = projection.schema
        self.nullable = projection.nullable_added
        self.refs = LocalRefs(projection.schema)
        self.by_ref: dict[str, NullPlan] = {}
        self.plans: list[NullPlan] = []

    def build(self) -> NullPlan | None:
        root = self.node(self.schema, ())
        changed = True
        while changed:  # liveness: a plan matters if a strip is reachable from it
            changed = False
            for plan in self.plans:
                if not plan.live and (plan.strip or any(c.live for c in plan.children())):
                    plan.live = changed = True
        for plan in self.plans:
            self.settle_union(plan)
        return root if root.live else None

    def settle_union(self, plan: NullPlan) -> None:
        """Move a union's branches from ``alts`` to ``choices`` when they could disagree."""
        real = [(schema, sub) for schema, sub in plan.branches if schema != _NULL_SCHEMA]
        if len(real) < 2 or not any(sub.live for _, sub in plan.branches):
            return
        from jsonschema import Draft202012Validator  # type: ignore[import-untyped]

        subs = {id(sub) for _, sub in plan.branches}
        plan.alts = tuple(alt for alt in plan.alts if id(alt) not in subs)
        defs = self.schema.get("$defs")
        plan.choices = (
            *(
                (Draft202012Validator(
                    {**schema, "$defs": defs} if isinstance(defs, Mapping) and
                    isinstance(schema, Mapping) else schema
                ), sub)
                for schema, sub in plan.branches
            ),
            (None, _union([sub for _, sub in plan.branches])),
        )
        plan.views = None

    def node(self, node: Any, path: tuple[str, ...]) -> NullPlan:
        plan = NullPlan()
        self.plans.append(plan)
        if not isinstance(node, Mapping):
            return plan
        alts: list[NullPlan] = []
        ref = node.get("$ref")
        if isinstance(ref, str):
            alts.append(self.ref(ref))
        props = node.get("properties")
        if isinstance(props, Mapping):
            plan.declared = frozenset(props)
            plan.strip = frozenset(n for n in props if (*path, "properties", n) in self.nullable)
            plan.props = {n: self.node(s, (*path, "properties", n)) for n, s in props.items()}
        items = node.get("items")
        if isinstance(items, Mapping):
            plan.items = self.node(items, (*path, "items"))
        branches: list[tuple[Any, NullPlan]] = []
        for key in ("anyOf", "oneOf", "allOf"):
            entries = node.get(key)
            if isinstance(entries, list):
                subs = [self.node(b, (*path, key, str(i))) for i, b in enumerate(entries)]
                alts.extend(subs)
                if key != "allOf":
                    branches.extend(zip(entries, subs, strict=True))
        plan.alts = tuple(alts)
        plan.branches = tuple(branches)
        return plan

    def ref(self, ref: str) -> NullPlan:
        if ref not in self.by_ref:
            placeholder = NullPlan()  # filled after the target, so cycles end here
            self.by_ref[ref] = placeholder
            self.plans.append(placeholder)
            segments = tuple(s.replace("~1", "/").replace("~0", "~") for s in ref[2:].split("/"))
            placeholder.alts = (self.node(self.refs.lookup(ref), segments if ref != "#" else ()),)
        return self.by_ref[ref]

"""Parse a model's reply: undo the projection, then validate with the original contract.

:func:`parse_reply` removes an optional code fence, parses the JSON, unwraps a
wrapped root, turns the nulls the projection introduced back into absent fields
(so the contract's defaults apply), and validates with the contract's
``TypeAdapter`` in JSON mode. The contract is the authority, whatever the
provider enforced: constraints a dialect could not carry (``pattern``,
``maxLength`` ...) are checked here.

Errors carry JSON paths into the reply as written (``$.result.answer`` when the
root was wrapped) and pydantic's messages with the offending values removed.
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Iterable, Mapping
from typing import Any

from jsonschema import Draft202012Validator  # type: ignore[import-untyped]
from pydantic import ValidationError
from pydantic_core import from_json, to_json

from compiler.contract import OutputContract
from compiler.errors import ReplyValidationError
from compiler.projection import WRAP_PROPERTY, Projection
from compiler.schema_checks import LocalRefs

__all__ = ["parse_reply"]

_LANGUAGE_TAG = re.compile(r"[A-Za-z0-9_+-]*")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def parse_reply(
    text: str, contract: OutputContract, projection: Projection, *, strip_fence: bool
) -> Any:
    """Turn a reply into a validated instance of the contract's type.

    Args:
        text: the reply's text.
        contract: the output contract (the authority for validation).
        projection: the projection the request was compiled with.
        strip_fence: remove one surrounding Markdown code fence (```json ... ```)
            before parsing; use it when the provider did not enforce JSON.

    Returns:
        The validated value (a model instance for a ``BaseModel`` contract).

    Raises:
        ReplyValidationError: the text is not JSON (path ``$`` and the decoder's
            message), or it violates the contract (JSON paths such as
            ``$.organizations[0].name``; the offending values are never included).

    >>> from pydantic import BaseModel
    >>> from compiler.dialects import DIALECTS
    >>> from compiler.projection import project
    >>> class Note(BaseModel):
    ...     text: str = "none"
    >>> c = OutputContract.from_type(Note)
    >>> parse_reply('{"text": null}', c, project(c, DIALECTS["openai-strict"]), strip_fence=False)
    Note(text='none')
    """
    if strip_fence:
        text = _unfence(text)
    plan = _plan_of(projection)
    wrapper = projection.wrapped_root
    failure: ValidationError | None = None
    if plan is None and wrapper is None:  # nothing to undo: one pass in pydantic's JSON parser
        try:
            return contract.adapter.validate_json(text)
        except ValidationError as exc:
            failure = exc  # raised below, outside this block, so no pydantic error is chained
    data = _loads(text)
    if failure is not None:
        raise ReplyValidationError(_failures(failure, data, "$", _field_names(contract)))
    if plan is not None:
        _apply(data, plan)
    where = "$"
    if wrapper is not None:
        if not isinstance(data, dict):
            message = f"Input should be an object with property {wrapper!r}"
            raise ReplyValidationError([("$", message)])
        if wrapper not in data:
            raise ReplyValidationError([(_path_step("$", wrapper), "Field required")])
        data = data[wrapper]
        where = _path_step("$", wrapper)
    try:  # back to JSON text so pydantic validates in JSON mode, as for an untouched reply
        return contract.adapter.validate_json(to_json(data))
    except ValidationError as exc:
        failure = exc
    raise ReplyValidationError(_failures(failure, data, where, _field_names(contract)))


def _unfence(text: str) -> str:
    """Remove one Markdown code fence around the whole text (with an optional language tag)."""
    stripped = text.strip()
    if len(stripped) < 6 or not (stripped.startswith("```") and stripped.endswith("```")):
        return text
    inner = stripped[3:-3]
    first_line, newline, rest = inner.partition("\n")
    if newline and _LANGUAGE_TAG.fullmatch(first_line.strip()):
        return rest
    return inner


def _loads(text: str) -> Any:
    """Parse JSON with pydantic-core's parser (about 2.5x faster than ``json.loads``)."""
    try:
        return from_json(text)
    except ValueError as exc:
        message = f"Invalid JSON: {exc}"
    raise ReplyValidationError([("$", message)])


# --------------------------------------------------------------------------- error paths


def _failures(
    exc: ValidationError, data: Any, where: str, names: frozenset[str]
) -> list[tuple[str, str]]:
    """Map pydantic errors to ``(JSON path, message)`` pairs without input values."""
    return [
        (_json_path(err["loc"], data, where, err["type"] == "missing", names), _scrub(err))
        for err in exc.errors(include_url=False)
    ]


_NAMES: dict[str, frozenset[str]] = {}


def _field_names(contract: OutputContract) -> frozenset[str]:
    """Every property name the contract's schema declares (plus the wrapper's)."""
    found = _NAMES.get(contract.sha256)
    if found is None:
        found = _NAMES[contract.sha256] = _collect_names(contract.schema)
    return found


def _collect_names(schema: Mapping[str, Any]) -> frozenset[str]:
    names = {WRAP_PROPERTY}
    stack: list[Any] = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, Mapping):
            props = node.get("properties")
            if isinstance(props, Mapping):
                names.update(str(k) for k in props)
            stack.extend(node.values())
        elif isinstance(node, list | tuple):
            stack.extend(node)
    return frozenset(names)


def _json_path(
    loc: Iterable[int | str], data: Any, where: str, missing: bool, names: frozenset[str]
) -> str:
    """Follow ``loc`` through ``data``; union member names and tags are not data, so skip them."""
    path, current = where, data
    steps = list(loc)
    for index, step in enumerate(steps):
        last = index == len(steps) - 1
        if isinstance(step, int) and isinstance(current, list):
            path += f"[{step}]"
            current = current[step] if -len(current) <= step < len(current) else None
        elif isinstance(step, str) and isinstance(current, dict) and (
            step in current or (last and missing)
        ):
            # A key the contract does not declare is data (a dict key): never echo it.
            path = _path_step(path, step) if step in names else path + "[*]"
            current = current.get(step)
    return path


def _path_step(path: str, key: str) -> str:
    if _IDENTIFIER.match(key):
        return f"{path}.{key}"
    return path + "['" + key.replace("\\", "\\\\").replace("'", "\\'") + "']"


def _scrub(err: Mapping[str, Any]) -> str:
    """Return the error message with the offending value (and a union tag) blanked out."""
    message = str(err["msg"])
    if err["type"] == "json_invalid":
        return message
    suspects = [err.get("input")]
    ctx = err.get("ctx")
    if isinstance(ctx, Mapping) and "tag" in ctx:
        suspects.append(ctx["tag"])
    for value in suspects:
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            continue
        text = str(value)
        for form in (repr(value), f'"{text}"', f"'{text}'"):
            message = message.replace(form, "<value>")
        if isinstance(value, str) and len(text) >= 4:
            message = message.replace(text, "<value>")
    if "[key]" in tuple(err["loc"]):
        message += " (in a key)"
    return message


# --------------------------------------------------------------------------- undoing nulls


class _Plan:
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
        self.props: dict[str, _Plan] = {}
        self.items: _Plan | None = None
        self.alts: tuple[_Plan, ...] = ()
        self.branches: tuple[tuple[Any, _Plan], ...] = ()
        self.choices: tuple[tuple[Any, _Plan], ...] = ()
        self.live = False
        self.views: _View | None = None

    def children(self) -> Iterable[_Plan]:
        yield from self.props.values()
        if self.items is not None:
            yield self.items
        yield from self.alts
        yield from (plan for _, plan in self.choices)

    def view(self) -> _View:
        """Return ``(keys to strip, plans per key, plan for array items, unions to choose in)``,
        merged over ``alts``."""
        if self.views is None:
            flat: list[_Plan] = []
            stack, seen = [self], set()
            while stack:
                plan = stack.pop()
                if id(plan) not in seen:
                    seen.add(id(plan))
                    flat.append(plan)
                    stack.extend(plan.alts)
            stripped = frozenset().union(*(p.strip for p in flat))
            kept = frozenset().union(*(p.declared - p.strip for p in flat))
            per_key: dict[str, list[_Plan]] = {}
            items: list[_Plan] = []
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


_View = tuple[
    frozenset[str], dict[str, _Plan], _Plan | None, tuple[tuple[tuple[Any, _Plan], ...], ...]
]


def _union(plans: list[_Plan]) -> _Plan:
    if len(plans) == 1:
        return plans[0]
    merged = _Plan()
    merged.alts = tuple(plans)
    merged.live = True
    return merged


def _choose(value: Any, choices: tuple[tuple[Any, _Plan], ...]) -> _Plan:
    """Return the plan of the first union branch ``value`` satisfies (the merged one if none)."""
    for validator, plan in choices:
        if validator is None or validator.is_valid(value):
            return plan
    return choices[-1][1]


def _apply(value: Any, plan: _Plan) -> None:
    """Delete, in place, the nulls ``plan`` says the projection added (hot path: kept lean)."""
    strip, props, items, unions = plan.views or plan.view()
    chosen = [_choose(value, choices) for choices in unions] if unions else ()
    if type(value) is dict:
        for key in strip:
            if key in value and value[key] is None:
                del value[key]
        for key, sub in props.items():
            child = value.get(key)
            if type(child) is dict or type(child) is list:
                _apply(child, sub)
    elif type(value) is list and items is not None:
        for item in value:
            if type(item) is dict or type(item) is list:
                _apply(item, items)
    for branch in chosen:  # branches were chosen on the value as sent, before any strip
        _apply(value, branch)


_PLANS: weakref.WeakKeyDictionary[Projection, _Plan | None] = weakref.WeakKeyDictionary()


def _plan_of(projection: Projection) -> _Plan | None:
    """Return (built once per projection) the plan of nulls to undo, or ``None`` if none."""
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
        self.by_ref: dict[str, _Plan] = {}
        self.plans: list[_Plan] = []

    def build(self) -> _Plan | None:
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

    def settle_union(self, plan: _Plan) -> None:
        """Move a union's branches from ``alts`` to ``choices`` when they could disagree."""
        real = [(schema, sub) for schema, sub in plan.branches if schema != _NULL_SCHEMA]
        if len(real) < 2 or not any(sub.live for _, sub in plan.branches):
            return
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

    def node(self, node: Any, path: tuple[str, ...]) -> _Plan:
        plan = _Plan()
        self.plans.append(plan)
        if not isinstance(node, Mapping):
            return plan
        alts: list[_Plan] = []
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
        branches: list[tuple[Any, _Plan]] = []
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

    def ref(self, ref: str) -> _Plan:
        if ref not in self.by_ref:
            placeholder = _Plan()  # filled after the target, so cycles end here
            self.by_ref[ref] = placeholder
            self.plans.append(placeholder)
            segments = tuple(s.replace("~1", "/").replace("~0", "~") for s in ref[2:].split("/"))
            placeholder.alts = (self.node(self.refs.lookup(ref), segments if ref != "#" else ()),)
        return self.by_ref[ref]

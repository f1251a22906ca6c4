"""Memoised compilations, and their replay with other messages.

A compilation holds for every prompt up to each attempt's ceiling (the context limit is
not binding), so a repeat call for the same intent and model with other messages
differs only in each attempt's ``body["messages"]``. :class:`Memo` keeps such a
compilation and :meth:`Memo.replay` rebuilds it around new messages.

What a replay shares with the memo and what it copies: every ``dict`` and ``list`` of a
body (the body itself, ``messages`` and each message, ``response_format``,
``provider`` and its lists, ``tools`` and each tool, ``reasoning``, ...) is a fresh
copy, so a caller may edit any of them; the schemas inside (``response_format.
json_schema.schema``, each ``tools[].function.parameters``) are read-only values
(:class:`compiler.schema.frozen_json.FrozenDict`, the same objects in every request
compiled from that projection), shared as they are by a fresh compilation.
The memo is built from its own copy, so a caller who edits the first result does not
reach it either. The copy recipe of every body value is worked out once, when the memo
is made, as plain data (nested tuples of keys, which the cyclic collector stops
tracking), so a replay is a few C-level ``dict.copy`` calls per attempt.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any, TypeAlias, TypeVar

from compiler.compiled import CompiledRequest
from compiler.intent import Intent
from compiler.passes.budget import estimate_prompt_tokens
from compiler.report import AdjustmentReport
from compiler.schema.frozen_json import FrozenDict

__all__ = ["Memo", "envelope_copy", "evolver", "make_memo"]

_T = TypeVar("_T")
#: The default of every keyword of an ``evolve``: keep the old value.
_KEEP: Any = object()

#: The request's fields, in order.
_NAMES = tuple(f.name for f in fields(CompiledRequest) if f.init)


def _assembler() -> Callable[..., CompiledRequest]:
    """``assemble(body, attempts, values)``: a new request with every other field taken
    from ``values`` (all fields, in order), set slot by slot.

    Generated from the fields, as ``dataclasses`` makes ``__init__``, but without the
    global lookups of the frozen ``__init__`` (15 ``object.__setattr__`` calls), which
    take twice the time: a replay builds one request per attempt. Sound while
    ``__init__`` does nothing but set fields (no ``__post_init__``, no ``InitVar``):
    checked here.
    """
    if hasattr(CompiledRequest, "__post_init__") or len(_NAMES) != len(fields(CompiledRequest)):
        raise ImportError("compiler.memo: CompiledRequest's __init__ does more than set its "
                          "fields; replay must call it")  # pragma: no cover - a guard
    scope: dict[str, Any] = {"new": object.__new__, "cls": CompiledRequest}
    lines = ["def assemble(body, attempts, values):", "    made = new(cls)"]
    for index, name in enumerate(_NAMES):
        scope[f"set_{name}"] = getattr(CompiledRequest, name).__set__
        value = name if name in _GIVEN else f"values[{index}]"
        lines.append(f"    set_{name}(made, {value})")
    lines.append("    return made")
    exec("\n".join(lines), scope)  # code built from the field names above, nothing else
    assemble: Callable[..., CompiledRequest] = scope["assemble"]
    return assemble



def evolver(cls: type[_T]) -> Callable[..., _T]:
    """``evolve(old, **changes)``: :func:`dataclasses.replace` for ``cls``, a frozen
    dataclass with slots whose ``__init__`` only sets its fields (checked here), made
    slot by slot as ``assemble`` is: about a third of ``replace``'s time, which walks
    the fields and calls the frozen ``__init__`` on every call.

    Raises:
        TypeError: from ``evolve``, a change names no field of ``cls`` (as ``replace``).
    """
    shape: Any = cls  # a dataclass (fields() says so, or raises)
    names = [f.name for f in fields(shape)]
    if hasattr(cls, "__post_init__") or any(not f.init for f in fields(shape)) or not hasattr(
            cls, "__slots__") or {"old", "made", "new", "cls", "keep"} & set(names):
        raise ImportError(f"compiler.memo: {cls.__name__}'s __init__ does more than set its "
                          "fields")  # pragma: no cover - a guard
    scope: dict[str, Any] = {"new": object.__new__, "cls": cls, "keep": _KEEP}
    lines = [f"def evolve(old, /, *, {', '.join(f'{n}=keep' for n in names)}):",
             "    made = new(cls)"]
    for name in names:
        scope[f"set_{name}"] = getattr(cls, name).__set__
        scope[f"get_{name}"] = getattr(cls, name).__get__
        lines.append(f"    set_{name}(made, get_{name}(old) if {name} is keep else {name})")
    lines.append("    return made")
    exec("\n".join(lines), scope)  # code built from the field names above, nothing else
    evolve: Callable[..., _T] = scope["evolve"]
    return evolve


#: The fields each replay makes anew rather than taking from the recipe.
_GIVEN = ("body", "attempts")
_GIVEN_AT = tuple(_NAMES.index(name) for name in _GIVEN)
_INSTRUCTIONS_AT = _NAMES.index("instructions")
_REPORT_AT = _NAMES.index("report")
#: Every field of a request, in order, as one tuple.
_FIELDS = operator.attrgetter(*_NAMES)
_assemble = _assembler()


def envelope_copy(value: Any) -> Any:
    """Copy every plain ``dict`` and ``list`` of a JSON value, recursively; share
    everything else (numbers, strings, and read-only ``FrozenDict``/``FrozenList``)."""
    kind = type(value)
    if kind is dict:
        return {key: envelope_copy(item) for key, item in value.items()}
    if kind is list:
        return [envelope_copy(item) for item in value]
    return value


#: How to copy a plain dict or list as :func:`envelope_copy` would: ``None`` when it
#: holds no plain dict or list (one ``copy()``), else ``((key or index, plan), ...)``
#: for the values that are.
_Plan: TypeAlias = tuple[tuple[Any, "_Plan"], ...] | None


def _copied(value: dict[str, Any] | list[Any]) -> tuple[Any, _Plan]:
    """:func:`envelope_copy` of a plain dict or list, with its :data:`_Plan`."""
    items: Any = value.items() if type(value) is dict else enumerate(value)
    out: Any = value.copy()
    inner = []
    for key, item in items:
        kind = type(item)
        if kind is dict or kind is list:
            out[key], plan = _copied(item)
            inner.append((key, plan))
    return out, tuple(inner) or None


def _copy(value: Any, plan: _Plan) -> Any:
    """A new copy of ``value`` (a plain dict or list) by its :data:`_Plan`."""
    out = value.copy()
    if plan is not None:
        for key, inner in plan:
            item = value[key]
            out[key] = item.copy() if inner is None else _copy(item, inner)
    return out


@dataclass(frozen=True, slots=True)
class _Recipe:
    """How to rebuild one attempt: the body without its messages, and every other field."""

    template: dict[str, Any]  # the body's keys in order (the memo's copy); messages: None
    copies: tuple[tuple[str, _Plan], ...]  # the body's dicts and lists, by key
    head: dict[str, str] | None  # the instruction message
    values: tuple[Any, ...]  # every field of the attempt, in order

    @staticmethod
    def of(attempt: CompiledRequest) -> _Recipe:
        template: dict[str, Any] = {}  # the memo's own copy of the body
        copies = []
        for key, value in attempt.body.items():
            kind = type(value)
            if key == "messages":
                template[key] = None
            elif kind is dict or kind is list:
                template[key], plan = _copied(value)
                copies.append((key, plan))
            else:
                template[key] = value
        # body and attempts are new in every replay; the instructions are shared by
        # every replay, so read-only
        values = list(_FIELDS(attempt))
        for index in _GIVEN_AT:
            values[index] = None
        instructions = attempt.instructions
        if instructions is not None:
            values[_INSTRUCTIONS_AT] = FrozenDict(instructions)
        head = None if instructions is None else dict(instructions)
        return _Recipe(template, tuple(copies), head, tuple(values))

    def build(self, messages: Sequence[Mapping[str, Any]],
              later: tuple[CompiledRequest, ...]) -> CompiledRequest:
        body = self.template.copy()
        body["messages"] = ([*map(dict, messages)] if self.head is None
                            else [self.head.copy(), *map(dict, messages)])
        for key, plan in self.copies:
            value = body[key]
            body[key] = value.copy() if plan is None else _copy(value, plan)
        return _assemble(body, later, self.values)


@dataclass(frozen=True, slots=True)
class Memo:
    """A compilation that holds for every prompt up to each attempt's ceiling.

    The compiler is deterministic and the caller's messages reach the result only
    through the prompt estimate, so while no context limit is binding a new call
    with other messages differs only in each attempt's ``body["messages"]``.

    Attributes:
        intent: the intent compiled (a hit must be this very object).
        prompt_ceiling: per attempt, the largest prompt estimate (tokens) that gives the
            same body.
        instruction_tokens: per attempt, the estimate of the prompt besides the caller's
            messages: the instruction message and the tool definitions (tokens).
        warns: whether any attempt has an adjustment the stage's policy warns about (the
            caller then calls :func:`compiler.policy.warn_for` per attempt).
    """

    intent: Intent
    prompt_ceiling: tuple[int, ...]
    instruction_tokens: tuple[int, ...]
    warns: bool
    _recipes: tuple[_Recipe, ...]  # the last attempt first

    @property
    def reports(self) -> tuple[AdjustmentReport, ...]:
        """The attempts' reports, in plan order (from the recipes: one tuple fewer kept
        per memo)."""
        return tuple([recipe.values[_REPORT_AT] for recipe in reversed(self._recipes)])

    def fits(self, messages: Sequence[Mapping[str, Any]]) -> bool:
        """Whether every attempt's prompt estimate stays within its ceiling.

        The same figure as :func:`compiler.passes.budget.prompt_tokens` per attempt
        (the estimate is a sum over messages, so the caller's part is counted once).
        """
        declared = self.intent.estimated_prompt_tokens
        theirs = estimate_prompt_tokens(messages)
        for shown, ceiling in zip(self.instruction_tokens, self.prompt_ceiling, strict=True):
            estimate = shown + theirs
            if declared is not None:
                estimate = max(estimate, declared + shown)
            if estimate > ceiling:
                return False
        return True

    def replay(self, messages: Sequence[Mapping[str, Any]]) -> CompiledRequest:
        """Return the memoised plan with ``messages`` in place of the original ones: each
        attempt carries the attempts after it (the same objects as the plan's)."""
        later: tuple[CompiledRequest, ...] = ()
        for recipe in self._recipes:
            later = (recipe.build(messages, later), *later)
        return later[0]


def make_memo(
    intent: Intent, compiled: CompiledRequest, instruction_tokens: Sequence[int],
    prompt_ceiling: Sequence[int], warns: bool,
) -> Memo | None:
    """Memoise ``compiled`` (a plan whose attempt ``i`` carries attempts ``i+1...``), or
    return ``None`` when its attempts are not that chain.

    Args:
        instruction_tokens: per attempt, the estimate (tokens) of what the prompt holds
            besides the caller's messages (the instruction message, the tool definitions).
        prompt_ceiling: per attempt, the largest prompt estimate giving the same body.
        warns: whether the stage's policy warns about an adjustment of any attempt.
    """
    plan = compiled.plan
    if len(plan) > 1 and any(a.attempts != plan[i + 1:] for i, a in enumerate(plan)):
        return None
    return Memo(intent, tuple(prompt_ceiling), tuple(instruction_tokens), warns,
                tuple([_Recipe.of(a) for a in reversed(plan)]))

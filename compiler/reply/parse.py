"""Parse a model's reply: undo the projection, then validate with the original contract.

:func:`parse_reply` removes an optional code fence, parses the JSON, unwraps a
wrapped root, turns the nulls the projection introduced back into absent fields
(so the contract's defaults apply), and validates with the contract's
``TypeAdapter`` in JSON mode. The contract is the authority, whatever the
provider enforced: constraints a dialect could not carry (``pattern``,
``maxLength`` ...) are checked here.

Errors carry JSON paths into the reply as written (``$.result.answer`` when the
root was wrapped) and messages composed from the error type and the constraints the
contract's schema holds (:mod:`compiler.reply.messages`), never from the input. Before
validation the reply is bounded: :data:`MAX_REPLY_CHARS` characters and
:data:`MAX_REPLY_NODES` JSON values, then the bounds of :mod:`compiler.reply.bounds`
(nesting depth, unions' error fan-out, no NaN or Infinity, string length under
python-re); at most :data:`MAX_REPLY_ERRORS` errors are listed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import ValidationError
from pydantic_core import from_json, to_json

from compiler.errors import ContractError, ReplyValidationError
from compiler.reply.bounds import (
    MAX_ERRORS_READ,
    check_data,
    check_depth,
    check_text,
    fan_out,
    has_patterns,
    json_path,
)
from compiler.reply.messages import constraints_of, safe_message
from compiler.reply.null_plan import null_plan, undo_nulls
from compiler.schema.budgets import uses_python_re
from compiler.schema.contract import OutputContract
from compiler.schema.projected import WRAP_PROPERTY, Projection

__all__ = [
    "admit_reply", "count_values", "load_json", "parse_reply", "property_names",
    "too_many_values", "unfence",
]

MAX_REPLY_CHARS = 4_000_000
"""The longest reply text parsed, in characters; a longer one fails at ``$`` unread."""

MAX_REPLY_NODES = 100_000
"""The most JSON values (containers, keys and scalars, counted from the text) a reply may
hold before it is validated: validation, and the errors it builds, cost memory and time
per value, so a reply of 1,900,000 wrong items (1.8 GB and 16 s to validate) is refused
unvalidated (validating a reply of about this many wrong items takes 0.3 s and 100 MB)."""

MAX_REPLY_ERRORS = 50
"""Errors listed in a :class:`ReplyValidationError`; a last entry says how many more."""

#: One JSON string, escapes included, or the rest of the text when it is unterminated.
#: Possessive, so no input makes it backtrack: one pass over the text.
_STRING = re.compile(r'"(?:[^"\\]++|\\.)*+"?', re.DOTALL)

_LANGUAGE_TAG = re.compile(r"[A-Za-z0-9_+-]*")


def admit_reply(text: str, *, strip_fence: bool, sha256: str, schema: Mapping[str, Any],
                python_re: bool) -> tuple[str, bool]:
    """The bounds checked before a reply is parsed, on both validation paths (the
    contract's type here, the lock reader's JSON Schema in
    :mod:`compiler.reply.schema_check`): the size (:data:`MAX_REPLY_CHARS`), the fence
    stripped when asked, the values and nesting limits, the unions' error work.

    Returns:
        ``(text, suspect)``: the text to parse (unfenced), and whether the parsed data
        must go through :func:`compiler.reply.bounds.check_data` (it may hold a
        non-finite number, or a string too long for python-re).

    Raises:
        ReplyValidationError: at ``$``, a bound that fired (the reply is not validated).
    """
    if len(text) > MAX_REPLY_CHARS:
        raise ReplyValidationError([(
            "$", f"Reply is {len(text):,} characters, more than the {MAX_REPLY_CHARS:,} "
            "accepted (compiler.reply.parse.MAX_REPLY_CHARS)",
        )])
    if strip_fence:
        text = unfence(text)
    too_many = too_many_values(text)
    if too_many is not None:
        check_depth(text)  # a deep reply is named by the nesting limit
        raise ReplyValidationError([("$", too_many)])
    fan = fan_out(sha256, schema)
    return text, check_text(text, python_re=python_re, fan=fan,
                            values=count_values(text) if fan > 1 else 0)


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
        ReplyValidationError: the text is over :data:`MAX_REPLY_CHARS` characters or
            :data:`MAX_REPLY_NODES` JSON values (path ``$``, not validated), breaks a
            bound of :func:`compiler.reply.bounds.check_text` or ``check_data``, is not JSON
            (path ``$`` and the decoder's message), or violates the contract (JSON paths
            such as ``$.organizations[0].name``; the offending values are never included).
        ContractError: a validator of the contract raised an exception other than
            ``ValueError``/``AssertionError`` (named by its class; its message withheld).

    >>> from pydantic import BaseModel
    >>> from compiler.schema.dialects import DIALECTS
    >>> from compiler.schema.projection import project
    >>> class Note(BaseModel):
    ...     text: str = "none"
    >>> c = OutputContract.from_type(Note)
    >>> parse_reply('{"text": null}', c, project(c, DIALECTS["openai-strict"]), strip_fence=False)
    Note(text='none')
    """
    python_re = _python_re(contract)
    text, suspect = admit_reply(text, strip_fence=strip_fence, sha256=contract.sha256,
                                schema=contract.schema, python_re=python_re)
    data: Any = None
    if suspect:
        data = load_json(text)
        check_data(data, python_re=python_re)
    plan = null_plan(projection)
    wrapper = projection.wrapped_root
    failure: ValidationError | None = None
    if plan is None and wrapper is None:  # nothing to undo: one pass in pydantic's JSON parser
        value, failure = _validate(contract, text)
        if failure is None:
            return value
    if data is None:
        data = load_json(text)
    if failure is not None:
        raise ReplyValidationError(_failures(failure, data, "$", contract))
    if plan is not None:
        undo_nulls(data, plan)
    where = "$"
    if wrapper is not None:
        if not isinstance(data, dict):
            message = f"Input should be an object with property {wrapper!r}"
            raise ReplyValidationError([("$", message)])
        if wrapper not in data:
            raise ReplyValidationError([(json_path("$", wrapper), "Field required")])
        data = data[wrapper]
        where = json_path("$", wrapper)
    value, failure = _validate(contract, to_json(data))  # JSON mode, as for an untouched reply
    if failure is None:
        return value
    raise ReplyValidationError(_failures(failure, data, where, contract))


def _validate(contract: OutputContract, text: str | bytes) -> tuple[Any, ValidationError | None]:
    """Validate ``text``: ``(value, None)``, or ``(None, the ValidationError)``."""
    try:
        return contract.adapter.validate_json(text), None
    except ValidationError as exc:
        return None, exc
    except Exception as exc:  # a validator raised something pydantic does not wrap
        kind = type(exc).__name__
        raise ContractError(
            f"a validator of contract {contract.name} raised {kind} (its message is "
            "withheld: it may quote the reply); validators should raise ValueError or "
            "AssertionError, which become reply errors with a path") from None


_PYTHON_RE: dict[str, bool] = {}


def _python_re(contract: OutputContract) -> bool:
    found = _PYTHON_RE.get(contract.sha256)
    if found is None:
        found = _PYTHON_RE[contract.sha256] = has_patterns(
            contract.sha256, contract.schema) and uses_python_re(
            contract.target, contract.adapter.core_schema)
    return found


def unfence(text: str) -> str:
    """Remove one Markdown code fence around the whole text (with an optional language tag)."""
    stripped = text.strip()
    if len(stripped) < 6 or not (stripped.startswith("```") and stripped.endswith("```")):
        return text
    inner = stripped[3:-3]
    first_line, newline, rest = inner.partition("\n")
    if newline and _LANGUAGE_TAG.fullmatch(first_line.strip()):
        return rest
    return inner


def count_values(text: str) -> int:
    """About how many JSON values ``text`` holds: containers, object keys and scalars.

    Counted from the text (strings removed, then ``[``, ``{``, ``,`` and ``:``), in one
    linear pass, without parsing; for JSON an upper bound, at most one above the true
    count per container (here 8: the object, two keys, the array, three items, ``{}``).

    >>> count_values('{"a": [1, 2, "x,y"], "b": {}}')
    9
    """
    bare = _STRING.sub("", text)
    return 1 + sum(bare.count(mark) for mark in "[{,:")


def too_many_values(text: str) -> str | None:
    """The error message when ``text`` holds more than :data:`MAX_REPLY_NODES` values."""
    if len(text) <= MAX_REPLY_NODES:  # every value takes a character at least
        return None
    count = count_values(text)
    if count <= MAX_REPLY_NODES:
        return None
    return (f"Reply holds about {count:,} JSON values, more than the {MAX_REPLY_NODES:,} "
            "validated (compiler.reply.parse.MAX_REPLY_NODES); it was not validated: ask "
            "for a shorter answer, or raise the limit")


def load_json(text: str) -> Any:
    """Parse a reply's JSON with pydantic-core's parser (about 2.5x faster than
    ``json.loads``), for both reply paths.

    Raises:
        ReplyValidationError: at ``$``, ``Invalid JSON: ...``; also for a text that holds
            a lone surrogate (half of a UTF-16 pair: ``"\ud800"`` decoded from the
            response), which is not a character and cannot be UTF-8.
    """
    try:
        return from_json(text)
    except ValueError as exc:
        message = "Invalid JSON: " + str(exc).replace(
            "number out of range", "a number too large to read (over 4,300 digits)")
    except TypeError:  # pydantic-core cannot encode a lone surrogate to UTF-8
        message = ("Invalid JSON: the text holds a lone surrogate (half of a UTF-16 pair), "
                   "which is not a character")
    raise ReplyValidationError([("$", message)])


# --------------------------------------------------------------------------- error paths


def _failures(
    exc: ValidationError, data: Any, where: str, contract: OutputContract
) -> list[tuple[str, str]]:
    """Map pydantic errors to ``(JSON path, message)`` pairs without input values
    (:func:`compiler.reply.messages.safe_message`); at most :data:`MAX_REPLY_ERRORS`,
    then one entry saying how many more."""
    names = _field_names(contract)
    constraints = constraints_of(contract.sha256, contract.schema)
    count = exc.error_count()
    if count > MAX_ERRORS_READ:
        return [("$", f"Reply fails the contract with {count:,} errors, more than the "
                      f"{MAX_ERRORS_READ:,} read back to list them "
                      "(compiler.reply.bounds.MAX_ERRORS_READ)")]
    errors = exc.errors(include_url=False)
    shown = []
    for err in errors[:MAX_REPLY_ERRORS]:
        message = safe_message(err, constraints)
        if "[key]" in tuple(err["loc"]):
            message += " (in a key)"
        shown.append((_json_path(err["loc"], data, where, err["type"] == "missing", names),
                      message))
    if len(errors) > MAX_REPLY_ERRORS:
        more = len(errors) - MAX_REPLY_ERRORS
        shown.append(("$", f"... and {more:,} more errors (MAX_REPLY_ERRORS)"))
    return shown


_NAMES: dict[str, frozenset[str]] = {}


def _field_names(contract: OutputContract) -> frozenset[str]:
    """Every property name the contract's schema declares (plus the wrapper's)."""
    found = _NAMES.get(contract.sha256)
    if found is None:
        found = _NAMES[contract.sha256] = property_names(contract.schema)
    return found


def property_names(schema: Mapping[str, Any]) -> frozenset[str]:
    """Every property name ``schema`` declares at any depth, plus the wrapper's: the keys
    an error path may show (any other key is data, shown as ``[*]``)."""
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
            path = json_path(path, step) if step in names else path + "[*]"
            current = current.get(step)
    return path

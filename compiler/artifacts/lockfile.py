"""Use a lock at run time: the request bodies and reply parsing, from the lock alone.

:func:`load_lock` reads a ``capc.lock.json`` (validated against the lock format) and
:meth:`Lock.request` gives one stage x model as a :class:`LockedRequest`: its
:meth:`~LockedRequest.body` for the caller's messages, :meth:`~LockedRequest.to_openai_kwargs`
for the official ``openai`` SDK, and :meth:`~LockedRequest.parse_reply` /
:meth:`~LockedRequest.parse_response` following the entry's reply recipe. No YAML, no
metadata and no contract module are needed: a reply is checked with ``jsonschema``
against the contract's validation schema stored in the lock. When the contract's own
pydantic type can be imported (``contract=True``, the default) and its schema hash
equals the stored one, it validates instead, exactly as
:meth:`compiler.compiled.CompiledRequest.parse_reply` does.

>>> lock = load_lock("capc.lock.json")                                 # doctest: +SKIP
>>> req = lock.request("extract_invoice", "openai/gpt-4o-mini")        # doctest: +SKIP
>>> body = req.body([{"role": "user", "content": "..."}])              # doctest: +SKIP
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from compiler.artifacts.lock import LockFileError, read_lock
from compiler.compiled import OPENAI_SDK_PARAMETERS
from compiler.errors import ContractError, ReplyValidationError
from compiler.reply.bounds import has_patterns
from compiler.reply.response import text_of
from compiler.reply.schema_check import check_reply
from compiler.schema.budgets import backtracking_patterns
from compiler.schema.contract import OutputContract
from compiler.schema.frozen_json import canonical_sha256, freeze_json
from compiler.schema.projected import Projection

__all__ = ["Lock", "LockedRequest", "load_lock"]


def _segments(pointer: str) -> tuple[str, ...]:
    return tuple(p.replace("~1", "/").replace("~0", "~") for p in pointer.split("/")[1:])


def _path(where: Sequence[int | str]) -> str:
    """``$.a[0]['b c']`` for the key path ``["a", 0, "b c"]``, as parse_reply writes it."""
    out = "$"
    for step in where:
        if isinstance(step, int):
            out += f"[{step}]"
        elif step.isidentifier():
            out += f".{step}"
        else:
            out += "['" + step.replace("\\", "\\\\").replace("'", "\\'") + "']"
    return out


@dataclass(frozen=True)
class LockedRequest:
    """One attempt of a stage x model from a lock.

    Attributes:
        stage: the stage name.
        model: the model id.
        request: the chat-completions body without ``messages``.
        instructions: the message put before the caller's, or ``None``.
        reply: the reply recipe (see ``docs/lock-and-audit.md``), or ``None``.
        endpoints: the routing slugs this attempt is for (empty without endpoint data).
        attempts: the later route-plan attempts, strongest first.
    """

    stage: str
    model: str
    request: Mapping[str, Any]
    instructions: Mapping[str, str] | None
    reply: Mapping[str, Any] | None
    endpoints: tuple[str, ...]
    attempts: tuple[LockedRequest, ...] = ()
    _lock: Lock | None = field(default=None, repr=False, compare=False)

    @property
    def plan(self) -> tuple[LockedRequest, ...]:
        """Every attempt in order: this one, then :attr:`attempts`."""
        return (self, *self.attempts)

    def body(self, messages: Sequence[Mapping[str, Any]] = ()) -> dict[str, Any]:
        """Return the JSON body to POST: ``request`` plus ``messages = [instructions,
        *messages]`` (a new dict each call)."""
        head = [] if self.instructions is None else [dict(self.instructions)]
        return {**copy.deepcopy(dict(self.request)),
                "messages": [*head, *copy.deepcopy(list(messages))]}

    def to_openai_kwargs(self, messages: Sequence[Mapping[str, Any]] = ()) -> dict[str, Any]:
        """The body split into ``openai`` SDK arguments plus ``extra_body`` (as
        :meth:`compiler.compiled.CompiledRequest.to_openai_kwargs`)."""
        body = self.body(messages)
        kwargs = {k: v for k, v in body.items() if k in OPENAI_SDK_PARAMETERS}
        extra = {k: v for k, v in body.items() if k not in OPENAI_SDK_PARAMETERS}
        if extra:
            kwargs["extra_body"] = extra
        return kwargs

    def reply_text(self, response: Mapping[str, Any]) -> str:
        """Return the text to parse from a chat-completions response (a JSON object):
        ``choices[0].message.content`` (a list of content parts: its ``text`` parts
        joined, as ``CompiledRequest.parse_response`` reads it), or at rung ``tool`` the
        forced call's arguments.

        Raises:
            ReplyValidationError: the response has no such text (path ``$``).
        """
        recipe = self.reply or {"source": "content"}
        try:
            message = response["choices"][0]["message"]
            if recipe["source"] == "tool_arguments":
                calls = [c for c in message.get("tool_calls") or []
                         if c["function"]["name"] == recipe["tool"]]
                return str(calls[0]["function"]["arguments"])
            content = message["content"]
        except (KeyError, IndexError, TypeError) as exc:
            raise ReplyValidationError([("$", f"no reply text in the response ({exc!r})")]) from exc
        text = text_of(content)
        if text is None:
            raise ReplyValidationError([("$", "the response's content is not text")])
        return text

    def parse_response(self, response: Mapping[str, Any], *, contract: bool = True) -> Any:
        """:meth:`parse_reply` of :meth:`reply_text`, after the check for a response that
        holds no answer (the rule of ``CompiledRequest.parse_response``).

        Raises:
            ProviderError: the response carries a non-null ``error`` (top level or
                ``choices[0].error``; an object or a string), or ``finish_reason`` is
                ``error``.
            ReplyBlockedError: a refusal (``message.refusal``, a refusal content part) or
                ``finish_reason: content_filter``: not a validation failure.
            ReplyValidationError: as :meth:`reply_text` and :meth:`parse_reply`.
        """
        from compiler.reply.outcome import answer_blocker
        from compiler.reply.response import assemble

        try:
            blocker = answer_blocker(assemble(response))
        except ValueError:
            blocker = None  # not a response object: reply_text says what is missing
        if blocker is not None:
            raise blocker
        return self.parse_reply(self.reply_text(response), contract=contract)

    def parse_reply(self, text: str, *, contract: bool = True) -> Any:
        """Apply the recipe and validate the reply against the stored contract.

        Args:
            text: the reply text (at rung ``tool``: the call's ``function.arguments``).
            contract: use the contract's pydantic type when it imports and its schema
                hash matches the lock; ``False`` always uses the stored JSON Schema.

        Returns:
            The contract instance (pydantic), or the reply's JSON data with the
            absent nulls removed and the root unwrapped (JSON Schema).

        Raises:
            ReplyValidationError: invalid JSON, or contract violations (JSON paths).
            ContractError: the stored contract runs its patterns with python-re and one
                can backtrack catastrophically (the message names its JSON Pointer:
                :func:`compiler.schema.budgets.backtracking_patterns`); nothing is matched.
            ValueError: the entry has no contract.
        """
        if self.reply is None or self._lock is None:
            raise ValueError(f"{self.stage} / {self.model} has no output contract")
        recipe, lock = self.reply, self._lock
        projection = lock.projection(recipe)
        owned = lock.contract_type(recipe["contract"]) if contract else None
        if owned is not None:
            from compiler.reply.parse import parse_reply

            return parse_reply(text, owned, projection, strip_fence=recipe["strip_fence"])
        return lock.check(text, recipe, projection)


class Lock:
    """A loaded lock: the document plus what :class:`LockedRequest` needs to parse."""

    def __init__(self, document: Mapping[str, Any], base_dir: Path) -> None:
        self.document = document
        self.base_dir = base_dir
        self._validators: dict[str, Any] = {}
        self._projections: dict[tuple[Any, ...], Projection] = {}
        self._types: dict[str, OutputContract | None] = {}
        self._risky: dict[str, list[tuple[str, str]]] = {}

    def pairs(self) -> list[tuple[str, str]]:
        """Every ``(stage, model)`` in the lock, in its order."""
        return [(s, m) for s, models in self.document["stages"].items() for m in models]

    def request(self, stage: str, model: str) -> LockedRequest:
        """Return the first attempt of ``stage`` x ``model`` (later ones in ``.attempts``).

        Raises:
            LockFileError: the pair is not in the lock, or its entry is an error (the
                message is the recorded failure).
        """
        entry = self.document["stages"].get(stage, {}).get(model)
        if entry is None:
            raise LockFileError(f"{stage} / {model} is not in the lock")
        if entry["status"] != "ok":
            raise LockFileError(f"{stage} / {model}: {entry['error']['message']}")

        def one(data: Mapping[str, Any]) -> LockedRequest:
            return LockedRequest(stage, model, data["request"], data["instructions"],
                                 data.get("reply"), tuple(data.get("endpoints") or ()),
                                 _lock=self)

        later = tuple(one(a) for a in entry.get("attempts") or ())
        first = one(entry)
        return LockedRequest(first.stage, first.model, first.request, first.instructions,
                             first.reply, first.endpoints, later, _lock=self)

    def projection(self, recipe: Mapping[str, Any]) -> Projection:
        """The shown schema, wrapper and absent nulls of a recipe, as a Projection."""
        nulls = tuple(_segments(p) for p in recipe["absent_nulls"])
        key = (recipe["schema"], nulls, recipe["wrapped_root"])
        if key not in self._projections:
            schema = self.document["schemas"][recipe["schema"]]
            self._projections[key] = Projection(
                dialect="lock", schema=freeze_json(schema), schema_json="",
                sha256=recipe["schema"], changes=(), wrapped_root=recipe["wrapped_root"],
                nullable_added=frozenset(nulls), blockers=())
        return self._projections[key]

    def contract_type(self, sha256: str) -> OutputContract | None:
        """The contract's own type when its spec imports and its schema hash matches."""
        if sha256 not in self._types:
            found = None
            spec = self.document["contracts"][sha256].get("spec")
            if spec:
                from compiler.schema.contract import load_contract

                try:
                    found = load_contract(spec, base_dir=self.base_dir)
                except ContractError:
                    found = None
            self._types[sha256] = found if found is not None and found.sha256 == sha256 \
                else None
        return self._types[sha256]

    def check(self, text: str, recipe: Mapping[str, Any], projection: Projection) -> Any:
        """The recipe applied with JSON Schema only (see :meth:`LockedRequest.parse_reply`),
        under parse_reply's bounds (:func:`compiler.reply.schema_check.check_reply`)."""
        record = self.document["contracts"][recipe["contract"]]
        python_re = record.get("regex_engine") == "python-re"
        if python_re and recipe["contract"] not in self._risky:
            self._risky[recipe["contract"]] = backtracking_patterns(record["schema"])
        if python_re and (risky := self._risky[recipe["contract"]]):
            at, why = risky[0]
            raise ContractError(
                f"contract {record.get('name')!r} in the lock runs its patterns with "
                f"python-re, and {at}: {why}; no reply is matched against it (use the "
                "default engine, rust-regex, or rewrite the pattern, then regenerate the lock)"
            )
        return check_reply(
            text, schema=record["schema"], sha256=recipe["contract"],
            python_re=python_re and has_patterns(recipe["contract"], record["schema"]),
            strip_fence=recipe["strip_fence"], projection=projection,
            wrapper=recipe["wrapped_root"])


def load_lock(path: str | Path) -> Lock:
    """Read and validate a lock file (see :func:`compiler.artifacts.lock.read_lock`).

    Args:
        path: the ``capc.lock.json``; relative contract files are looked up beside it
            (where stages.yaml was when the lock was made).

    Raises:
        LockFileError: unreadable, not JSON, not in the lock format, or a contract whose
            stored schema does not hash to its key (``canonical_sha256``: an edited lock;
            the message names the contract).
    """
    document = read_lock(path)
    for key, record in document["contracts"].items():
        if canonical_sha256(record["schema"]) != key:
            raise LockFileError(
                f"{path}: contract {record.get('name')!r} ({key[:12]}...): its schema does "
                "not hash to its key (SHA-256 of the canonical schema); the lock was edited "
                "by hand: regenerate it with capc lock"
            )
    return Lock(document, Path(path).resolve().parent)

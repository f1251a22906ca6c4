"""A fixed corpus of replies for the lock readers (Python and Node) and its expected outcomes.

:func:`build` locks five stages (the three example contracts, a recursive one and a
list root) for eleven models of the 2026-08-19 snapshot, so every rung is there
(``schema``, ``tool``, ``json``, ``prompt``), and makes, for every attempt, replies
that are valid, invalid, fenced, wrapped or carry absent nulls, each rendered as the
attempt's recipe says a model would send it. The outcome of a reply is ``(valid,
sorted JSON paths)``; the expected one is :meth:`CompiledRequest.parse_reply`'s.

Every first attempt also gets responses of other shapes (:data:`BLOCKED`: a refusal, a
content filter, errors with HTTP 200 (an object, a string, a choice-level one), content as
a list of text parts); their outcome (:attr:`Case.valid`, :attr:`Case.paths`,
:attr:`Case.blocked`) is :meth:`CompiledRequest.parse_response`'s: ``blocked`` is
``refused``, ``filtered``, ``error`` or ``None`` (an answer, valid or not).
"""

from __future__ import annotations

import copy
import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from compiler.artifacts.lock import build_lock, compile_all, dump_lock
from compiler.compiled import CompiledRequest
from compiler.errors import ProviderError, ReplyBlockedError, ReplyValidationError
from registry.resolve.resolver import Registry
from tests.conftest import ROOT

MODELS = [
    "openai/gpt-4o-mini", "anthropic/claude-sonnet-4.5", "google/gemini-2.5-pro",
    "mistralai/mistral-large", "deepseek/deepseek-chat-v3.1", "openai/gpt-5.1",
    "meta-llama/llama-3.3-70b-instruct", "nousresearch/hermes-4-70b", "writer/palmyra-x5",
    "poolside/laguna-s-2.1", "qwen/qwen3.7-flash",
]
STAGES = {
    "extract_invoice": "contracts/examples.py:Invoice",
    "classify_ticket": "contracts/examples.py:TicketLabel",
    "deep_analysis": "contracts/examples.py:Analysis",
    "outline": "contracts/shapes.py:Node",
    "tag": "contracts/shapes.py:Tags",
}

PARTY = {"name": "ACME", "vat_id": "DE1234567", "address": None}
ITEM = {"description": "widget", "quantity": 2, "unit_price": 3.5, "sku": None}
INVOICE = {"number": "A-1", "issued_on": "2026-03-01", "currency": "EUR", "seller": PARTY,
           "buyer": None, "items": [ITEM], "notes": None}
FINDING = {"claim": "c", "evidence": ["e"], "severity": "low"}
ANALYSIS = {"summary": "s", "findings": [FINDING], "recommendation": "r",
            "open_questions": ["q"]}
NODE = {"title": "root", "children": [{"title": "leaf", "children": [], "note": "n"}],
        "note": "none"}


def _with(data: Any, path: list[Any], value: Any, *, drop: bool = False) -> Any:
    out = copy.deepcopy(data)
    node = out
    for step in path[:-1]:
        node = node[step]
    if drop:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return out


#: Per stage: (case name, the value a model would answer, before wrapping and rendering).
VALUES: dict[str, list[tuple[str, Any]]] = {
    "extract_invoice": [
        ("valid", INVOICE),
        ("valid_buyer", _with(INVOICE, ["buyer"], {"name": "B", "vat_id": None,
                                                   "address": "x"})),
        ("quantity_below_minimum", _with(INVOICE, ["items", 0, "quantity"], 0)),
        ("vat_pattern", _with(INVOICE, ["seller", "vat_id"], "de-1")),
        ("currency_enum", _with(INVOICE, ["currency"], "JPY")),
        ("bad_date", _with(INVOICE, ["issued_on"], "2026-13-45")),
        ("no_items", _with(INVOICE, ["items"], [])),
        ("missing_number", _with(INVOICE, ["number"], None, drop=True)),
        ("buyer_bad_name", _with(INVOICE, ["buyer"], {"name": 7})),
    ],
    "classify_ticket": [
        ("valid", {"category": "bug", "urgent": True, "confidence": 0.5}),
        ("confidence_above_maximum", {"category": "bug", "urgent": False, "confidence": 1.5}),
        ("category_enum", {"category": "spam", "urgent": False, "confidence": 0.1}),
        ("missing_urgent", {"category": "other", "confidence": 0.1}),
    ],
    "deep_analysis": [
        ("valid", ANALYSIS),
        ("open_questions_null", _with(ANALYSIS, ["open_questions"], None)),
        ("severity_enum", _with(ANALYSIS, ["findings", 0, "severity"], "critical")),
        ("evidence_not_list", _with(ANALYSIS, ["findings", 0, "evidence"], "e")),
    ],
    "outline": [
        ("valid", NODE),
        ("note_null", _with(NODE, ["children", 0, "note"], None)),
        ("nested_missing_title", _with(NODE, ["children", 0, "title"], None, drop=True)),
    ],
    "tag": [
        ("valid", [{"name": "a", "weight": 2}]),
        ("weight_null", [{"name": "a", "weight": None}]),
        ("weight_above_maximum", [{"name": "a", "weight": 9}]),
        ("empty_name", [{"name": "", "weight": 1}]),
    ],
}


@dataclass(frozen=True)
class Case:
    """One reply to one attempt, and the outcome ``parse_reply`` gives it."""

    id: str
    stage: str
    model: str
    attempt: int
    rung: str
    text: str
    valid: bool
    paths: tuple[str, ...]
    variant: str | None = None
    """A key of :data:`BLOCKED`: the response holds no answer."""
    blocked: str | None = None
    """``refused``, ``filtered`` or ``error`` for a :attr:`variant` (else ``None``)."""

    def response(self, tool: str | None) -> dict[str, Any]:
        """The chat-completions response carrying :attr:`text` where the recipe reads it."""
        if tool is None:
            message: dict[str, Any] = {"role": "assistant", "content": self.text}
        else:
            message = {"role": "assistant", "content": None, "tool_calls": [{
                "id": "call_1", "type": "function",
                "function": {"name": tool, "arguments": self.text}}]}
        choice: dict[str, Any] = {"index": 0, "message": message, "finish_reason": "stop"}
        out = {"id": self.id, "object": "chat.completion", "created": 0, "model": self.model,
               "choices": [choice]}
        if self.variant is not None:
            BLOCKED[self.variant](out, choice, message)
        return out


def _refusal(out: dict[str, Any], choice: dict[str, Any], message: dict[str, Any]) -> None:
    message.update(content=None, refusal="I can't help with that.")
    message.pop("tool_calls", None)


def _refusal_part(out: dict[str, Any], choice: dict[str, Any], message: dict[str, Any]) -> None:
    message.update(content=[{"type": "refusal", "refusal": "No."}])
    message.pop("tool_calls", None)


def _filtered(out: dict[str, Any], choice: dict[str, Any], message: dict[str, Any]) -> None:
    choice["finish_reason"] = "content_filter"


def _error(out: dict[str, Any], choice: dict[str, Any], message: dict[str, Any]) -> None:
    choice["finish_reason"] = "error"
    out["error"] = {"code": 502, "message": "upstream failed mid-generation"}


def _error_string(out: dict[str, Any], choice: dict[str, Any], message: dict[str, Any]) -> None:
    out["error"] = "boom"
    del out["choices"]


def _error_string_choices(
    out: dict[str, Any], choice: dict[str, Any], message: dict[str, Any]
) -> None:
    out["error"] = "boom"  # a valid answer beside it: still a provider error


def _choice_error(out: dict[str, Any], choice: dict[str, Any], message: dict[str, Any]) -> None:
    choice["error"] = {"code": 502, "message": "upstream failed", "metadata": {}}


def _text_parts(out: dict[str, Any], choice: dict[str, Any], message: dict[str, Any]) -> None:
    text = message.get("content")
    if isinstance(text, str):  # not at rung tool: the arguments carry the answer there
        message["content"] = [{"type": "text", "text": text[:7]},
                              {"type": "text", "text": text[7:]}]


#: Responses to every first attempt beside the plain one: name -> how to make one from a
#: valid response. All but ``text_parts`` hold no answer to validate.
BLOCKED = {"refusal": _refusal, "refusal_part": _refusal_part, "filtered": _filtered,
           "error": _error, "error_string": _error_string,
           "error_string_choices": _error_string_choices, "choice_error": _choice_error,
           "text_parts": _text_parts}


def blocked_outcome(parse_response: Any, response: dict[str, Any]) -> str | None:
    """``refused``/``filtered`` (:class:`ReplyBlockedError`), ``error``
    (:class:`ProviderError`) or ``None`` (an answer: valid or not) of one response."""
    return response_outcome(parse_response, response)[2]


def response_outcome(
    parse_response: Any, response: dict[str, Any]
) -> tuple[bool, tuple[str, ...], str | None]:
    """``(valid, sorted distinct JSON paths, blocked)`` of one response: ``blocked`` is
    ``refused``/``filtered``/``error`` (then ``(False, ())``) or ``None``."""
    try:
        parse_response(response)
    except ReplyBlockedError as exc:
        return False, (), exc.reason
    except ProviderError:
        return False, (), "error"
    except ReplyValidationError as exc:
        return False, tuple(sorted({p for p, _ in exc.errors})), None
    return True, (), None


def outcome(parse: Any, text: str) -> tuple[bool, tuple[str, ...]]:
    """``(valid, sorted distinct JSON paths)`` of one parse."""
    try:
        parse(text)
    except ReplyValidationError as exc:
        return False, tuple(sorted({p for p, _ in exc.errors}))
    return True, ()


def _texts(value: Any, compiled: CompiledRequest, name: str) -> list[tuple[str, str]]:
    """The renderings of one value for this attempt: as sent, plus variants."""
    projection = compiled.projection
    assert projection is not None
    wrapped = value if projection.wrapped_root is None else {projection.wrapped_root: value}
    text = json.dumps(wrapped)
    out = [(name, text)]
    if name == "valid":
        out.append(("fenced", f"```json\n{text}\n```"))
        out.append(("not_json", "Here is the answer: " + text[:10]))
        if projection.wrapped_root is not None:
            out.append(("unwrapped", json.dumps(value)))
    return out


def build(tmp: Path, shared: Path) -> tuple[Path, list[Case], list[Any]]:
    """Write the corpus lock under ``tmp`` and return its path, the cases, the compilations
    (``shared``: the folder of the OpenRouter snapshots)."""
    shutil.copytree(ROOT / "contracts", tmp / "contracts")
    shutil.copy(ROOT / "tests" / "fixtures" / "lock_corpus" / "shapes.py",
                tmp / "contracts" / "shapes.py")
    shutil.copy(ROOT / "models.yaml", tmp / "models.yaml")
    lines = ["stages:"]
    for stage, contract in STAGES.items():
        lines += [f"  {stage}:", f"    contract: {contract}", "    reasoning: none",
                  "    output_tokens: 500", "    output: schema", "    models:"]
        lines += [f"      - {m}" for m in MODELS]
    (tmp / "stages.yaml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    registry = Registry.load(metadata=shared / "models-2026-08-19.json",
                             models=tmp / "models.yaml", stages=tmp / "stages.yaml")
    items = compile_all(registry)
    lock = tmp / "capc.lock.json"
    lock.write_text(dump_lock(build_lock(registry, items)), encoding="utf-8")
    cases: list[Case] = []
    for item in items:
        if item.compiled is None:
            continue
        for index, compiled in enumerate(item.compiled.plan):
            for name, value in VALUES[item.stage]:
                for variant, text in _texts(value, compiled, name):
                    valid, paths = outcome(compiled.parse_reply, text)
                    cases.append(Case(f"{item.stage}|{item.model}|{index}|{variant}",
                                      item.stage, item.model, index, compiled.rung, text,
                                      valid, paths))
        first = item.compiled
        valid_text = _texts(VALUES[item.stage][0][1], first, "valid")[0][1]
        tool = first.body["tool_choice"]["function"]["name"] if first.rung == "tool" else None
        for name in BLOCKED:
            case = Case(f"{item.stage}|{item.model}|0|{name}", item.stage, item.model, 0,
                        first.rung, valid_text, False, (), variant=name)
            valid, paths, got = response_outcome(first.parse_response, case.response(tool))
            cases.append(Case(case.id, case.stage, case.model, 0, case.rung, case.text,
                              valid, paths, variant=name, blocked=got))
    return lock, cases, items

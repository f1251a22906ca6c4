"""Classify a provider error: :func:`classify_error` -> :class:`ErrorClass`.

OpenRouter answers errors as ``{"error": {"code", "message", "metadata"?}}``
(https://openrouter.ai/docs/api-reference/errors-and-debugging). Before generation
starts the HTTP status equals ``code``: 400 bad request, 401 invalid credentials, 402
insufficient credits, 403 forbidden (permissions, a guardrail, moderation, or the key's
own limit: ``Key limit exceeded``), 408 timeout, 429 rate limited, 502 model down or
invalid response, 503 no provider meets the routing; routing that leaves no endpoint is
a 404 (``No endpoints found ...``, ``metadata.availability``). Once generation started
the status is 200 and the error arrives in the body or as a stream event. An upstream
provider's own error is wrapped as ``message: "Provider returned error"`` with the
upstream text in ``metadata.raw``.

How a class is found, in this order:

1. **The numeric code**: ``error.code`` when it is an HTTP error code (an integer, or a
   string of digits such as ``"429"``), else ``status`` (likewise coerced). ``status``
   ``None`` with no JSON error object (no body, or a text one) means no response came
   (``timeout``).
2. **Structured fields**: ``metadata.limit_source`` (a key, guardrail, workspace or
   in-flight budget: ``auth``), ``availability`` (in ``metadata`` or beside it:
   ``no_endpoint``), ``metadata.reasons`` / ``flagged_input`` (moderation:
   ``invalid_request``); they decide when there is no numeric code, and ``limit_source``
   and ``availability`` also for a 403 and a 404/503.
3. **OpenRouter's ``message``**, for the few classes that share a code.

``timeout``
    no response (``status`` ``None`` and no JSON error object), 408, 504, 524, or a 5xx whose
    ``message`` says it timed out.
``auth``
    401, 402, a 403 with a ``limit_source`` or whose message names the key (``Key limit
    exceeded``, ``API key``, insufficient credits or permissions).
``rate_limit``
    429.
``no_endpoint``
    a 404 or 503 saying no endpoint or provider can serve the routing.
``structured_output_unsupported``
    a 400, 404, 422 or 501 whose message, or upstream error message (``metadata.raw``:
    its ``error.message`` / ``message`` when it is JSON, else its text) has a clause
    (split at ``,`` ``;`` ``but`` ``however`` ``while`` ``whereas``, sentence ends and line
    breaks, after quoted phrases in ASCII, curly or other Unicode quotes are removed)
    whose subject or object is a structured-output feature (``response_format``,
    ``json_schema``, ``json_object``, structured outputs, JSON mode, ``tool_choice``, a
    forced tool) and that says it is unsupported, where no field path other than a
    structured-output one leads the clause (``messages[0].content:``) and the upstream
    error names no other request ``param``. An *invalid* schema is not this class.
``invalid_request``
    any other 4xx (including 403 guardrail or moderation blocks and 413).
``server``
    any other 5xx.
``unknown``
    anything else (an error object with no numeric code and no telling field).

A body or ``metadata.raw`` nested deeper than :data:`MAX_ERROR_DEPTH` is read as text
(never a ``RecursionError``). ``metadata.raw`` is read for
``structured_output_unsupported`` only; only that class may
lead to a downgrade. The classifier never copies ``metadata.raw`` or moderation's
``flagged_input`` into :attr:`ErrorClass.detail` (they can quote the caller's prompt).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from registry.outside import bounded

__all__ = ["ERROR_CLASSES", "MAX_ERROR_DEPTH", "ErrorClass", "classify_error", "http_code"]

#: Every class :func:`classify_error` returns.
ERROR_CLASSES: tuple[str, ...] = (
    "structured_output_unsupported", "no_endpoint", "invalid_request", "auth", "rate_limit",
    "server", "timeout", "unknown",
)

_FEATURE = (r"(?:response[_ ]format|json[_ ]schema|json[_ ]object|structured[ _-]?outputs?|"
            r"json mode|text\.format|tool[_ ]choice|forced (?:tool|function)s?)")
_NEGATION = (r"(?:not supported|unsupported|not available|unavailable|not enabled|"
             r"not implemented|cannot be used|not allowed)")
_SUPPORT_VERB = r"(?:does not|doesn't|do not|don't|cannot|can't) (?:support|use|accept)"
#: One clause: no sentence punctuation, brackets or quotes between the two parts.
_CLAUSE = r"[^.;:!?\n{}\[\]\"]{0,60}?"
_UNSUPPORTED_FEATURE = re.compile(
    rf"\b{_FEATURE}\b{_CLAUSE}\b{_NEGATION}\b|\b{_SUPPORT_VERB}\b{_CLAUSE}\b{_FEATURE}\b|"
    rf"\bunsupported\b{_CLAUSE}\b{_FEATURE}\b", re.IGNORECASE)
#: Quote pairs: ASCII, curly (U+201C/U+201D, U+2018/U+2019), low-9 (U+201E, U+201A),
#: guillemets, corner brackets and full-width quotes.
_QUOTES = (('"', '"'), ("'", "'"), ("`", "`"), ("\u201c", "\u201d"), ("\u2018", "\u2019"),
           ("\u201e", "\u201c"), ("\u201a", "\u2018"), ("\u00ab", "\u00bb"),
           ("\u2039", "\u203a"), ("\u300c", "\u300d"), ("\u300e", "\u300f"),
           ("\uff02", "\uff02"))


def _inside(opening: str, closing: str, *, space: bool = True) -> str:
    """A character of a quoted phrase: neither quote mark nor a line break (nor a space
    when ``space`` is false), so a search never backtracks or rescans past the next
    opening mark: linear time."""
    extra = r"\n" if space else r"\n\s"
    return f"[^{re.escape(opening)}{re.escape(closing)}{extra}]"


#: A quoted phrase (with a space inside): a quoted prompt or text, not a parameter name.
_QUOTED = re.compile("|".join(
    rf"(?<!\w){re.escape(a)}(?={_inside(a, b, space=False)}*\s){_inside(a, b)}*"
    rf"{re.escape(b)}(?!\w)"
    for a, b in _QUOTES))
#: Where one clause ends: a comma, a semicolon, ``but``/``however``/``while``/``whereas``,
#: a sentence end (``.``, ``!``, ``?`` before a space or the end) or a line break.
_CLAUSE_END = re.compile(r"[,;\n]|[.!?](?=\s|$)|\b(?:but|however|while|whereas)\b",
                         re.IGNORECASE)
#: A field path before a colon (``messages[0].content:``, ``input.text:``): the clause
#: after it is about that field.
_PATH_PREFIX = re.compile(r"\b([A-Za-z_]\w*)((?:\.[A-Za-z_]\w*|\[\d+\])+)\s*:")
_INVALID_SCHEMA = re.compile(r"invalid schema|schema is invalid|invalid json schema",
                             re.IGNORECASE)
_STRUCTURED_PARAMS = frozenset({"response_format", "tool_choice", "tools", "text.format",
                                "json_schema"})
_NO_ENDPOINT = re.compile(
    r"no endpoints? found|no allowed providers|no available (?:model )?provider|"
    r"routing requirements|constraint_filtered|no_endpoints", re.IGNORECASE)
_TIMED_OUT = re.compile(r"\btimed? ?out\b|\btimeout\b", re.IGNORECASE)
_KEY_403 = re.compile(r"key limit exceeded|\bapi key\b|insufficient (?:credits|permissions)|"
                      r"credit limit|budget limit|spending limit", re.IGNORECASE)
_TIMEOUT_CODES = frozenset({408, 504, 524})


@dataclass(frozen=True, slots=True)
class ErrorClass:
    """What a provider error is.

    Attributes:
        kind: one of :data:`ERROR_CLASSES`.
        status: the numeric code the class was read from (``error.code``, else the HTTP
            status), or ``None``.
        detail: OpenRouter's ``error.message`` on one line (at most 300 characters, then
            ``... (N characters)``; :func:`registry.outside.bounded`) and the provider
            name; never the upstream ``raw`` text.
        provider: ``error.metadata.provider_name``, or ``None``.
    """

    kind: str
    status: int | None
    detail: str
    provider: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready mapping."""
        return {"kind": self.kind, "status": self.status, "detail": self.detail,
                "provider": self.provider}


def http_code(value: Any) -> int | None:
    """``value`` as an HTTP status code (100-599): an integer or a string of digits
    (``"429"``); ``None`` for anything else (``"server_error"``, ``True``, ``None``)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    return value if isinstance(value, int) and 100 <= value <= 599 else None


def _error_object(body: Any) -> tuple[Mapping[str, Any], bool]:
    """(the error object of ``body``, whether ``body`` is a JSON object at all); a text
    body becomes ``{"message": text}``."""
    if isinstance(body, bytes):
        body = body.decode("utf-8", "replace")
    if isinstance(body, str):
        try:
            body = _loads(body)
        except ValueError:  # json.JSONDecodeError, or nested too deep
            return {"message": body[:_MAX_TEXT]}, False
    if isinstance(body, Mapping):
        inner = body.get("error")
        if isinstance(inner, Mapping):
            return inner, True
        if isinstance(inner, str):
            return {"message": inner}, True
        return body, bool(body)
    return {}, False


def _upstream(raw: Any) -> tuple[str, Any]:
    """(the upstream error's message, its ``param``) from ``metadata.raw``."""
    if isinstance(raw, str):
        try:
            parsed = _loads(raw)
        except ValueError:  # not JSON, or nested too deep: read as text
            return raw, None
        raw = parsed
    if isinstance(raw, Mapping):
        nested = raw.get("error")
        inner: Mapping[str, Any] = nested if isinstance(nested, Mapping) else raw
        for key in ("message", "detail", "error"):
            if isinstance(inner.get(key), str):
                return inner[key], inner.get("param")
        return "", inner.get("param")
    return ("" if raw is None else str(raw)), None


def _says_unsupported(text: str) -> bool:
    """The precise rule: one unquoted clause says a structured-output feature is
    unsupported, with the feature as its subject or object, and no field path other than
    a structured-output one (``messages[0].content:``) leads the clause."""
    text = _QUOTED.sub(" ", text[:_MAX_TEXT])
    if _INVALID_SCHEMA.search(text):
        return False
    for clause in _CLAUSE_END.split(text):
        paths = [m.group(1) + m.group(2) for m in _PATH_PREFIX.finditer(clause)]
        if any(not _structured_path(p) for p in paths):
            continue
        if _UNSUPPORTED_FEATURE.search(clause):
            return True
    return False


def _structured_path(path: str) -> bool:
    """Whether a field path is a structured-output parameter or inside one."""
    return any(path == p or path.startswith((p + ".", p + "[")) for p in _STRUCTURED_PARAMS)


#: The most characters of a message or ``metadata.raw`` read (a longer one is cut).
_MAX_TEXT = 20_000
#: The deepest JSON nesting parsed in an error body or ``metadata.raw``; deeper text is
#: read as plain text (never a RecursionError).
MAX_ERROR_DEPTH = 64
_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKETS = re.compile(r"[^\[\]{}]+")


def _too_deep(text: str, limit: int = MAX_ERROR_DEPTH) -> bool:
    """Whether the JSON text nests arrays and objects deeper than ``limit`` (strings are
    blanked first; unmatched brackets of a text that is not JSON count as opened)."""
    brackets = _NOT_BRACKETS.sub("", _JSON_STRING.sub("", text))
    if len(brackets) <= limit:
        return False
    depth = 0
    for char in brackets:
        depth = depth + 1 if char in "[{" else max(depth - 1, 0)
        if depth > limit:
            return True
    return False


def _loads(text: str) -> Any:
    """``json.loads`` bounded in depth. Raises ValueError for text that is not JSON or
    nests deeper than :data:`MAX_ERROR_DEPTH`."""
    if _too_deep(text):
        raise ValueError("nested too deep")
    try:
        return json.loads(text)
    except RecursionError:  # pragma: no cover - _too_deep guards it
        raise ValueError("nested too deep") from None


def classify_error(status: int | str | None, body: Any) -> ErrorClass:
    """Classify one error answer.

    Args:
        status: the HTTP status (an integer, or a string of digits), or ``None`` when no
            response came back (a timeout, a dropped connection, a cancelled call). A 200
            whose body is an error object is classified by the object.
        body: the response body: the parsed JSON, its text or bytes, or ``None``.

    >>> classify_error(429, {"error": {"code": 429, "message": "Rate limit exceeded"}}).kind
    'rate_limit'
    >>> classify_error(200, {"error": {"code": "403", "message": "Key limit exceeded"}}).kind
    'auth'
    """
    found, is_object = _error_object(body)
    message = str(found.get("message") or "")
    meta = found.get("metadata")
    meta = dict(meta) if isinstance(meta, Mapping) else {}
    if isinstance(found.get("availability"), Mapping):  # documented beside the metadata too
        meta.setdefault("availability", found["availability"])
    name = meta.get("provider_name")
    provider = name if isinstance(name, str) else None
    detail = bounded(message, 300) + (f" (provider {bounded(provider, 100)})" if provider else "")
    given = http_code(status)
    code = http_code(found.get("code"))
    if code is None and given is not None and given >= 400:
        code = given
    # No status and no error object: no response came at all (a text body is the
    # client's own words).
    kind = "timeout" if status is None and not is_object else _kind(code, message, meta)
    return ErrorClass(kind=kind, status=code if code is not None else given,
                      detail=detail or "(no message)", provider=provider)


def _kind(code: int | None, message: str, meta: Mapping[str, Any]) -> str:
    """``meta`` is ``error.metadata`` with ``error.availability`` merged in."""
    if code is None or code < 400:
        if "limit_source" in meta:
            return "auth"
        if "availability" in meta:
            return "no_endpoint"
        if "reasons" in meta or "flagged_input" in meta:
            return "invalid_request"
        return "unknown"
    if code in _TIMEOUT_CODES or (code >= 500 and _TIMED_OUT.search(message)):
        return "timeout"
    if code in (401, 402) or (code == 403 and ("limit_source" in meta
                                               or _KEY_403.search(message))):
        return "auth"
    if code == 429:
        return "rate_limit"
    if code in (404, 503) and ("availability" in meta or _NO_ENDPOINT.search(message)):
        return "no_endpoint"
    if code in (400, 404, 422, 501) and _structured(message, meta):
        return "structured_output_unsupported"
    return "invalid_request" if code < 500 else "server"


def _structured(message: str, meta: Mapping[str, Any]) -> bool:
    if _says_unsupported(message):
        return True
    if "raw" not in meta:
        return False
    text, param = _upstream(meta["raw"])
    if param is not None and str(param) not in _STRUCTURED_PARAMS:
        return False
    return _says_unsupported(text)

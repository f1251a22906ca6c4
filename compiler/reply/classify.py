"""Classify a provider error: :func:`classify_error` -> :class:`ErrorClass`.

OpenRouter answers errors as ``{"error": {"code", "message", "metadata"?}}`` with the HTTP
status equal to ``code``; an upstream provider's own error is wrapped with ``message:
"Provider returned error"`` and the upstream text in ``metadata.raw`` (plus
``metadata.provider_name``). Status codes
(https://openrouter.ai/docs/api-reference/errors-and-debugging): 400 bad request, 401
invalid credentials, 402 insufficient credits, 403 moderation or permissions, 408 timeout,
429 rate limited, 502 model down or invalid response, 503 no provider meets the routing
requirements; routing that leaves no endpoint is a 404 (``No endpoints found ...``).

The classes, in the order they are tested:

``timeout``
    no HTTP response at all (``status`` ``None``: a client-side timeout or a cancelled
    call), 408, 504, 524, or a 5xx whose message says it timed out.
``auth``
    401, 402 (credits), a 403 that names the key or credits.
``rate_limit``
    429.
``no_endpoint``
    a 404 or 503 that says no endpoint or provider can serve the routing: the next
    route-plan attempt is the answer.
``structured_output_unsupported``
    a 400, 404, 422 or 501 whose message (or upstream ``raw``) names a structured-output
    feature (``response_format``, ``json_schema``, ``json_object``, structured outputs,
    JSON mode, ``tool_choice``) together with "unsupported" wording. An *invalid* schema
    is not this class (it is ``invalid_request``).
``invalid_request``
    any other 4xx (including 403 moderation and 413).
``server``
    any other 5xx.
``unknown``
    anything else.

Only ``structured_output_unsupported`` may lead to a downgrade; the classifier never
copies ``metadata.raw`` or moderation's ``flagged_input`` into :attr:`ErrorClass.detail`
(they can quote the caller's prompt).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["ERROR_CLASSES", "ErrorClass", "classify_error"]

#: Every class :func:`classify_error` returns.
ERROR_CLASSES: tuple[str, ...] = (
    "structured_output_unsupported", "no_endpoint", "invalid_request", "auth", "rate_limit",
    "server", "timeout", "unknown",
)

_FEATURE = re.compile(
    r"response_format|json_schema|json_object|structured[ _-]?outputs?|json mode|"
    r"text\.format|tool_choice|forced (?:tool|function)", re.IGNORECASE)
_UNSUPPORTED = re.compile(
    r"not supported|unsupported|does not support|doesn't support|not available|unavailable|"
    r"is not enabled|not implemented|cannot be used|not allowed", re.IGNORECASE)
_INVALID_SCHEMA = re.compile(r"invalid schema|schema is invalid|invalid json schema",
                             re.IGNORECASE)
_NO_ENDPOINT = re.compile(
    r"no endpoints? found|no allowed providers|no available (?:model )?provider|"
    r"routing requirements|constraint_filtered|no_endpoints", re.IGNORECASE)
_TIMED_OUT = re.compile(r"timed? ?out|timeout", re.IGNORECASE)
_AUTH_403 = re.compile(r"api key|credits|permission", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class ErrorClass:
    """What a provider error is.

    Attributes:
        kind: one of :data:`ERROR_CLASSES`.
        status: the HTTP status (or ``error.code`` when no status was given), or ``None``.
        detail: OpenRouter's ``error.message`` (at most 300 characters) and the provider
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


def _error_object(body: Any) -> Mapping[str, Any]:
    if isinstance(body, bytes):
        body = body.decode("utf-8", "replace")
    if isinstance(body, str):
        try:
            body = json.loads(body)
        except json.JSONDecodeError:
            return {"message": body}
    if isinstance(body, Mapping):
        inner = body.get("error")
        if isinstance(inner, Mapping):
            return inner
        if isinstance(inner, str):
            return {"message": inner}
        return body
    return {}


def classify_error(status: int | None, body: Any) -> ErrorClass:
    """Classify one error answer.

    Args:
        status: the HTTP status, or ``None`` when no response came back (a timeout, a
            dropped connection, a cancelled call).
        body: the response body: the parsed JSON, its text or bytes, or ``None``.

    >>> classify_error(429, {"error": {"code": 429, "message": "Rate limit exceeded"}}).kind
    'rate_limit'
    """
    error = _error_object(body)
    message = str(error.get("message") or "")
    meta = error.get("metadata")
    meta = meta if isinstance(meta, Mapping) else {}
    raw = meta.get("raw")
    raw_text = raw if isinstance(raw, str) else json.dumps(raw) if raw is not None else ""
    provider = meta.get("provider_name") if isinstance(meta.get("provider_name"), str) else None
    code = error.get("code")
    if status is None and isinstance(code, int) and not isinstance(code, bool):
        status = code
        no_response = False
    else:
        no_response = status is None
    text = f"{message}\n{raw_text}"
    detail = message[:300] + (f" (provider {provider})" if provider else "")
    kind = _kind(status, text, no_response, meta)
    return ErrorClass(kind=kind, status=status, detail=detail or "(no message)",
                      provider=provider)


def _kind(status: int | None, text: str, no_response: bool, meta: Mapping[str, Any]) -> str:
    if no_response or status in (408, 504, 524):
        return "timeout"
    assert status is not None
    if status >= 500 and _TIMED_OUT.search(text):
        return "timeout"
    if status in (401, 402) or (status == 403 and _AUTH_403.search(text)):
        return "auth"
    if status == 429:
        return "rate_limit"
    if status in (404, 503) and (_NO_ENDPOINT.search(text) or "availability" in meta):
        return "no_endpoint"
    if status in (400, 404, 422, 501) and _FEATURE.search(text) and _UNSUPPORTED.search(text) \
            and not _INVALID_SCHEMA.search(text):
        return "structured_output_unsupported"
    if 400 <= status < 500:
        return "invalid_request"
    if status >= 500:
        return "server"
    return "unknown"

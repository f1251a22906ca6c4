"""Credentials out of everything shown or stored: URLs, messages, notes and log records.

Three kinds of credential are recognised (a module with no third-party imports):

* the values of secrets this process knows (the API key, registered by
  :class:`registry.sources.settings.Settings` when it validates one);
* credential-shaped text: a ``user:password@`` part of a URL, the value of a query
  parameter named like a key or token (``api_key=``, ``token=``, ``sig=``, ...),
  ``Bearer …`` and ``Basic …`` values, and OpenRouter/OpenAI-style ``sk-…`` keys;
* anything of that kind inside a log record of the ``httpx``/``httpcore`` loggers and
  of ``registry.*`` (:func:`install_log_redaction` adds the filter).

Each is replaced by ``***``. Caching may key on a full URL, but what is stored and
shown is :func:`redact_url` of it.
"""

from __future__ import annotations

import logging
import re
from urllib.parse import urlsplit, urlunsplit

__all__ = [
    "MASK",
    "RedactingFilter",
    "install_log_redaction",
    "redact_text",
    "redact_url",
    "register_secret",
    "register_url_secrets",
]

MASK = "***"
"""What a credential is replaced with."""

#: Query parameter names that carry a credential (matched anywhere in the name).
_SECRET_NAME = re.compile(
    r"key|token|secret|passw|pwd|^auth(orization|entication)?$|signature|^sig$|credential"
    r"|session|bearer|jwt|^code$|^state$",
    re.IGNORECASE,
)
_QUERY_PARAM = re.compile(r"(?P<name>[^?&=\s#\"'<>]+)=(?P<value>[^&\s#\"'<>]*)")
_URL = re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s\"'<>]+")
_USERINFO = re.compile(r"(?P<scheme>\b[a-zA-Z][a-zA-Z0-9+.-]*://)[^/\s@\"'<>]*@")
#: Authorization schemes kept in front of a masked value (any other value is masked
#: whole, a word after it too when it looks like a token).
_SCHEMES = ("bearer|basic|token|digest|negotiate|ntlm|hoba|mutual|hawk|dpop|apikey|api-key"
            "|key|jwt|oauth|aws4-hmac-sha256|sswss?|splunk|gnap|privatetoken|scram-sha-(?:1|256)"
            "|vapid|concealed")
_SHAPES = (
    # An Authorization header of any scheme (``Token x``, ``Bearer x``, a bare value),
    # written ``Authorization: v``, ``authorization=v`` or httpcore's
    # ``(b'Authorization', b'v')``.
    (re.compile(r"\b((?:proxy-)?authorization[\"']?\s*(?:[:=]|,\s*b?)\s*[\"']?)"
                rf"((?>(?:(?:{_SCHEMES})\s+)?))(?!\*\*\*)"
                r"[^\s\"',;)\]}>]+(?:\s+[A-Za-z0-9._~+/=-]{6,})?", re.IGNORECASE),
     rf"\1\2{MASK}"),
    (re.compile(r"\b(Bearer)(\s+)[^\s\"',;)\]}>]+", re.IGNORECASE), rf"\1\2{MASK}"),
    (re.compile(r"\b(Basic)(\s+)[A-Za-z0-9+/]{8,}={0,2}"), rf"\1\2{MASK}"),
    (re.compile(r"\bsk-[A-Za-z0-9][A-Za-z0-9_-]{7,}"), f"sk-{MASK}"),
)
#: A key-like query parameter in text that is not a whole URL (``/m?api_key=v``).
#: Punctuation ending the text (``…?api_key=v: not valid``) is the sentence's.
_BARE_QUERY = re.compile(r"(?<=[?&])(?P<name>[^?&=\s#\"'<>]+)=(?P<value>[^&\s#\"'<>]*?)"
                         r"(?=[:;,.]*(?:[&\s#\"'<>]|$))")
#: Secrets shorter than this are not searched for in text (they would mask ordinary words).
_MIN_SECRET = 6
_SECRETS: set[str] = set()


def register_secret(value: str) -> None:
    """Remember a secret so :func:`redact_text` masks it wherever it appears.

    Args:
        value: the secret (an API key); values shorter than six characters are ignored.
    """
    if len(value) >= _MIN_SECRET:
        _SECRETS.add(value)


def register_url_secrets(url: str) -> None:
    """Register every query value and the fragment of a URL the caller gave (the
    ``--metadata`` URL, ``CAPC_BASE_URL``) as secrets (:func:`register_secret`): a
    parameter named ``jwt`` or ``sig2`` is as likely a credential as ``api_key``, and
    once registered it is masked in any text, a third-party log record included."""
    query, _, fragment = url.partition("?")[2].partition("#")
    if not query and "#" in url:
        fragment = url.partition("#")[2]
    for part in (*query.split("&"), *fragment.split("&")):
        register_secret(part.partition("=")[2] or part)
    register_secret(fragment)


def _mask_query(query: str, every: bool = False) -> str:
    def one(match: re.Match[str]) -> str:
        if match["value"] and (every or _SECRET_NAME.search(match["name"])):
            return f"{match['name']}={MASK}"
        return match[0]

    return _QUERY_PARAM.sub(one, query)


def redact_url(url: str) -> str:
    """Return a URL fit to show or store: no userinfo, no query values, no fragment.

    Args:
        url: any URL (a malformed one is masked as text instead).

    Returns:
        The URL without ``user:password@`` and without its fragment, with every query
        value (names are kept: any parameter may carry a credential, ``jwt=``, ``sig=``)
        and any known or ``sk-…``-shaped secret replaced by ``***``.

    >>> redact_url("https://u:p@host/v1/models?api_key=abc&x=1#token=t")
    'https://host/v1/models?api_key=***&x=***'
    """
    try:
        parts = urlsplit(url)
        host = parts.netloc.rsplit("@", 1)[-1]
        shown = urlunsplit((parts.scheme, host, parts.path, _mask_query(parts.query, True), ""))
    except ValueError:  # e.g. "http://[::1" (an unclosed IPv6 bracket)
        shown = _mask_query(_USERINFO.sub(r"\g<scheme>", url).partition("#")[0], True)
    return _mask_known(shown)


def _mask_known(text: str) -> str:
    for secret in _SECRETS:
        if secret in text:
            text = text.replace(secret, MASK)
    for pattern, replacement in _SHAPES:
        text = pattern.sub(replacement, text)
    return text


def redact_text(text: str) -> str:
    """Mask every credential in free text (a message, a note, a log line).

    Args:
        text: any text; URLs in it are redacted as by :func:`redact_url`.

    Returns:
        The text with known secrets, URL credentials, ``Bearer …`` values and
        ``sk-…`` keys replaced by ``***``.

    >>> redact_text("GET http://h/m?token=t0k3n failed: Authorization: Bearer abc")
    'GET http://h/m?token=*** failed: Authorization: Bearer ***'
    """
    text = _mask_known(text)
    text = _URL.sub(_redact_url_match, text)
    return _BARE_QUERY.sub(lambda m: f"{m['name']}={MASK}" if m["value"] and _SECRET_NAME.search(
        m["name"]) else m[0], text)


def _redact_url_match(match: re.Match[str]) -> str:
    # Punctuation that ends a URL in prose ("URL: not valid", "see URL.") is the
    # sentence's, not the URL's: kept out so a masked query value does not swallow it.
    url = match[0]
    trail = len(url) - len(url.rstrip(":;,."))
    if trail == len(url) or "=" not in url:
        return redact_url(url)
    return redact_url(url[: len(url) - trail]) + url[len(url) - trail :]


class RedactingFilter(logging.Filter):
    """A logging filter that rewrites each record's message with :func:`redact_text`.

    It never drops a record; one whose message changes gets the redacted text as its
    ``msg`` and no ``args``.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        """Redact ``record`` in place and keep it."""
        try:
            message = record.getMessage()
        except Exception:  # a malformed record: leave it to logging's own error handling
            return True
        redacted = redact_text(message)
        if redacted != message:
            record.msg, record.args = redacted, None
        if record.exc_info and record.exc_text is None:
            record.exc_text = redact_text(logging.Formatter().formatException(record.exc_info))
        return True


_FILTER = RedactingFilter()
#: The loggers that can carry a request's URL or headers. A logger's filters do not
#: apply to its children's records, so each child httpcore logs to is named.
_LOGGERS = (
    "httpx",
    "httpcore",
    "httpcore.connection",
    "httpcore.connection_pool",
    "httpcore.http11",
    "httpcore.http2",
    "httpcore.proxy",
    "httpcore.socks",
    "registry",
    "registry.sources",
    "registry.sources.cache",
)


def install_log_redaction() -> None:
    """Add :class:`RedactingFilter` (once) to the loggers of httpx, httpcore and registry.

    Called before every fetch; any other logger already created under ``httpcore.``,
    ``httpx.`` or ``registry.`` gets it too.
    """
    existing = [
        name
        for name in list(logging.Logger.manager.loggerDict)
        if name.startswith(("httpx.", "httpcore.", "registry."))
    ]
    for name in (*_LOGGERS, *existing):
        logger = logging.getLogger(name)
        if _FILTER not in logger.filters:
            logger.addFilter(_FILTER)

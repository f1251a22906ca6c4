"""Text of outside origin made safe to show: one line, control characters escaped, bounded.

Outside text is what neither capc nor its user wrote into capc's own messages: the
message of an exception a contract or tool module raises, a provider's error body.
It can be huge (``raise ValueError("A" * 5_000_000)``), span lines, carry terminal
escapes, or refuse to be built at all (an ``__str__`` that raises). Everything capc
shows of such text goes through :func:`bounded` (at most :data:`OUTSIDE_TEXT_LIMIT`
characters, then ``... (N characters)``) or :func:`exception_text`.
"""

from __future__ import annotations

import re

__all__ = ["OUTSIDE_TEXT_LIMIT", "bounded", "exception_text"]

OUTSIDE_TEXT_LIMIT = 500
"""The most characters of outside text shown (the whole length is named after it)."""

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def bounded(text: str, limit: int = OUTSIDE_TEXT_LIMIT) -> str:
    """``text`` on one line (runs of whitespace become one space), control characters
    written as ``\\xNN``, cut after ``limit`` characters with the whole length named.

    >>> bounded("a\\n  b\\x1b[0m")
    'a b\\\\x1b[0m'
    >>> bounded("A" * 5_000, 10)
    'AAAAAAAAAA... (5,000 characters)'
    """
    line = " ".join(text.split())
    length = len(line)
    if length > limit:
        line = line[:limit]
    line = _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", line)
    return line if length <= limit else f"{line}... ({length:,} characters)"


def exception_text(exc: BaseException, limit: int = OUTSIDE_TEXT_LIMIT, *,
                   first_line: bool = False) -> str:
    """``"Type: message"`` of ``exc`` through :func:`bounded` (``"Type"`` alone when the
    message is empty; only its first non-blank line when ``first_line``). A message
    that cannot be built (its ``__str__`` raises) is its ``repr``, else the placeholder
    ``<message not shown: __str__ raised Error>``.

    >>> exception_text(ValueError("boom"))
    'ValueError: boom'
    """
    name = getattr(type(exc), "__name__", "exception")
    try:
        text = exc.msg if isinstance(exc, SyntaxError) and exc.msg else str(exc)
    except Exception as failure:
        try:
            text = repr(exc)
        except Exception:
            text = f"<message not shown: __str__ raised {type(failure).__name__}>"
    if first_line:
        text = next((line for line in text.splitlines() if line.strip()), "")
    shown = bounded(text, limit)
    return f"{name}: {shown}" if shown else name

"""Ctrl-C in a ``capc`` process: its own SIGINT handler, from the first line of the entry
point to the exit.

:func:`install` (the first thing :func:`compiler.cli.main.run` does) replaces Python's
default handler with one that raises :class:`compiler.errors.Interrupted`, a
``KeyboardInterrupt`` the contract-import fence lets through (a ``KeyboardInterrupt``
a contract module raises itself is still a ``ContractError``, exit 2). The first SIGINT
unwinds the command to ``capc: interrupted`` and exit 130; a second one while that
happens leaves at once (the same line, once, and 130). :func:`finish` flushes the output
with the handler still in place, then ignores SIGINT for the interpreter's shutdown, so
a Ctrl-C after the work is done neither kills the process by the signal nor prints a
traceback: the command's own exit code stands.

The window that remains (docs/quickstart.md, "Ctrl-C"): the interpreter's own start
(``site``, the console script's ``import re``/``import sys`` and ``import
compiler.cli.main``, a few milliseconds before :func:`install` runs), where Python's
default handling applies (a ``KeyboardInterrupt`` traceback, or death by the signal
before Python's own handler exists).

Only standard-library imports at module level, so installing costs nothing.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from types import FrameType

__all__ = [
    "EXIT_INTERRUPTED",
    "LINE",
    "error_object",
    "finish",
    "install",
    "interrupted",
    "received",
]

#: 128 + SIGINT, what a shell reports for a program stopped by Ctrl-C.
EXIT_INTERRUPTED = 130

#: The one stderr line of an interrupted command.
LINE = "capc: interrupted"

_state = {"received": False, "reported": False}


def _on_sigint(signum: int, frame: FrameType | None) -> None:
    if _state["received"]:  # a second Ctrl-C while the first unwinds: leave now
        if not _state["reported"]:
            os.write(2, (LINE + "\n").encode())
        os._exit(EXIT_INTERRUPTED)
    _state["received"] = True
    from compiler.errors import Interrupted

    raise Interrupted


def install() -> None:
    """Install capc's SIGINT handler (in the main thread; elsewhere a no-op)."""
    import compiler.errors  # noqa: F401  (loaded now, never inside the handler)

    with contextlib.suppress(ValueError):  # not the main thread: leave Python's handler
        signal.signal(signal.SIGINT, _on_sigint)


def received() -> bool:
    """Whether this process got a SIGINT through capc's handler."""
    return _state["received"]


def interrupted() -> int:
    """Print ``capc: interrupted`` on stderr and return :data:`EXIT_INTERRUPTED`."""
    _state["reported"] = True
    with contextlib.suppress(OSError, ValueError):  # stderr closed
        print(LINE, file=sys.stderr, flush=True)
    return EXIT_INTERRUPTED


def error_object() -> dict[str, object]:
    """The ``--json`` object of an interrupted command that printed nothing yet:
    ``{"ok": false, "error": {"message", "kind": "interrupted", "exit_code": 130}}``."""
    return {"ok": False, "error": {"message": "interrupted (SIGINT, Ctrl-C)",
                                   "kind": "interrupted", "exit_code": EXIT_INTERRUPTED}}


def finish(code: int) -> int:
    """Flush stdout and stderr with the handler in place (a Ctrl-C now is exit 130), then
    ignore SIGINT for the interpreter's shutdown. Returns the exit code."""
    try:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):  # closed, or no reader
                if stream is not None:  # None: started with the descriptor closed
                    stream.flush()
    except KeyboardInterrupt:
        code = interrupted()
    with contextlib.suppress(ValueError):
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    return code

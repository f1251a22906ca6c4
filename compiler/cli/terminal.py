"""What ``capc`` does only on a terminal: progress on long waits, tables that fit, colour.

Piped or redirected output is plain text, the same bytes as always, and never imports
`rich <https://github.com/Textualize/rich>`_; on a terminal rich draws the spinner, the
tables and the colours:

- progress: a wait that lasts longer than :data:`PROGRESS_DELAY` seconds (a fetch, a
  large YAML file, compiling every pair for ``lock`` or ``audit``) shows a spinner on
  stderr with the latest step (``GET https://...``), cleared when the wait ends; never
  with ``--json`` nor when stderr is not a terminal;
- tables: on a terminal a table fits its width (``COLUMNS``, else the terminal's size,
  else 80 characters): the long column (a reason, a provenance) wraps inside its cell;
  ``--wide`` prints every cell whole, each row on one line;
- colour: only on a terminal, and never when ``NO_COLOR`` is set to a non-empty value
  (https://no-color.org) or ``TERM=dumb``; then there is no ANSI style at all, and a
  ``TERM=dumb`` table still fits ``COLUMNS`` (rich alone would assume 80 columns).
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import IO, Any

__all__ = [
    "PROGRESS_DELAY",
    "Wait",
    "add_wide_option",
    "colour_allowed",
    "print_table",
    "stderr_label",
    "stdout_console",
    "waiting",
]

PROGRESS_DELAY = 1.0
"""Seconds a wait lasts before its spinner appears (a shorter one shows nothing)."""


def colour_allowed(stream: IO[str]) -> bool:
    """True when ``stream`` is a terminal and neither ``NO_COLOR`` (non-empty) nor
    ``TERM=dumb`` asks for plain text."""
    try:
        terminal = stream.isatty()
    except (AttributeError, ValueError):  # a closed or stand-in stream
        return False
    return terminal and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"


def _is_terminal(stream: IO[str]) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _console(stream: IO[str], *, width: int | None = None) -> Any:
    from rich.console import Console

    height = None
    if os.environ.get("TERM") == "dumb":
        # rich gives a dumb terminal 80 x 25 unless both sizes are given: fit COLUMNS,
        # else the terminal's own width, as on any other terminal (without colour).
        import shutil

        size = shutil.get_terminal_size()
        width, height = width or size.columns, size.lines
    return Console(
        file=stream, width=width, height=height, highlight=False, emoji=False, markup=False,
        color_system="auto" if colour_allowed(stream) else None, force_terminal=True,
    )  # fmt: skip


def add_wide_option(parser: argparse.ArgumentParser) -> None:
    """Add ``--wide``: on a terminal, print every table cell whole instead of fitting
    the table to the terminal's width (piped output is always whole)."""
    parser.add_argument(
        "--wide", action="store_true",
        help="on a terminal, print table cells whole instead of wrapping them to its width",
    )  # fmt: skip


def stdout_console(args: argparse.Namespace) -> Any:
    """A rich ``Console`` for stdout when it is a terminal (and not ``--json``), else
    ``None``: the caller prints plain text."""
    if getattr(args, "json", False) or not _is_terminal(sys.stdout):
        return None
    return _console(sys.stdout, width=1_000_000 if getattr(args, "wide", False) else None)


def print_table(
    console: Any,
    header: Sequence[str],
    rows: Sequence[Sequence[str]],
    *,
    wrap: int,
    wide: bool,
    styles: dict[int, Callable[[str], str | None]] | None = None,
) -> None:
    """Print a table on a terminal console (:func:`stdout_console`).

    Args:
        console: the console.
        header: the column titles.
        rows: the cells, as text.
        wrap: the column that wraps (a reason, a provenance); the others keep their
            width as long as the terminal allows.
        wide: print every cell whole (no wrapping, no truncation).
        styles: per column, the rich style of a cell's text (``None``: plain).
    """
    from rich.table import Table
    from rich.text import Text

    natural = [max([len(title)] + [len(row[i]) for row in rows]) for i, title in enumerate(header)]
    widths = natural if wide else _fit(natural, wrap, console.width - 2 * (len(header) - 1))
    table = Table(box=None, padding=(0, 1), pad_edge=False, expand=False,
                  header_style="bold" if console.color_system else "")  # fmt: skip
    for title, width in zip(header, widths, strict=True):
        table.add_column(title, width=width, overflow="fold", no_wrap=wide)
    for row in rows:
        cells = []
        for index, cell in enumerate(row):
            style = (styles or {}).get(index)
            cells.append(Text(cell, style=(style(cell) or "") if style else ""))
        table.add_row(*cells)
    console.print(table, soft_wrap=wide, crop=not wide)


#: The narrowest the wrapping column gets before the other columns fold too.
_MIN_WRAP = 12


def _fit(natural: list[int], wrap: int, room: int) -> list[int]:
    """Column widths within ``room`` characters: every column at its natural width
    while they fit, the ``wrap`` column taking what is left; when less than two fifths
    of the room (at least :data:`_MIN_WRAP`) is left for it, the widest other columns
    give way too, one character at a time."""
    widths = list(natural)
    others = sum(w for i, w in enumerate(natural) if i != wrap)
    floor = max(_MIN_WRAP, room * 2 // 5)  # the wrapping column's share when others give way
    widths[wrap] = max(min(natural[wrap], room - others), min(natural[wrap], floor))
    excess = sum(widths) - room
    while excess > 0:
        index = max((i for i in range(len(widths)) if i != wrap), key=lambda i: widths[i])
        if widths[index] <= 4:
            break
        widths[index] -= 1
        excess -= 1
    return widths


_STDERR_STYLES = {"error": "bold red", "warning": "yellow", "note": "cyan"}


def stderr_label(label: str, message: str) -> bool:
    """Print ``capc: LABEL: MESSAGE`` on stderr in colour and return True, when colour
    is allowed there; else return False (the caller prints it plain)."""
    if not colour_allowed(sys.stderr):
        return False
    from rich.text import Text

    console = _console(sys.stderr)
    text = Text.assemble((f"capc: {label}:", _STDERR_STYLES.get(label, "")), " ", message)
    console.print(text, soft_wrap=True)
    return True


class Wait:
    """A wait that may show progress: call it with each step's line (``GET URL``).

    On a terminal its spinner appears once the wait has lasted :data:`PROGRESS_DELAY`
    seconds, with the latest line; :meth:`close` clears it. ``active`` is False when
    nothing can be shown (piped, ``--json``).
    """

    def __init__(self, label: str, *, show: bool) -> None:
        self.active = show  # False: piped or --json, nothing is ever shown
        self.line = label
        self._lock = threading.Lock()
        self._live: Any = None
        self._closed = False
        self._timer = threading.Timer(PROGRESS_DELAY, self._start) if show else None
        if self._timer is not None:
            self._timer.daemon = True
            self._timer.start()

    def __call__(self, line: str) -> None:
        with self._lock:
            self.line = line
            if self._live is not None:
                self._live.update(self._spinner())

    def _spinner(self) -> Any:
        from rich.spinner import Spinner

        return Spinner("dots", f"{self.line} ...")

    def _start(self) -> None:
        from rich.live import Live

        with self._lock:
            if self._closed:
                return
            from rich.errors import LiveError

            live = Live(self._spinner(), console=_console(sys.stderr), transient=True,
                        redirect_stdout=False, redirect_stderr=True, refresh_per_second=8)
            try:
                live.start(refresh=True)
            except LiveError:  # another display is active: it shows the progress
                return
            self._live = live

    def close(self) -> None:
        """Stop the timer and clear the spinner (when it was shown)."""
        if self._timer is not None:
            self._timer.cancel()
        with self._lock:
            self._closed = True
            live, self._live = self._live, None
        if live is not None:
            live.stop()


@contextmanager
def waiting(args: argparse.Namespace, label: str) -> Iterator[Wait]:
    """Within, a wait that shows progress on a terminal (see :class:`Wait`): requests
    made by the registry report their line to it (``reporting_progress``). Quiet with
    ``--json`` and when stderr is not a terminal."""
    show = not getattr(args, "json", False) and _is_terminal(sys.stderr)
    wait = Wait(label, show=show)
    try:
        if not show:  # piped: nothing more to import
            yield wait
            return
        from registry.sources.fallback import reporting_progress

        with reporting_progress(wait):
            yield wait
    finally:
        wait.close()
